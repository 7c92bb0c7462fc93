//! MONITOR (issue 15): every command any shard runs, as one line to each
//! monitoring client, in Redis's format:
//! `+<seconds>.<micros> [<db> <addr>] "arg" "arg"...`.
//!
//! A command is shown after it ran (Redis's `call` feeds monitors then),
//! from `dispatch::finish_cmd`, whichever shard ran it; commands refused
//! before running (unknown, arity, NOAUTH) are not shown, nor admin
//! commands (CONFIG, DEBUG, CLIENT LIST...), as Redis hides them. AUTH's
//! and HELLO AUTH's credentials are shown as `(redacted)`. Lines travel
//! through the monitor's mailbox (`crate::pubsub`), like messages.

use std::sync::atomic::Ordering;

use bytes::Bytes;

use super::{commands, CommandSpec, Conn};
use crate::client::ClientInfo;
use crate::clock::now_us;
use crate::error::{CmdError, CmdResult};
use crate::global::Global;
use crate::monitor::redacted;
use crate::resp::Reply;

/// MONITOR's declaration (`cmd::table` has the line format).
#[rustfmt::skip]
pub(super) const COMMANDS: &[CommandSpec] = commands! {
    "monitor" 1 [admin noscript loading stale] 0 0 0 Conn(monitor) server "1.0.0" "Listens for all requests received by the server in real-time.";
};

/// MONITOR: the connection gets every command's line from now on.
pub async fn monitor(mut c: Conn<'_>, _: &[Bytes], r: &mut Reply) -> CmdResult {
    if c.client.in_exec {
        return Err(CmdError::new("ERR MONITOR isn't allowed for DENY BLOCKING client"));
    }
    // As Redis: a second MONITOR is ignored, without a reply.
    if c.client.info.monitor.load(Ordering::Relaxed) {
        return Ok(());
    }
    let g = c.st().global.clone();
    let me = super::pubsub::subs_of(&mut c).me.clone();
    c.client.info.monitor.store(true, Ordering::Relaxed);
    g.pubsub.monitor(&me);
    r.ok();
    Ok(())
}

/// Whether MONITOR leaves the command out: admin commands (or admin
/// subcommands, CLIENT LIST, CONFIG GET...), as Redis's `call`.
fn hidden(spec: &CommandSpec, argv: &[Bytes]) -> bool {
    spec.flags.contains(&"admin")
        || spec
            .subcommand_index(argv)
            .is_some_and(|s| spec.subcommands[s].flags.contains(&"admin"))
}

/// Appends `arg` quoted as Redis's `sdscatrepr`.
fn quote(out: &mut Vec<u8>, arg: &[u8]) {
    out.push(b'"');
    for &b in arg {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'"' => out.extend_from_slice(b"\\\""),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            7 => out.extend_from_slice(b"\\a"),
            8 => out.extend_from_slice(b"\\b"),
            0x20..=0x7e => out.push(b),
            _ => out.extend_from_slice(format!("\\x{b:02x}").as_bytes()),
        }
    }
    out.push(b'"');
}

/// One MONITOR line (without the `+` and the line end).
fn line(now_us: u64, db: u8, addr: &str, argv: &[Bytes]) -> Bytes {
    let mut out = format!("{}.{:06} [{db} {addr}]", now_us / 1_000_000, now_us % 1_000_000).into_bytes();
    for (arg, hide) in argv.iter().zip(redacted(argv)) {
        out.push(b' ');
        if hide {
            out.extend_from_slice(b"\"(redacted)\"");
        } else {
            quote(&mut out, arg);
        }
    }
    Bytes::from(out)
}

/// Shows a command that just ran to the monitors (the caller checked
/// `PubSub::monitored` first: one atomic load per command).
#[cold]
pub fn feed(g: &Global, spec: &CommandSpec, argv: &[Bytes], client: &ClientInfo) {
    if hidden(spec, argv) {
        return;
    }
    let db = client.db.load(Ordering::Relaxed);
    g.pubsub.feed(line(now_us(), db, &client.addr, argv));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<Bytes> {
        a.iter().map(|s| Bytes::copy_from_slice(s.as_bytes())).collect()
    }

    #[test]
    fn lines_quote_as_sdscatrepr() {
        let l = line(1_700_000_000_000_042, 3, "127.0.0.1:5000", &args(&["set", "k", "a b\"c\n\\\u{1}"]));
        assert_eq!(
            &l[..],
            &b"1700000000.000042 [3 127.0.0.1:5000] \"set\" \"k\" \"a b\\\"c\\n\\\\\\x01\""[..]
        );
    }
}
