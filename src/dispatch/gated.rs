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

use bytes::Bytes;
use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use shards::Shard;

use super::execute;
use super::script::{acl_check, checked, select, Job, KILLED};
use crate::client::Client;
use crate::clock;
use crate::cmd::scripting::with_vm;
use crate::coord::gate;
use crate::error::{CmdError, CmdResult};
use crate::resp::Reply;
use crate::script::{Host, Stop};
use crate::shard::ShardState;

/// The stack a gated script's Lua runs on. Lua's C recursion stops at 200
/// levels; the commands run on the shard's own stack.
const STACK: usize = 1 << 20;

/// What a suspended script asks for: a command, with the db and protocol
/// it runs in.
type Call = (Vec<Bytes>, u8, bool);

/// A gated script's coroutine: resumed with a reply, suspended with a
/// command, returns how the script ended.
type ScriptCo = Coroutine<Vec<u8>, Call, Result<(), Stop>, DefaultStack>;

/// Runs `job` behind the gate (or inside the EXEC that holds it) and
/// writes its reply into `out`.
pub(super) async fn run(shard: &Rc<Shard<ShardState>>, client: &mut Client, job: &Job, out: &mut Reply) -> CmdResult {
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
/// command it suspends with.
async fn drive(shard: &Rc<Shard<ShardState>>, client: &mut Client, job: &Job, r: &mut Reply) -> CmdResult {
    let st = shard.state();
    // Compiled here if this shard has not run it yet.
    with_vm(st, |vm| {
        if vm.has(&job.sha) {
            Ok(())
        } else {
            vm.compile(&job.sha, job.script.code())
        }
    })
    .map_err(CmdError::new)?;
    // The interpreter leaves the shard's slot while the script runs (see
    // `Running`).
    let Some((vm, epoch)) = st.lua.borrow_mut().take() else {
        return Err(CmdError::new("ERR no Lua interpreter"));
    };
    let vm = Box::into_raw(Box::new(vm));
    let stack = DefaultStack::new(STACK).map_err(|e| CmdError::new(format!("ERR cannot make a script stack: {e}")))?;
    let mut host = GatedHost {
        yielder: None,
        db: job.db,
        databases: st.global.databases,
        no_writes: job.read_only || job.script.flags.no_writes,
    };
    let body = |y: &Yielder<Vec<u8>, Call>, _: Vec<u8>| {
        host.yielder = Some(y as *const _);
        // SAFETY: `vm` is this coroutine's alone until it returns.
        unsafe { (*vm).run(&job.sha, &job.keys, &job.args, &mut host, r) }
    };
    // SAFETY: everything the body borrows outlives the coroutine: it is
    // driven to its end below, or leaked (never resumed) if this future is
    // dropped first (`Running`).
    let co = unsafe { Coroutine::with_stack_unchecked(stack, body) };
    let mut running = Running(Some(co));
    let mut input = Vec::new();
    let res = loop {
        let Some(co) = running.0.as_mut() else { break Ok(()) };
        match co.resume(std::mem::take(&mut input)) {
            CoroutineResult::Yield((argv, db, resp3)) => input = call(shard, client, argv, db, resp3).await,
            CoroutineResult::Return(res) => break res,
        }
    };
    running.0 = None;
    // SAFETY: the coroutine returned: nothing else holds `vm`.
    let vm = unsafe { Box::from_raw(vm) };
    *st.lua.borrow_mut() = Some((*vm, epoch));
    match res {
        Ok(()) => Ok(()),
        Err(Stop::Killed) => Err(CmdError::new(KILLED)),
        // Nothing is left to rerun on: every command may run here.
        Err(Stop::Rerun) => Err(CmdError::new("ERR internal error while running the script")),
    }
}

/// Runs one command of a script as the client's, in the script's db and
/// protocol; its reply.
async fn call(shard: &Rc<Shard<ShardState>>, client: &mut Client, argv: Vec<Bytes>, db: u8, resp3: bool) -> Vec<u8> {
    let (was_db, was_resp3, was_in_exec) = (client.db, client.resp3, client.in_exec);
    client.db = db;
    client.resp3 = resp3;
    // Blocking commands answer at once, as inside EXEC.
    client.in_exec = true;
    let mut out = Reply::new(resp3);
    let mut cmds = [argv];
    Box::pin(execute(shard, client, &mut cmds, &mut out)).await;
    client.db = was_db;
    client.resp3 = was_resp3;
    client.in_exec = was_in_exec;
    out.buf
}

/// The coroutine of a running script. Dropped before its end (the task
/// dropped while the script waits for a command), it is leaked, with the
/// interpreter it runs on: unwinding it would cross Lua's C frames.
struct Running(Option<ScriptCo>);

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(co) = self.0.take() {
            if !co.done() {
                tracing::warn!("a script was stopped while it waited for a command: its interpreter is dropped");
                std::mem::forget(co);
            }
        }
    }
}

/// Runs a gated script's commands: each suspends the script's coroutine.
struct GatedHost {
    /// The coroutine's yielder, set when it starts.
    yielder: Option<*const Yielder<Vec<u8>, Call>>,
    db: u8,
    databases: usize,
    no_writes: bool,
}

impl Host for GatedHost {
    fn call(&mut self, argv: Vec<Bytes>, out: &mut Reply) -> Result<(), Stop> {
        let Some((_, spec)) = checked(&argv, self.no_writes, out) else {
            return Ok(());
        };
        if spec.name == "select" {
            select(self.databases, &argv, &mut self.db, out);
            return Ok(());
        }
        let Some(y) = self.yielder else {
            out.error("ERR internal error while running the script");
            return Ok(());
        };
        // SAFETY: set by the coroutine's body, which is running this call.
        let reply = unsafe { (*y).suspend((argv, self.db, out.resp3)) };
        out.buf.extend_from_slice(&reply);
        Ok(())
    }

    fn acl_check(&mut self, argv: &[Bytes]) -> Option<bool> {
        acl_check(argv)
    }
}
