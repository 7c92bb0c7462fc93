//! A script's run on its own stack (a corosensei coroutine), shared by the
//! one-shard step (`script`) and the gated way (`gated`).
//!
//! The script suspends itself to ask its driver for something:
//! - **a command** (the gated way only): the driver runs it through the
//!   dispatcher, awaiting what it must, and resumes the script with the
//!   reply; in the one-shard step, commands run right on the shard;
//! - **a breath**: past `busy-reply-threshold`, every [`TICK`] Lua
//!   instructions, so that its shard serves other clients meanwhile (they
//!   get `-BUSY`, SCRIPT KILL gets through) instead of freezing.
//!
//! Lua 5.1 cannot yield across `pcall` or C functions; switching stacks
//! underneath the interpreter can, anywhere. The interpreter leaves its
//! shard's slot for the run and goes back when the script returns. A
//! coroutine dropped before its end (its task dropped at shutdown) is
//! leaked with the interpreter: unwinding it would cross Lua's C frames.
//!
//! [`TICK`]: crate::script::TICK

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use bytes::Bytes;
use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};

use super::scriptjob::{acl_check, checked, select, Job, What};
use super::{run_shard_cmd, Later};
use crate::client::ClientInfo;
use crate::cmd::{self, scripting::with_vm, Exec};
use crate::error::{CmdError, CmdResult};
use crate::resp::Reply;
use crate::script::functions::code_at;
use crate::script::{Host, Stop, Vm};
use crate::shard::ShardState;
use crate::slot::owner;

/// A script's stack. Lua's C recursion stops at 200 levels; in the
/// one-shard step the commands run on it too.
const STACK: usize = 1 << 20;

thread_local! {
    /// This shard's spare script stack: one run at a time uses it.
    static SPARE: RefCell<Option<DefaultStack>> = const { RefCell::new(None) };
}

/// What a suspended script asks its driver for.
pub(super) enum Ask {
    /// Run this command in this db and protocol (gated way).
    Call(Vec<Bytes>, u8, bool),
    /// Let the shard serve others for a moment (a busy script).
    Breathe,
}

/// How a script ended, and its reply.
type Ended = (Result<(), Stop>, Vec<u8>);

type ScriptCo = Coroutine<Vec<u8>, Ask, Ended, DefaultStack>;

/// What resuming a script gave.
pub(super) enum Resumed {
    Done(Result<(), Stop>, Vec<u8>),
    Call(Vec<Bytes>, u8, bool),
    Breathe,
}

/// A script being run.
pub(super) struct Running {
    co: Option<ScriptCo>,
    vm: *mut Vm,
    epoch: u64,
    st: Rc<ShardState>,
}

impl Running {
    /// Starts `job` on `st`'s interpreter (compiling it there first if
    /// needed). `step`: the one-shard step (commands run on `st`); else
    /// the gated way (commands are asked of the driver).
    pub fn start(st: &Rc<ShardState>, job: &Arc<Job>, step: bool) -> CmdResult<Running> {
        with_vm(st, |vm| match &job.what {
            What::Script(sha, _) if vm.has(sha) => Ok(()),
            What::Script(sha, script) => vm.compile(sha, script.code()),
            What::Function(_) => {
                load_functions(st, vm);
                Ok(())
            }
        })
        .map_err(CmdError::new)?;
        let Some((vm, epoch)) = st.lua.borrow_mut().take() else {
            return Err(CmdError::new("ERR no Lua interpreter"));
        };
        let stack = match SPARE.with(|s| s.borrow_mut().take()) {
            Some(s) => s,
            None => DefaultStack::new(STACK).map_err(|e| CmdError::new(format!("ERR cannot make a script stack: {e}")))?,
        };
        let vm = Box::into_raw(Box::new(vm));
        let g = &st.global;
        let mut host = ScriptHost {
            yielder: None,
            step: step.then(|| (st.clone(), job.info.clone())),
            db: job.db,
            no_writes: job.read_only || job.flags.no_writes,
            shard: st.id,
            started_ms: job.time,
            threshold_ms: g.config.busy_reply_threshold.load(std::sync::atomic::Ordering::Relaxed),
            // A function, or a script with a shebang, keeps to one slot
            // unless it allows cross-slot keys (Redis 7.2).
            slots: super::cluster::ScriptSlots::new(
                g,
                job.node,
                (matches!(job.what, What::Function(_)) || job.flags.shebang) && !job.flags.allow_cross_slot_keys,
                &job.keys,
            ),
            global: g.clone(),
            info: job.info.clone(),
            user: job.user.clone(),
        };
        g.script_board.start(st.id, matches!(job.what, What::Function(_)));
        let (job, resp3) = (job.clone(), job.resp3);
        let body = move |y: &Yielder<Vec<u8>, Ask>, _: Vec<u8>| -> Ended {
            host.yielder = Some(y as *const _);
            let mut r = Reply::new(resp3);
            // SAFETY: `vm` is this coroutine's alone until it returns.
            let vm = unsafe { &mut *vm };
            let res = match &job.what {
                What::Script(sha, _) => vm.run(sha, &job.keys, &job.args, &mut host, &mut r),
                What::Function(name) => vm.run_function(name, &job.keys, &job.args, &mut host, &mut r),
            };
            (res, r.buf)
        };
        Ok(Running {
            co: Some(Coroutine::with_stack(stack, body)),
            vm,
            epoch,
            st: st.clone(),
        })
    }

    /// Runs the script until it asks for something or ends.
    pub fn resume(&mut self, input: Vec<u8>) -> Resumed {
        let Some(co) = self.co.as_mut() else {
            return Resumed::Done(Ok(()), Vec::new());
        };
        match co.resume(input) {
            CoroutineResult::Yield(Ask::Call(argv, db, resp3)) => Resumed::Call(argv, db, resp3),
            CoroutineResult::Yield(Ask::Breathe) => Resumed::Breathe,
            CoroutineResult::Return((res, buf)) => {
                self.finish();
                Resumed::Done(res, buf)
            }
        }
    }

    /// Puts the stack and the interpreter back after the script returned.
    fn finish(&mut self) {
        if let Some(co) = self.co.take() {
            let stack = co.into_stack();
            SPARE.with(|s| *s.borrow_mut() = Some(stack));
        }
        // SAFETY: the coroutine returned: nothing else holds `vm`.
        let vm = unsafe { Box::from_raw(self.vm) };
        *self.st.lua.borrow_mut() = Some((*vm, self.epoch));
        self.st.global.script_board.end(self.st.id);
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(co) = self.co.take() {
            tracing::warn!("a script was dropped before its end: its interpreter is dropped with it");
            self.st.global.script_board.end(self.st.id);
            std::mem::forget(co);
        }
    }
}

/// Loads the current set of function libraries into `vm`, when it has an
/// older one (they were checked when loaded: an error here is logged).
fn load_functions(st: &ShardState, vm: &mut Vm) {
    let fs = &st.global.functions;
    let epoch = fs.epoch();
    if vm.functions_epoch() == Some(epoch) {
        return;
    }
    vm.reset_functions(epoch);
    for lib in fs.all() {
        if let Err(e) = vm.load_library(&lib.code, code_at(&lib.code), true) {
            tracing::error!(library = %lib.name, error = %e, "a function library does not load");
        }
    }
}

/// Runs a script's commands and keeps its time.
struct ScriptHost {
    /// The coroutine's yielder, set when it starts.
    yielder: Option<*const Yielder<Vec<u8>, Ask>>,
    /// The one-shard step: the shard the commands run on, for this client.
    /// None: the gated way.
    step: Option<(Rc<ShardState>, Arc<ClientInfo>)>,
    db: u8,
    /// EVAL_RO, or a `no-writes` script.
    no_writes: bool,
    shard: usize,
    /// When the script started (wall clock, ms).
    started_ms: u64,
    threshold_ms: u64,
    /// Cluster mode: the slot checks of the script's commands.
    slots: Option<super::cluster::ScriptSlots>,
    global: Arc<crate::global::Global>,
    /// The calling client and its ACL user.
    info: Arc<ClientInfo>,
    user: Arc<crate::acl::User>,
}

impl ScriptHost {
    /// Runs a command in the one-shard step: on `st`, if it can run there
    /// in one go; else the script must run again behind the gate.
    fn here(&self, st: &ShardState, info: &ClientInfo, req: cmd::Req, argv: &[Bytes], out: &mut Reply) -> Result<(), Stop> {
        let spec = req.spec();
        let f = match spec.exec {
            Exec::Shard(f) => f,
            Exec::Conn(_) => cmd::multi::one_shard_form(spec.name).ok_or(Stop::Rerun)?,
            Exec::Script(_) => return Err(Stop::Rerun),
        };
        let n = st.global.shards;
        let positions = spec.key_positions(argv.len());
        if positions.clone().any(|p| owner(&argv[p], n) != st.id) || (positions.len() == 0 && spec.first_key > 0) {
            return Err(Stop::Rerun);
        }
        let mut later: Vec<Later> = Vec::new();
        run_shard_cmd(st, req, f, argv, self.db, info, out, &mut later, false);
        // A reply left to the connection (a big collection) cannot be
        // waited for here.
        if !later.is_empty() {
            return Err(Stop::Rerun);
        }
        Ok(())
    }
}

impl Host for ScriptHost {
    fn call(&mut self, argv: Vec<Bytes>, out: &mut Reply) -> Result<(), Stop> {
        let Some(req) = checked(&argv, self.no_writes, out) else {
            return Ok(());
        };
        let (idx, spec) = (req.idx(), req.spec());
        if !self.user.unrestricted() {
            if let Err(d) = cmd::acl::check(&self.user, idx, &argv) {
                let msg = cmd::acl::refuse_as(&self.global, &self.info, &self.user, idx, &argv, d, crate::acl::Context::Lua, None);
                out.error(&msg);
                return Ok(());
            }
        }
        if let Some(slots) = self.slots.as_mut() {
            if let Err(e) = slots.check(&self.global, idx, spec, &argv) {
                out.error(&e);
                return Ok(());
            }
        }
        if spec.name == "select" {
            select(self.global.databases, self.global.cluster.enabled, &argv, &mut self.db, out);
            return Ok(());
        }
        if let Some((st, info)) = &self.step {
            self.here(st, info, req, &argv, out)?;
        } else {
            let Some(y) = self.yielder else {
                out.error("ERR internal error while running the script");
                return Ok(());
            };
            // SAFETY: set by the coroutine's body, which is running this call.
            let reply = unsafe { (*y).suspend(Ask::Call(argv, self.db, out.resp3)) };
            out.buf.extend_from_slice(&reply);
        }
        // A write that did not fail: SCRIPT KILL may no longer stop it.
        if spec.is_write() && out.buf.first() != Some(&b'-') {
            self.global.script_board.wrote(self.shard);
        }
        Ok(())
    }

    fn acl_check(&mut self, argv: &[Bytes]) -> Option<bool> {
        acl_check(&self.user, argv)
    }

    fn tick(&mut self) -> Result<(), Stop> {
        let board = &self.global.script_board;
        if board.killed(self.shard) {
            return Err(Stop::Killed);
        }
        let ran = crate::clock::wall_ms().saturating_sub(self.started_ms);
        if self.threshold_ms == 0 || ran < self.threshold_ms {
            return Ok(());
        }
        if board.set_busy(self.shard) {
            tracing::warn!(
                "Slow script detected: still in execution after {} milliseconds. You can try killing the script using the SCRIPT KILL command.",
                ran
            );
        }
        if let Some(y) = self.yielder {
            // SAFETY: as in `call`.
            unsafe { (*y).suspend(Ask::Breathe) };
        }
        if board.killed(self.shard) {
            return Err(Stop::Killed);
        }
        Ok(())
    }
}
