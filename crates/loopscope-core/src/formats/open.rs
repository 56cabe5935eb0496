//! Opening an input: a path (a file, standard input, a folder or store
//! holding sessions, `PATH#ID`) to its bytes and the importer that reads
//! them, and the check that a forced `--format` read something.

use std::io::{self, Read};
use std::path::Path;

use super::{cline, copilot, detect, rows, source, Decoder, Format, FormatChoice, DEFAULT_MAX_RECORD};
use crate::error::{Error, ErrorKind};
use crate::event::{Event, EventKind};

/// Whether `path` names standard input (`-`).
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Opens a path for reading ("-" is standard input); files are only ever
/// opened read-only. The error keeps the I/O error's kind
/// ([`ErrorKind::NotFound`], [`ErrorKind::PermissionDenied`],
/// [`ErrorKind::IsADirectory`]); its message is one line, fit for the user.
pub fn open(path: &Path) -> Result<Box<dyn Read + Send>, Error> {
    if is_stdin(path) {
        return Ok(Box::new(io::stdin()));
    }
    let shown = crate::sanitize::path(path);
    let meta = std::fs::metadata(path).map_err(|e| Error::io(&shown, &e))?;
    if meta.is_dir() {
        return Err(Error::new(ErrorKind::IsADirectory, format!("{shown}: is a directory")));
    }
    let file = std::fs::File::open(path).map_err(|e| Error::io(&shown, &e))?;
    Ok(Box::new(file))
}

/// How an input is read: which importer, and the longest record held.
/// A [`FormatChoice`] converts into the default options with that format.
///
/// ```
/// use loopscope_core::{FormatChoice, ReadOptions};
/// use loopscope_core::formats::DEFAULT_MAX_RECORD;
///
/// let read = ReadOptions::from(FormatChoice::Auto);
/// assert_eq!(read.max_record, DEFAULT_MAX_RECORD);
/// let small = ReadOptions::default().with_max_record(1 << 20);
/// assert_eq!(small.max_record, 1 << 20);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadOptions {
    /// The importer: detected, or the one named (`--format`).
    pub format: FormatChoice,
    /// The longest record (a line, an SSE event, an array element, a whole
    /// document, a store's row, a conversation's event file) held in
    /// memory: a longer one is reported as a bad line and skipped
    /// (`--max-record`; [`DEFAULT_MAX_RECORD`] by default).
    pub max_record: usize,
}

impl Default for ReadOptions {
    fn default() -> ReadOptions {
        ReadOptions {
            format: FormatChoice::Auto,
            max_record: DEFAULT_MAX_RECORD,
        }
    }
}

impl ReadOptions {
    /// These options with `format`.
    pub fn with_format(mut self, format: FormatChoice) -> ReadOptions {
        self.format = format;
        self
    }

    /// These options with another record limit (at least one byte).
    pub fn with_max_record(mut self, bytes: usize) -> ReadOptions {
        self.max_record = bytes.max(1);
        self
    }
}

impl From<FormatChoice> for ReadOptions {
    fn from(format: FormatChoice) -> ReadOptions {
        ReadOptions::default().with_format(format)
    }
}

/// An input ready to decode: where its bytes come from and which importer reads them.
pub struct Opened {
    /// Where its bytes come from.
    pub reader: Box<dyn Read + Send>,
    /// The importer reading them.
    pub decoder: Box<dyn Decoder>,
    /// The importer's format.
    pub format: Format,
    /// The format was named with `--format`, not detected.
    pub forced: bool,
    /// What detection made of the input: `None` for an empty input,
    /// `Some(None)` when it matched no format.
    pub looks_like: Option<Option<Format>>,
    /// The reading of the format in use, when read as bytes.
    pub kind: Option<detect::Kind>,
}

impl Opened {
    /// What is needed to judge the events read, once reader and decoder are in use.
    pub fn forced_check(&self) -> ForcedCheck {
        ForcedCheck {
            forced: self.forced,
            format: self.format,
            looks_like: self.looks_like,
        }
    }
}

#[derive(Clone, Copy, Debug)]
/// Whether a forced `--format` read anything (see [`ForcedCheck::check`]).
pub struct ForcedCheck {
    forced: bool,
    format: Format,
    looks_like: Option<Option<Format>>,
}

/// Whether an event carries something of the stream (text, a call, a
/// result, a verdict): a wrong importer can still make a `request` or a
/// `note` out of any JSON, but not these.
pub fn carries_stream(e: &Event) -> bool {
    matches!(
        e.kind,
        EventKind::Prompt { .. }
            | EventKind::Reasoning { .. }
            | EventKind::Content { .. }
            | EventKind::ToolCall { .. }
            | EventKind::ToolResult { .. }
            | EventKind::LoopCheck { .. }
    )
}

impl ForcedCheck {
    /// A forced format that read nothing of the stream (see
    /// [`carries_stream`]) from a non-empty input matched nothing: in CI
    /// that would be a silent false negative, so it is an error.
    /// The error is an [`ErrorKind::Malformed`](crate::ErrorKind::Malformed)
    /// input: not what `--format` said it is.
    pub fn check(&self, events: usize) -> Result<(), crate::Error> {
        let not_that_format = |m: String| crate::Error::new(crate::ErrorKind::Malformed { line: None }, m);
        match (self.forced, events, self.looks_like) {
            (true, 0, Some(like)) => Err(not_that_format(format!(
                "--format {} read no events from it ({}); try --format auto",
                self.format,
                like.map_or("it matches no format loopscope reads".to_string(), |f| format!(
                    "it looks like {f}"
                ))
            ))),
            _ => Ok(()),
        }
    }
}

/// Opens an input and picks its importer: the one asked for, or the one
/// detected from its first bytes. A Cline/Roo task folder opens its
/// `ui_messages.json` (or `api_conversation_history.json`), a Copilot
/// session folder its `events.jsonl`; a store, an OpenHands conversation
/// folder or opencode's storage tree one session (`PATH#ID`, or the newest),
/// and `FILE#ID` a sub-agent's stream in a file that holds several.
/// `read` is a [`FormatChoice`] or [`ReadOptions`].
///
/// The error keeps its kind: the file's I/O error
/// ([`ErrorKind::NotFound`] for a missing file, and for a session, row or
/// sub-agent `#ID` that is not there), [`ErrorKind::UnsupportedFormat`]
/// for an input no importer reads (a folder that holds no session, or a
/// forced `--format` that is not the store's), [`ErrorKind::Malformed`]
/// for a damaged one.
pub fn open_input(path: &Path, read: impl Into<ReadOptions>) -> Result<Opened, Error> {
    let read = read.into();
    let choice = read.format;
    let path = cline::task_file(path)
        .or_else(|| copilot::session_file(path))
        .unwrap_or_else(|| path.to_path_buf());
    let (file, part) = match source::place(&path) {
        source::Place::File { path, part } => (path, part),
        place => {
            let (records, kind) = source::open_records(&place, read.max_record)?;
            if let FormatChoice::Fixed(f) = choice {
                if f != kind.format() {
                    return Err(Error::new(
                        ErrorKind::UnsupportedFormat,
                        format!(
                            "{}: --format {f}, but this is {}'s; try --format auto",
                            crate::sanitize::path(&path),
                            kind.format()
                        ),
                    ));
                }
            }
            let mut decoder = kind.build();
            decoder.set_max_record(read.max_record);
            return Ok(Opened {
                reader: Box::new(source::RecordsReader::new(records)),
                decoder,
                format: kind.format(),
                forced: matches!(choice, FormatChoice::Fixed(_)),
                looks_like: Some(Some(kind.format())),
                kind: Some(kind),
            });
        }
    };
    // A folder reaches here when it is none of the session folders above:
    // an input no importer reads, as a file of unknown shape is.
    let reader = open(&file).map_err(|e| match e.kind() {
        ErrorKind::IsADirectory => Error::new(ErrorKind::UnsupportedFormat, e.to_string()),
        _ => e,
    })?;
    let hint = file.file_name().map(|n| n.to_string_lossy().into_owned());
    let shown = crate::sanitize::path(&file);
    let mut opened =
        detect::open_reader(reader, read, hint.as_deref()).map_err(|e| e.prefixed(&format!("{shown}: ")))?;
    if opened.kind == Some(detect::Kind::Parquet) {
        // A Parquet row (or the first) is read from the file, by its number or id.
        let opts = rows::RowOptions {
            max_record: read.max_record,
            ..rows::RowOptions::default()
        };
        let row = rows::parquet_row(&file, part.as_deref(), &opts)?;
        let kind = rows::document_kind(&row.document).map_err(|e| {
            Error::new(
                ErrorKind::UnsupportedFormat,
                format!("{shown}#{}: {e}", crate::sanitize::line(&row.part())),
            )
        })?;
        let mut decoder = kind.build();
        decoder.set_max_record(read.max_record);
        return Ok(Opened {
            reader: Box::new(io::Cursor::new(row.document)),
            decoder,
            format: kind.format(),
            forced: false,
            looks_like: Some(Some(kind.format())),
            kind: Some(kind),
        });
    }
    if let Some(part) = part {
        let kind = opened.kind.filter(|k| k.has_parts()).ok_or_else(|| {
            Error::new(
                ErrorKind::NotFound,
                format!(
                    "{shown}: holds one stream ({}); #{} names none in it",
                    opened.format,
                    crate::sanitize::line(&part)
                ),
            )
        })?;
        opened.decoder = kind.build_part(Some(&part));
        opened.decoder.set_max_record(read.max_record);
    }
    Ok(opened)
}
