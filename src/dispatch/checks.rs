//! The checks a command passes before it runs or is queued
//! ([`precheck`]): unknown command, AUTH, arity, subcommand, ACL, MULTI,
//! cluster routing, a full disk, a busy script, and the connection's modes.

use std::sync::atomic::Ordering;

use bytes::Bytes;

use super::cluster;
use crate::client::Client;
use crate::cmd::{self, CommandSpec, Req};

/// Redis's refusal of writes after a failed AOF write; Basalt's WAL is its AOF.
const MISCONF: &str = "MISCONF Errors writing to the AOF file: No space left on device";

/// What a batch's commands are checked against.
#[derive(Clone, Copy)]
pub(super) struct Gate<'a> {
    pub(super) requirepass: bool,
    /// The disk guard refuses writes (`storage::disk`).
    pub(super) writes_refused: bool,
    /// Scripts running anywhere: a busy one refuses most commands.
    pub(super) scripts: &'a crate::script::busy::Board,
    /// Another client's script holds the transaction gate and let this
    /// command through only to be refused (`coord::gate::admit`).
    pub(super) held: bool,
    /// Cluster mode: the checks of `cluster` run.
    pub(super) cluster: Option<&'a crate::global::Global>,
    pub(super) global: &'a crate::global::Global,
}

/// Checks done before a command runs: unknown, auth, arity, subcommand,
/// and writes while the disk is full (Redis's `MISCONF` after a failed AOF
/// write, which refuses PING too, so health checks notice). A request that
/// passes comes back resolved ([`Req`]: every later step reads it); one
/// that fails, with its command's index when it named one.
pub(super) fn precheck(client: &Client, argv: &[Bytes], gate: Gate<'_>) -> Result<Req, (Option<Req>, String)> {
    let Some((idx, spec)) = cmd::lookup(&argv[0]) else {
        return Err((None, cmd::unknown_command_error(argv)));
    };
    let req = Req::resolve(idx, argv);
    let fail = |e: String| (Some(req), e);
    if gate.requirepass && !client.authed && !spec.no_auth() {
        return Err(fail("NOAUTH Authentication required.".into()));
    }
    if !CommandSpec::arity_ok(spec.arity, argv.len()) {
        return Err(fail(cmd::arity_error(spec.name)));
    }
    cmd::check_sub(spec, req.sub(), argv).map_err(fail)?;
    if !client.user.unrestricted() {
        if let Err(d) = cmd::acl::check(&client.user, idx, argv) {
            return Err(fail(cmd::acl::refuse(gate.global, client, idx, argv, d)));
        }
    }
    if spec.no_multi() && client.multi.is_some() {
        return Err(fail("ERR Command not allowed inside a transaction".into()));
    }
    if let Some(g) = gate.cluster {
        cluster::check(g, client, idx, spec, argv).map_err(fail)?;
    }
    if gate.writes_refused && (spec.is_write() || spec.name == "ping") {
        return Err(fail(MISCONF.into()));
    }
    if (gate.held || gate.scripts.busy_error().is_some()) && !client.in_script && !allowed_busy(req, argv) {
        let busy = gate.scripts.busy_error().unwrap_or(crate::script::busy::BUSY_EVAL);
        return Err(fail(busy.into()));
    }
    // MODES: subscribers and monitors (both have a mailbox); one check for
    // every other client.
    if client.pubsub.is_some() {
        // RESP2's subscribed mode (not inside EXEC: Redis checks only
        // what a client sends).
        if !client.resp3 && !client.in_exec && client.subscribed() && !allowed_subscribed(spec.name) {
            return Err(fail(not_in_subscribed_mode(req)));
        }
        // A MONITOR client is a replica to Redis: it may not touch keys.
        if (spec.is_write() || spec.is_readonly()) && client.info.monitor.load(Ordering::Relaxed) {
            return Err(fail("ERR Replica can't interact with the keyspace".into()));
        }
    }
    Ok(req)
}

/// What runs while a script is busy: commands flagged `allow_busy`
/// (SCRIPT KILL, FUNCTION KILL...) and SHUTDOWN NOSAVE, as Redis.
fn allowed_busy(req: Req, argv: &[Bytes]) -> bool {
    let spec = req.spec();
    req.flags().contains(&"allow_busy")
        || spec.flags.contains(&"allow_busy")
        || spec.name == "shutdown" && argv.len() == 2 && argv[1].first().is_some_and(|c| c.eq_ignore_ascii_case(&b'n'))
}

/// What a RESP2 client in subscribed mode may run.
fn allowed_subscribed(name: &str) -> bool {
    matches!(
        name,
        "subscribe" | "unsubscribe" | "psubscribe" | "punsubscribe" | "ssubscribe" | "sunsubscribe" | "ping" | "quit" | "reset"
    )
}

/// Redis's refusal in subscribed mode, naming the command by its
/// `fullname` (`config|get` for a subcommand).
fn not_in_subscribed_mode(req: Req) -> String {
    let name = req.fullname();
    format!("ERR Can't execute '{name}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context")
}
