//! The `redis` table and Redis's `math.random`, written in Rust so that
//! they are C functions to Lua, as in Redis: a C function called in tail
//! position (`return redis.call(...)`) keeps the script's frame, so an
//! error still names the script's line.
//!
//! A Rust function cannot raise a Lua table, so an error is raised as
//! mlua's error value with its text kept in [`Run::pending`]; the prelude's
//! error handler and `pcall` take it from there (`prim.pending`).

use std::rc::Rc;

use bytes::Bytes;
use mlua::{HookTriggers, Lua, MultiValue, Table, Value, VmState};

use super::convert::{error_table, error_text, format_g, format_g17, reply_to_lua};
use super::{store, Pending, Run, Stop};
use crate::resp::Reply;

/// Raises `text` as a Redis error table (`{err="ERR <text>"}` for a
/// message without a code, as Redis's `luaPushError`).
fn raise_table<T>(run: &Run, msg: &[u8]) -> mlua::Result<T> {
    run.pending.replace(Some(Pending {
        text: error_text(msg),
        table: true,
    }));
    Err(mlua::Error::RuntimeError(String::from_utf8_lossy(msg).into_owned()))
}

/// Raises a plain string error, as a Lua C library's `luaL_error` does:
/// prefixed with where the script called the function (`user_script:1: `).
pub(super) fn raise_plain<T>(lua: &Lua, run: &Run, msg: &str) -> mlua::Result<T> {
    let at = lua
        .inspect_stack(1, |d| {
            d.current_line()
                .map(|line| format!("{}:{line}: ", d.source().short_src.unwrap_or_default()))
        })
        .flatten()
        .unwrap_or_default();
    run.pending.replace(Some(Pending {
        text: format!("{at}{msg}").into_bytes(),
        table: false,
    }));
    Err(mlua::Error::RuntimeError(msg.into()))
}

/// Registers the `redis` functions on `redis`, `math.random` and
/// `math.randomseed` on `math`, and returns the table of primitives the
/// prelude takes (`pending`).
pub(super) fn install(lua: &Lua, run: &Rc<Run>, redis: &Table, math: &Table) -> mlua::Result<Table> {
    for (name, raise) in [("call", true), ("pcall", false)] {
        let r = run.clone();
        redis.set(name, lua.create_function(move |lua, args: MultiValue| call(lua, &r, &args, raise))?)?;
    }
    let r = run.clone();
    redis.set(
        "log",
        lua.create_function(move |_, args: MultiValue| {
            if args.len() < 2 {
                return raise_table(&r, b"redis.log() requires two arguments or more.");
            }
            let Some(level) = number(&args[0]) else {
                return raise_table(&r, b"First argument must be a number (log level).");
            };
            let level = level as i64;
            if !(0..=3).contains(&level) {
                return raise_table(&r, b"Invalid debug level.");
            }
            let parts: Vec<String> = args
                .iter()
                .skip(1)
                .filter_map(text)
                .map(|s| String::from_utf8_lossy(&s).into_owned())
                .collect();
            let msg = parts.join(" ");
            match level {
                0 => tracing::debug!(target: "script", "{msg}"),
                1 | 2 => tracing::info!(target: "script", "{msg}"),
                _ => tracing::warn!(target: "script", "{msg}"),
            }
            Ok(())
        })?,
    )?;
    for (name, level) in [("LOG_DEBUG", 0), ("LOG_VERBOSE", 1), ("LOG_NOTICE", 2), ("LOG_WARNING", 3)] {
        redis.set(name, level)?;
    }
    let r = run.clone();
    redis.set(
        "sha1hex",
        lua.create_function(move |lua, args: MultiValue| {
            if args.len() != 1 {
                return raise_table(&r, b"wrong number of arguments");
            }
            let s = text(&args[0]).unwrap_or_default();
            lua.create_string(store::sha1_hex(&s))
        })?,
    )?;
    redis.set(
        "error_reply",
        lua.create_function(|lua, args: MultiValue| match args.front() {
            Some(Value::String(s)) if args.len() == 1 => {
                let s = s.as_bytes();
                let mut e = Vec::with_capacity(s.len() + 1);
                if !s.starts_with(b"-") {
                    e.push(b'-');
                }
                e.extend_from_slice(&s);
                error_table(lua, &e)
            }
            _ => error_table(lua, b"wrong number or type of arguments"),
        })?,
    )?;
    redis.set(
        "status_reply",
        lua.create_function(|lua, args: MultiValue| match args.front() {
            Some(Value::String(s)) if args.len() == 1 => {
                let t = lua.create_table_with_capacity(0, 1)?;
                t.raw_set("ok", s.clone())?;
                Ok(Value::Table(t))
            }
            _ => error_table(lua, b"wrong number or type of arguments"),
        })?,
    )?;
    let r = run.clone();
    redis.set(
        "setresp",
        lua.create_function(move |_, args: MultiValue| {
            if args.len() != 1 {
                return raise_table(&r, b"redis.setresp() requires one argument.");
            }
            match number(&args[0]).map(|n| n as i64) {
                Some(n @ (2 | 3)) => {
                    r.resp3.set(n == 3);
                    Ok(())
                }
                _ => raise_table(&r, b"RESP version must be 2 or 3."),
            }
        })?,
    )?;
    for (name, v) in [
        ("REPL_NONE", 0),
        ("REPL_AOF", 1),
        ("REPL_SLAVE", 2),
        ("REPL_REPLICA", 2),
        ("REPL_ALL", 3),
    ] {
        redis.set(name, v)?;
    }
    let r = run.clone();
    redis.set(
        "set_repl",
        lua.create_function(move |_, args: MultiValue| {
            if args.len() != 1 {
                return raise_table(&r, b"redis.set_repl() requires two arguments.");
            }
            // Accepted and ignored: Basalt has no replicas yet.
            match number(&args[0]).unwrap_or(0.0) as i32 {
                0..=3 => Ok(()),
                _ => raise_table(&r, b"Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE."),
            }
        })?,
    )?;
    redis.set("replicate_commands", lua.create_function(|_, _: MultiValue| Ok(true))?)?;
    redis.set("breakpoint", lua.create_function(|_, _: MultiValue| Ok(false))?)?;
    redis.set("debug", lua.create_function(|_, _: MultiValue| Ok(()))?)?;
    let r = run.clone();
    redis.set(
        "acl_check_cmd",
        lua.create_function(move |_, args: MultiValue| {
            let argv = match command_args(&args) {
                Ok(a) => a,
                Err(msg) => return raise_table(&r, msg.as_bytes()),
            };
            // SAFETY: the host is set by `Vm::call` for exactly the run.
            let allowed = r.host.get().and_then(|h| unsafe { (*h).acl_check(&argv) });
            match allowed {
                Some(ok) => Ok(ok),
                None => raise_table(&r, b"Invalid command passed to redis.acl_check_cmd()"),
            }
        })?,
    )?;
    let r = run.clone();
    math.set("random", lua.create_function(move |lua, args: MultiValue| random(lua, &r, &args))?)?;
    let r = run.clone();
    math.set(
        "randomseed",
        lua.create_function(move |lua, args: MultiValue| {
            let seed = check_int(lua, &r, &args, 0, "randomseed")?;
            r.rand.set(((seed as i32 as u32 as u64) << 16) | 0x330E);
            Ok(())
        })?,
    )?;
    let prim = lua.create_table()?;
    let r = run.clone();
    prim.set(
        "register_function",
        lua.create_function(move |_, args: MultiValue| register_function(&r, &args))?,
    )?;
    let r = run.clone();
    prim.set("stopped", lua.create_function(move |_, ()| Ok(r.stop.get().is_some()))?)?;
    let r = run.clone();
    prim.set(
        "pending",
        lua.create_function(move |lua, ()| match r.pending.take() {
            Some(p) => Ok((Value::String(lua.create_string(&p.text)?), p.table)),
            None => Ok((Value::Nil, false)),
        })?,
    )?;
    Ok(prim)
}

/// `redis.call` (`raise`) and `redis.pcall`.
fn call(lua: &Lua, run: &Rc<Run>, args: &MultiValue, raise: bool) -> mlua::Result<Value> {
    let argv = match command_args(args) {
        Ok(a) => a,
        Err(msg) if raise => return raise_table(run, msg.as_bytes()),
        Err(msg) => return error_table(lua, msg.as_bytes()),
    };
    let Some(host) = run.host.get() else {
        return raise_table(run, b"redis.call/pcall can only be called inside a script invocation");
    };
    if run.stop.get().is_some() {
        return Err(mlua::Error::RuntimeError("script stopped".into()));
    }
    // The reply buffer of the previous call, cleared.
    let mut buf = run.scratch.take();
    buf.clear();
    let mut out = Reply {
        buf,
        resp3: run.resp3.get(),
    };
    // SAFETY: set by `Vm::call` for exactly the duration of the run.
    if let Err(stop) = unsafe { (*host).call(argv, &mut out) } {
        stop_now(run, stop);
        return Err(mlua::Error::RuntimeError("script stopped".into()));
    }
    let res = if raise && out.buf.first() == Some(&b'-') {
        let end = memchr::memmem::find(&out.buf, b"\r\n").unwrap_or(out.buf.len());
        raise_table(run, &out.buf[..end])
    } else {
        reply_to_lua(lua, &out.buf).map(|(v, _)| v)
    };
    // A huge reply's buffer is not kept.
    if out.buf.capacity() <= 1 << 16 {
        run.scratch.replace(out.buf);
    }
    res
}

/// Marks the run stopped: the prelude's `pcall`, `xpcall` and
/// `coroutine.resume` raise again what they caught (`prim.stopped`), so no
/// script can swallow the stop.
fn stop_now(run: &Run, stop: Stop) {
    run.stop.set(Some(stop));
}

/// The text of the error a killed script raises (Redis's).
const KILLED: &[u8] = b"Script killed by user with SCRIPT KILL...";

/// Installs the hook that calls [`Host::tick`](super::Host::tick) every
/// [`TICK`](super::TICK) instructions; a script asked to stop raises
/// Redis's kill error there, and again at every later tick.
pub(super) fn keep_time(lua: &Lua, run: &Rc<Run>) -> mlua::Result<()> {
    let r = run.clone();
    lua.set_hook(HookTriggers::new().every_nth_instruction(super::TICK), move |_, _| {
        let Some(host) = r.host.get() else {
            // A library loading: Redis's 500 ms.
            if r.load_deadline.get().is_some_and(|d| std::time::Instant::now() > d) {
                return raise_table(&r, b"FUNCTION LOAD timeout");
            }
            return Ok(VmState::Continue);
        };
        if r.stop.get().is_none() {
            // SAFETY: set by `Vm::call` for exactly the duration of the run.
            match unsafe { (*host).tick() } {
                Ok(()) => return Ok(VmState::Continue),
                Err(stop) => stop_now(&r, stop),
            }
        }
        match r.stop.get() {
            Some(Stop::Killed) => raise_table(&r, KILLED),
            _ => Err(mlua::Error::RuntimeError("script stopped".into())),
        }
    })
}

/// Redis's `math.random` over its `lrand48`.
fn random(lua: &Lua, run: &Run, args: &MultiValue) -> mlua::Result<f64> {
    const MAX: u64 = i32::MAX as u64;
    let r = (run.lrand48() % MAX) as f64 / MAX as f64;
    match args.len() {
        0 => Ok(r),
        1 => {
            let u = check_int(lua, run, args, 0, "random")?;
            if u < 1 {
                return raise_plain(lua, run, "bad argument #1 to 'random' (interval is empty)");
            }
            Ok((r * u as f64).floor() + 1.0)
        }
        2 => {
            let l = check_int(lua, run, args, 0, "random")?;
            let u = check_int(lua, run, args, 1, "random")?;
            if l > u {
                return raise_plain(lua, run, "bad argument #2 to 'random' (interval is empty)");
            }
            Ok((r * (u - l + 1) as f64).floor() + l as f64)
        }
        _ => raise_plain(lua, run, "wrong number of arguments"),
    }
}

/// `luaL_checkint`: argument `i` as an integer (truncated), or Lua's error.
fn check_int(lua: &Lua, run: &Run, args: &MultiValue, i: usize, name: &str) -> mlua::Result<i64> {
    match args.get(i).and_then(number) {
        Some(n) => Ok(n as i64),
        None => {
            let got = match args.get(i) {
                None => "no value",
                Some(v) => v.type_name(),
            };
            raise_plain(
                lua,
                run,
                &format!("bad argument #{} to '{name}' (number expected, got {got})", i + 1),
            )
        }
    }
}

/// A number, or a string Lua would read as one (`lua_isnumber`).
fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Integer(n) => Some(*n as f64),
        Value::Number(n) => Some(*n),
        Value::String(s) => std::str::from_utf8(&s.as_bytes()).ok()?.trim().parse().ok(),
        _ => None,
    }
}

/// A string, or a number as Lua prints it (`lua_tolstring`).
fn text(v: &Value) -> Option<Vec<u8>> {
    match v {
        Value::String(s) => Some(s.as_bytes().to_vec()),
        Value::Integer(n) => Some(n.to_string().into_bytes()),
        Value::Number(n) => Some(format_g(*n, 14).into_bytes()),
        _ => None,
    }
}

/// `redis.call`'s arguments as a command: strings as they are, numbers as
/// `%.17g`; anything else is Redis's error.
pub(super) fn command_args(args: &MultiValue) -> Result<Vec<Bytes>, &'static str> {
    if args.is_empty() {
        return Err("Please specify at least one argument for this redis lib call");
    }
    args.iter()
        .map(|v| match v {
            Value::String(s) => Ok(Bytes::copy_from_slice(&s.as_bytes())),
            Value::Integer(n) => Ok(Bytes::from(format_g17(*n as f64))),
            Value::Number(n) => Ok(Bytes::from(format_g17(*n))),
            _ => Err("Lua redis lib command arguments must be strings or integers"),
        })
        .collect()
}

/// `redis.register_function(name, callback)` or
/// `redis.register_function{function_name=, callback=, flags=, description=}`
/// while a library loads: the function joins [`Run::registering`].
fn register_function(run: &Run, args: &MultiValue) -> mlua::Result<()> {
    let (name, callback, flags, description) = match args.len() {
        1 => {
            let Value::Table(t) = &args[0] else {
                return raise_table(run, b"calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).");
            };
            let (mut name, mut callback, mut flags, mut description) = (None, None, None, None);
            for pair in t.pairs::<Value, Value>() {
                let (k, v) = pair?;
                match k.as_string().map(|s| s.as_bytes().to_vec()).as_deref() {
                    Some(b"function_name") => name = Some(v),
                    Some(b"callback") => callback = Some(v),
                    Some(b"flags") => flags = Some(v),
                    Some(b"description") => description = Some(v),
                    _ => return raise_table(run, b"unknown argument given to redis.register_function"),
                }
            }
            let Some(name) = name else {
                return raise_table(run, b"redis.register_function must get a function name argument");
            };
            let Some(callback) = callback else {
                return raise_table(run, b"redis.register_function must get a callback argument");
            };
            (name, callback, flags, description)
        }
        2 => (args[0].clone(), args[1].clone(), None, None),
        _ => return raise_table(run, b"wrong number of arguments to redis.register_function"),
    };
    let Some(name) = text(&name).map(|n| String::from_utf8_lossy(&n).into_owned()) else {
        return raise_table(run, b"function_name argument given to redis.register_function must be a string");
    };
    let Value::Function(callback) = callback else {
        let msg: &[u8] = if args.len() == 2 {
            b"second argument to redis.register_function must be a function"
        } else {
            b"callback argument given to redis.register_function must be a function"
        };
        return raise_table(run, msg);
    };
    let mut set = store::Flags {
        shebang: true,
        ..Default::default()
    };
    match flags {
        None | Some(Value::Nil) => {}
        Some(Value::Table(t)) => {
            for v in t.sequence_values::<Value>() {
                let ok = v?.as_string().is_some_and(|s| set.set(&s.as_bytes()));
                if !ok {
                    return raise_table(run, b"unknown flag given");
                }
            }
        }
        Some(_) => {
            return raise_table(
                run,
                b"flags argument to redis.register_function must be a table representing function flags",
            )
        }
    }
    let description = match description {
        None | Some(Value::Nil) => None,
        Some(v) => match text(&v) {
            Some(d) => Some(String::from_utf8_lossy(&d).into_owned()),
            None => return raise_table(run, b"description argument given to redis.register_function must be a string"),
        },
    };
    if !super::functions::valid_name(&name) {
        return raise_table(
            run,
            b"Library names can only contain letters, numbers, or underscores(_) and must be at least one character long",
        );
    }
    let mut reg = run.registering.borrow_mut();
    let Some(list) = reg.as_mut() else {
        return raise_table(run, b"redis.register_function can only be called while a library loads");
    };
    if list.iter().any(|(f, _)| f.name.eq_ignore_ascii_case(&name)) {
        drop(reg);
        return raise_table(run, b"Function already exists in the library");
    }
    let info = super::functions::FunctionInfo {
        name,
        description,
        flags: set,
    };
    list.push((info, callback));
    Ok(())
}
