//! How `watch` keeps its watches in step with folders that appear.

use super::*;
use loopscope_core::config::Setup;
use loopscope_core::detect::params::Profile;

fn watching(root: &Path) -> Watching {
    let opts = WatchOptions {
        roots: vec![Root {
            path: root.to_path_buf(),
            agent: None,
            named: true,
        }],
        setup: Setup::profile(Profile::Seed),
        format: formats::FormatChoice::Auto,
        idle_after: Duration::from_secs(60),
        from_start: false,
        telemetry: Default::default(),
    };
    let (tx, _rx) = mpsc::channel();
    Watching::new(opts, Box::new(|_| true), tx)
}

/// `mkdir -p runs/today` makes `today` right after `runs`, before a watch
/// placed on `runs` could see it: what is watched is looked at again until
/// it matches what exists, at each step of a root's path appearing.
#[test]
fn watches_follow_a_root_as_its_folders_appear() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("runs/today");
    let mut w = watching(&root);
    assert!(!w.settled(), "nothing is looked out for yet");
    w.arm();
    assert!(w.settled());
    assert_eq!(w.lookouts, BTreeSet::from([dir.path().to_path_buf()]));
    // `runs` appears: the lookout moves down to it.
    std::fs::create_dir(dir.path().join("runs")).unwrap();
    assert!(!w.settled(), "a lookout above the nearest folder that exists");
    w.arm();
    assert_eq!(w.lookouts, BTreeSet::from([dir.path().join("runs")]));
    // The root appears: it is armed, and nothing is looked out for.
    std::fs::create_dir(&root).unwrap();
    assert!(!w.settled(), "a root that exists and is not watched");
    w.arm();
    assert!(w.settled() && w.armed[0] && w.lookouts.is_empty());
}
