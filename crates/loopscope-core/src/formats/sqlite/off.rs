//! The SQLite stores in a build without the `sqlite` feature: opening one
//! is an error that names the feature; the types exist so that everything
//! else (the record sources, the app) builds the same either way. A
//! [`SessionRows`] cannot be made, so its methods are never reached.

use std::io;
use std::path::Path;

use super::StoreKind;

/// One session of a store, as JSON lines (none in this build).
pub enum SessionRows {}

impl SessionRows {
    /// Refused: this build reads no SQLite store.
    pub fn open(path: &Path, _id: Option<&str>, _max_record: usize) -> Result<SessionRows, crate::Error> {
        Err(refusal(path))
    }

    /// Never called: no value of this type exists.
    pub fn news(&mut self) -> Option<super::StoreNews> {
        match *self {}
    }

    /// Never called: no value of this type exists.
    pub fn kind(&self) -> StoreKind {
        match *self {}
    }

    /// Never called: no value of this type exists.
    pub fn offset(&self) -> u64 {
        match *self {}
    }

    /// Never called: no value of this type exists.
    pub fn poll(&mut self, _out: &mut Vec<u8>) -> io::Result<()> {
        match *self {}
    }

    /// Never called: no value of this type exists.
    pub fn has_more(&self) -> bool {
        match *self {}
    }
}

/// A session's rows as a byte stream (none in this build).
pub enum SessionReader {}

impl SessionReader {
    /// Never called: no [`SessionRows`] exists to read.
    pub fn new(rows: SessionRows) -> SessionReader {
        match rows {}
    }
}

impl io::Read for SessionReader {
    fn read(&mut self, _buf: &mut [u8]) -> io::Result<usize> {
        match *self {}
    }
}

/// "PATH: reading a SQLite store needs loopscope-core's `sqlite` feature …".
pub(crate) fn refusal(path: &Path) -> crate::Error {
    crate::Error::new(
        crate::ErrorKind::UnsupportedFormat,
        format!(
            "{}: {}",
            crate::sanitize::path(path),
            crate::formats::feature_off("sqlite", "a SQLite store")
        ),
    )
}
