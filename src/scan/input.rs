//! One input to scan: a file, a folder or store (each session in it), a
//! stream named `PATH#ID`, standard input, or bytes already in memory.

use super::*;

/// One input to scan: its name as given, and where its bytes come from.
pub enum Input {
    Path(PathBuf),
    /// A file found in a directory, a glob or an agent's folders: one that
    /// is not an agent session is skipped with a count, not reported as an error.
    Found(crate::sessions::Session),
    /// Bytes already in memory (a dataset's row), with the name to show.
    Bytes {
        name: String,
        bytes: std::sync::Arc<[u8]>,
    },
}

impl Input {
    /// How it is shown: its path (a sub-agent's: `PARENT ▸ agent-ID`),
    /// on one line and terminal-safe (a file name can hold a newline and
    /// forge a line of output, or an escape sequence).
    pub fn name(&self) -> String {
        match self {
            Input::Path(p) => loopscope_core::sanitize::path(p),
            Input::Found(s) => s.label(),
            Input::Bytes { name, .. } => loopscope_core::sanitize::line(name),
        }
    }

    /// The file's path as given or found (JSON's `file`: exact, escaped
    /// as JSON rather than made one line).
    pub fn file(&self) -> String {
        match self {
            Input::Path(p) => p.display().to_string(),
            Input::Found(s) => s.path.display().to_string(),
            Input::Bytes { name, .. } => name.clone(),
        }
    }

    /// The file it reads, if it reads one.
    pub fn path(&self) -> Option<&std::path::Path> {
        match self {
            Input::Path(p) => Some(p),
            Input::Found(s) => Some(&s.path),
            Input::Bytes { .. } => None,
        }
    }

    /// A sub-agent's parent session.
    pub fn parent(&self) -> Option<&std::path::Path> {
        match self {
            Input::Found(s) => s.parent.as_deref(),
            _ => None,
        }
    }

    /// The session's title (a store's session).
    pub fn title(&self) -> Option<&str> {
        match self {
            Input::Found(s) => s.title.as_deref(),
            _ => None,
        }
    }

    /// Found in a folder rather than named: not being a session is no error.
    pub fn found(&self) -> bool {
        matches!(self, Input::Found(s) if s.found)
    }

    /// The agent whose session folder it was found in, else its format's agent.
    pub fn agent(&self) -> Option<&'static str> {
        match self {
            Input::Found(s) => s.agent.map(crate::sessions::Agent::name),
            _ => None,
        }
    }

    /// Why a file found in a folder cannot be read (a folder the walk
    /// could not read, a file that cannot be opened): an error of the
    /// command, not a file that is "not a session".
    pub fn unreadable(&self) -> Option<String> {
        let Input::Found(s) = self else { return None };
        let name = self.name();
        if let Some(why) = &s.unreadable {
            return Some(format!(
                "{name}: cannot read this folder ({why}); its sessions are not scanned"
            ));
        }
        // A stream inside a container (`db#id`) is read from its container.
        let (base, _) = formats::source::split(&s.path);
        let file = formats::cline::task_file(&base).unwrap_or(base);
        std::fs::File::open(&file)
            .err()
            .map(|e| format!("{name}: cannot be read ({})", loopscope_core::io_reason(&e)))
    }

    pub fn open(&self, format: FormatChoice) -> Result<formats::Opened, String> {
        match self {
            Input::Path(p) => crate::reading::open_input(p, format),
            Input::Found(s) => crate::reading::open_input(&s.path, format),
            Input::Bytes { bytes, .. } => formats::detect::open_reader(
                Box::new(std::io::Cursor::new(bytes.clone())),
                crate::reading::options(format),
                None,
            )
            .map_err(String::from),
        }
    }
}
