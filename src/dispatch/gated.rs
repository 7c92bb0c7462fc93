//! Scripts behind the transaction gate (issue 33; docs/cross-shard.md,
//! "Scripts"): a script whose keys span shards, or that reached what its
//! shard's step cannot serve (`script::step` stopped with `Stop::Rerun`).
//!
//! It takes the gate as a multi-shard EXEC does (`coord::gate`: no other
//! client's command runs anywhere until it ends), and its writes, on every
//! shard, reach RocksDB as one batch (`storage::tx`). The script runs on
//! the connection's shard, on a stack of its own (a corosensei coroutine):
//! each `redis.call` suspends it with the command, which runs through the
//! dispatcher like any command of the client (awaiting other shards as it
//! must), and resumes it with the reply. Lua 5.1 cannot yield across
//! `pcall` or a C function; switching stacks underneath it can.
//!
//! A coroutine must end by returning: dropping one mid-script would unwind
//! through Lua's C frames. If this task is dropped while the script is
//! suspended (the server stopping), the coroutine is leaked and the shard's
//! interpreter, whose stack it was using, is thrown away.

use std::rc::Rc;

use std::sync::Arc;

use bytes::Bytes;
use shards::Shard;

use super::execute;
use super::scriptco::{Resumed, Running};
use super::scriptjob::Job;
use crate::client::Client;
use crate::clock;
use crate::coord::gate;
use crate::error::{CmdError, CmdResult};
use crate::resp::Reply;
use crate::script::Stop;
use crate::shard::ShardState;

/// Runs `job` behind the gate (or inside the EXEC that holds it) and
/// writes its reply into `out`.
pub(super) async fn run(shard: &Rc<Shard<ShardState>>, client: &mut Client, job: &Arc<Job>, out: &mut Reply) -> CmdResult {
    let st = shard.state();
    let nested = client.in_exec;
    let held = if nested {
        None
    } else {
        gate::close(shard, client.info.id).await;
        Some(gate::Held::new(shard))
    };
    // Every command of the script sees the time it took the gate.
    let frozen = (!nested).then(|| clock::freeze_all(clock::wall_ms()));
    let mut r = Reply::new(client.resp3);
    let ran = drive(shard, client, job, &mut r).await;
    let mut written = Ok(());
    if !nested {
        written = st.global.engine.write_tx();
        if let Err(e) = &written {
            let e = CmdError::from(e.clone());
            st.record_error(&e.0);
            r.buf.clear();
            r.error(&e.0);
        }
    }
    drop(frozen);
    if let Some(h) = held {
        h.open(written).await;
    }
    match ran {
        Ok(()) => {
            out.buf.extend_from_slice(&r.buf);
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// Runs the script on its coroutine until it returns, running each
/// command it asks for; a busy script lets this shard breathe, and wakes
/// the clients parked at the gate so that they get `-BUSY`.
async fn drive(shard: &Rc<Shard<ShardState>>, client: &mut Client, job: &Arc<Job>, r: &mut Reply) -> CmdResult {
    let st = shard.state();
    let mut running = Running::start(st, job, false)?;
    let mut input = Vec::new();
    let mut woken = false;
    loop {
        match running.resume(std::mem::take(&mut input)) {
            Resumed::Call(argv, db, resp3) => input = call(shard, client, argv, db, resp3).await,
            Resumed::Breathe => {
                if !woken {
                    woken = true;
                    shard.broadcast(|st: &ShardState| st.gate.wake()).await;
                }
                shards::rt::yield_now().await;
            }
            Resumed::Done(res, buf) => {
                r.buf.extend_from_slice(&buf);
                return match res {
                    Ok(()) | Err(Stop::Killed) => Ok(()),
                    // Nothing is left to rerun on: every command may run here.
                    Err(Stop::Rerun) => Err(CmdError::new("ERR internal error while running the script")),
                };
            }
        }
    }
}

/// Runs one command of a script as the client's, in the script's db and
/// protocol; its reply.
async fn call(shard: &Rc<Shard<ShardState>>, client: &mut Client, argv: Vec<Bytes>, db: u8, resp3: bool) -> Vec<u8> {
    let (was_db, was_resp3, was_in_exec) = (client.db, client.resp3, client.in_exec);
    client.db = db;
    client.resp3 = resp3;
    client.in_script = true;
    // Blocking commands answer at once, as inside EXEC.
    client.in_exec = true;
    let mut out = Reply::new(resp3);
    let mut cmds = [argv];
    // CLIENT LIST goes on showing the EVAL, as Redis's does.
    let shown = client.info.last_cmd.load(std::sync::atomic::Ordering::Relaxed);
    Box::pin(execute(shard, client, &mut cmds, &mut out)).await;
    client.info.last_cmd.store(shown, std::sync::atomic::Ordering::Relaxed);
    client.db = was_db;
    client.resp3 = was_resp3;
    client.in_exec = was_in_exec;
    client.in_script = false;
    out.buf
}
