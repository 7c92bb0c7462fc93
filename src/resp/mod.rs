//! RESP: the request parser and the reply writer.
//!
//! Depends on nothing else in the crate. The parser works on a caller-owned
//! read buffer and yields argument ranges; the writer appends to a caller-owned
//! output buffer. Neither does I/O.

pub mod parse;
pub mod reply;

pub use parse::{parse_request, parse_request_into, Frame, Limits, Parsed, ProtocolError};
pub use reply::{format_double, Reply};
