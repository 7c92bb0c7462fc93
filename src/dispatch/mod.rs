//! Dispatch: what happens to a parsed request between the connection loop
//! (`server::conn`, which only moves bytes) and a handler.
//!
// Hot path: everything here runs per request. No allocation per argument,
// no logging per command, one cross-shard message per run of consecutive
// commands for the same remote shard.
//
//! [`execute`] takes a batch (every complete request of one read) and, in
//! order, for each request:
//! 1. checks it ([`precheck`]: unknown command, AUTH, arity, subcommand,
//!    in cluster mode the slots of its keys (`cluster`), the disk guard)
//!    and resolves it once into a [`Req`] (command, subcommand, stats
//!    slot, its first key's hash slot) that every later step reads;
//! 2. routes it by its declaration (`cmd::Exec`): a `Shard` command to the
//!    shard owning its first key ([`target_of`]); a `Conn` command runs
//!    right here, in the connection's task; a `Script` (EVAL, FCALL) on
//!    its keys' shard in one step, or behind the transaction gate
//!    (`script`, `scriptco`, `gated`; docs/cross-shard.md, "Scripts");
//! 3. runs it: a local shard command through [`run_here`] (write groups,
//!    misses off the shard: `probe`, `group`); a run of pipelined shard
//!    commands for another shard as one message ([`share_job`] runs it
//!    there), for several shards as one message per shard ([`spread`]); a
//!    GET of another shard's key from here (`probe::peer_get`);
//! 4. produces the replies handlers left to the connection ([`Later`]: a
//!    collection too big to answer on its shard streams from here), at
//!    their places in the reply order;
//! 5. records stats, slow log and latency ([`finish_cmd`]).
//!
//! [`run_here`] and [`share_job`] run shard commands on the shard that
//! owns their keys, with their misses off the shard (`coord::misses`,
//! docs/larger-than-memory.md). `share_job` answers at once when nothing
//! had to wait, and otherwise continues as a task of that shard from the
//! first command that must wait (for the read pool, or for a read in
//! flight on its key), so the remote shard serves its other clients
//! meanwhile. Both keep the commands of one connection in order and group
//! their writes (`group`).
//!
//! Connection modes, in [`execute`]'s loop right after the precheck
//! (marked `MODES` there):
//! - **MULTI/EXEC**: a client in MULTI queues the checked request instead
//!   of running it (a precheck error marks the transaction failed, as
//!   Redis's EXECABORT); EXEC (`exec`) runs a queue whose keys all
//!   belong to one shard as one isolated job there, and any other queue as
//!   one batch through this same loop behind the transaction gate
//!   (`coord::gate`: no other client's command runs meanwhile). Every
//!   batch counts itself on the gate, and each command first waits while
//!   another client's EXEC holds it.
//! - **Blocked clients** (BLPOP, BZPOPMIN, XREAD BLOCK): a `Conn` handler
//!   that parks on its keys' shards; nothing here changes, except that a
//!   blocked connection does not read its next requests until woken.
//! - **Pub/sub mode** (RESP2): a subscribed client may run only
//!   (P|S)SUBSCRIBE, (P|S)UNSUBSCRIBE, PING, QUIT and RESET; any other
//!   command gets Redis's "Can't execute ..." error here ([`precheck`]).
//! - **MONITOR**: a monitoring client may not run key commands (Redis's
//!   "Replica can't interact with the keyspace", in [`precheck`]); every
//!   command that ran is shown to the monitors from [`finish_cmd`].

mod checks;
pub mod cluster;
mod exec;
mod gated;
pub mod group;
pub mod probe;
mod script;
mod scriptco;
mod scriptjob;
mod spread;

use std::rc::Rc;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use futures_lite::FutureExt;
use shards::{Shard, Then};

use crate::client::{Client, ClientInfo};
use crate::clock::now_ms;
use crate::cmd::{self, CommandSpec, ConnFn, Ctx, Exec, Req};
use crate::coord::misses::ROUNDS;
use crate::error::CmdError;
use crate::resp::Reply;
use crate::shard::ShardState;
use checks::{precheck, Gate};
pub use group::Deferred;
use group::Grouped;

/// A reply a shard handler left to the connection (`cmd::Ctx::later`):
/// `f` produces it in the connection's task, at byte `at` of the reply
/// buffer it belongs in; the command's stats are recorded then.
pub struct Later {
    pub at: usize,
    pub req: Req,
    pub argv: Vec<Bytes>,
    pub f: ConnFn,
}

/// Produces the replies handlers left to the connection, in order, each at
/// its place in `bytes` (a shard's reply buffer, appended to `out`).
async fn splice_later(
    shard: &Rc<Shard<ShardState>>,
    st: &ShardState,
    client: &mut Client,
    bytes: &[u8],
    later: Vec<Later>,
    out: &mut Reply,
) {
    let mut at = 0;
    for l in later {
        let to = l.at.min(bytes.len()).max(at);
        out.buf.extend_from_slice(&bytes[at..to]);
        at = to;
        run_later(shard, st, client, l, out).await;
    }
    out.buf.extend_from_slice(&bytes[at..]);
}

/// Produces one reply a shard handler left to the connection, at the end
/// of `out`.
async fn run_later(shard: &Rc<Shard<ShardState>>, st: &ShardState, client: &mut Client, l: Later, out: &mut Reply) {
    let start = crate::clock::start();
    let res = std::panic::AssertUnwindSafe((l.f)(cmd::Conn { shard, client }, &l.argv, out))
        .catch_unwind()
        .await
        .unwrap_or_else(|_| Err(internal_error(&l.argv)));
    if let Err(e) = &res {
        out.error(&e.0);
    }
    finish_cmd(st, l.req, &l.argv, start, res.err().as_ref(), &client.info);
}

/// Runs a batch of requests in order, replies into `out` in the same order.
pub async fn execute(shard: &Rc<Shard<ShardState>>, client: &mut Client, cmds: &mut [Vec<Bytes>], out: &mut Reply) {
    run_batch(shard, client, cmds, out, false).await;
}

/// [`execute`] for a connection's own batch: the writes its last run of
/// commands here staged stay held for the loop iteration's one write
/// (`storage::group`, "Turns"). The connection calls `Keyspace::end_turn`
/// and then [`Deferred::settle`] before its replies leave.
pub async fn execute_turn(
    shard: &Rc<Shard<ShardState>>,
    client: &mut Client,
    cmds: &mut [Vec<Bytes>],
    out: &mut Reply,
) -> Option<Deferred> {
    run_batch(shard, client, cmds, out, true).await
}

async fn run_batch(
    shard: &Rc<Shard<ShardState>>,
    client: &mut Client,
    cmds: &mut [Vec<Bytes>],
    out: &mut Reply,
    turn: bool,
) -> Option<Deferred> {
    let st = shard.state();
    let g = &st.global;
    let gate = Gate {
        requirepass: !g.acl.default_open(),
        writes_refused: g.engine.disk.refused(),
        scripts: &g.script_board,
        held: false,
        cluster: g.cluster.enabled.then_some(&**g),
        global: g,
    };
    // The user again when an ACL changed since this client last looked.
    let generation = g.acl.generation();
    if client.acl_gen != generation {
        if let Some(u) = g.acl.get(&client.user.name) {
            client.user = u;
        }
        client.acl_gen = generation;
    }
    let here = shard.id();
    let n = shard.count();
    // Once per batch, as Redis sets `lastinteraction` once per read
    // (CLIENT LIST's idle): a clock read per command was a GET's cost.
    client.info.last_active_ms.store(now_ms(), Ordering::Relaxed);
    // Counted as running while it runs: a multi-shard EXEC waits for it.
    st.gate.enter();
    let _running = Running(st);
    // Consecutive commands run here share one write (`group`); the group
    // closes before anything that awaits or replies out of order.
    let mut group: Option<Grouped> = None;
    let mut later = Vec::new();
    if cmds.len() > 1 {
        // Most commands name their key first: its lines are fetched for all
        // of them at once, not waited on one command at a time.
        st.ks.prefetch(client.db, cmds.iter().filter(|c| c.len() > 1).map(|c| &c[1][..]));
    }
    let mut i = 0;
    while i < cmds.len() && !client.closing {
        // MODES: another client's multi-shard EXEC holds the gate.
        let mut gate = gate;
        if st.gate.closed_to(client.info.id) {
            close_group(&mut group, out, &mut [], &mut later);
            crate::coord::gate::admit(st, client.info.id).await;
            gate.held = st.gate.closed_to(client.info.id);
        }
        let checked = precheck(client, &cmds[i], gate);
        // Where a shard command runs (computed once: it hashes the key).
        let target = match &checked {
            Ok(req) if matches!(req.spec().exec, Exec::Shard(_)) => Some(req.owner(here, n)),
            _ => None,
        };
        if target != Some(here) {
            close_group(&mut group, out, &mut [], &mut later);
        }
        let req = match checked {
            Ok(req) => req,
            Err((req, msg)) => {
                if let Some(req) = req {
                    st.record_rejected(req.stat());
                }
                // As Redis's `rejectCommand`: the transaction is spoiled,
                // and a refused EXEC ends it with the reason.
                if let Some(m) = client.multi.as_mut() {
                    m.dirty = true;
                    if req.is_some_and(|r| r.spec().name == "exec") {
                        client.end_multi();
                        if cluster::is_redirect(&msg) {
                            st.record_error(&msg);
                            out.error(&msg);
                            i += 1;
                            continue;
                        }
                        let why = msg.strip_prefix("ERR ").unwrap_or(&msg);
                        let e = format!("EXECABORT Transaction discarded because of: {why}");
                        st.record_error(&e);
                        out.error(&e);
                        i += 1;
                        continue;
                    }
                }
                st.record_error(&msg);
                out.error(&msg);
                i += 1;
                continue;
            }
        };
        let spec = req.spec();
        // MODES: CLIENT PAUSE parks the command (not its checks' errors).
        if crate::pause::any() {
            let write = may_replicate(st, spec, client, &cmds[i]);
            if crate::pause::blocks(write) {
                close_group(&mut group, out, &mut [], &mut later);
                wait_unpaused(st, client, write).await;
            }
        }
        if matches!(spec.name, "object" | "debug") && !st.peer_touches.borrow().is_empty() {
            close_group(&mut group, out, &mut [], &mut later);
            crate::expire::send_peer_touches(shard).await;
        }
        // MODES: MULTI queueing here; the pub/sub command filter is in `precheck`.
        client.info.last_cmd.store(req.code(), Ordering::Relaxed);
        if client.multi.is_some() && (spec.name == "exec" || !cmd::multi::runs_in_multi(spec.name)) {
            close_group(&mut group, out, &mut [], &mut later);
            let argv = std::mem::take(&mut cmds[i]);
            if spec.name == "exec" {
                exec::exec(shard, client, req, &argv, out).await;
            } else {
                exec::queue(client, argv, out);
            }
            i += 1;
            continue;
        }
        match spec.exec {
            Exec::Shard(f) => {
                let target = target.unwrap_or(here);
                if target == here {
                    // In a turn even a lone command's write waits for the
                    // loop iteration's one write.
                    let several = cmds.len() > 1 || turn;
                    let (cur, next) = cmds[i..].split_at(1);
                    let next = Next::Cmds(next);
                    let caller = Caller {
                        db: client.db,
                        info: &client.info,
                        several,
                    };
                    run_here(st, req, f, &cur[0], next, caller, out, &mut later, &mut group, &mut []).await;
                    // A reply left to the connection belongs right here, at
                    // the end of `out`; it is produced after an await, so
                    // the group closes first.
                    if !later.is_empty() {
                        close_group(&mut group, out, &mut [], &mut later);
                        for l in std::mem::take(&mut later) {
                            run_later(shard, st, client, l, out).await;
                        }
                    }
                    i += 1;
                    continue;
                }
                // A GET of another shard's key reads that shard's column
                // family from here: no hop (see `types::bigstr::peek`).
                // Not inside EXEC: the owner's transaction holds its writes
                // (`storage::tx`), and only the owner reads them.
                if spec.name == "get" && !client.in_exec {
                    if let Some(store) = st.peers.get(target) {
                        let start = crate::clock::start();
                        let next = cmds[i + 1..].iter().map(Vec::as_slice);
                        let found = probe::peer_get(store, client.db, &cmds[i][1], next, n, out).await;
                        if let Some(res) = found {
                            match &res {
                                Ok(hit) => {
                                    st.ks.note_lookup(client.db, &cmds[i][1], *hit);
                                    st.ks.end_lookups(true);
                                    let mut touches = st.peer_touches.borrow_mut();
                                    if *hit && touches.len() < crate::shard::PEER_TOUCHES && !client.info.no_touch.load(Ordering::Relaxed) {
                                        touches.push((target, client.db, cmds[i][1].clone()));
                                    }
                                }
                                Err(e) => out.error(&e.0),
                            }
                            finish_cmd(st, req, &cmds[i], start, res.as_ref().err(), &client.info);
                            i += 1;
                            continue;
                        }
                    }
                }
                // The run of shard commands from here. Spread over several
                // shards, every shard gets its share at once and replies go
                // back in order; else it is one message to `target`.
                let seg = spread::segment(client, cmds, i, (req, f, target), gate, here, n);
                let end = i + seg.len();
                if seg.iter().any(|(_, _, t)| *t != target) {
                    spread::run(shard, client, &mut cmds[i..end], seg, out).await;
                    i = end;
                    continue;
                }
                let batch: Vec<_> = seg
                    .into_iter()
                    .zip(cmds[i..end].iter_mut())
                    .map(|((idx, f, _), argv)| (idx, f, std::mem::take(argv)))
                    .collect();
                let (db, resp3, info) = (client.db, client.resp3, client.info.clone());
                let o = shard
                    .invoke_on_then(target, move |remote: &Rc<ShardState>| share_job(remote, batch, db, resp3, &info))
                    .await;
                if o.later.is_empty() {
                    out.buf.extend_from_slice(&o.buf);
                } else {
                    splice_later(shard, st, client, &o.buf, o.later, out).await;
                }
                i = end;
            }
            Exec::Conn(_) | Exec::Script(_) => {
                let argv = std::mem::take(&mut cmds[i]);
                let start = crate::clock::start();
                let run = match spec.exec {
                    Exec::Script(kind) => Box::pin(script::eval(shard, client, kind, &argv, out)),
                    Exec::Conn(f) => f(cmd::Conn { shard, client }, &argv, out),
                    // Not in this arm (shard commands are routed above).
                    Exec::Shard(_) => Box::pin(async { Ok(()) }),
                };
                let res = std::panic::AssertUnwindSafe(run)
                    .catch_unwind()
                    .await
                    .unwrap_or_else(|_| Err(internal_error(&argv)));
                if let Err(e) = &res {
                    out.error(&e.0);
                }
                finish_cmd(st, req, &argv, start, res.err().as_ref(), &client.info);
                // Back in its place: the connection reuses the vector.
                cmds[i] = argv;
                i += 1;
            }
        }
    }
    let deferred = match group.take() {
        Some(g) if turn => Some(g.defer()),
        g => {
            close_group(&mut { g }, out, &mut [], &mut later);
            None
        }
    };
    st.ks.pay_expiry_debt(now_ms());
    deferred
}

/// Whether CLIENT PAUSE WRITE holds the command back: a write, PUBLISH
/// and SPUBLISH (Redis's `may_replicate`), an EXEC whose queue has one, and
/// a script that may write.
fn may_replicate(st: &ShardState, spec: &CommandSpec, client: &Client, argv: &[Bytes]) -> bool {
    if let Exec::Script(kind) = spec.exec {
        return script::may_write(st, kind, argv);
    }
    let writes = |s: &CommandSpec| s.is_write() || matches!(s.name, "publish" | "spublish");
    if spec.name == "exec" {
        return client
            .multi
            .as_ref()
            .is_some_and(|m| m.queue.iter().any(|a| cmd::lookup(&a[0]).is_some_and(|(_, s)| writes(s))));
    }
    writes(spec)
}

/// Parks a command until CLIENT PAUSE no longer holds it, uncounted on the
/// transaction gate meanwhile (and admitted by it again after).
async fn wait_unpaused(st: &ShardState, client: &Client, write: bool) {
    st.gate.leave();
    client.info.paused.store(true, Ordering::Relaxed);
    while crate::pause::blocks(write) && !client.info.killed.load(Ordering::Relaxed) {
        shards::rt::sleep(std::time::Duration::from_millis(2)).await;
    }
    client.info.paused.store(false, Ordering::Relaxed);
    st.gate.enter();
    if st.gate.closed_to(client.info.id) {
        crate::coord::gate::admit(st, client.info.id).await;
    }
}

/// Ends a batch's count on the transaction gate, also when it unwinds.
struct Running<'a>(&'a ShardState);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.gate.leave();
    }
}

/// Who a command runs for: the connection's db and client, and whether
/// its batch has several commands (a lone command gets no write group).
#[derive(Clone, Copy)]
pub struct Caller<'a> {
    pub db: u8,
    pub info: &'a ClientInfo,
    pub several: bool,
}

/// Runs one shard command against `st` and records its stats, in probe
/// mode when `probe` (`coord::misses`): false when a read found its record
/// on disk only, and then the command left no reply and no stats (it must
/// run again). A reply the handler leaves to the connection (`Ctx::later`)
/// goes into `later`, at its place in `r`.
#[allow(clippy::too_many_arguments)]
pub fn run_shard_cmd(
    st: &ShardState,
    req: Req,
    f: cmd::ShardFn,
    argv: &[Bytes],
    db: u8,
    client: &ClientInfo,
    r: &mut Reply,
    later: &mut Vec<Later>,
    probe: bool,
) -> bool {
    if st.script_paused.get() {
        // A busy script of this shard is between two slices.
        r.error(st.global.script_board.busy_error().unwrap_or(crate::script::busy::BUSY_EVAL));
        return true;
    }
    let start = crate::clock::start();
    let ctx = Ctx::new(st, db, start.now_ms);
    let at = r.buf.len();
    // A probe pass that misses is undone, its hit and miss counts too.
    let lookups = (st.ks.stats.hits.get(), st.ks.stats.misses.get());
    if probe {
        st.ks.store.set_probe(true);
    }
    let spec = req.spec();
    if spec.looks_up() {
        st.ks.begin_lookups();
    }
    // Its key reads update the keys' access times (OBJECT IDLETIME/FREQ).
    st.ks
        .access
        .begin(spec.touches() && !client.no_touch.load(Ordering::Relaxed), ctx.now_ms);
    // Its first key's records are encoded with the slot resolved already.
    let key = usize::try_from(spec.first_key).ok().and_then(|i| argv.get(i));
    let hint = req.slot().zip(key).map(|(s, k)| crate::slot::Hint::set(k, s));
    // A bug in one handler must not take the shard down with it.
    let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&ctx, argv, r))).unwrap_or_else(|_| Err(internal_error(argv)));
    drop(hint);
    st.ks.access.end();
    if probe {
        st.ks.store.set_probe(false);
        if st.ks.store.missed() {
            r.buf.truncate(at);
            st.ks.stats.hits.set(lookups.0);
            st.ks.stats.misses.set(lookups.1);
            st.ks.end_lookups(false);
            return false;
        }
    }
    st.ks.end_lookups(true);
    match &res {
        Err(e) => r.error(&e.0),
        Ok(()) => {
            // The connection produces this reply; it records the command then.
            if let Some(f) = ctx.take_later() {
                later.push(Later {
                    at: r.buf.len(),
                    req,
                    argv: argv.to_vec(),
                    f,
                });
                return true;
            }
        }
    }
    finish_cmd(st, req, argv, start, res.err().as_ref(), client);
    true
}

/// The commands after the one running, whose key records a fetch reads
/// ahead (`probe::ahead`).
#[derive(Clone, Copy)]
pub enum Next<'a> {
    Cmds(&'a [Vec<Bytes>]),
    Share(&'a [(Req, cmd::ShardFn, Vec<Bytes>)]),
}

impl<'a> Next<'a> {
    fn argvs(self) -> Box<dyn Iterator<Item = &'a [Bytes]> + 'a> {
        match self {
            Next::Cmds(c) => Box::new(c.iter().map(Vec::as_slice)),
            Next::Share(s) => Box::new(s.iter().map(|(_, _, a)| a.as_slice())),
        }
    }
}

/// Runs shard command `argv` on its own shard `st`. A read-only command
/// probes: the records it finds on disk only are read by the pool (with
/// those of the commands in `next`) while this shard serves others, and it
/// runs again. A write first waits for the reads in flight on its keys,
/// then has its key records fetched if they are on disk only, holding them
/// so later writes wait. `group` is the caller's open group: closed before
/// an await (its reply ends in `marks` follow the rewrite) and reopened.
#[allow(clippy::too_many_arguments)]
pub async fn run_here<'a>(
    st: &'a ShardState,
    req: Req,
    f: cmd::ShardFn,
    argv: &[Bytes],
    next: Next<'_>,
    caller: Caller<'_>,
    out: &mut Reply,
    later: &mut Vec<Later>,
    group: &mut Option<Grouped<'a>>,
    marks: &mut [(usize, usize)],
) {
    let Caller { db, info, several } = caller;
    let spec = req.spec();
    join_group(group, st, out, several);
    let probe = probe::probes(st, spec);
    let mut hold = None;
    if !probe && st.ks.store.tiered() {
        let held = probe::held(st, spec, argv, db);
        let cold = if st.ks.store.check_writes() {
            probe::cold_keys(st, spec, argv, db)
        } else {
            Vec::new()
        };
        if held || !cold.is_empty() {
            close_group(group, out, marks, later);
            if held {
                probe::after_reads(st, spec, argv, db).await;
            }
            if !cold.is_empty() {
                hold = Some(probe::hold(st, spec, argv, db));
                probe::fetch(st, cold, next.argvs(), db).await;
            }
            join_group(group, st, out, several);
        }
    }
    let mut round = 0;
    while !run_shard_cmd(st, req, f, argv, db, info, out, later, probe && round < ROUNDS) {
        // A record is on disk only: the pool reads it (and the next
        // commands' records) while this shard serves other clients; then
        // the command runs again.
        round += 1;
        close_group(group, out, marks, later);
        hold.get_or_insert_with(|| probe::hold(st, spec, argv, db));
        probe::fetch(st, st.ks.store.take_wanted(), next.argvs(), db).await;
        join_group(group, st, out, several);
    }
}

/// Whether `argv` would wait before it runs here: a write whose keys a
/// read in flight holds, or whose key records are on disk only.
fn must_wait(st: &ShardState, spec: &CommandSpec, argv: &[Bytes], db: u8) -> bool {
    probe::held(st, spec, argv, db) || (st.ks.store.check_writes() && !probe::cold_keys(st, spec, argv, db).is_empty())
}

/// Writes and closes the open group, if any: before an await, or before a
/// reply that is produced out of order. `marks` (reply ends) and the
/// places of `later` follow the rewrite of replies whose writes were lost.
pub fn close_group(group: &mut Option<Grouped>, out: &mut Reply, marks: &mut [(usize, usize)], later: &mut [Later]) {
    if let Some(g) = group.take() {
        g.end(out, marks, later);
    }
}

/// Notes the next command in the open group (opening one), when the batch
/// has several commands: a lone command gains nothing from a group.
pub fn join_group<'a>(group: &mut Option<Grouped<'a>>, st: &'a ShardState, out: &Reply, several: bool) {
    if several {
        group.get_or_insert_with(|| Grouped::begin(st)).before(out);
    }
}

/// One shard's share of a pipeline: (request, handler, argv).
pub type Share = Vec<(Req, cmd::ShardFn, Vec<Bytes>)>;

/// What a shard sends back for its share: the reply bytes, for each
/// command where its bytes end and how many replies left to the
/// connection there were by then, and those replies.
pub struct ShareOut {
    pub buf: Vec<u8>,
    pub marks: Vec<(usize, usize)>,
    pub later: Vec<Later>,
}

/// Runs a share on `st` (the shard that owns its keys), for
/// `Shard::invoke_on_then`: at once while no command has to wait, in one
/// group; from the first that must wait (a probe that missed, a write on a
/// held or cold key), as a task of `st`'s shard that runs the rest with
/// [`run_here`].
pub fn share_job(st: &Rc<ShardState>, share: Share, db: u8, resp3: bool, info: &std::sync::Arc<ClientInfo>) -> Then<ShareOut> {
    let mut r = Reply::new(resp3);
    let mut later = Vec::new();
    let mut marks = Vec::with_capacity(share.len());
    let tiered = st.ks.store.tiered();
    // One command is a group too with the write tier on: only a group's
    // writes go through the tier, any other write applies all of it first.
    let mut g = (share.len() > 1 || st.ks.store.write_tier_on()).then(|| Grouped::begin(st));
    let mut from = share.len();
    for (k, (req, f, argv)) in share.iter().enumerate() {
        let spec = req.spec();
        let probe = probe::probes(st, spec);
        if tiered && !probe && must_wait(st, spec, argv, db) {
            from = k;
            break;
        }
        if let Some(g) = g.as_mut() {
            g.before(&r);
        }
        if !run_shard_cmd(st, *req, *f, argv, db, info, &mut r, &mut later, probe) {
            // Its wanted keys are asked again by its next run.
            st.ks.store.take_wanted();
            from = k;
            break;
        }
        marks.push((r.buf.len(), later.len()));
    }
    if let Some(g) = g {
        g.end(&mut r, &mut marks, &mut later);
    }
    st.ks.pay_expiry_debt(now_ms());
    if from == share.len() {
        return Then::Now(ShareOut { buf: r.buf, marks, later });
    }
    let (st, info) = (st.clone(), info.clone());
    Then::Later(Box::pin(async move {
        let several = share.len() > 1;
        let mut group = None;
        for k in from..share.len() {
            let (req, f, argv) = &share[k];
            let next = Next::Share(&share[k + 1..]);
            let caller = Caller { db, info: &info, several };
            run_here(&st, *req, *f, argv, next, caller, &mut r, &mut later, &mut group, &mut marks).await;
            marks.push((r.buf.len(), later.len()));
        }
        close_group(&mut group, &mut r, &mut marks, &mut later);
        ShareOut { buf: r.buf, marks, later }
    }))
}

/// Records a finished command: commandstats, latency histogram, errorstats,
/// slow log and latency monitor.
#[inline]
pub fn finish_cmd(st: &ShardState, req: Req, argv: &[Bytes], start: crate::clock::Started, err: Option<&CmdError>, client: &ClientInfo) {
    let ns = start.elapsed_ns();
    if st.global.pubsub.monitored() {
        cmd::monitor::feed(&st.global, req.spec(), argv, client);
    }
    st.record(req.stat(), ns, err.is_some());
    if let Some(e) = err {
        st.record_error(&e.0);
    }
    let cfg = &st.global.config;
    let us = ns / 1000;
    let slower_than = cfg.slowlog_slower_than.load(Ordering::Relaxed);
    if slower_than >= 0 && us >= slower_than as u64 {
        slow(st, argv, us, client);
    }
    let threshold = cfg.latency_monitor_threshold.load(Ordering::Relaxed);
    if threshold > 0 && us / 1000 >= threshold {
        st.global.latency.add("command", now_ms() / 1000, us / 1000);
    }
}

#[cold]
fn slow(st: &ShardState, argv: &[Bytes], us: u64, client: &ClientInfo) {
    let g = &st.global;
    let entry = crate::monitor::SlowEntry {
        id: g.slowlog_next_id.fetch_add(1, Ordering::Relaxed),
        unix_secs: now_ms() / 1000,
        micros: us,
        args: crate::monitor::slowlog_args(argv),
        addr: client.addr.clone(),
        name: ClientInfo::text(&client.name),
    };
    let max = g.config.slowlog_max_len.load(Ordering::Relaxed) as usize;
    crate::monitor::slowlog_push(&mut st.slowlog.borrow_mut(), entry, max);
}

/// The reply for a command whose handler panicked (logged; a bug to fix).
pub fn internal_error(argv: &[Bytes]) -> CmdError {
    tracing::error!(command = %String::from_utf8_lossy(&argv[0]), "command handler panicked");
    CmdError::new("ERR internal error while executing the command")
}
