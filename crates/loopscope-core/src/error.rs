//! The one error type of the library: what went wrong as a kind a caller
//! can match on ([`ErrorKind`]), and the message the command line prints.
//!
//! Callers choose by kind, never by the message's words: the CLI prints
//! the message, the Python package raises the exception class its kind
//! maps to (`FileNotFoundError`, `loopscope.UnknownProfileError`, …).

use std::fmt;

/// What kind of thing went wrong; new kinds may come in later releases.
///
/// ```
/// use loopscope_core::{setup, ErrorKind};
///
/// let e = setup("no-such-profile", &[], &[]).unwrap_err();
/// assert_eq!(e.kind(), ErrorKind::UnknownProfile);
/// assert!(e.to_string().starts_with("unknown profile"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A file or folder that does not exist.
    NotFound,
    /// A file the user may not read.
    PermissionDenied,
    /// A folder where a file was expected.
    IsADirectory,
    /// Any other failure to open or read an input.
    Io,
    /// An input (a config file, an event, a log) that is not what it
    /// claims to be; `line` is its 1-based line when known.
    Malformed {
        /// The line the problem is on, counted from 1.
        line: Option<usize>,
    },
    /// A profile name that is not one of [`Profile::ALL`](crate::Profile::ALL).
    UnknownProfile,
    /// A detector id that no profile runs, or one that the chosen profile
    /// does not run.
    UnknownDetector,
    /// A parameter that its detector does not have.
    UnknownParameter,
    /// A value that does not fit its parameter or option.
    InvalidValue,
    /// An input no importer reads, or a format this build leaves out (its
    /// cargo feature is off).
    UnsupportedFormat,
    /// The caller asked the work to stop (`scan_until`'s `stop`).
    Stopped,
}

/// Why a library call could not run: a [`kind`](Error::kind) to match on
/// and the message `loopscope` prints for it.
///
/// ```
/// use std::path::Path;
/// use loopscope_core::{scan_path, setup, ErrorKind, FormatChoice};
///
/// let seed = setup("seed", &[], &[]).unwrap();
/// let e = scan_path(Path::new("/nonexistent/session.jsonl"), FormatChoice::Auto, &seed).unwrap_err();
/// assert_eq!(e.kind(), ErrorKind::NotFound);
/// assert!(e.to_string().ends_with("no such file or directory"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
}

impl Error {
    /// An error of `kind` with the message the user reads.
    ///
    /// ```
    /// use loopscope_core::{Error, ErrorKind};
    ///
    /// let e = Error::new(ErrorKind::InvalidValue, "must be at least 2, got 1");
    /// assert_eq!(e.to_string(), "must be at least 2, got 1");
    /// ```
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error {
            kind,
            message: message.into(),
        }
    }

    /// An I/O error about `what` (a file's name, already made safe to
    /// print): its kind from the I/O error's, its message
    /// "`what`: no such file or directory" as the CLI words it.
    ///
    /// ```
    /// use loopscope_core::{Error, ErrorKind};
    ///
    /// let io = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
    /// let e = Error::io("secret.jsonl", &io);
    /// assert_eq!(e.kind(), ErrorKind::PermissionDenied);
    /// assert_eq!(e.to_string(), "secret.jsonl: permission denied");
    /// ```
    pub fn io(what: &str, e: &std::io::Error) -> Error {
        Error::new(io_kind(e), format!("{what}: {}", crate::io_reason(e)))
    }

    /// What kind of failure it is.
    ///
    /// ```
    /// use loopscope_core::{setup, ErrorKind};
    ///
    /// let e = setup("seed", &[], &[("text-loop.copies", "many")]).unwrap_err();
    /// assert_eq!(e.kind(), ErrorKind::InvalidValue);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The line of the input the problem is on, for [`ErrorKind::Malformed`].
    ///
    /// ```
    /// use loopscope_core::{Choices, Setup};
    ///
    /// let e = Setup::resolve_with(&Choices::default(), "profile = \"seed\"\n[text-loop\n").unwrap_err();
    /// assert_eq!(e.line(), Some(2));
    /// ```
    pub fn line(&self) -> Option<usize> {
        match self.kind {
            ErrorKind::Malformed { line } => line,
            _ => None,
        }
    }

    /// The same error with `prefix` before its message (what it was
    /// about: "config loopscope.toml: "), its kind kept.
    pub(crate) fn prefixed(mut self, prefix: &str) -> Error {
        self.message.insert_str(0, prefix);
        self
    }

    /// The same error with its message rewritten by `f`, its kind kept.
    ///
    /// ```
    /// use loopscope_core::{setup, ErrorKind};
    ///
    /// let e = setup("seed", &[], &[("nope.x", "1")]).unwrap_err();
    /// let e = e.map_message(|m| m.replacen("--set", ":set", 1));
    /// assert_eq!(e.kind(), ErrorKind::UnknownDetector);
    /// ```
    pub fn map_message(mut self, f: impl FnOnce(String) -> String) -> Error {
        self.message = f(self.message);
        self
    }
}

/// The kind an I/O error is.
pub(crate) fn io_kind(e: &std::io::Error) -> ErrorKind {
    match e.kind() {
        std::io::ErrorKind::NotFound => ErrorKind::NotFound,
        std::io::ErrorKind::PermissionDenied => ErrorKind::PermissionDenied,
        std::io::ErrorKind::IsADirectory => ErrorKind::IsADirectory,
        std::io::ErrorKind::InvalidData => ErrorKind::Malformed { line: None },
        _ => ErrorKind::Io,
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// The message alone, for a caller whose errors are still text (the
/// command line's runners print it as it is).
impl From<Error> for String {
    fn from(e: Error) -> String {
        e.message
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{scan_path, setup, Choices, FormatChoice, Monitor, Setup};
    use std::path::Path;

    fn kind_of_setup(profile: &str, detectors: &[&str], sets: &[(&str, &str)]) -> ErrorKind {
        setup(profile, detectors, sets).unwrap_err().kind()
    }

    #[test]
    fn each_configuration_mistake_has_its_kind() {
        // (profile, detectors, overrides, the kind of error)
        type Case<'a> = (&'a str, &'a [&'a str], &'a [(&'a str, &'a str)], ErrorKind);
        let cases: [Case; 7] = [
            ("nope", &[], &[], ErrorKind::UnknownProfile),
            ("seed", &["nope"], &[], ErrorKind::UnknownDetector),
            // A detector of another profile: unknown to this one.
            ("seed", &["text-loop"], &[], ErrorKind::UnknownDetector),
            ("extended", &[], &[("text-loop.nope", "1")], ErrorKind::UnknownParameter),
            ("extended", &[], &[("text-loop.copies", "x")], ErrorKind::InvalidValue),
            ("extended", &[], &[("text-loop.copies", "1")], ErrorKind::InvalidValue),
            ("extended", &[], &[("nope.copies", "1")], ErrorKind::UnknownDetector),
        ];
        for (profile, detectors, sets, kind) in cases {
            assert_eq!(
                kind_of_setup(profile, detectors, sets),
                kind,
                "{profile} {detectors:?} {sets:?}"
            );
        }
    }

    #[test]
    fn a_broken_config_file_is_malformed_at_its_line() {
        let e = Setup::resolve_with(&Choices::default(), "profile = \"seed\"\n\n[text-loop\n").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Malformed { line: Some(3) });
        assert_eq!(e.line(), Some(3));
        assert!(e.to_string().ends_with("(line 3)"), "{e}");
        let e = Setup::resolve_with(&Choices::default(), "profile = \"nope\"\n").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::UnknownProfile);
        let e = Setup::resolve_with(&Choices::default(), "[block-cycle]\nnope = 1\n").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::UnknownParameter);
        let e = Setup::resolve_with(&Choices::default(), "[block-cycle]\nmin_matches = \"x\"\n").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidValue);
    }

    #[test]
    fn files_that_cannot_be_read_keep_the_io_kind() {
        let seed = setup("seed", &[], &[]).unwrap();
        let missing = scan_path(Path::new("/nonexistent/x.jsonl"), FormatChoice::Auto, &seed).unwrap_err();
        assert_eq!(missing.kind(), ErrorKind::NotFound);
        assert_eq!(missing.to_string(), "/nonexistent/x.jsonl: no such file or directory");
        let dir = std::env::temp_dir();
        let e = crate::config::read_capped(&dir, 100).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::IsADirectory, "{e}");
        let io = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        assert_eq!(Error::io("f", &io).kind(), ErrorKind::PermissionDenied);
        assert_eq!(Error::io("f", &io).to_string(), "f: permission denied");
    }

    #[test]
    fn an_object_that_is_not_an_event_is_malformed() {
        let seed = setup("seed", &[], &[]).unwrap();
        let mut m = Monitor::new(&seed);
        let e = m.push_json(serde_json::json!({"text": "x"})).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Malformed { line: None });
        assert!(e.to_string().starts_with("not an event"), "{e}");
    }

    #[test]
    fn a_stopped_scan_says_so_by_kind() {
        let seed = setup("seed", &[], &[]).unwrap();
        let e = crate::scan_until(
            std::io::Cursor::new(b"{\"type\":\"request\"}\n".to_vec()),
            FormatChoice::Auto,
            None,
            &seed,
            &mut |_| true,
        )
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Stopped);
    }

    /// A build without a format's feature refuses its inputs as an
    /// unsupported format, naming the feature (CI runs these with
    /// `--no-default-features`).
    #[cfg(not(feature = "zstd"))]
    #[test]
    fn a_zstd_input_without_its_feature_is_unsupported_naming_it() {
        let seed = setup("seed", &[], &[]).unwrap();
        let frame = vec![0x28, 0xb5, 0x2f, 0xfd, 0x20, 0x00, 0x01, 0x00, 0x00];
        let e = crate::scan(std::io::Cursor::new(frame), FormatChoice::Auto, None, &seed).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::UnsupportedFormat);
        assert!(e.to_string().contains("`zstd` feature"), "{e}");
    }

    #[cfg(not(feature = "sqlite"))]
    #[test]
    fn a_sqlite_store_without_its_feature_is_unsupported_naming_it() {
        let seed = setup("seed", &[], &[]).unwrap();
        let path = std::env::temp_dir().join(format!("loopscope-no-sqlite-{}.db", std::process::id()));
        std::fs::write(&path, b"SQLite format 3\0rest of a page").unwrap();
        let e = scan_path(&path, FormatChoice::Auto, &seed).unwrap_err();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(e.kind(), ErrorKind::UnsupportedFormat);
        assert!(e.to_string().contains("`sqlite` feature"), "{e}");
    }

    #[cfg(not(feature = "parquet"))]
    #[test]
    fn a_parquet_dataset_without_its_feature_is_refused_naming_it() {
        let e = crate::formats::rows::parquet_row(Path::new("x.parquet"), None, &Default::default()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::UnsupportedFormat);
        assert!(e.to_string().contains("`parquet` feature"), "{e}");
    }

    #[test]
    fn the_message_is_what_display_and_string_give() {
        let e = Error::new(ErrorKind::Io, "x: broken pipe");
        assert_eq!(e.to_string(), "x: broken pipe");
        assert_eq!(String::from(e.clone()), "x: broken pipe");
        assert_eq!(e.prefixed("reading ").to_string(), "reading x: broken pipe");
    }
}
