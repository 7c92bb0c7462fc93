//! Scripting commands (issue 33): EVAL and its forms (run by the
//! dispatcher, `dispatch::script`), and SCRIPT LOAD/EXISTS/FLUSH/KILL.
//! Scripts live in the process-wide store (`script::store`); each shard
//! compiles them on its own interpreter when it first runs them.

use std::sync::Arc;

use bytes::Bytes;

use super::{commands, subcommands, CommandSpec, Conn, ScriptKind, SubSpec};
use crate::error::{CmdError, CmdResult};
use crate::resp::Reply;
use crate::script::store::{self, Script};
use crate::script::Vm;
use crate::shard::ShardState;

/// The scripting commands (`cmd::table` has the line format).
#[rustfmt::skip]
pub(super) const COMMANDS: &[CommandSpec] = commands! {
    "eval"       -3 [noscript stale skip_monitor no_mandatory_keys movablekeys]          0 0 0 Script(ScriptKind::EVAL)       scripting "2.6.0" "Executes a server-side Lua script.";
    "evalsha"    -3 [noscript stale skip_monitor no_mandatory_keys movablekeys]          0 0 0 Script(ScriptKind::EVALSHA)    scripting "2.6.0" "Executes a server-side Lua script by SHA1 digest.";
    "eval_ro"    -3 [readonly noscript stale skip_monitor no_mandatory_keys movablekeys] 0 0 0 Script(ScriptKind::EVAL_RO)    scripting "7.0.0" "Executes a read-only server-side Lua script.";
    "evalsha_ro" -3 [readonly noscript stale skip_monitor no_mandatory_keys movablekeys] 0 0 0 Script(ScriptKind::EVALSHA_RO) scripting "7.0.0" "Executes a read-only server-side Lua script by SHA1 digest.";
    "script"     -2 []                                                                   0 0 0 Conn(script)       scripting "2.6.0" "A container for Lua scripts management commands." subs SCRIPT_SUBS;
};

/// SCRIPT's subcommands.
#[rustfmt::skip]
const SCRIPT_SUBS: &[SubSpec] = subcommands! {
    "flush"  -2 [noscript]            "Removes all server-side Lua scripts from the script cache.";
    "kill"   2  [noscript allow_busy] "Terminates a server-side Lua script during execution.";
    "debug"  3  [noscript]            "Sets the debug mode of server-side Lua scripts.";
    "load"   3  [noscript stale]      "Loads a server-side Lua script to the script cache.";
    "exists" -3 [noscript]            "Determines whether server-side Lua scripts exist in the script cache.";
    "help"   2  [loading stale]       "Returns helpful text about the different subcommands.";
};

const SCRIPT_HELP: &[&str] = &[
    "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DEBUG (YES|SYNC|NO)",
    "    Set the debug mode for subsequent scripts executed.",
    "EXISTS <sha1> [<sha1> ...]",
    "    Return information about the existence of the scripts in the script cache.",
    "FLUSH [ASYNC|SYNC]",
    "    Flush the Lua scripts cache. Very dangerous on replicas.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the scripts cache.",
    "    * SYNC: Synchronously flush the scripts cache.",
    "KILL",
    "    Kill the currently executing Lua script.",
    "LOAD <script>",
    "    Load a script into the scripts cache without executing it.",
    "HELP",
    "    Prints this help.",
];

pub async fn script(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let st = c.st();
    let sub = argv[1].to_ascii_lowercase();
    match sub.as_slice() {
        b"load" => {
            let (sha, _) = load(st, &argv[2])?;
            r.bulk(&sha);
        }
        b"exists" => {
            r.array(argv.len() - 2);
            for a in &argv[2..] {
                let found = store::sha_arg(a).is_some_and(|sha| st.global.scripts.get(&sha).is_some());
                r.int(found as i64);
            }
        }
        b"flush" => {
            if argv.len() > 3
                || argv
                    .get(2)
                    .is_some_and(|m| !m.eq_ignore_ascii_case(b"sync") && !m.eq_ignore_ascii_case(b"async"))
            {
                return Err(CmdError::new("ERR SCRIPT FLUSH only support SYNC|ASYNC option"));
            }
            st.global.scripts.flush();
            r.ok();
        }
        b"kill" => {
            st.global.script_board.kill(false).map_err(CmdError::new)?;
            r.ok();
        }
        b"debug" => {
            let mode = argv[2].to_ascii_lowercase();
            match mode.as_slice() {
                b"no" => r.ok(),
                b"yes" | b"sync" => return Err(CmdError::new("ERR Basalt has no Lua debugger (SCRIPT DEBUG NO is accepted)")),
                _ => return Err(CmdError::new("ERR Use SCRIPT DEBUG YES/SYNC/NO")),
            }
        }
        _ => {
            r.array(SCRIPT_HELP.len());
            for line in SCRIPT_HELP {
                r.simple(line);
            }
        }
    }
    Ok(())
}

/// Checks a new script (its shebang, and that it compiles, on this shard's
/// interpreter) and adds it to the store: SCRIPT LOAD and EVAL's first run.
pub fn load(st: &ShardState, body: &Bytes) -> CmdResult<([u8; 40], Arc<Script>)> {
    let (flags, code_at) = store::shebang(body).map_err(CmdError::new)?;
    let sha = store::sha1_hex(body);
    with_vm(st, |vm| vm.compile(&sha, &body[code_at..])).map_err(CmdError::new)?;
    let script = Script {
        body: body.clone(),
        flags,
        code_at,
    };
    Ok((sha, st.global.scripts.insert(sha, script)))
}

/// Runs `f` on this shard's interpreter (made on first use), after it has
/// dropped what a SCRIPT FLUSH since its last use flushed.
pub fn with_vm<R>(st: &ShardState, f: impl FnOnce(&mut Vm) -> Result<R, String>) -> Result<R, String> {
    let mut slot = st.lua.borrow_mut();
    let epoch = st.global.scripts.epoch();
    if slot.is_none() {
        let vm = Vm::new(super::connection::SERVER_VERSION).map_err(|e| format!("ERR cannot start the Lua interpreter: {e}"))?;
        *slot = Some((vm, epoch));
    }
    let Some((vm, seen)) = slot.as_mut() else {
        return Err("ERR no Lua interpreter".into());
    };
    if *seen != epoch {
        vm.forget_all();
        *seen = epoch;
    }
    f(vm)
}
