//! Lua scripting's interpreter side (issue 33): one Lua 5.1 interpreter per
//! shard ([`Vm`]), with the environment Redis scripts expect (the `redis`
//! table, Redis's `math.random`, read-only globals; `prelude.lua`), the
//! scripts compiled on it by SHA1, and the conversions of replies both ways
//! (`convert`). It names no command and no shard: a script's `redis.call`
//! goes to a [`Host`] that the caller (`dispatch::script`) supplies for the
//! run, which runs the command and writes its reply.
//!
//! Errors follow Redis 7: a runtime error becomes `-<err> script: <name>,
//! on @user_script:<line>.`, a compile error `ERR Error compiling script
//! (new function): user_script:<line>: <what>`.

mod api;
mod bit;
pub mod busy;
mod cjson;
mod cmsgpack;
pub mod convert;
pub mod fdump;
pub mod functions;
mod library;
pub mod store;
mod structlib;

use ahash::AHashMap as HashMap;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

use bytes::Bytes;
use mlua::{Function, Lua, LuaOptions, StdLib, Table, Value};

use crate::resp::Reply;
use convert::lua_to_reply;

/// Why a script stops before its end, outside Lua's own errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// It reached a key or command its step cannot serve: everything it did
    /// is dropped and it runs again where it can (behind the gate).
    Rerun,
    /// SCRIPT KILL or FUNCTION KILL.
    Killed,
}

/// Runs a script's commands.
pub trait Host {
    /// Runs `argv` (checked by the host: unknown, arity, not allowed from
    /// scripts...) and writes its reply, or the error, into `out` (RESP3
    /// when `out.resp3`).
    fn call(&mut self, argv: Vec<Bytes>, out: &mut Reply) -> Result<(), Stop>;

    /// `redis.acl_check_cmd`: whether the user may run `argv`; None for an
    /// unknown command.
    fn acl_check(&mut self, argv: &[Bytes]) -> Option<bool>;

    /// Called every [`TICK`] Lua instructions: the host keeps time (a busy
    /// script lets its shard serve others here) and says whether the
    /// script must stop (SCRIPT KILL).
    fn tick(&mut self) -> Result<(), Stop>;
}

/// Lua instructions between two [`Host::tick`]s (Redis's hook count).
pub const TICK: u32 = 100_000;

/// What the `redis` primitives see of the run in progress.
#[derive(Default)]
struct Run {
    /// The run's host, its lifetime erased: set only while [`Vm::run`]
    /// holds the `&mut dyn Host` it came from.
    host: Cell<Option<*mut (dyn Host + 'static)>>,
    /// `redis.setresp(3)` was called.
    resp3: Cell<bool>,
    stop: Cell<Option<Stop>>,
    /// Redis's `lrand48` state (`math.random`).
    rand: Cell<u64>,
    /// The error a Rust function raised, for the prelude (`api`).
    pending: RefCell<Option<Pending>>,
    /// While a library loads: the functions it registered.
    registering: RefCell<Option<Vec<(functions::FunctionInfo, Function)>>>,
    /// The reply buffer `redis.call` reuses.
    scratch: RefCell<Vec<u8>>,
    /// While a library loads: when it must have finished.
    load_deadline: Cell<Option<std::time::Instant>>,
}

/// An error text a Rust function raised: as Redis's error table, or as a
/// plain string (a Lua library's own error).
struct Pending {
    text: Vec<u8>,
    table: bool,
}

/// `lrand48`'s state before any seed.
const RAND_INIT: u64 = 0x1234_ABCD_330E;

impl Run {
    fn lrand48(&self) -> u64 {
        let x = self.rand.get().wrapping_mul(0x5_DEEC_E66D).wrapping_add(0xB) & ((1 << 48) - 1);
        self.rand.set(x);
        x >> 17
    }
}

/// One shard's interpreter and the scripts compiled on it.
pub struct Vm {
    lua: Lua,
    /// The prelude's runner: `run(f)` or `run(f, keys, args)` under xpcall.
    runner: Function,
    /// The read-only face of the globals that scripts run in.
    env: Table,
    scripts: HashMap<[u8; 40], Function>,
    /// Makes a library's globals (`library_env` in the prelude).
    library_env: Function,
    /// The functions of the loaded libraries, by lower-case name, with the
    /// name they were registered under; and the set's epoch.
    functions: HashMap<String, (String, Function)>,
    functions_epoch: Option<u64>,
    run: Rc<Run>,
    /// Scripts run, for [`GC_PERIOD`].
    runs: u64,
}

/// Runs between two explicit garbage collection steps (Redis's
/// `LUA_GC_CYCLE_PERIOD`).
const GC_PERIOD: u64 = 50;

/// The chunk name of a script: errors read `user_script:<line>`.
const CHUNK: &str = "@user_script";

impl Vm {
    /// A fresh interpreter. `version`: what `redis.REDIS_VERSION` says.
    pub fn new(version: &str) -> mlua::Result<Vm> {
        // SAFETY: the debug library is needed for error line numbers; it
        // is taken away from scripts before any script runs.
        let lua = unsafe {
            Lua::unsafe_new_with(
                StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::DEBUG | StdLib::OS,
                LuaOptions::default(),
            )
        };
        let run = Rc::new(Run {
            rand: Cell::new(RAND_INIT),
            ..Default::default()
        });
        let globals = lua.globals();
        // `os` keeps only `clock` (Redis 7.4).
        let os: Table = globals.get("os")?;
        let clock: Function = os.get("clock")?;
        let os = lua.create_table()?;
        os.set("clock", clock)?;
        globals.set("os", os)?;
        let debug: Table = globals.get("debug")?;
        let redis = lua.create_table()?;
        redis.set("REDIS_VERSION", version)?;
        redis.set("REDIS_VERSION_NUM", version_num(version))?;
        let math: Table = globals.get("math")?;
        let prim = api::install(&lua, &run, &redis, &math)?;
        globals.set("redis", redis)?;
        bit::install(&lua, &run, &globals)?;
        cjson::install(&lua, &run, &globals)?;
        cmsgpack::install(&lua, &run, &globals)?;
        structlib::install(&lua, &run, &globals)?;
        let prelude = lua.load(include_str!("prelude.lua")).set_name("=basalt").into_function()?;
        let (runner, env, library_env): (Function, Table, Function) = prelude.call((prim, globals.clone(), debug))?;
        for name in [
            "debug", "print", "dofile", "loadfile", "getfenv", "setfenv", "module", "require", "package", "io",
        ] {
            globals.raw_set(name, Value::Nil)?;
        }
        api::keep_time(&lua, &run)?;
        Ok(Vm {
            lua,
            runner,
            env,
            scripts: HashMap::new(),
            library_env,
            functions: HashMap::new(),
            functions_epoch: None,
            run,
            runs: 0,
        })
    }

    /// Whether script `sha` (lower-case hex) is compiled here.
    pub fn has(&self, sha: &[u8; 40]) -> bool {
        self.scripts.contains_key(sha)
    }

    /// Compiles `body` as script `sha`; the error is Redis's reply text.
    pub fn compile(&mut self, sha: &[u8; 40], body: &[u8]) -> Result<(), String> {
        let f = self
            .lua
            .load(body)
            .set_name(CHUNK)
            .set_environment(self.env.clone())
            .into_function()
            .map_err(|e| format!("ERR Error compiling script (new function): {}", lua_error_text(&e)))?;
        self.scripts.insert(*sha, f);
        Ok(())
    }

    /// Drops every compiled script (SCRIPT FLUSH).
    pub fn forget_all(&mut self) {
        self.scripts.clear();
        let _ = self.lua.gc_collect();
    }

    /// Bytes the interpreter holds (INFO's `used_memory_lua`).
    pub fn used_memory(&self) -> usize {
        self.lua.used_memory()
    }

    /// Runs compiled script `sha` with `keys` and `args` as KEYS and ARGV;
    /// its reply (or error) goes into `out`. `name` is what errors call it.
    /// A [`Stop`] leaves nothing in `out`.
    pub fn run(&mut self, sha: &[u8; 40], keys: &[Bytes], args: &[Bytes], host: &mut dyn Host, out: &mut Reply) -> Result<(), Stop> {
        let Some(f) = self.scripts.get(sha) else {
            out.error("NOSCRIPT No matching script. Please use EVAL.");
            return Ok(());
        };
        // SAFETY: `f` lives in `self.scripts`, which `call` does not touch.
        let f: *const Function = f;
        self.call(unsafe { &*f }, true, keys, args, Name::Sha(sha), host, out)
    }

    /// Runs `f` (`eval`: a script, with KEYS and ARGV as globals; else a
    /// function, given them as arguments) and writes its reply.
    #[allow(clippy::too_many_arguments)]
    fn call(
        &mut self,
        f: &Function,
        eval: bool,
        keys: &[Bytes],
        args: &[Bytes],
        name: Name,
        host: &mut dyn Host,
        out: &mut Reply,
    ) -> Result<(), Stop> {
        // SAFETY: the pointer is cleared below, before `host`'s borrow ends;
        // only the primitives read it, and only while this call runs.
        let host: *mut (dyn Host + '_) = host;
        self.run.host.set(Some(unsafe {
            std::mem::transmute::<*mut (dyn Host + '_), *mut (dyn Host + 'static)>(host)
        }));
        self.run.resp3.set(false);
        self.run.stop.set(None);
        let res = self.invoke(f, eval, keys, args);
        self.run.host.set(None);
        if let Some(Stop::Rerun) = self.run.stop.take() {
            return Err(Stop::Rerun);
        }
        match res {
            Ok((true, v)) => lua_to_reply(&v, self.run.resp3.get(), out),
            Ok((false, e)) => out.error(&error_reply(&e, &name.text())),
            Err(e) => out.error(&format!("ERR Error running script {}, {:.100}", name.text(), lua_error_text(&e))),
        }
        // As Redis: a step of garbage collection every so many runs.
        self.runs = self.runs.wrapping_add(1);
        if self.runs.is_multiple_of(GC_PERIOD) {
            let _ = self.lua.gc_step();
        }
        Ok(())
    }
}

/// What errors call a script: its SHA1, or a function's name.
enum Name<'a> {
    Sha(&'a [u8; 40]),
    Function(&'a str),
}

impl Name<'_> {
    fn text(&self) -> String {
        match self {
            Name::Sha(sha) => String::from_utf8_lossy(&sha[..]).into_owned(),
            Name::Function(n) => n.to_string(),
        }
    }
}

impl Vm {
    /// Calls the prelude's runner with `f` and KEYS and ARGV as two tables
    /// built straight on the Lua stack (the C API: no handle per string).
    fn invoke(&self, f: &Function, eval: bool, keys: &[Bytes], args: &[Bytes]) -> mlua::Result<(bool, Value)> {
        use mlua::ffi;
        // SAFETY: the closure only pushes onto the stack it was given and
        // calls the runner, which catches the script's errors itself; it
        // owns nothing to drop if Lua raises (out of memory).
        unsafe {
            self.lua.exec_raw::<(bool, Value)>((&self.runner, f, eval), |state| {
                ffi::luaL_checkstack(state, 4, c"script arguments".as_ptr());
                for list in [keys, args] {
                    ffi::lua_createtable(state, list.len().min(i32::MAX as usize) as i32, 0);
                    for (i, item) in list.iter().enumerate() {
                        ffi::lua_pushlstring(state, item.as_ptr().cast(), item.len());
                        ffi::lua_rawseti(state, -2, (i + 1) as i64);
                    }
                }
                ffi::lua_call(state, 4, ffi::LUA_MULTRET);
            })
        }
    }
}

/// `redis.REDIS_VERSION_NUM`: 0x00MMmmpp.
fn version_num(v: &str) -> i64 {
    let mut parts = v.split('.').map(|p| p.parse::<i64>().unwrap_or(0));
    let (a, b, c) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (a << 16) | (b << 8) | c
}

/// The text of an mlua error, without mlua's decorations.
fn lua_error_text(e: &mlua::Error) -> String {
    match e {
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        mlua::Error::RuntimeError(m) => m.clone(),
        mlua::Error::CallbackError { cause, .. } => lua_error_text(cause),
        other => other.to_string(),
    }
}

/// Redis's reply for a script that raised `e` (as the prelude's handler
/// left it): `<err> script: <name>, on <source>:<line>.`.
fn error_reply(e: &Value, name: &str) -> String {
    let Value::Table(t) = e else {
        let what = match e {
            Value::Error(err) => lua_error_text(err),
            _ => "execution failure".to_string(),
        };
        return format!("ERR Error running script {name}, {what:.100}");
    };
    let text = |k: &str| match t.raw_get::<Value>(k) {
        Ok(Value::String(s)) => Some(crate::resp::reply::raw_text(&s.as_bytes())),
        Ok(Value::Integer(n)) => Some(n.to_string()),
        Ok(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    let msg = text("err").unwrap_or_else(|| "ERR unknown error".into());
    match (text("source"), text("line")) {
        (Some(source), Some(line)) => format!("{msg} script: {name}, on {source}:{line}."),
        _ => msg,
    }
}
