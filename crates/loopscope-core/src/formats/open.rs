//! Opening an input: a path (a file, standard input, a folder or store
//! holding sessions, `PATH#ID`) to its bytes and the importer that reads
//! them, and the check that a forced `--format` read something.

use std::io::{self, Read};
use std::path::Path;

use super::{cline, copilot, detect, rows, source, Decoder, Format, FormatChoice};
use crate::event::{Event, EventKind};

/// Whether `path` names standard input (`-`).
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Opens a path for reading ("-" is standard input); files are only ever
/// opened read-only. The error is one line, fit for the user.
pub fn open(path: &Path) -> Result<Box<dyn Read + Send>, String> {
    if is_stdin(path) {
        return Ok(Box::new(io::stdin()));
    }
    let shown = crate::sanitize::path(path);
    let meta = std::fs::metadata(path).map_err(|e| format!("{shown}: {}", crate::io_reason(&e)))?;
    if meta.is_dir() {
        return Err(format!("{shown}: is a directory"));
    }
    let file = std::fs::File::open(path).map_err(|e| format!("{shown}: {}", crate::io_reason(&e)))?;
    Ok(Box::new(file))
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
pub fn open_input(path: &Path, choice: FormatChoice) -> Result<Opened, String> {
    let path = cline::task_file(path)
        .or_else(|| copilot::session_file(path))
        .unwrap_or_else(|| path.to_path_buf());
    let (file, part) = match source::place(&path) {
        source::Place::File { path, part } => (path, part),
        place => {
            let (records, kind) = source::open_records(&place)?;
            if let FormatChoice::Fixed(f) = choice {
                if f != kind.format() {
                    return Err(format!(
                        "{}: --format {f}, but this is {}'s; try --format auto",
                        crate::sanitize::path(&path),
                        kind.format()
                    ));
                }
            }
            return Ok(Opened {
                reader: Box::new(source::RecordsReader::new(records)),
                decoder: kind.build(),
                format: kind.format(),
                forced: matches!(choice, FormatChoice::Fixed(_)),
                looks_like: Some(Some(kind.format())),
                kind: Some(kind),
            });
        }
    };
    let reader = open(&file)?;
    let hint = file.file_name().map(|n| n.to_string_lossy().into_owned());
    let mut opened = detect::open_reader(reader, choice, hint.as_deref())
        .map_err(|e| format!("{}: {e}", crate::sanitize::path(&file)))?;
    if opened.kind == Some(detect::Kind::Parquet) {
        // A Parquet row (or the first) is read from the file, by its number or id.
        let row = rows::parquet_row(&file, part.as_deref(), &rows::RowOptions::default())?;
        let kind = rows::document_kind(&row.document)
            .map_err(|e| format!("{}#{}: {e}", crate::sanitize::path(&file), row.part()))?;
        return Ok(Opened {
            reader: Box::new(io::Cursor::new(row.document)),
            decoder: kind.build(),
            format: kind.format(),
            forced: false,
            looks_like: Some(Some(kind.format())),
            kind: Some(kind),
        });
    }
    if let Some(part) = part {
        let kind = opened.kind.filter(|k| k.has_parts()).ok_or_else(|| {
            format!(
                "{}: holds one stream ({}); #{} names none in it",
                crate::sanitize::path(&file),
                opened.format,
                crate::sanitize::line(&part)
            )
        })?;
        opened.decoder = kind.build_part(Some(&part));
    }
    Ok(opened)
}
