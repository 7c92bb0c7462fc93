//! FUNCTION libraries on an interpreter: loading a library's code (which
//! registers its functions with `redis.register_function`) and FCALL.
//!
//! A library's code runs once, at load, in globals that hold only the
//! loading `redis` table (register_function, log, the versions), as in
//! Redis; its functions then see the scripts' globals. A load has
//! [`LOAD_TIMEOUT`] to finish.

use std::time::{Duration, Instant};

use bytes::Bytes;
use mlua::{Function, Table, Value};

use super::functions::FunctionInfo;
use super::{error_reply, lua_error_text, Host, Name, Stop, Vm};
use crate::resp::Reply;

/// The chunk name of a library: errors read `user_function:<line>`.
const CHUNK: &str = "@user_function";

/// How long a library's code may run at load (Redis's 500 ms).
const LOAD_TIMEOUT: Duration = Duration::from_millis(500);

impl Vm {
    /// Loads a library's code (`code[code_at..]`, after its shebang line,
    /// whose newline keeps the line numbers): the functions it registered,
    /// or Redis's error. They are installed here only when `install`; a
    /// FUNCTION LOAD checks a library on a scratch run first.
    pub fn load_library(&mut self, code: &[u8], code_at: usize, install: bool) -> Result<Vec<FunctionInfo>, String> {
        let (env, loaded): (Table, Function) = self.library_env.call(()).map_err(|e| format!("ERR {}", lua_error_text(&e)))?;
        let f = self
            .lua
            .load(&code[code_at.min(code.len())..])
            .set_name(CHUNK)
            .set_environment(env)
            .into_function()
            .map_err(|e| format!("ERR Error compiling function: {}", lua_error_text(&e)))?;
        self.run.registering.replace(Some(Vec::new()));
        self.run.load_deadline.set(Some(Instant::now() + LOAD_TIMEOUT));
        self.run.stop.set(None);
        let res = self.runner.call::<(bool, Value)>((f, false));
        self.run.load_deadline.set(None);
        let registered = self.run.registering.take().unwrap_or_default();
        match res {
            Ok((true, _)) => {}
            Ok((false, e)) => {
                let msg = error_reply(&e, "");
                let msg = msg.split(" script: ").next().unwrap_or(&msg).to_string();
                return Err(format!("ERR Error registering functions: {msg}"));
            }
            Err(e) => return Err(format!("ERR Error registering functions: {}", lua_error_text(&e))),
        }
        if registered.is_empty() {
            return Err("ERR No functions registered".into());
        }
        loaded.call::<()>(()).map_err(|e| format!("ERR {}", lua_error_text(&e)))?;
        let infos = registered.iter().map(|(i, _)| i.clone()).collect();
        if install {
            for (info, f) in registered {
                self.functions.insert(info.name.to_ascii_lowercase(), (info.name, f));
            }
        }
        Ok(infos)
    }

    /// The epoch of the function set loaded here (None: none yet).
    pub fn functions_epoch(&self) -> Option<u64> {
        self.functions_epoch
    }

    /// Forgets every function, for a load of the set of `epoch`.
    pub fn reset_functions(&mut self, epoch: u64) {
        self.functions.clear();
        self.functions_epoch = Some(epoch);
    }

    /// Whether function `name` (any case) is loaded here.
    pub fn has_function(&self, name: &str) -> bool {
        self.functions.contains_key(&name.to_ascii_lowercase())
    }

    /// FCALL: runs function `name` with `keys` and `args`.
    pub fn run_function(&mut self, name: &str, keys: &[Bytes], args: &[Bytes], host: &mut dyn Host, out: &mut Reply) -> Result<(), Stop> {
        let found = if name.bytes().any(|b| b.is_ascii_uppercase()) {
            self.functions.get(&name.to_ascii_lowercase())
        } else {
            self.functions.get(name)
        };
        let Some((shown, f)) = found else {
            out.error("ERR Function not found");
            return Ok(());
        };
        // SAFETY: both live in `self.functions`, which `call` does not touch.
        let (shown, f): (*const String, *const Function) = (shown, f);
        self.call(unsafe { &*f }, false, keys, args, Name::Function(unsafe { &*shown }), host, out)
    }
}
