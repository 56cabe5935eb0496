//! A bounded fuzz run under stable, in every test run: real-shaped inputs
//! (the project's fixtures and samples) mutated by a deterministic RNG —
//! bit flips, cut, spliced, duplicated and deleted ranges, bytes that
//! matter to the framings — through the same target bodies cargo-fuzz runs
//! (`loopscope_core::fuzzing`). A panic fails the test with the input's seed.

mod common;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::time::{Duration, Instant};

use loopscope_core::fuzzing;

/// Seed inputs: every fixture and sample the project has.
fn corpus() -> Vec<Vec<u8>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in [
        "tests/fixtures/formats",
        "tests/fixtures/formats/cline-task",
        "sample-logs",
        "sample-logs/formats",
        "sample-logs/formats/cline-task",
        "tests/fixtures/rows",
    ] {
        if let Ok(entries) = std::fs::read_dir(root.join(dir)) {
            for e in entries.flatten() {
                let p = e.path();
                if p.is_file() && p.extension().is_some_and(|x| x != "md" && x != "py") {
                    let bytes = std::fs::read(&p).unwrap();
                    // Keep runs quick: long files contribute their start.
                    files.push(bytes[..bytes.len().min(24 * 1024)].to_vec());
                }
            }
        }
    }
    // The agents' fixtures, folders and stores included.
    let mut stack = vec![root.join("tests/fixtures/agents")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_none_or(|x| x != "py") {
                let bytes = std::fs::read(&p).unwrap();
                files.push(bytes[..bytes.len().min(24 * 1024)].to_vec());
            }
        }
    }
    files.sort();
    assert!(files.len() >= 20, "the corpus lost its files");
    // Compressed seeds (one level, and two, which is refused), and YAML
    // anchors and aliases for the cassette's alias budget.
    let packed: Vec<Vec<u8>> = files
        .iter()
        .take(4)
        .map(|f| zstd::encode_all(&f[..], 1).unwrap())
        .collect();
    files.push(zstd::encode_all(&packed[0][..], 1).unwrap());
    files.extend(packed);
    files.push(
        b"interactions:\n- request: &r {body: '{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}'}\n  again: *r\n  a: &a [x, x, x]\n  b: [*a, *a, *a]\n"
            .to_vec(),
    );
    files
}

/// Bytes that mean something to some framing.
const INTERESTING: &[&[u8]] = &[
    b"\n",
    b"\r\n",
    b"data: ",
    b"event: ",
    b"{",
    b"}",
    b"[",
    b"]",
    b"\"",
    b"\\",
    b":",
    b",",
    b"- ",
    b"```",
    b"\xff",
    b"\xe6\x80",
    b"\"type\":\"content\",\"text\":\"",
    b"1e999",
    b"-0",
    b"null",
    b"[DONE]",
];

fn mutate(rng: &mut common::Rng, input: &[u8], corpus: &[Vec<u8>]) -> Vec<u8> {
    let v = mutate_body(rng, input, corpus);
    // The first byte steers how the input is cut into pieces.
    let mut out = vec![(rng.next() % 256) as u8];
    out.extend((0..(rng.next() % 8)).map(|_| (rng.next() % 256) as u8));
    out.extend(v);
    out
}

/// The bytes of `input` changed: flipped, inserted, cut, duplicated…
fn mutate_body(rng: &mut common::Rng, input: &[u8], corpus: &[Vec<u8>]) -> Vec<u8> {
    let mut v = input.to_vec();
    let rounds = 1 + rng.next() % 6;
    for _ in 0..rounds {
        let len = v.len().max(1);
        let at = (rng.next() as usize) % len;
        let span = 1 + (rng.next() as usize) % 64.min(len);
        match rng.next() % 8 {
            0 if !v.is_empty() => v[at] ^= 1 << (rng.next() % 8),
            1 => {
                let piece = INTERESTING[(rng.next() as usize) % INTERESTING.len()];
                let at = at.min(v.len());
                v.splice(at..at, piece.iter().copied());
            }
            2 => v.truncate(at),
            3 => {
                let end = (at + span).min(v.len());
                v.drain(at.min(end)..end);
            }
            4 => {
                // Duplicate a range many times: repetition is what detectors chase.
                let end = (at + span).min(v.len());
                let piece = v[at.min(end)..end].to_vec();
                for _ in 0..(rng.next() % 200) {
                    v.splice(end..end, piece.iter().copied());
                }
            }
            5 => {
                let other = &corpus[(rng.next() as usize) % corpus.len()];
                let from = (rng.next() as usize) % other.len().max(1);
                let piece = &other[from.min(other.len())..(from + span * 8).min(other.len())];
                let at = at.min(v.len());
                v.splice(at..at, piece.iter().copied());
            }
            6 if !v.is_empty() => v[at] = (rng.next() % 256) as u8,
            _ => {
                let at = at.min(v.len());
                let depth = (rng.next() % 3000) as usize;
                let open = if rng.next().is_multiple_of(2) { b'[' } else { b'{' };
                v.splice(at..at, std::iter::repeat_n(open, depth));
            }
        }
    }
    v
}

/// Runs `body` on mutated inputs for about `budget`, at least `min` times.
fn fuzz(name: &str, budget: Duration, min: usize, body: impl Fn(&[u8])) {
    let corpus = corpus();
    let start = Instant::now();
    let mut runs = 0usize;
    let mut seed = 1u64;
    while runs < min || start.elapsed() < budget {
        let mut rng = common::Rng::new(seed);
        let base = &corpus[(seed as usize) % corpus.len()];
        let input = mutate(&mut rng, base, &corpus);
        if catch_unwind(AssertUnwindSafe(|| body(&input))).is_err() {
            let path = std::env::temp_dir().join(format!("loopscope-fuzz-{name}-{seed}.bin"));
            let _ = std::fs::write(&path, &input);
            panic!(
                "{name}: panicked on mutation seed {seed} (input saved to {})",
                path.display()
            );
        }
        runs += 1;
        seed += 1;
    }
    eprintln!("{name}: {runs} inputs in {:.1} s", start.elapsed().as_secs_f64());
}

#[test]
fn every_decoder_survives_mutated_real_inputs() {
    for (name, kind) in fuzzing::decoders() {
        fuzz(name, Duration::from_millis(400), 150, |data| {
            fuzzing::decode(kind, data)
        });
    }
}

#[test]
fn damaged_stores_are_read_without_a_panic() {
    fuzz("store", Duration::from_millis(1500), 60, fuzzing::store);
}

#[test]
fn detection_and_the_engine_survive_mutated_real_inputs() {
    fuzz("detect_and_scan", Duration::from_secs(3), 300, fuzzing::detect_and_scan);
    fuzz("engine", Duration::from_secs(2), 200, fuzzing::engine);
    fuzz("open_and_scan", Duration::from_secs(2), 200, fuzzing::open_and_scan);
}

/// The Parquet fixtures, whole (Parquet is read from its footer back: a
/// prefix or a cut start would make every input unreadable at once).
fn parquet_corpus() -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/rows");
    let mut files: Vec<Vec<u8>> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    files.sort();
    assert!(files.len() >= 2, "the Parquet fixtures are gone");
    files
}

/// Issue 43: 1 in 300 seeded mutations of four bytes of a Parquet fixture
/// made the parquet crate panic. Every damaged dataset is read to its end
/// or refused, never a panic: four bytes overwritten (as found), and the
/// general mutations too.
#[test]
fn damaged_parquet_datasets_are_read_without_a_panic() {
    let corpus = parquet_corpus();
    let mut runs = 0;
    for seed in 1..=600u64 {
        let mut rng = common::Rng::new(seed);
        let base = &corpus[(seed as usize) % corpus.len()];
        let input = if seed % 2 == 0 {
            let mut v = base.clone();
            for _ in 0..4 {
                let at = (rng.next() as usize) % v.len();
                v[at] = (rng.next() % 256) as u8;
            }
            v
        } else {
            mutate_body(&mut rng, base, &corpus)
        };
        if catch_unwind(AssertUnwindSafe(|| fuzzing::parquet_rows(&input))).is_err() {
            let path = std::env::temp_dir().join(format!("loopscope-fuzz-parquet-{seed}.parquet"));
            let _ = std::fs::write(&path, &input);
            panic!(
                "parquet_rows: panicked on seed {seed} (input saved to {})",
                path.display()
            );
        }
        runs += 1;
    }
    assert_eq!(runs, 600);
    fuzz("zstd_input", Duration::from_millis(500), 150, fuzzing::zstd_input);
}

/// Every kind of input `--format auto` tells apart has a cargo-fuzz target:
/// the one its row in the format table (formats/registry.rs) names, a
/// `[[bin]]` of fuzz/Cargo.toml. The `decode_*` targets are generated from
/// the table: each file must hold what [`fuzzing::decode_target_source`]
/// makes of its row. `LOOPSCOPE_WRITE_FUZZ_TARGETS=1` writes the missing or
/// stale ones (and their `[[bin]]`s), so a new row needs no hand edit here.
#[test]
fn every_format_kind_has_a_fuzz_target() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let write = std::env::var_os("LOOPSCOPE_WRITE_FUZZ_TARGETS").is_some_and(|v| v == "1");
    let manifest_path = root.join("fuzz/Cargo.toml");
    let mut manifest = std::fs::read_to_string(&manifest_path).unwrap();
    let mut wrong = Vec::new();
    let decoders: Vec<&str> = fuzzing::decoders().into_iter().map(|(name, _)| name).collect();
    for kind in loopscope_core::formats::detect::Kind::ALL {
        let target = fuzzing::target_for(kind);
        let file = root.join(format!("fuzz/fuzz_targets/{target}.rs"));
        let generated = target
            .strip_prefix(fuzzing::DECODE)
            .filter(|name| decoders.contains(name))
            .map(|name| fuzzing::decode_target_source(name, kind));
        let holds = std::fs::read_to_string(&file).ok();
        let stale = match (&generated, &holds) {
            (_, None) => true,
            (Some(want), Some(have)) => want != have,
            (None, Some(_)) => false,
        };
        if stale {
            match (&generated, write) {
                (Some(want), true) => std::fs::write(&file, want).unwrap(),
                _ if holds.is_none() => wrong.push(format!(
                    "{kind:?}: no cargo-fuzz target {target} (fuzz/fuzz_targets/{target}.rs)"
                )),
                _ => wrong.push(format!(
                    "{kind:?}: fuzz/fuzz_targets/{target}.rs is not what its row in formats/registry.rs generates"
                )),
            }
        }
        let entry = fuzzing::fuzz_manifest_entry(target);
        if !manifest.contains(&entry) {
            if write {
                manifest.push('\n');
                manifest.push_str(&entry);
            } else {
                wrong.push(format!("{kind:?}: {target} is not a [[bin]] of fuzz/Cargo.toml"));
            }
        }
    }
    if write {
        std::fs::write(&manifest_path, manifest).unwrap();
    }
    assert!(
        wrong.is_empty(),
        "{}\n(LOOPSCOPE_WRITE_FUZZ_TARGETS=1 cargo test --test fuzz_stable writes the decode_* ones)",
        wrong.join("\n")
    );
}

#[test]
fn every_decoder_has_a_cargo_fuzz_target() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/fuzz_targets");
    for (name, _) in fuzzing::decoders() {
        assert!(
            dir.join(format!("decode_{name}.rs")).exists(),
            "no fuzz target for {name}"
        );
    }
    for name in ["detect_and_scan", "engine", "open_and_scan", "decode_store"] {
        assert!(dir.join(format!("{name}.rs")).exists());
    }
    let manifest = std::fs::read_to_string(dir.parent().unwrap().join("Cargo.toml")).unwrap();
    for entry in std::fs::read_dir(&dir).unwrap().flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        assert!(
            manifest.contains(&format!("fuzz_targets/{file}")),
            "{file} is not a [[bin]] in fuzz/Cargo.toml"
        );
    }
}
