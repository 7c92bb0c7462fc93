//! Running shard commands on the shard that owns their keys, with their
//! misses off the shard (`coord::misses`, docs/larger-than-memory.md).
//!
//! The connection runs its own shard's commands through [`run_here`]; a
//! remote shard runs a share of a pipeline through [`share_job`], which
//! answers at once when nothing had to wait, and otherwise continues as a
//! task of that shard from the first command that must wait (for the read
//! pool, or for a read in flight on its key), so the remote shard serves
//! its other clients meanwhile. Both keep the commands of one connection
//! in order and group their writes (`server::group`).

use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use bytes::Bytes;
use shards::Then;

use crate::client::ClientInfo;
use crate::clock::now_ms;
use crate::cmd::{self, CommandSpec, Ctx};
use crate::coord::misses::ROUNDS;
use crate::error::{CmdError, STREAM};
use crate::resp::{Deferred, Reply};
use crate::server::group::Grouped;
use crate::server::probe;
use crate::shard::ShardState;

/// Runs one shard command against `st` and records its stats.
#[inline]
pub fn run_shard_cmd(st: &ShardState, idx: usize, f: cmd::ShardFn, argv: &[Bytes], db: u8, client: &ClientInfo, r: &mut Reply) {
    run_shard_cmd_probed(st, idx, f, argv, db, client, r, false);
}

/// [`run_shard_cmd`], in probe mode when `probe` (`coord::misses`): false
/// when a read found its record on disk only, and then the command left
/// no reply and no stats (it must run again).
#[allow(clippy::too_many_arguments)]
pub fn run_shard_cmd_probed(
    st: &ShardState,
    idx: usize,
    f: cmd::ShardFn,
    argv: &[Bytes],
    db: u8,
    client: &ClientInfo,
    r: &mut Reply,
    probe: bool,
) -> bool {
    let start = Instant::now();
    let ctx = Ctx {
        shard: st,
        db,
        now_ms: now_ms(),
    };
    let at = r.buf.len();
    // A probe pass that misses is undone, its hit and miss counts too.
    let lookups = (st.ks.stats.hits.get(), st.ks.stats.misses.get());
    if probe {
        st.ks.store.set_probe(true);
    }
    // A bug in one handler must not take the shard down with it.
    let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&ctx, argv, r))).unwrap_or_else(|_| Err(internal_error(argv)));
    if probe {
        st.ks.store.set_probe(false);
        if st.ks.store.missed() {
            r.buf.truncate(at);
            st.ks.stats.hits.set(lookups.0);
            st.ks.stats.misses.set(lookups.1);
            return false;
        }
    }
    match &res {
        // The connection streams this reply; it records the command then.
        Err(e) if *e == STREAM => {
            r.deferred.push(Deferred {
                at: r.buf.len(),
                idx,
                argv: argv.to_vec(),
            });
            return true;
        }
        Err(e) => r.error(&e.0),
        Ok(()) => {}
    }
    finish_cmd(st, idx, argv, start, res.err().as_ref(), client);
    true
}

/// The commands after the one running, whose key records a fetch reads
/// ahead (`probe::ahead`).
#[derive(Clone, Copy)]
pub enum Next<'a> {
    Cmds(&'a [Vec<Bytes>]),
    Share(&'a [(usize, cmd::ShardFn, Vec<Bytes>)]),
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
    idx: usize,
    f: cmd::ShardFn,
    argv: &[Bytes],
    next: Next<'_>,
    db: u8,
    info: &ClientInfo,
    out: &mut Reply,
    group: &mut Option<Grouped<'a>>,
    several: bool,
    marks: &mut [(usize, usize)],
) {
    let spec = &cmd::TABLE[idx];
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
            close_group(group, out, marks);
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
    while !run_shard_cmd_probed(st, idx, f, argv, db, info, out, probe && round < ROUNDS) {
        // A record is on disk only: the pool reads it (and the next
        // commands' records) while this shard serves other clients; then
        // the command runs again.
        round += 1;
        close_group(group, out, marks);
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
/// reply that is produced out of order. `marks` (reply ends) follow the
/// rewrite of replies whose writes were lost.
pub fn close_group(group: &mut Option<Grouped>, out: &mut Reply, marks: &mut [(usize, usize)]) {
    if let Some(g) = group.take() {
        g.end(out, marks);
    }
}

/// Notes the next command in the open group (opening one), when the batch
/// has several commands: a lone command gains nothing from a group.
pub fn join_group<'a>(group: &mut Option<Grouped<'a>>, st: &'a ShardState, out: &Reply, several: bool) {
    if several {
        group.get_or_insert_with(|| Grouped::begin(st)).before(out);
    }
}

/// One shard's share of a pipeline: (command index, handler, argv).
pub type Share = Vec<(usize, cmd::ShardFn, Vec<Bytes>)>;

/// What a shard sends back for its share: the reply bytes, for each
/// command where its bytes end and how many deferred replies there were by
/// then, and the deferred replies.
pub struct ShareOut {
    pub buf: Vec<u8>,
    pub marks: Vec<(usize, usize)>,
    pub deferred: Vec<Deferred>,
}

/// Runs a share on `st` (the shard that owns its keys), for
/// `Shard::invoke_on_then`: at once while no command has to wait, in one
/// group; from the first that must wait (a probe that missed, a write on a
/// held or cold key), as a task of `st`'s shard that runs the rest with
/// [`run_here`].
pub fn share_job(st: &Rc<ShardState>, share: Share, db: u8, resp3: bool, info: &std::sync::Arc<ClientInfo>) -> Then<ShareOut> {
    let mut r = Reply::new(resp3);
    let mut marks = Vec::with_capacity(share.len());
    let tiered = st.ks.store.tiered();
    let mut g = (share.len() > 1).then(|| Grouped::begin(st));
    let mut from = share.len();
    for (k, (idx, f, argv)) in share.iter().enumerate() {
        let spec = &cmd::TABLE[*idx];
        let probe = probe::probes(st, spec);
        if tiered && !probe && must_wait(st, spec, argv, db) {
            from = k;
            break;
        }
        if let Some(g) = g.as_mut() {
            g.before(&r);
        }
        if !run_shard_cmd_probed(st, *idx, *f, argv, db, info, &mut r, probe) {
            // Its wanted keys are asked again by its next run.
            st.ks.store.take_wanted();
            from = k;
            break;
        }
        marks.push((r.buf.len(), r.deferred.len()));
    }
    if let Some(g) = g {
        g.end(&mut r, &mut marks);
    }
    if from == share.len() {
        return Then::Now(ShareOut {
            buf: r.buf,
            marks,
            deferred: r.deferred,
        });
    }
    let (st, info) = (st.clone(), info.clone());
    Then::Later(Box::pin(async move {
        let several = share.len() > 1;
        let mut group = None;
        for k in from..share.len() {
            let (idx, f, argv) = &share[k];
            let next = Next::Share(&share[k + 1..]);
            run_here(&st, *idx, *f, argv, next, db, &info, &mut r, &mut group, several, &mut marks).await;
            marks.push((r.buf.len(), r.deferred.len()));
        }
        close_group(&mut group, &mut r, &mut marks);
        ShareOut {
            buf: r.buf,
            marks,
            deferred: r.deferred,
        }
    }))
}

/// Records a finished command: commandstats, latency histogram, errorstats,
/// slow log and latency monitor.
#[inline]
pub fn finish_cmd(st: &ShardState, idx: usize, argv: &[Bytes], start: Instant, err: Option<&CmdError>, client: &ClientInfo) {
    let ns = start.elapsed().as_nanos() as u64;
    st.record(idx, ns, err.is_some());
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
