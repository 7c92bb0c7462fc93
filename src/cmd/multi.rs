//! Transactions: MULTI, EXEC, DISCARD (issue 15).
//!
//! The connection's state lives in `client::Multi`. Queueing and EXEC's run
//! of the queue happen in the dispatcher (`dispatch::execute`), since EXEC
//! runs commands as a batch through the same loop; the handlers here are
//! what runs outside that: MULTI starting a queue, DISCARD dropping it, and
//! EXEC without MULTI.

use bytes::Bytes;

use super::{commands, CommandSpec, Conn};
use crate::error::{CmdError, CmdResult};
use crate::resp::Reply;

/// The transaction commands (`cmd::table` has the line format).
#[rustfmt::skip]
pub(super) const COMMANDS: &[CommandSpec] = commands! {
    "multi"   1 [noscript loading stale fast allow_busy] 0 0 0 Conn(multi)   transactions "1.2.0" "Starts a transaction.";
    "exec"    1 [noscript loading stale skip_slowlog]    0 0 0 Conn(exec)    transactions "1.2.0" "Executes all commands in a transaction.";
    "discard" 1 [noscript loading stale fast allow_busy] 0 0 0 Conn(discard) transactions "2.0.0" "Discards a transaction.";
};

/// EXEC's answer to a transaction a refused command spoiled.
pub const EXECABORT: &str = "EXECABORT Transaction discarded because of previous errors.";

/// The commands that run at once inside MULTI instead of being queued
/// (Redis's `processCommand`).
pub fn runs_in_multi(name: &str) -> bool {
    matches!(name, "exec" | "discard" | "multi" | "watch" | "quit" | "reset")
}

pub async fn multi(c: Conn<'_>, _: &[Bytes], r: &mut Reply) -> CmdResult {
    let client = c.client;
    if client.multi.is_some() {
        return Err(CmdError::new("ERR MULTI calls can not be nested"));
    }
    client.multi = Some(Default::default());
    client.info.multi.store(0, std::sync::atomic::Ordering::Relaxed);
    r.ok();
    Ok(())
}

pub async fn discard(c: Conn<'_>, _: &[Bytes], r: &mut Reply) -> CmdResult {
    match c.client.end_multi() {
        Some(_) => {
            r.ok();
            Ok(())
        }
        None => Err(CmdError::new("ERR DISCARD without MULTI")),
    }
}

/// EXEC outside MULTI; inside, the dispatcher runs the queue instead.
pub async fn exec(_: Conn<'_>, _: &[Bytes], _: &mut Reply) -> CmdResult {
    Err(CmdError::new("ERR EXEC without MULTI"))
}
