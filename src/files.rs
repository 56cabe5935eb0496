//! loopscope never writes to a file it reads, nor replaces what is not a
//! file. Files are compared by identity (device and inode, through
//! symlinks and hard links), not by path; an output that is a regular file
//! is written to a temporary file beside it and renamed over it only once
//! complete, so a failed run leaves no half file; a device, a FIFO or a
//! standard stream (`-`, `/dev/stdout`) is written to as a stream, never
//! replaced; a symbolic link is written through, never replaced.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// What makes two names one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileId {
    dev: u64,
    ino: u64,
}

impl FileId {
    /// The identity of an existing file (symlinks followed).
    pub fn of(path: &Path) -> Option<FileId> {
        fs::metadata(path).ok().as_ref().and_then(FileId::from_meta)
    }

    /// The identity in metadata already read.
    #[cfg(unix)]
    pub fn from_meta(m: &fs::Metadata) -> Option<FileId> {
        use std::os::unix::fs::MetadataExt;
        Some(FileId {
            dev: m.dev(),
            ino: m.ino(),
        })
    }

    #[cfg(not(unix))]
    pub fn from_meta(_: &fs::Metadata) -> Option<FileId> {
        None
    }
}

/// Standard output or standard error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StdStream {
    Out,
    Err,
}

impl StdStream {
    #[cfg(target_os = "linux")]
    fn link(self) -> &'static str {
        match self {
            StdStream::Out => "/proc/self/fd/1",
            StdStream::Err => "/proc/self/fd/2",
        }
    }

    fn name(self) -> &'static str {
        match self {
            StdStream::Out => "standard output",
            StdStream::Err => "standard error",
        }
    }

    /// What the stream is open on (any kind of file).
    fn id(self) -> Option<FileId> {
        #[cfg(target_os = "linux")]
        {
            FileId::of(Path::new(self.link()))
        }
        #[cfg(not(target_os = "linux"))]
        {
            None
        }
    }

    /// The regular file the stream is redirected to, and its path if it
    /// still has one.
    fn regular_file(self) -> Option<(FileId, Option<PathBuf>)> {
        #[cfg(target_os = "linux")]
        {
            let m = fs::metadata(self.link()).ok()?;
            if !m.is_file() {
                return None;
            }
            let path = fs::read_link(self.link())
                .ok()
                .filter(|p| p.is_absolute() && p.exists());
            Some((FileId::from_meta(&m)?, path))
        }
        #[cfg(not(target_os = "linux"))]
        {
            None
        }
    }

    /// Streams what `write` writes to the stream, through the terminal
    /// sanitizer, as the command's own output would be.
    fn write_with(self, write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> io::Result<()> {
        let mut w: io::BufWriter<Box<dyn Write>> = io::BufWriter::new(match self {
            StdStream::Out => Box::new(loopscope_core::sanitize::Terminal::new(io::stdout().lock())),
            StdStream::Err => Box::new(loopscope_core::sanitize::Terminal::new(io::stderr().lock())),
        });
        write(&mut w).and_then(|()| w.flush())
    }
}

/// Whether `path` is `dir` or inside it, at any depth (compared as files).
fn is_within(path: &Path, dir: &Path) -> bool {
    let Some(dir_id) = FileId::of(dir) else { return false };
    // The nearest ancestor that exists, made absolute with links resolved.
    let mut next = Some(path);
    while let Some(p) = next {
        let p = if p.as_os_str().is_empty() { Path::new(".") } else { p };
        if let Ok(real) = fs::canonicalize(p) {
            return real.ancestors().any(|a| FileId::of(a) == Some(dir_id));
        }
        next = p.parent();
    }
    false
}

/// The files a command reads for an input path: the file itself, or for a
/// directory (a Cline/Roo task folder) every file directly in it.
pub fn inputs_of(path: &Path) -> Vec<(PathBuf, FileId)> {
    if loopscope_core::config::is_stdin(path) {
        // `report - -o log < log`: what standard input is open on is read
        // as much as a named file.
        return stdin_file().into_iter().collect();
    }
    // `store#session`, `events.jsonl#agent`: the file holding the stream,
    // and a store's write-ahead log.
    let (base, _) = loopscope_core::formats::source::split(path);
    let path = base.as_path();
    let mut out = Vec::new();
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    if let Some(id) = FileId::of(Path::new(&wal)) {
        out.push((PathBuf::from(wal), id));
    }
    if path.is_dir() {
        if let Ok(entries) = fs::read_dir(path) {
            for e in entries.flatten() {
                let p = e.path();
                if let Some(id) = FileId::of(&p) {
                    out.push((p, id));
                }
            }
        }
    }
    if let Some(id) = FileId::of(path) {
        out.push((path.to_path_buf(), id));
    }
    out
}

/// An input as a message names it.
fn input_name(p: &Path) -> String {
    if loopscope_core::config::is_stdin(p) {
        "standard input".to_string()
    } else {
        loopscope_core::sanitize::path(p)
    }
}

/// The regular file standard input is redirected from, if it is one
/// (shown as `-`).
fn stdin_file() -> Option<(PathBuf, FileId)> {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        let fd = io::stdin().as_fd().try_clone_to_owned().ok()?;
        let m = fs::File::from(fd).metadata().ok()?;
        m.is_file()
            .then(|| FileId::from_meta(&m).map(|id| (PathBuf::from("-"), id)))
            .flatten()
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// Refuses an output that is one of the inputs (by identity) or that
/// would be written into an input folder (a task folder, or a folder whose
/// sessions are followed: a new file there could become an input).
pub fn refuse_if_input(output: &Path, inputs: &[&Path]) -> Result<(), String> {
    let shown = loopscope_core::sanitize::path(output);
    let out_id = FileId::of(output);
    for input in inputs {
        if let Some(id) = out_id {
            if let Some((p, _)) = inputs_of(input).iter().find(|(_, i)| *i == id) {
                return Err(format!(
                    "{shown}: is the same file as the input {}; refusing to write over it",
                    input_name(p)
                ));
            }
        }
        if input.is_dir() && is_within(output, input) {
            return Err(format!(
                "{shown}: is inside the folder {} this command reads; refusing to write there",
                loopscope_core::sanitize::path(input)
            ));
        }
    }
    Ok(())
}

/// Set once standard error is found to be an input: the refusal itself
/// must not be written there.
static STDERR_IS_AN_INPUT: AtomicBool = AtomicBool::new(false);

/// Whether standard error was found to be an input (nothing may be said there).
pub fn stderr_is_an_input() -> bool {
    STDERR_IS_AN_INPUT.load(Ordering::SeqCst)
}

/// Refuses to run when standard output or standard error is redirected
/// into an input or into an input folder (`loopscope scan log >> log`
/// would read what it writes, forever). When it is standard error, the
/// refusal is the exit status alone ([`stderr_is_an_input`]).
pub fn refuse_std_streams_into(inputs: &[&Path]) -> Result<(), String> {
    for stream in [StdStream::Out, StdStream::Err] {
        let Some((out, path)) = stream.regular_file() else {
            continue;
        };
        let refuse = |why: String| {
            if stream == StdStream::Err {
                STDERR_IS_AN_INPUT.store(true, Ordering::SeqCst);
            }
            Err(why)
        };
        for input in inputs {
            if let Some((p, _)) = inputs_of(input).iter().find(|(_, id)| *id == out) {
                return refuse(format!(
                    "{} is {} (an input of this command); refusing to write into it",
                    stream.name(),
                    input_name(p)
                ));
            }
            if let Some(path) = path.as_deref().filter(|p| input.is_dir() && is_within(p, input)) {
                return refuse(format!(
                    "{} is {}, inside the folder {} this command reads; refusing to write into it",
                    stream.name(),
                    loopscope_core::sanitize::path(path),
                    loopscope_core::sanitize::path(input)
                ));
            }
        }
    }
    Ok(())
}

/// Refuses to write into any input: the output file (if any) and the
/// standard streams.
pub fn refuse_writing_into(output: Option<&Path>, inputs: &[&Path]) -> Result<(), String> {
    if let Some(out) = output {
        refuse_if_input(out, inputs)?;
    }
    refuse_std_streams_into(inputs)
}

/// Where an output's bytes go.
enum Destination {
    /// `-`, or a name for this process's standard output or error.
    Std(StdStream),
    /// A device, a FIFO or a socket: written to as it is, never replaced.
    Stream(PathBuf),
    /// A regular file (existing or new): written beside, then renamed over.
    Regular(PathBuf),
}

fn destination(output: &Path) -> Result<Destination, String> {
    let shown = loopscope_core::sanitize::path(output);
    if output.as_os_str() == "-" {
        return Ok(Destination::Std(StdStream::Out));
    }
    let id = FileId::of(output);
    for stream in [StdStream::Out, StdStream::Err] {
        if id.is_some() && id == stream.id() {
            return Ok(Destination::Std(stream));
        }
    }
    match fs::metadata(output) {
        Ok(m) if m.is_dir() => Err(format!("{shown}: is a directory")),
        Ok(m) if !m.is_file() => Ok(Destination::Stream(output.to_path_buf())),
        // A regular file, perhaps behind symbolic links: its real path is replaced.
        Ok(_) => fs::canonicalize(output)
            .map(Destination::Regular)
            .map_err(|e| format!("{shown}: {}", loopscope_core::io_reason(&e))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => match fs::symlink_metadata(output) {
            // A link to nothing: what it names is not for loopscope to guess.
            Ok(m) if m.file_type().is_symlink() => Err(format!(
                "{shown}: is a symbolic link to a file that does not exist; refusing to replace the link"
            )),
            _ => Ok(Destination::Regular(output.to_path_buf())),
        },
        Err(e) => Err(format!("{shown}: {}", loopscope_core::io_reason(&e))),
    }
}

/// Writes `output`: a regular file through a temporary file beside it,
/// renamed over it when `write` succeeds (a symlink's target is what gets
/// replaced, the link stays); a device, a FIFO or a standard stream (`-`,
/// `/dev/stdout`) as a stream, never replaced.
pub fn write_atomically(output: &Path, write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<(), String> {
    let shown = loopscope_core::sanitize::path(output);
    let fail = |e: io::Error| match e.kind() {
        // What the writer itself refuses (kind Other) is said as it is;
        // I/O errors are about the output file.
        io::ErrorKind::Other => e.to_string(),
        _ => format!("{shown}: {}", loopscope_core::io_reason(&e)),
    };
    let target = match destination(output)? {
        Destination::Std(stream) => {
            // A closed pipe (`| head`) is the reader's choice, not an error.
            return match stream.write_with(write) {
                Err(e) if e.kind() != io::ErrorKind::BrokenPipe => Err(fail(e)),
                _ => Ok(()),
            };
        }
        Destination::Stream(path) => {
            // Opening a FIFO waits for its reader, as `cat > fifo` does.
            let file = fs::OpenOptions::new().write(true).open(&path).map_err(fail)?;
            let mut w = io::BufWriter::new(file);
            return write(&mut w).and_then(|()| w.flush()).map_err(fail);
        }
        Destination::Regular(path) => path,
    };
    let dir = target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.loopscope-{}.tmp", std::process::id()));
    let file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .map_err(fail)?;
    let mut w = io::BufWriter::new(file);
    if let Err(e) = write(&mut w) {
        drop(w);
        let _ = fs::remove_file(&tmp);
        return Err(fail(e));
    }
    let result = w.flush().and_then(|()| {
        // Keep the mode of a file being replaced.
        if let Ok(m) = fs::metadata(&target) {
            let _ = fs::set_permissions(&tmp, m.permissions());
        }
        fs::rename(&tmp, &target)
    });
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(fail(e));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hard_links_and_symlinks_are_the_same_file() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.jsonl");
        fs::write(&a, "{}\n").unwrap();
        let hard = dir.path().join("hard.jsonl");
        fs::hard_link(&a, &hard).unwrap();
        let soft = dir.path().join("soft.jsonl");
        #[cfg(unix)]
        std::os::unix::fs::symlink(&a, &soft).unwrap();
        assert!(refuse_if_input(&hard, &[&a]).is_err());
        assert!(refuse_if_input(&soft, &[&a]).is_err());
        assert!(refuse_if_input(&dir.path().join("new.jsonl"), &[&a]).is_ok());
    }

    #[test]
    fn a_task_folders_files_and_new_files_in_it_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let task = dir.path().join("task");
        fs::create_dir(&task).unwrap();
        fs::write(task.join("ui_messages.json"), "[]").unwrap();
        assert!(refuse_if_input(&task.join("ui_messages.json"), &[&task]).is_err());
        assert!(refuse_if_input(&task.join("out.jsonl"), &[&task]).is_err());
        assert!(refuse_if_input(&dir.path().join("out.jsonl"), &[&task]).is_ok());
    }

    #[test]
    fn a_file_anywhere_under_an_input_folder_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("sessions");
        fs::create_dir_all(root.join("a/b")).unwrap();
        assert!(refuse_if_input(&root.join("a/b/new.toml"), &[&root]).is_err());
        // Through a link to a folder inside, and a name that does not exist yet.
        #[cfg(unix)]
        std::os::unix::fs::symlink(root.join("a"), dir.path().join("link")).unwrap();
        assert!(refuse_if_input(&dir.path().join("link/b/c/x.toml"), &[&root]).is_err());
        assert!(refuse_if_input(&dir.path().join("beside.toml"), &[&root]).is_ok());
    }

    #[test]
    fn an_atomic_write_replaces_a_symlinks_target_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.svg");
        fs::write(&real, "old").unwrap();
        let link = dir.path().join("link.svg");
        #[cfg(unix)]
        std::os::unix::fs::symlink(&real, &link).unwrap();
        write_atomically(&link, |w| w.write_all(b"new")).unwrap();
        assert_eq!(fs::read_to_string(&real).unwrap(), "new");
        assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        let failed = write_atomically(&real, |_| Err(io::Error::other("boom")));
        assert!(failed.is_err());
        assert_eq!(fs::read_to_string(&real).unwrap(), "new");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2);
    }
}
