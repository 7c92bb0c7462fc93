//! FUNCTION LOAD/DELETE/FLUSH/LIST/DUMP/RESTORE/STATS/KILL/HELP and
//! FCALL/FCALL_RO (issue 33). The libraries are process-wide
//! (`script::functions`) and on disk (`storage::functions`): a change is
//! checked (the library's code runs once on this shard's interpreter, to
//! learn its functions), written and synced, then installed, all under one
//! lock; every shard's interpreter loads the new set on its next FCALL, so
//! a load is visible everywhere before FUNCTION LOAD replies.

use std::sync::Arc;

use bytes::Bytes;

use super::scripting::with_vm;
use super::{commands, subcommands, CommandSpec, Conn, ScriptKind, SubSpec};
use crate::error::{CmdError, CmdResult};
use crate::glob::matches;
use crate::resp::Reply;
use crate::script::fdump;
use crate::script::functions::{code_at, library_name, merged, Library};
use crate::shard::ShardState;

/// The function commands (`cmd::table` has the line format).
#[rustfmt::skip]
pub(super) const COMMANDS: &[CommandSpec] = commands! {
    "fcall"    -3 [noscript stale skip_monitor no_mandatory_keys movablekeys]          0 0 0 Script(ScriptKind::FCALL)    scripting "7.0.0" "Invokes a function.";
    "fcall_ro" -3 [readonly noscript stale skip_monitor no_mandatory_keys movablekeys] 0 0 0 Script(ScriptKind::FCALL_RO) scripting "7.0.0" "Invokes a read-only function.";
    "function" -2 []                                                                   0 0 0 Conn(function)   scripting "7.0.0" "A container for function commands." subs FUNCTION_SUBS;
};

/// FUNCTION's subcommands.
#[rustfmt::skip]
const FUNCTION_SUBS: &[SubSpec] = subcommands! {
    "delete"  3  [write noscript]            "Deletes a library and its functions.";
    "dump"    2  [noscript]                  "Dumps all libraries into a serialized binary payload.";
    "flush"   -2 [write noscript]            "Deletes all libraries and functions.";
    "help"    2  [loading stale]             "Returns helpful text about the different subcommands.";
    "kill"    2  [noscript allow_busy]       "Terminates a function during execution.";
    "list"    -2 [noscript]                  "Returns information about all libraries.";
    "load"    -3 [write denyoom noscript]    "Creates a library.";
    "restore" -3 [write denyoom noscript]    "Restores all libraries from a payload.";
    "stats"   2  [noscript allow_busy]       "Returns information about a function during execution.";
};

const FUNCTION_HELP: &[&str] = &[
    "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "LOAD [REPLACE] <FUNCTION CODE>",
    "    Create a new library with the given library name and code.",
    "DELETE <LIBRARY NAME>",
    "    Delete the given library.",
    "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
    "    Return general information on all the libraries:",
    "    * Library name",
    "    * The engine used to run the Library",
    "    * Library description",
    "    * Functions list",
    "    * Library code (if WITHCODE is given)",
    "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
    "STATS",
    "    Return information about the current function running:",
    "    * Function name",
    "    * Command used to run the function",
    "    * Duration in MS that the function is running",
    "    If no function is running, return nil",
    "    In addition, returns a list of available engines.",
    "KILL",
    "    Kill the current running function.",
    "FLUSH [ASYNC|SYNC]",
    "    Delete all the libraries.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the libraries.",
    "    * SYNC: Synchronously flush the libraries.",
    "DUMP",
    "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
    "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
    "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
    "    control how to handle existing libraries (default APPEND):",
    "    * FLUSH: delete all existing libraries.",
    "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
    "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
    "      libraries with the new libraries (notice that even on this option there is a chance of failure",
    "      in case of functions name collision with another library).",
    "HELP",
    "    Prints this help.",
];

pub async fn function(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let st = c.st();
    let sub = argv[1].to_ascii_lowercase();
    match sub.as_slice() {
        b"load" => {
            // Options before the code, which is the last argument.
            let code = &argv[argv.len() - 1];
            let mut replace = false;
            for a in &argv[2..argv.len() - 1] {
                if !a.eq_ignore_ascii_case(b"replace") {
                    return Err(CmdError::new(format!("ERR Unknown option given: {}", String::from_utf8_lossy(a))));
                }
                replace = true;
            }
            let lib = check(st, code)?;
            let name = lib.name.clone();
            change(st, |current| merged(current, vec![lib], replace))?;
            r.bulk(name.as_bytes());
        }
        b"delete" => {
            let name = String::from_utf8_lossy(&argv[2]).into_owned();
            change(st, |current| {
                if !current.iter().any(|l| l.name == name) {
                    return Err("ERR Library not found".into());
                }
                Ok(current.into_iter().filter(|l| l.name != name).collect())
            })?;
            r.ok();
        }
        b"flush" => {
            if argv.len() > 3
                || argv
                    .get(2)
                    .is_some_and(|m| !m.eq_ignore_ascii_case(b"sync") && !m.eq_ignore_ascii_case(b"async"))
            {
                return Err(CmdError::new("ERR FUNCTION FLUSH only supports SYNC|ASYNC option"));
            }
            change(st, |_| Ok(Vec::new()))?;
            r.ok();
        }
        b"list" => list(st, argv, r)?,
        b"dump" => {
            let libs = st.global.functions.all();
            r.bulk(&fdump::dump(libs.iter().map(|l| l.code.as_slice())));
        }
        b"restore" => {
            restore(st, argv)?;
            r.ok();
        }
        b"stats" => stats(st, r),
        b"kill" => {
            st.global.script_board.kill(true).map_err(CmdError::new)?;
            r.ok();
        }
        _ => {
            r.array(FUNCTION_HELP.len());
            for line in FUNCTION_HELP {
                r.simple(line);
            }
        }
    }
    Ok(())
}

/// Runs a library's code on this shard's interpreter (not installing it)
/// to learn its name and functions; Redis's error if it does not load.
fn check(st: &ShardState, code: &Bytes) -> CmdResult<Library> {
    let name = library_name(code).map_err(CmdError::new)?;
    let functions = with_vm(st, |vm| vm.load_library(code, code_at(code), false)).map_err(CmdError::new)?;
    Ok(Library {
        name,
        code: code.to_vec(),
        functions,
    })
}

/// Changes the set of libraries: `f` makes the new set from the current
/// one (or refuses); it is written to disk, synced, then installed.
fn change(st: &ShardState, f: impl FnOnce(Vec<Arc<Library>>) -> Result<Vec<Arc<Library>>, String>) -> CmdResult {
    let fs = &st.global.functions;
    let _changing = fs.changing();
    let libs = f(fs.all()).map_err(CmdError::new)?;
    let records: Vec<(Vec<u8>, Vec<u8>)> = libs.iter().map(|l| (l.name.as_bytes().to_vec(), l.code.clone())).collect();
    st.global.engine.save_function_libraries(&records)?;
    fs.set(libs);
    Ok(())
}

/// FUNCTION RESTORE payload [FLUSH|APPEND|REPLACE].
fn restore(st: &ShardState, argv: &[Bytes]) -> CmdResult {
    let policy = match argv.get(3).map(|p| p.to_ascii_lowercase()) {
        None => "append".to_string(),
        Some(p) if argv.len() == 4 && matches!(p.as_slice(), b"flush" | b"append" | b"replace") => String::from_utf8_lossy(&p).into_owned(),
        Some(_) => {
            return Err(CmdError::new(
                "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.",
            ))
        }
    };
    let codes = fdump::restore(&argv[2]).map_err(CmdError::new)?;
    let libs = codes
        .iter()
        .map(|c| check(st, &Bytes::copy_from_slice(c)))
        .collect::<CmdResult<Vec<_>>>()?;
    change(st, |current| match policy.as_str() {
        "flush" => merged(Vec::new(), libs, false),
        "replace" => merged(current, libs, true),
        _ => merged(current, libs, false),
    })
}

/// FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE].
fn list(st: &ShardState, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let (mut pattern, mut code) = (None, false);
    let mut i = 2;
    while i < argv.len() {
        let a = argv[i].to_ascii_lowercase();
        match a.as_slice() {
            b"withcode" if !code => code = true,
            b"libraryname" if pattern.is_none() => {
                let Some(p) = argv.get(i + 1) else {
                    return Err(CmdError::new("ERR library name argument was not given"));
                };
                pattern = Some(p.clone());
                i += 1;
            }
            _ => return Err(CmdError::new(format!("ERR Unknown argument {}", String::from_utf8_lossy(&argv[i])))),
        }
        i += 1;
    }
    let libs: Vec<_> = st
        .global
        .functions
        .all()
        .into_iter()
        .filter(|l| pattern.as_ref().is_none_or(|p| matches(p, l.name.as_bytes(), false)))
        .collect();
    r.array(libs.len());
    for l in libs {
        r.map(if code { 4 } else { 3 });
        r.bulk(b"library_name");
        r.bulk(l.name.as_bytes());
        r.bulk(b"engine");
        r.bulk(b"LUA");
        r.bulk(b"functions");
        r.array(l.functions.len());
        for f in &l.functions {
            r.map(3);
            r.bulk(b"name");
            r.bulk(f.name.as_bytes());
            r.bulk(b"description");
            match &f.description {
                Some(d) => r.bulk(d.as_bytes()),
                None => r.null(),
            }
            r.bulk(b"flags");
            let flags = f.flags.names();
            r.set(flags.len());
            for name in flags {
                r.simple(name);
            }
        }
        if code {
            r.bulk(b"library_code");
            r.bulk(&l.code);
        }
    }
    Ok(())
}

/// FUNCTION STATS: the running function (Basalt does not keep its name:
/// nil unless one is busy) and the engine's counts.
fn stats(st: &ShardState, r: &mut Reply) {
    let (libraries, functions) = st.global.functions.counts();
    r.map(2);
    r.bulk(b"running_script");
    r.null();
    r.bulk(b"engines");
    r.map(1);
    r.bulk(b"LUA");
    r.map(2);
    r.bulk(b"libraries_count");
    r.int(libraries as i64);
    r.bulk(b"functions_count");
    r.int(functions as i64);
}
