//! EVAL, EVALSHA, EVAL_RO and EVALSHA_RO (issue 33; docs/cross-shard.md,
//! "Scripts").
//!
//! A script runs on the shard that owns its keys (KEYS, or the connection's
//! shard for a script without keys) in one synchronous step, as a one-shard
//! EXEC does: nothing else runs on that shard meanwhile, every write it
//! makes reaches RocksDB in one batch (`storage::tx`), its commands see the
//! time the script started, and clients blocked on its keys are served
//! after it. Its `redis.call`s run right there, through [`StepHost`].
//!
//! A script whose keys belong to several shards, or that reaches a key or
//! a command its shard cannot serve in that step (another shard's key, a
//! command that must await, as PING or KEYS), runs behind the transaction
//! gate instead (`gated`): the step drops everything it did (nothing of it
//! was visible) and the script runs again from the start.

use std::rc::Rc;
use std::sync::Arc;

use bytes::Bytes;
use shards::{Shard, Then};

use super::scriptco::{Resumed, Running};
use super::scriptjob::{Job, What, KILLED};
use crate::client::Client;
use crate::clock::{self, now_ms};
use crate::cmd::scripting::load;
use crate::cmd::{args::parse_i64, ScriptKind};
use crate::coord::misses::{after_reads_of, held_of};
use crate::error::{CmdError, CmdResult};
use crate::resp::Reply;
use crate::script::store;
use crate::script::Stop;
use crate::shard::ShardState;
use crate::slot::owner;
use crate::types::keyspace::Counters;

/// EVAL and its forms: finds the script, checks its flags against the
/// command, and runs it on its keys' shard.
pub(super) async fn eval(
    shard: &Rc<Shard<ShardState>>,
    client: &mut Client,
    kind: ScriptKind,
    argv: &[Bytes],
    out: &mut Reply,
) -> CmdResult {
    let st = shard.state();
    // FCALL looks its function up first, as Redis.
    let function = match kind.function {
        true => {
            let name = String::from_utf8_lossy(&argv[1]);
            let found = st.global.functions.find(&name);
            Some(found.ok_or_else(|| CmdError::new("ERR Function not found"))?.1)
        }
        false => None,
    };
    let numkeys = parse_i64(&argv[2]).ok_or_else(|| CmdError::new("ERR value is not an integer or out of range"))?;
    if numkeys < 0 {
        return Err(CmdError::new("ERR Number of keys can't be negative"));
    }
    if numkeys as usize > argv.len() - 3 {
        return Err(CmdError::new("ERR Number of keys can't be greater than number of args"));
    }
    let (what, flags) = match function {
        Some(f) => (What::Function(f.name), f.flags),
        None => {
            let (sha, script) = if kind.by_sha {
                let found = store::sha_arg(&argv[1]).and_then(|sha| st.global.scripts.get(&sha).map(|s| (sha, s)));
                found.ok_or_else(|| CmdError::new("NOSCRIPT No matching script. Please use EVAL."))?
            } else {
                let sha = store::sha1_hex(&argv[1]);
                match st.global.scripts.get(&sha) {
                    Some(s) => (sha, s),
                    None => (sha, load(st, &argv[1])?.1),
                }
            };
            let flags = script.flags;
            (What::Script(sha, script), flags)
        }
    };
    if kind.read_only && flags.shebang && !flags.no_writes {
        return Err(CmdError::new("ERR Can not execute a script with write flag using *_ro command."));
    }
    if flags.no_cluster && st.global.cluster.enabled {
        return Err(CmdError::new("ERR Can not run script on cluster, 'no-cluster' flag is set."));
    }
    let split = 3 + numkeys as usize;
    let keys = argv[3..split].to_vec();
    let n = shard.count();
    let target = keys.first().map_or(shard.id(), |k| owner(k, n));
    let job = Arc::new(Job {
        what,
        flags,
        keys,
        args: argv[split..].to_vec(),
        db: client.db,
        resp3: client.resp3,
        read_only: kind.read_only,
        info: client.info.clone(),
        time: now_ms(),
        node: client.node,
        user: client.user.clone(),
    });
    // Inside a multi-shard EXEC (the only kind a script can be in), the
    // gate is already this client's: the script runs as its commands do.
    if !client.in_exec && job.keys.iter().all(|k| owner(k, n) == target) {
        let j = job.clone();
        match shard.invoke_on_then(target, move |st: &Rc<ShardState>| step(st, j)).await {
            Ok(buf) => {
                out.buf.extend_from_slice(&buf);
                return Ok(());
            }
            Err(Stop::Killed) => return Err(CmdError::new(KILLED)),
            Err(Stop::Rerun) => {}
        }
    }
    super::gated::run(shard, client, &job, out).await
}

/// The script's step on `st`: waits (as a task of that shard) while a read
/// in flight holds one of its keys, then runs it in one synchronous step;
/// a busy script goes on as a task of that shard, letting it breathe
/// (`scriptco`).
fn step(st: &Rc<ShardState>, job: Arc<Job>) -> Then<Result<Vec<u8>, Stop>> {
    fn keys(job: &Job) -> impl Iterator<Item = &[u8]> {
        job.keys.iter().map(|k| k.as_ref())
    }
    if !st.ks.store.any_held() || !held_of(st, job.db, keys(&job)) {
        return run(st, job);
    }
    let st = st.clone();
    Then::Later(Box::pin(async move {
        after_reads_of(&st, job.db, keys(&job)).await;
        match run(&st, job) {
            Then::Now(r) => r,
            Then::Later(f) => f.await,
        }
    }))
}

/// Runs the script in one transaction of `st`: at once, or, once it is
/// busy, as a task of the shard that serves others between its slices.
fn run(st: &Rc<ShardState>, job: Arc<Job>) -> Then<Result<Vec<u8>, Stop>> {
    if st.ks.store.in_tx() {
        // Another client's transaction is open here (a step that waited
        // for a read): beginning its own would end that one. It runs
        // behind the gate, after it.
        return Then::Now(Err(Stop::Rerun));
    }
    let frozen = clock::freeze_here(job.time);
    st.ks.store.begin_tx(false);
    crate::coord::serve::hold(st);
    let staged = st.ks.store.staged();
    let counters = st.ks.counters();
    let mut running = match Running::start(st, &job, true) {
        Ok(r) => r,
        Err(e) => {
            let mut r = Reply::new(job.resp3);
            r.error(&e.0);
            return Then::Now(end(st, Ok(()), r.buf, (staged, &counters), frozen));
        }
    };
    match running.resume(Vec::new()) {
        Resumed::Done(res, buf) => Then::Now(end(st, res, buf, (staged, &counters), frozen)),
        _ => {
            let st = st.clone();
            Then::Later(Box::pin(async move {
                loop {
                    // Nothing else touches this shard's data meanwhile: its
                    // commands answer -BUSY (`run_shard_cmd`).
                    st.script_paused.set(true);
                    shards::rt::yield_now().await;
                    st.script_paused.set(false);
                    if let Resumed::Done(res, buf) = running.resume(Vec::new()) {
                        return end(&st, res, buf, (staged, &counters), frozen);
                    }
                }
            }))
        }
    }
}

/// Ends a script's step: its writes in one batch, or none of them if it
/// stopped to run again behind the gate.
/// `before`: the staged count and the key counts when the script began.
fn end(st: &ShardState, res: Result<(), Stop>, buf: Vec<u8>, before: (u64, &Counters), frozen: clock::Frozen) -> Result<Vec<u8>, Stop> {
    let (staged, counters) = before;
    let written = match res {
        Ok(()) | Err(Stop::Killed) => st.ks.commit_tx(),
        // Nothing of a stopped script may stay: its staged writes are
        // dropped (the caches forget, the key counts go back).
        Err(Stop::Rerun) if st.ks.store.staged() != staged => {
            st.ks.abort_tx(counters);
            Ok(())
        }
        Err(Stop::Rerun) => st.ks.commit_tx(),
    };
    crate::coord::serve::release(st);
    drop(frozen);
    res?;
    if let Err(e) = written {
        let e = CmdError::from(e);
        st.record_error(&e.0);
        let mut r = Reply::new(false);
        r.error(&e.0);
        return Ok(r.buf);
    }
    Ok(buf)
}

/// Whether a client's EVAL of kind `kind` would write (CLIENT PAUSE WRITE
/// holds it back): a script that may write, by its flags.
pub(super) fn may_write(st: &ShardState, kind: ScriptKind, argv: &[Bytes]) -> bool {
    if kind.read_only {
        return false;
    }
    if kind.function {
        let found = st.global.functions.find(&String::from_utf8_lossy(&argv[1]));
        return found.is_none_or(|(_, f)| f.flags.may_write());
    }
    let sha = if kind.by_sha {
        store::sha_arg(&argv[1])
    } else {
        Some(store::sha1_hex(&argv[1]))
    };
    match sha.and_then(|s| st.global.scripts.get(&s)) {
        Some(s) => s.flags.may_write(),
        None => store::shebang(&argv[1]).map_or(true, |(f, _)| f.may_write()),
    }
}
