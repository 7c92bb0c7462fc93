//! MULTI's queue and EXEC (issue 15; docs/cross-shard.md, "Transactions").
//!
//! EXEC runs a transaction one of two ways:
//! - **On one shard, isolated**, when every queued command is a shard
//!   command, or a multi-key command with a one-shard form
//!   (`cmd::multi::one_shard_form`: DEL, UNLINK, EXISTS, TOUCH, MGET, MSET,
//!   MSETNX), and all their keys belong to the same shard: the WATCH check and
//!   the whole queue run on that shard in one synchronous step, in one
//!   write group. No other command of that shard runs in between, and no
//!   write can slip between the WATCH check and the queue. A record on
//!   disk only is read in place (the step blocks the shard for it) instead
//!   of by the read pool; a read in flight on one of the keys is waited
//!   for before the step starts.
//! - **Otherwise, behind the transaction gate** (`coord::gate`; other
//!   connection commands, keys of several shards): no other client's
//!   command runs on any shard while the WATCH check and the queue run as
//!   a pipeline through [`execute`].
//!
//! Either way the transaction's writes reach RocksDB as one batch
//! (`storage::tx`): a crash keeps all of them or none. Should that write
//! fail (a full disk), nothing of the transaction is applied and EXEC
//! answers the error instead of the replies.

use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use shards::{Shard, Then};

use super::group::Grouped;
use super::{execute, finish_cmd, probe, run_shard_cmd, splice_later, Share, ShareOut};
use crate::client::{Client, ClientInfo, Watch};
use crate::clock::{self, now_ms};
use crate::cmd::{self, Exec, Req};
use crate::coord::gate;
use crate::error::CmdError;
use crate::resp::Reply;
use crate::shard::ShardState;
use crate::slot::owner;

/// Queues a checked command of a client in MULTI.
pub(super) fn queue(client: &mut Client, argv: Vec<Bytes>, out: &mut Reply) {
    if let Some(m) = client.multi.as_mut() {
        // A spoiled transaction keeps nothing: EXEC will refuse it.
        if !m.dirty {
            // Redis's multi-mem: the arguments and a pointer each.
            let bytes: usize = argv.iter().map(|a| a.len() + 8).sum();
            client.info.mem.multi.fetch_add(bytes as u64, Ordering::Relaxed);
            m.queue.push(argv);
            client.info.multi.store(m.queue.len() as i64, Ordering::Relaxed);
        }
    }
    out.simple("QUEUED");
}

/// EXEC of a client in MULTI: EXECABORT when a command was refused while
/// queueing, a null array when a watched key changed, else the queue's
/// replies as one array. Each command's stats, slow log and errors are its
/// own, as Redis's `call` records them inside EXEC. Blocking commands in it
/// answer at once (`Client::in_exec`).
pub(super) async fn exec(shard: &Rc<Shard<ShardState>>, client: &mut Client, req: Req, argv: &[Bytes], out: &mut Reply) {
    let st = shard.state();
    let start = crate::clock::start();
    let watch = client.watch.take();
    let Some(m) = client.end_multi() else { return };
    if m.dirty {
        let e = CmdError::new(cmd::multi::EXECABORT);
        out.error(&e.0);
        finish_cmd(st, req, argv, start, Some(&e), &client.info);
        return;
    }
    let mut queue = m.queue;
    // Every command of the transaction sees the time it started (`clock`;
    // behind the gate, the time it took the gate).
    let time = now_ms();
    // As Redis, the client shows as in MULTI (`flags=x multi=<n>`) while
    // EXEC runs its queue.
    client.info.multi.store(queue.len() as i64, Ordering::Relaxed);
    // A command the user may no longer run (the ACL changed since it was
    // queued) is refused when its turn comes: only the gated way checks
    // each command as it runs.
    let denied = !client.user.unrestricted()
        && queue
            .iter()
            .any(|a| cmd::lookup(&a[0]).is_some_and(|(i, _)| cmd::acl::check(&client.user, i, a).is_err()));
    let alone = if denied {
        None
    } else {
        one_shard(&mut queue, shard.id(), shard.count())
    };
    if let Some((target, share)) = alone {
        let count = share.len();
        let (db, resp3, info) = (client.db, client.resp3, client.info.clone());
        let done = shard
            .invoke_on_then(target, move |st: &Rc<ShardState>| isolated(st, share, db, resp3, info, watch, time))
            .await;
        match done {
            None => out.null_array(),
            Some(Err(e)) => {
                st.record_error(&e.0);
                out.error(&e.0);
            }
            Some(Ok(o)) => {
                out.array(count);
                if o.later.is_empty() {
                    out.buf.extend_from_slice(&o.buf);
                } else {
                    splice_later(shard, st, client, &o.buf, o.later, out).await;
                }
            }
        }
    } else {
        // Commands on several shards run behind the transaction gate: no
        // other client's command runs anywhere meanwhile (`coord::gate`).
        let gated = touches_data(&queue);
        let held = if gated {
            gate::close(shard, client.info.id).await;
            Some(gate::Held::new(shard))
        } else {
            None
        };
        let mut written = Ok(());
        let frozen = gated.then(|| clock::freeze_all(clock::wall_ms()));
        if watch.is_some_and(|w| w.spoiled(now_ms())) {
            // A watched key changed or expired: the transaction does not run.
            out.null_array();
        } else {
            let at = out.buf.len();
            out.array(queue.len());
            client.in_exec = true;
            Box::pin(execute(shard, client, &mut queue, out)).await;
            client.in_exec = false;
            if gated {
                // Every shard's writes in one batch (`storage::tx`).
                written = st.global.engine.write_tx();
                if let Err(e) = &written {
                    let e = CmdError::from(e.clone());
                    st.record_error(&e.0);
                    out.buf.truncate(at);
                    out.error(&e.0);
                }
            }
        }
        drop(frozen);
        if let Some(h) = held {
            h.open(written).await;
        }
    }
    client.info.multi.store(-1, Ordering::Relaxed);
    finish_cmd(st, req, argv, start, None, &client.info);
}

/// Whether a queue reads or writes data (a command with keys, or a
/// connection command that may reach other shards, as MSET or FLUSHALL);
/// a queue of PINGs and ECHOs needs no gate.
fn touches_data(queue: &[Vec<Bytes>]) -> bool {
    queue.iter().any(|argv| {
        cmd::lookup(&argv[0]).is_some_and(|(_, spec)| {
            spec.first_key > 0 || matches!(spec.exec, cmd::Exec::Conn(_) | cmd::Exec::Script(_)) && !matches!(spec.name, "ping" | "echo")
        })
    })
}

/// The handler a queued command runs with in the isolated step: a shard
/// command's own, or a multi-key command's one-shard form.
fn step_fn(spec: &cmd::CommandSpec) -> Option<cmd::ShardFn> {
    match spec.exec {
        Exec::Shard(f) => Some(f),
        Exec::Conn(_) => cmd::multi::one_shard_form(spec.name),
        Exec::Script(_) => None,
    }
}

/// The shard every queued command runs on and the queue as its share, when
/// every command has a step form (`step_fn`) and all their keys belong to
/// one shard.
fn one_shard(queue: &mut [Vec<Bytes>], here: usize, n: usize) -> Option<(usize, Share)> {
    let mut target = None;
    let mut reqs = Vec::with_capacity(queue.len());
    for argv in queue.iter() {
        let (idx, spec) = cmd::lookup(&argv[0])?;
        let f = step_fn(spec)?;
        // Checked when queued; checked again, as nothing else checks it here.
        if !cmd::CommandSpec::arity_ok(spec.arity, argv.len()) {
            return None;
        }
        let req = Req::resolve(idx, argv);
        let t = req.owner(here, n);
        if *target.get_or_insert(t) != t || spec.key_positions(argv.len()).any(|p| owner(&argv[p], n) != t) {
            return None;
        }
        reqs.push((req, f));
    }
    let share = reqs
        .into_iter()
        .zip(queue.iter_mut())
        .map(|((req, f), argv)| (req, f, std::mem::take(argv)))
        .collect();
    target.map(|t| (t, share))
}

/// Runs a one-shard transaction on `st`: waits (as a task of that shard)
/// while a read in flight holds one of its keys, then checks the WATCH and
/// runs the whole queue in one synchronous step and one write group. None
/// when the WATCH was spoiled; the error when the transaction's write failed.
fn isolated(
    st: &Rc<ShardState>,
    share: Share,
    db: u8,
    resp3: bool,
    info: Arc<ClientInfo>,
    watch: Option<Watch>,
    time: u64,
) -> Then<Option<Ran>> {
    if held(st, &share, db).is_none() {
        return Then::Now(run_all(st, &share, db, resp3, &info, watch, time));
    }
    let st = st.clone();
    Then::Later(Box::pin(async move {
        while let Some(k) = held(&st, &share, db) {
            let (req, _, argv) = &share[k];
            probe::after_reads(&st, req.spec(), argv, db).await;
        }
        run_all(&st, &share, db, resp3, &info, watch, time)
    }))
}

/// The first command of `share` whose keys a read in flight holds.
fn held(st: &ShardState, share: &Share, db: u8) -> Option<usize> {
    share.iter().position(|(req, _, argv)| probe::held(st, req.spec(), argv, db))
}

/// What the isolated step of a transaction gives back.
type Ran = Result<ShareOut, CmdError>;

/// The synchronous step of [`isolated`].
fn run_all(st: &ShardState, share: &Share, db: u8, resp3: bool, info: &ClientInfo, watch: Option<Watch>, time: u64) -> Option<Ran> {
    let _frozen = clock::freeze_here(time);
    if watch.is_some_and(|w| w.spoiled(now_ms())) {
        return None;
    }
    let mut r = Reply::new(resp3);
    let mut later = Vec::new();
    let mut marks = Vec::with_capacity(share.len());
    st.ks.store.begin_tx(false);
    let mut g = Grouped::begin(st);
    // Blocked clients are served after the transaction, not inside it.
    crate::coord::serve::hold(st);
    for (req, f, argv) in share {
        g.before(&r);
        // Not in probe mode: a record on disk only is read here and now.
        run_shard_cmd(st, *req, *f, argv, db, info, &mut r, &mut later, false);
        marks.push((r.buf.len(), later.len()));
    }
    // All of it in one write (the group has nothing left to write).
    let written = st.ks.commit_tx();
    g.end(&mut r, &mut marks, &mut later);
    crate::coord::serve::release(st);
    Some(match written {
        Ok(()) => Ok(ShareOut { buf: r.buf, marks, later }),
        Err(e) => Err(CmdError::from(e)),
    })
}
