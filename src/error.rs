//! The one error type of command execution. Its text is the whole RESP error
//! line after `-`, code included (`ERR ...`, `WRONGTYPE ...`), so it maps to
//! the wire with no further decisions.

use std::borrow::Cow;

use crate::storage::StorageError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CmdError(pub Cow<'static, str>);

impl CmdError {
    pub fn new(s: impl Into<Cow<'static, str>>) -> Self {
        CmdError(s.into())
    }
}

impl From<StorageError> for CmdError {
    fn from(e: StorageError) -> Self {
        tracing::error!(error = %e, "storage error");
        if crate::storage::disk::is_no_space(&e.0) {
            // A full disk reads as Redis's failed-AOF-write error.
            return CmdError(Cow::Borrowed("MISCONF Errors writing to the AOF file: No space left on device"));
        }
        CmdError(Cow::Owned(format!("ERR storage error: {e}")))
    }
}

pub type CmdResult<T = ()> = Result<T, CmdError>;

pub const WRONGTYPE: CmdError = CmdError(Cow::Borrowed("WRONGTYPE Operation against a key holding the wrong kind of value"));
pub const NOT_INT: CmdError = CmdError(Cow::Borrowed("ERR value is not an integer or out of range"));
pub const NOT_FLOAT: CmdError = CmdError(Cow::Borrowed("ERR value is not a valid float"));
pub const SYNTAX: CmdError = CmdError(Cow::Borrowed("ERR syntax error"));
pub const OVERFLOW: CmdError = CmdError(Cow::Borrowed("ERR increment or decrement would overflow"));
pub const NO_SUCH_KEY: CmdError = CmdError(Cow::Borrowed("ERR no such key"));
pub const CORRUPT: CmdError = CmdError(Cow::Borrowed("ERR corrupt record in storage"));
pub const INVALID_STREAM_ID: CmdError = CmdError(Cow::Borrowed("ERR Invalid stream ID specified as stream command argument"));
pub const INVALID_EXPIRE: &str = "ERR invalid expire time in '{}' command";
pub const DB_INDEX: CmdError = CmdError(Cow::Borrowed("ERR DB index is out of range"));
pub const STRING_TOO_LONG: CmdError = CmdError(Cow::Borrowed("ERR string exceeds maximum allowed size (proto-max-bulk-len)"));

/// `ERR invalid expire time in '<cmd>' command`.
pub fn invalid_expire(cmd: &str) -> CmdError {
    CmdError(Cow::Owned(INVALID_EXPIRE.replace("{}", cmd)))
}
