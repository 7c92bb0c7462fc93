//! The command table: every command declared once (name, arity, flags, key
//! positions, how it executes), plus argument-parsing helpers.
//!
//! `COMMAND`, `COMMAND INFO/COUNT/DOCS/LIST/GETKEYS`, unknown-command and
//! wrong-arity errors are all generated from [`TABLE`]. A command executes
//! in one of two ways:
//! - [`Exec::Shard`]: a synchronous handler over one shard's keyspace; the
//!   connection routes it to the shard that owns its first key (all its keys
//!   share that key's slot or shard).
//! - [`Exec::Conn`]: runs in the connection task; it may await other shards
//!   (multi-key fan-out, server commands) or touch connection state.

pub mod args;
pub mod command;
pub mod connection;
pub mod hashes;
pub mod keys;
pub mod server;
pub mod sets;
pub mod strings;
mod table;
pub mod whole;

pub use table::TABLE;

use bytes::Bytes;

use crate::error::CmdResult;
use crate::resp::Reply;
use crate::shard::ShardState;
use args::text;

/// What a shard handler sees.
pub struct Ctx<'a> {
    pub shard: &'a ShardState,
    pub db: u8,
    pub now_ms: u64,
}

impl Ctx<'_> {
    pub fn ks(&self) -> &crate::types::keyspace::Keyspace {
        &self.shard.ks
    }
}

/// A handler that runs on the shard owning the command's keys.
pub type ShardFn = fn(&Ctx, &[Bytes], &mut Reply) -> CmdResult;

/// Commands that run in the connection task, matched by the connection loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnCmd {
    Ping,
    Echo,
    Quit,
    Reset,
    Hello,
    Auth,
    Select,
    Client,
    Mget,
    Mset,
    Msetnx,
    Del,
    Exists,
    Touch,
    Rename,
    Renamenx,
    Copy,
    Lcs,
    Scan,
    Keys,
    Randomkey,
    Dbsize,
    Flushdb,
    Flushall,
    Info,
    Config,
    Time,
    Shutdown,
    Lastsave,
    Save,
    Bgsave,
    Debug,
    Command,
    Slowlog,
    Latency,
    Smove,
    Sinter,
    Sintercard,
    Sinterstore,
    Sunion,
    Sunionstore,
    Sdiff,
    Sdiffstore,
}

#[derive(Clone, Copy)]
pub enum Exec {
    Shard(ShardFn),
    Conn(ConnCmd),
}

/// A subcommand of a container command (CLIENT, CONFIG, OBJECT, COMMAND).
pub struct SubSpec {
    pub name: &'static str,
    pub arity: i32,
    pub flags: &'static [&'static str],
    pub summary: &'static str,
}

/// One command's declaration.
#[derive(Clone)]
pub struct CommandSpec {
    /// Lower case, as COMMAND reports it.
    pub name: &'static str,
    /// Redis convention: N exact, -N at least N (argv including the name).
    pub arity: i32,
    pub flags: &'static [&'static str],
    pub first_key: i32,
    pub last_key: i32,
    pub step: i32,
    pub group: &'static str,
    pub since: &'static str,
    pub summary: &'static str,
    pub exec: Exec,
    pub subcommands: &'static [SubSpec],
}

impl CommandSpec {
    /// Whether `argc` satisfies `arity`.
    pub fn arity_ok(arity: i32, argc: usize) -> bool {
        if arity >= 0 {
            argc == arity as usize
        } else {
            argc >= (-arity) as usize
        }
    }

    pub fn is_write(&self) -> bool {
        self.flags.contains(&"write")
    }

    /// Positions of the keys in `argv` (COMMAND GETKEYS and routing).
    pub fn key_positions(&self, argc: usize) -> Vec<usize> {
        if self.first_key <= 0 {
            return Vec::new();
        }
        let last = if self.last_key < 0 {
            argc as i32 + self.last_key
        } else {
            self.last_key.min(argc as i32 - 1)
        };
        let mut out = Vec::new();
        let mut i = self.first_key;
        while i <= last && (i as usize) < argc {
            out.push(i as usize);
            i += self.step.max(1);
        }
        out
    }
}

/// Finds a command by name, case-insensitively, without allocating.
pub fn lookup(name: &[u8]) -> Option<(usize, &'static CommandSpec)> {
    if name.len() > 16 {
        return None;
    }
    let mut lower = [0u8; 16];
    for (d, s) in lower.iter_mut().zip(name) {
        *d = s.to_ascii_lowercase();
    }
    let lower = &lower[..name.len()];
    TABLE.iter().enumerate().find(|(_, c)| c.name.as_bytes() == lower)
}

/// At most `n` bytes of `a`, stopping at a NUL: C's `%.*s`, which Redis
/// formats client arguments into its errors with.
fn c_prefix(a: &[u8], n: usize) -> &[u8] {
    let a = &a[..a.len().min(n)];
    memchr::memchr(0, a).map_or(a, |i| &a[..i])
}

/// `ERR unknown command '<name>', with args beginning with: '<a>' '<b>' `,
/// built byte for byte as Redis builds it (128-byte caps, raw bytes).
pub fn unknown_command_error(argv: &[Bytes]) -> String {
    let mut args: Vec<u8> = Vec::new();
    for a in argv.iter().skip(1) {
        if args.len() >= 128 {
            break;
        }
        let room = 128 - args.len();
        args.push(b'\'');
        args.extend_from_slice(c_prefix(a, room));
        args.extend_from_slice(b"' ");
    }
    format!(
        "ERR unknown command '{}', with args beginning with: {}",
        text(c_prefix(&argv[0], 128)),
        text(&args)
    )
}

/// `ERR wrong number of arguments for '<name>' command`.
pub fn arity_error(name: &str) -> String {
    format!("ERR wrong number of arguments for '{name}' command")
}

/// Checks a container command's subcommand: its arity and existence.
pub fn check_subcommand(spec: &CommandSpec, argv: &[Bytes]) -> Result<(), String> {
    // COMMAND alone (arity -1) is a valid call with no subcommand.
    if spec.subcommands.is_empty() || argv.len() < 2 {
        return Ok(());
    }
    let sub = String::from_utf8_lossy(&argv[1]).to_ascii_lowercase();
    match spec.subcommands.iter().find(|s| s.name == sub) {
        None => Err(format!(
            "ERR unknown subcommand '{}'. Try {} HELP.",
            text(c_prefix(&argv[1], 128)),
            spec.name.to_ascii_uppercase()
        )),
        Some(s) if !CommandSpec::arity_ok(s.arity, argv.len()) => Err(arity_error(&format!("{}|{}", spec.name, s.name))),
        Some(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_is_case_insensitive_and_exact() {
        assert_eq!(lookup(b"GET").map(|(_, c)| c.name), Some("get"));
        assert_eq!(lookup(b"gEtRaNgE").map(|(_, c)| c.name), Some("getrange"));
        assert!(lookup(b"ge").is_none());
        assert!(lookup(b"averyveryverylongcommandname").is_none());
    }

    #[test]
    fn names_are_unique_and_lower_case() {
        for (i, c) in TABLE.iter().enumerate() {
            assert_eq!(c.name, c.name.to_ascii_lowercase());
            assert!(TABLE[i + 1..].iter().all(|o| o.name != c.name), "{} twice", c.name);
        }
    }

    #[test]
    fn key_positions() {
        let (_, mset) = lookup(b"mset").unwrap();
        assert_eq!(mset.key_positions(5), vec![1, 3]);
        let (_, get) = lookup(b"get").unwrap();
        assert_eq!(get.key_positions(2), vec![1]);
        let (_, lcs) = lookup(b"lcs").unwrap();
        assert_eq!(lcs.key_positions(4), vec![1, 2]);
    }

    #[test]
    fn unknown_command_text() {
        let argv = vec![Bytes::from_static(b"foo"), Bytes::from_static(b"a"), Bytes::from_static(b"b")];
        assert_eq!(
            unknown_command_error(&argv),
            "ERR unknown command 'foo', with args beginning with: 'a' 'b' "
        );
    }
}
