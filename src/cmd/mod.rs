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
pub mod whole;

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

macro_rules! spec {
    ($name:literal, $arity:expr, [$($flag:literal),*], $fk:expr, $lk:expr, $st:expr, $group:literal, $since:literal, $summary:literal, $exec:expr) => {
        spec!($name, $arity, [$($flag),*], $fk, $lk, $st, $group, $since, $summary, $exec, &[])
    };
    ($name:literal, $arity:expr, [$($flag:literal),*], $fk:expr, $lk:expr, $st:expr, $group:literal, $since:literal, $summary:literal, $exec:expr, $subs:expr) => {
        CommandSpec {
            name: $name,
            arity: $arity,
            flags: &[$($flag),*],
            first_key: $fk,
            last_key: $lk,
            step: $st,
            group: $group,
            since: $since,
            summary: $summary,
            exec: $exec,
            subcommands: $subs,
        }
    };
}

macro_rules! sub {
    ($name:literal, $arity:expr, [$($flag:literal),*], $summary:literal) => {
        SubSpec { name: $name, arity: $arity, flags: &[$($flag),*], summary: $summary }
    };
}

use ConnCmd as C;
use Exec::{Conn, Shard};

const CLIENT_SUBS: &[SubSpec] = &[
    sub!(
        "id",
        2,
        ["noscript", "loading", "stale"],
        "Returns the unique client ID of the connection."
    ),
    sub!("setname", 3, ["noscript", "loading", "stale"], "Sets the connection name."),
    sub!(
        "getname",
        2,
        ["noscript", "loading", "stale"],
        "Returns the name of the connection."
    ),
    sub!("list", -2, ["admin", "noscript", "loading", "stale"], "Lists open connections."),
    sub!(
        "info",
        2,
        ["noscript", "loading", "stale"],
        "Returns information about the connection."
    ),
    sub!(
        "kill",
        -3,
        ["admin", "noscript", "loading", "stale"],
        "Terminates open connections."
    ),
    sub!(
        "setinfo",
        4,
        ["noscript", "loading", "stale"],
        "Sets information specific to the client or connection."
    ),
    sub!(
        "no-evict",
        3,
        ["admin", "noscript", "loading", "stale"],
        "Sets the client eviction mode of the connection."
    ),
    sub!(
        "no-touch",
        3,
        ["noscript", "loading", "stale"],
        "Controls whether commands sent by the client affect the LRU/LFU of accessed keys."
    ),
    sub!(
        "help",
        2,
        ["loading", "stale"],
        "Returns helpful text about the different subcommands."
    ),
];

const CONFIG_SUBS: &[SubSpec] = &[
    sub!(
        "get",
        -3,
        ["admin", "noscript", "loading", "stale"],
        "Returns the effective values of configuration parameters."
    ),
    sub!(
        "set",
        -4,
        ["admin", "noscript", "loading", "stale"],
        "Sets configuration parameters in-flight."
    ),
    sub!(
        "resetstat",
        2,
        ["admin", "noscript", "loading", "stale"],
        "Resets the server's statistics."
    ),
    sub!(
        "rewrite",
        2,
        ["admin", "noscript", "loading", "stale"],
        "Persists the effective configuration to file."
    ),
    sub!(
        "help",
        2,
        ["loading", "stale"],
        "Returns helpful text about the different subcommands."
    ),
];

const SLOWLOG_SUBS: &[SubSpec] = &[
    sub!("get", -2, ["admin", "loading", "stale"], "Returns the slow log's entries."),
    sub!(
        "len",
        2,
        ["admin", "loading", "stale"],
        "Returns the number of entries in the slow log."
    ),
    sub!("reset", 2, ["admin", "loading", "stale"], "Clears all entries from the slow log."),
    sub!("help", 2, ["loading", "stale"], "Show helpful text about the different subcommands"),
];

const LATENCY_SUBS: &[SubSpec] = &[
    sub!(
        "doctor",
        2,
        ["admin", "noscript", "loading", "stale"],
        "Returns a human-readable latency analysis report."
    ),
    sub!(
        "histogram",
        -2,
        ["admin", "noscript", "loading", "stale"],
        "Returns the cumulative distribution of latencies of a subset or all commands."
    ),
    sub!(
        "history",
        3,
        ["admin", "noscript", "loading", "stale"],
        "Returns timestamp-latency samples for an event."
    ),
    sub!(
        "latest",
        2,
        ["admin", "noscript", "loading", "stale"],
        "Returns the latest latency samples for all events."
    ),
    sub!(
        "reset",
        -2,
        ["admin", "noscript", "loading", "stale"],
        "Resets the latency data for one or more events."
    ),
    sub!(
        "help",
        2,
        ["loading", "stale"],
        "Returns helpful text about the different subcommands."
    ),
];

const OBJECT_SUBS: &[SubSpec] = &[
    sub!("encoding", 3, ["readonly"], "Returns the internal encoding of a Redis object."),
    sub!("refcount", 3, ["readonly"], "Returns the reference count of a value of a key."),
    sub!(
        "idletime",
        3,
        ["readonly"],
        "Returns the time since the last access to a Redis object."
    ),
    sub!(
        "freq",
        3,
        ["readonly"],
        "Returns the logarithmic access frequency counter of a Redis object."
    ),
    sub!(
        "help",
        2,
        ["loading", "stale"],
        "Returns helpful text about the different subcommands."
    ),
];

const COMMAND_SUBS: &[SubSpec] = &[
    sub!("count", 2, ["loading", "stale"], "Returns a count of commands."),
    sub!(
        "info",
        -2,
        ["loading", "stale"],
        "Returns information about one, multiple or all commands."
    ),
    sub!(
        "docs",
        -2,
        ["loading", "stale"],
        "Returns documentary information about one, multiple or all commands."
    ),
    sub!("list", -2, ["loading", "stale"], "Returns a list of command names."),
    sub!(
        "getkeys",
        -3,
        ["loading", "stale"],
        "Extracts the key names from an arbitrary command."
    ),
    sub!(
        "help",
        2,
        ["loading", "stale"],
        "Returns helpful text about the different subcommands."
    ),
];

/// Every command Basalt serves.
pub static TABLE: &[CommandSpec] = &[
    // connection
    spec!(
        "ping",
        -1,
        ["fast"],
        0,
        0,
        0,
        "connection",
        "1.0.0",
        "Returns the server's liveliness response.",
        Conn(C::Ping)
    ),
    spec!(
        "echo",
        2,
        ["fast"],
        0,
        0,
        0,
        "connection",
        "1.0.0",
        "Returns the given string.",
        Conn(C::Echo)
    ),
    spec!(
        "quit",
        -1,
        ["allow_busy", "noscript", "loading", "stale", "fast", "no_auth"],
        0,
        0,
        0,
        "connection",
        "1.0.0",
        "Closes the connection.",
        Conn(C::Quit)
    ),
    spec!(
        "reset",
        1,
        ["noscript", "loading", "stale", "fast", "no_auth", "allow_busy"],
        0,
        0,
        0,
        "connection",
        "6.2.0",
        "Resets the connection.",
        Conn(C::Reset)
    ),
    spec!(
        "hello",
        -1,
        ["noscript", "loading", "stale", "fast", "no_auth", "allow_busy"],
        0,
        0,
        0,
        "connection",
        "6.0.0",
        "Handshakes with the Redis server.",
        Conn(C::Hello)
    ),
    spec!(
        "auth",
        -2,
        ["noscript", "loading", "stale", "fast", "no_auth", "allow_busy"],
        0,
        0,
        0,
        "connection",
        "1.0.0",
        "Authenticates the connection.",
        Conn(C::Auth)
    ),
    spec!(
        "select",
        2,
        ["loading", "stale", "fast"],
        0,
        0,
        0,
        "connection",
        "1.0.0",
        "Changes the selected database.",
        Conn(C::Select)
    ),
    spec!(
        "client",
        -2,
        [],
        0,
        0,
        0,
        "connection",
        "2.4.0",
        "A container for client connection commands.",
        Conn(C::Client),
        CLIENT_SUBS
    ),
    // strings
    spec!(
        "get",
        2,
        ["readonly", "fast"],
        1,
        1,
        1,
        "string",
        "1.0.0",
        "Returns the string value of a key.",
        Shard(strings::get)
    ),
    spec!(
        "set",
        -3,
        ["write", "denyoom"],
        1,
        1,
        1,
        "string",
        "1.0.0",
        "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.",
        Shard(strings::set)
    ),
    spec!(
        "setnx",
        3,
        ["write", "denyoom", "fast"],
        1,
        1,
        1,
        "string",
        "1.0.0",
        "Set the string value of a key only when the key doesn't exist.",
        Shard(strings::setnx)
    ),
    spec!(
        "setex",
        4,
        ["write", "denyoom"],
        1,
        1,
        1,
        "string",
        "2.0.0",
        "Sets the string value and expiration time of a key. Creates the key if it doesn't exist.",
        Shard(strings::setex)
    ),
    spec!(
        "psetex",
        4,
        ["write", "denyoom"],
        1,
        1,
        1,
        "string",
        "2.6.0",
        "Sets both string value and expiration time in milliseconds of a key. The key is created if it doesn't exist.",
        Shard(strings::psetex)
    ),
    spec!(
        "getset",
        3,
        ["write", "denyoom", "fast"],
        1,
        1,
        1,
        "string",
        "1.0.0",
        "Returns the previous string value of a key after setting it to a new value.",
        Shard(strings::getset)
    ),
    spec!(
        "getdel",
        2,
        ["write", "fast"],
        1,
        1,
        1,
        "string",
        "6.2.0",
        "Returns the string value of a key after deleting the key.",
        Shard(strings::getdel)
    ),
    spec!(
        "getex",
        -2,
        ["write", "fast"],
        1,
        1,
        1,
        "string",
        "6.2.0",
        "Returns the string value of a key after setting its expiration time.",
        Shard(strings::getex)
    ),
    spec!(
        "mget",
        -2,
        ["readonly", "fast"],
        1,
        -1,
        1,
        "string",
        "1.0.0",
        "Atomically returns the string values of one or more keys.",
        Conn(C::Mget)
    ),
    spec!(
        "mset",
        -3,
        ["write", "denyoom"],
        1,
        -1,
        2,
        "string",
        "1.0.1",
        "Atomically creates or modifies the string values of one or more keys.",
        Conn(C::Mset)
    ),
    spec!(
        "msetnx",
        -3,
        ["write", "denyoom"],
        1,
        -1,
        2,
        "string",
        "1.0.1",
        "Atomically modifies the string values of one or more keys only when all keys don't exist.",
        Conn(C::Msetnx)
    ),
    spec!(
        "append",
        3,
        ["write", "denyoom", "fast"],
        1,
        1,
        1,
        "string",
        "2.0.0",
        "Appends a string to the value of a key. Creates the key if it doesn't exist.",
        Shard(strings::append)
    ),
    spec!(
        "strlen",
        2,
        ["readonly", "fast"],
        1,
        1,
        1,
        "string",
        "2.2.0",
        "Returns the length of a string value.",
        Shard(strings::strlen)
    ),
    spec!(
        "incr",
        2,
        ["write", "denyoom", "fast"],
        1,
        1,
        1,
        "string",
        "1.0.0",
        "Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.",
        Shard(strings::incr)
    ),
    spec!(
        "decr",
        2,
        ["write", "denyoom", "fast"],
        1,
        1,
        1,
        "string",
        "1.0.0",
        "Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.",
        Shard(strings::decr)
    ),
    spec!(
        "incrby",
        3,
        ["write", "denyoom", "fast"],
        1,
        1,
        1,
        "string",
        "1.0.0",
        "Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't exist.",
        Shard(strings::incrby)
    ),
    spec!(
        "decrby",
        3,
        ["write", "denyoom", "fast"],
        1,
        1,
        1,
        "string",
        "1.0.0",
        "Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't exist.",
        Shard(strings::decrby)
    ),
    spec!(
        "incrbyfloat",
        3,
        ["write", "denyoom", "fast"],
        1,
        1,
        1,
        "string",
        "2.6.0",
        "Increment the floating point value of a key by a number. Uses 0 as initial value if the key doesn't exist.",
        Shard(strings::incrbyfloat)
    ),
    spec!(
        "getrange",
        4,
        ["readonly"],
        1,
        1,
        1,
        "string",
        "2.4.0",
        "Returns a substring of the string stored at a key.",
        Shard(strings::getrange)
    ),
    spec!(
        "substr",
        4,
        ["readonly"],
        1,
        1,
        1,
        "string",
        "1.0.0",
        "Returns a substring from a string value.",
        Shard(strings::getrange)
    ),
    spec!(
        "setrange",
        4,
        ["write", "denyoom"],
        1,
        1,
        1,
        "string",
        "2.2.0",
        "Overwrites a part of a string value with another by an offset. Creates the key if it doesn't exist.",
        Shard(strings::setrange)
    ),
    spec!(
        "lcs",
        -3,
        ["readonly"],
        1,
        2,
        1,
        "string",
        "7.0.0",
        "Finds the longest common substring.",
        Conn(C::Lcs)
    ),
    // keys
    spec!(
        "del",
        -2,
        ["write"],
        1,
        -1,
        1,
        "generic",
        "1.0.0",
        "Deletes one or more keys.",
        Conn(C::Del)
    ),
    spec!(
        "unlink",
        -2,
        ["write", "fast"],
        1,
        -1,
        1,
        "generic",
        "4.0.0",
        "Asynchronously deletes one or more keys.",
        Conn(C::Del)
    ),
    spec!(
        "exists",
        -2,
        ["readonly", "fast"],
        1,
        -1,
        1,
        "generic",
        "1.0.0",
        "Determines whether one or more keys exist.",
        Conn(C::Exists)
    ),
    spec!(
        "touch",
        -2,
        ["readonly", "fast"],
        1,
        -1,
        1,
        "generic",
        "3.2.1",
        "Returns the number of existing keys out of those specified after updating the time they were last accessed.",
        Conn(C::Touch)
    ),
    spec!(
        "type",
        2,
        ["readonly", "fast"],
        1,
        1,
        1,
        "generic",
        "1.0.0",
        "Determines the type of value stored at a key.",
        Shard(keys::type_)
    ),
    spec!(
        "expire",
        -3,
        ["write", "fast"],
        1,
        1,
        1,
        "generic",
        "1.0.0",
        "Sets the expiration time of a key in seconds.",
        Shard(keys::expire)
    ),
    spec!(
        "pexpire",
        -3,
        ["write", "fast"],
        1,
        1,
        1,
        "generic",
        "2.6.0",
        "Sets the expiration time of a key in milliseconds.",
        Shard(keys::pexpire)
    ),
    spec!(
        "expireat",
        -3,
        ["write", "fast"],
        1,
        1,
        1,
        "generic",
        "1.2.0",
        "Sets the expiration time of a key to a Unix timestamp.",
        Shard(keys::expireat)
    ),
    spec!(
        "pexpireat",
        -3,
        ["write", "fast"],
        1,
        1,
        1,
        "generic",
        "2.6.0",
        "Sets the expiration time of a key to a Unix milliseconds timestamp.",
        Shard(keys::pexpireat)
    ),
    spec!(
        "ttl",
        2,
        ["readonly", "fast"],
        1,
        1,
        1,
        "generic",
        "1.0.0",
        "Returns the expiration time in seconds of a key.",
        Shard(keys::ttl)
    ),
    spec!(
        "pttl",
        2,
        ["readonly", "fast"],
        1,
        1,
        1,
        "generic",
        "2.6.0",
        "Returns the expiration time in milliseconds of a key.",
        Shard(keys::pttl)
    ),
    spec!(
        "expiretime",
        2,
        ["readonly", "fast"],
        1,
        1,
        1,
        "generic",
        "7.0.0",
        "Returns the expiration time of a key as a Unix timestamp.",
        Shard(keys::expiretime)
    ),
    spec!(
        "pexpiretime",
        2,
        ["readonly", "fast"],
        1,
        1,
        1,
        "generic",
        "7.0.0",
        "Returns the expiration time of a key as a Unix milliseconds timestamp.",
        Shard(keys::pexpiretime)
    ),
    spec!(
        "persist",
        2,
        ["write", "fast"],
        1,
        1,
        1,
        "generic",
        "2.2.0",
        "Removes the expiration time of a key.",
        Shard(keys::persist)
    ),
    spec!(
        "rename",
        3,
        ["write"],
        1,
        2,
        1,
        "generic",
        "1.0.0",
        "Renames a key and overwrites the destination.",
        Conn(C::Rename)
    ),
    spec!(
        "renamenx",
        3,
        ["write", "fast"],
        1,
        2,
        1,
        "generic",
        "1.0.0",
        "Renames a key only when the target key name doesn't exist.",
        Conn(C::Renamenx)
    ),
    spec!(
        "copy",
        -3,
        ["write", "denyoom"],
        1,
        2,
        1,
        "generic",
        "6.2.0",
        "Copies the value of a key to a new key.",
        Conn(C::Copy)
    ),
    spec!(
        "move",
        3,
        ["write", "fast"],
        1,
        1,
        1,
        "generic",
        "1.0.0",
        "Moves a key to another database.",
        Shard(keys::move_)
    ),
    spec!(
        "scan",
        -2,
        ["readonly"],
        0,
        0,
        0,
        "generic",
        "2.8.0",
        "Iterates over the key names in the database.",
        Conn(C::Scan)
    ),
    spec!(
        "keys",
        2,
        ["readonly"],
        0,
        0,
        0,
        "generic",
        "1.0.0",
        "Returns all key names that match a pattern.",
        Conn(C::Keys)
    ),
    spec!(
        "randomkey",
        1,
        ["readonly"],
        0,
        0,
        0,
        "generic",
        "1.0.0",
        "Returns a random key name from the database.",
        Conn(C::Randomkey)
    ),
    spec!(
        "dbsize",
        1,
        ["readonly", "fast"],
        0,
        0,
        0,
        "server",
        "1.0.0",
        "Returns the number of keys in the database.",
        Conn(C::Dbsize)
    ),
    spec!(
        "flushdb",
        -1,
        ["write"],
        0,
        0,
        0,
        "server",
        "1.0.0",
        "Remove all keys from the current database.",
        Conn(C::Flushdb)
    ),
    spec!(
        "flushall",
        -1,
        ["write"],
        0,
        0,
        0,
        "server",
        "1.0.0",
        "Removes all keys from all databases.",
        Conn(C::Flushall)
    ),
    spec!(
        "object",
        -2,
        [],
        2,
        2,
        1,
        "generic",
        "2.2.3",
        "A container for object introspection commands.",
        Shard(keys::object),
        OBJECT_SUBS
    ),
    spec!(
        "dump",
        2,
        ["readonly"],
        1,
        1,
        1,
        "generic",
        "2.6.0",
        "Returns a serialized representation of the value stored at a key.",
        Shard(keys::dump)
    ),
    spec!(
        "restore",
        -4,
        ["write", "denyoom"],
        1,
        1,
        1,
        "generic",
        "2.6.0",
        "Creates a key from the serialized representation of a value.",
        Shard(keys::restore)
    ),
    // server
    spec!(
        "info",
        -1,
        ["loading", "stale"],
        0,
        0,
        0,
        "server",
        "1.0.0",
        "Returns information and statistics about the server.",
        Conn(C::Info)
    ),
    spec!(
        "config",
        -2,
        [],
        0,
        0,
        0,
        "server",
        "2.0.0",
        "A container for server configuration commands.",
        Conn(C::Config),
        CONFIG_SUBS
    ),
    spec!(
        "time",
        1,
        ["loading", "stale", "fast"],
        0,
        0,
        0,
        "server",
        "2.6.0",
        "Returns the server time.",
        Conn(C::Time)
    ),
    // hashes
    spec!(
        "hset",
        -4,
        ["write", "denyoom", "fast"],
        1,
        1,
        1,
        "hash",
        "2.0.0",
        "Creates or modifies the value of a field in a hash.",
        Shard(hashes::hset)
    ),
    spec!(
        "hsetnx",
        4,
        ["write", "denyoom", "fast"],
        1,
        1,
        1,
        "hash",
        "2.0.0",
        "Sets the value of a field in a hash only when the field doesn't exist.",
        Shard(hashes::hsetnx)
    ),
    spec!(
        "hmset",
        -4,
        ["write", "denyoom", "fast"],
        1,
        1,
        1,
        "hash",
        "2.0.0",
        "Sets the values of multiple fields.",
        Shard(hashes::hmset)
    ),
    spec!(
        "hget",
        3,
        ["readonly", "fast"],
        1,
        1,
        1,
        "hash",
        "2.0.0",
        "Returns the value of a field in a hash.",
        Shard(hashes::hget)
    ),
    spec!(
        "hmget",
        -3,
        ["readonly", "fast"],
        1,
        1,
        1,
        "hash",
        "2.0.0",
        "Returns the values of all fields in a hash.",
        Shard(hashes::hmget)
    ),
    spec!(
        "hdel",
        -3,
        ["write", "fast"],
        1,
        1,
        1,
        "hash",
        "2.0.0",
        "Deletes one or more fields and their values from a hash. Deletes the hash if no fields remain.",
        Shard(hashes::hdel)
    ),
    spec!(
        "hlen",
        2,
        ["readonly", "fast"],
        1,
        1,
        1,
        "hash",
        "2.0.0",
        "Returns the number of fields in a hash.",
        Shard(hashes::hlen)
    ),
    spec!(
        "hstrlen",
        3,
        ["readonly", "fast"],
        1,
        1,
        1,
        "hash",
        "3.2.0",
        "Returns the length of the value of a field.",
        Shard(hashes::hstrlen)
    ),
    spec!(
        "hexists",
        3,
        ["readonly", "fast"],
        1,
        1,
        1,
        "hash",
        "2.0.0",
        "Determines whether a field exists in a hash.",
        Shard(hashes::hexists)
    ),
    spec!(
        "hkeys",
        2,
        ["readonly"],
        1,
        1,
        1,
        "hash",
        "2.0.0",
        "Returns all fields in a hash.",
        Shard(whole::hkeys)
    ),
    spec!(
        "hvals",
        2,
        ["readonly"],
        1,
        1,
        1,
        "hash",
        "2.0.0",
        "Returns all values in a hash.",
        Shard(whole::hvals)
    ),
    spec!(
        "hgetall",
        2,
        ["readonly"],
        1,
        1,
        1,
        "hash",
        "2.0.0",
        "Returns all fields and values in a hash.",
        Shard(whole::hgetall)
    ),
    spec!(
        "hincrby",
        4,
        ["write", "denyoom", "fast"],
        1,
        1,
        1,
        "hash",
        "2.0.0",
        "Increments the integer value of a field in a hash by a number. Uses 0 as initial value if the field doesn't exist.",
        Shard(hashes::hincrby)
    ),
    spec!(
        "hincrbyfloat",
        4,
        ["write", "denyoom", "fast"],
        1,
        1,
        1,
        "hash",
        "2.6.0",
        "Increments the floating point value of a field by a number. Uses 0 as initial value if the field doesn't exist.",
        Shard(hashes::hincrbyfloat)
    ),
    spec!(
        "hrandfield",
        -2,
        ["readonly"],
        1,
        1,
        1,
        "hash",
        "6.2.0",
        "Returns one or more random fields from a hash.",
        Shard(hashes::hrandfield)
    ),
    spec!(
        "hscan",
        -3,
        ["readonly"],
        1,
        1,
        1,
        "hash",
        "2.8.0",
        "Iterates over fields and values of a hash.",
        Shard(hashes::hscan)
    ),
    spec!(
        "hgetdel",
        -5,
        ["write", "fast"],
        1,
        1,
        1,
        "hash",
        "8.0.0",
        "Returns the value of a field and deletes it from the hash.",
        Shard(hashes::hgetdel)
    ),
    spec!(
        "hgetex",
        -5,
        ["write", "fast"],
        1,
        1,
        1,
        "hash",
        "8.0.0",
        "Get the value of one or more fields of a given hash key, and optionally set their expiration.",
        Shard(hashes::hgetex)
    ),
    spec!(
        "hsetex",
        -6,
        ["write", "denyoom", "fast"],
        1,
        1,
        1,
        "hash",
        "8.0.0",
        "Set the value of one or more fields of a given hash key, and optionally set their expiration.",
        Shard(hashes::hsetex)
    ),
    spec!(
        "hexpire",
        -6,
        ["write", "denyoom", "fast"],
        1,
        1,
        1,
        "hash",
        "7.4.0",
        "Set expiry for hash field using relative time to expire (seconds)",
        Shard(hashes::hexpire)
    ),
    spec!(
        "hpexpire",
        -6,
        ["write", "denyoom", "fast"],
        1,
        1,
        1,
        "hash",
        "7.4.0",
        "Set expiry for hash field using relative time to expire (milliseconds)",
        Shard(hashes::hpexpire)
    ),
    spec!(
        "hexpireat",
        -6,
        ["write", "denyoom", "fast"],
        1,
        1,
        1,
        "hash",
        "7.4.0",
        "Set expiry for hash field using an absolute Unix timestamp (seconds)",
        Shard(hashes::hexpireat)
    ),
    spec!(
        "hpexpireat",
        -6,
        ["write", "denyoom", "fast"],
        1,
        1,
        1,
        "hash",
        "7.4.0",
        "Set expiry for hash field using an absolute Unix timestamp (milliseconds)",
        Shard(hashes::hpexpireat)
    ),
    spec!(
        "httl",
        -5,
        ["readonly", "fast"],
        1,
        1,
        1,
        "hash",
        "7.4.0",
        "Returns the TTL in seconds of a hash field.",
        Shard(hashes::httl)
    ),
    spec!(
        "hpttl",
        -5,
        ["readonly", "fast"],
        1,
        1,
        1,
        "hash",
        "7.4.0",
        "Returns the TTL in milliseconds of a hash field.",
        Shard(hashes::hpttl)
    ),
    spec!(
        "hexpiretime",
        -5,
        ["readonly", "fast"],
        1,
        1,
        1,
        "hash",
        "7.4.0",
        "Returns the expiration time of a hash field as a Unix timestamp, in seconds.",
        Shard(hashes::hexpiretime)
    ),
    spec!(
        "hpexpiretime",
        -5,
        ["readonly", "fast"],
        1,
        1,
        1,
        "hash",
        "7.4.0",
        "Returns the expiration time of a hash field as a Unix timestamp, in msec.",
        Shard(hashes::hpexpiretime)
    ),
    spec!(
        "hpersist",
        -5,
        ["write", "fast"],
        1,
        1,
        1,
        "hash",
        "7.4.0",
        "Removes the expiration time for each specified field",
        Shard(hashes::hpersist)
    ),
    // sets
    spec!(
        "sadd",
        -3,
        ["write", "denyoom", "fast"],
        1,
        1,
        1,
        "set",
        "1.0.0",
        "Adds one or more members to a set. Creates the key if it doesn't exist.",
        Shard(sets::sadd)
    ),
    spec!(
        "srem",
        -3,
        ["write", "fast"],
        1,
        1,
        1,
        "set",
        "1.0.0",
        "Removes one or more members from a set. Deletes the set if the last member was removed.",
        Shard(sets::srem)
    ),
    spec!(
        "scard",
        2,
        ["readonly", "fast"],
        1,
        1,
        1,
        "set",
        "1.0.0",
        "Returns the number of members in a set.",
        Shard(sets::scard)
    ),
    spec!(
        "sismember",
        3,
        ["readonly", "fast"],
        1,
        1,
        1,
        "set",
        "1.0.0",
        "Determines whether a member belongs to a set.",
        Shard(sets::sismember)
    ),
    spec!(
        "smismember",
        -3,
        ["readonly", "fast"],
        1,
        1,
        1,
        "set",
        "6.2.0",
        "Determines whether multiple members belong to a set.",
        Shard(sets::smismember)
    ),
    spec!(
        "smembers",
        2,
        ["readonly"],
        1,
        1,
        1,
        "set",
        "1.0.0",
        "Returns all members of a set.",
        Shard(whole::smembers)
    ),
    spec!(
        "srandmember",
        -2,
        ["readonly"],
        1,
        1,
        1,
        "set",
        "1.0.0",
        "Get one or multiple random members from a set",
        Shard(sets::srandmember)
    ),
    spec!(
        "spop",
        -2,
        ["write", "fast"],
        1,
        1,
        1,
        "set",
        "1.0.0",
        "Returns one or more random members from a set after removing them. Deletes the set if the last member was popped.",
        Shard(sets::spop)
    ),
    spec!(
        "smove",
        4,
        ["write", "fast"],
        1,
        2,
        1,
        "set",
        "1.0.0",
        "Moves a member from one set to another.",
        Conn(C::Smove)
    ),
    spec!(
        "sinter",
        -2,
        ["readonly"],
        1,
        -1,
        1,
        "set",
        "1.0.0",
        "Returns the intersect of multiple sets.",
        Conn(C::Sinter)
    ),
    spec!(
        "sintercard",
        -3,
        ["readonly", "movablekeys"],
        0,
        0,
        0,
        "set",
        "7.0.0",
        "Returns the number of members of the intersect of multiple sets.",
        Conn(C::Sintercard)
    ),
    spec!(
        "sinterstore",
        -3,
        ["write", "denyoom"],
        1,
        -1,
        1,
        "set",
        "1.0.0",
        "Stores the intersect of multiple sets in a key.",
        Conn(C::Sinterstore)
    ),
    spec!(
        "sunion",
        -2,
        ["readonly"],
        1,
        -1,
        1,
        "set",
        "1.0.0",
        "Returns the union of multiple sets.",
        Conn(C::Sunion)
    ),
    spec!(
        "sunionstore",
        -3,
        ["write", "denyoom"],
        1,
        -1,
        1,
        "set",
        "1.0.0",
        "Stores the union of multiple sets in a key.",
        Conn(C::Sunionstore)
    ),
    spec!(
        "sdiff",
        -2,
        ["readonly"],
        1,
        -1,
        1,
        "set",
        "1.0.0",
        "Returns the difference of multiple sets.",
        Conn(C::Sdiff)
    ),
    spec!(
        "sdiffstore",
        -3,
        ["write", "denyoom"],
        1,
        -1,
        1,
        "set",
        "1.0.0",
        "Stores the difference of multiple sets in a key.",
        Conn(C::Sdiffstore)
    ),
    spec!(
        "sscan",
        -3,
        ["readonly"],
        1,
        1,
        1,
        "set",
        "2.8.0",
        "Iterates over members of a set.",
        Shard(sets::sscan)
    ),
    spec!(
        "shutdown",
        -1,
        ["admin", "noscript", "loading", "stale", "no_multi", "allow_busy"],
        0,
        0,
        0,
        "server",
        "1.0.0",
        "Synchronously saves the database(s) to disk and shuts down the Redis server.",
        Conn(C::Shutdown)
    ),
    spec!(
        "lastsave",
        1,
        ["loading", "stale", "fast"],
        0,
        0,
        0,
        "server",
        "1.0.0",
        "Returns the Unix timestamp of the last successful save to disk.",
        Conn(C::Lastsave)
    ),
    spec!(
        "save",
        1,
        ["admin", "noscript", "no_async_loading", "no_multi"],
        0,
        0,
        0,
        "server",
        "1.0.0",
        "Synchronously saves the database(s) to disk.",
        Conn(C::Save)
    ),
    spec!(
        "bgsave",
        -1,
        ["admin", "noscript", "no_async_loading"],
        0,
        0,
        0,
        "server",
        "1.0.0",
        "Asynchronously saves the database(s) to disk.",
        Conn(C::Bgsave)
    ),
    spec!(
        "debug",
        -2,
        ["admin", "noscript", "loading", "stale", "protected"],
        0,
        0,
        0,
        "server",
        "1.0.0",
        "A container for debugging commands.",
        Conn(C::Debug)
    ),
    spec!(
        "slowlog",
        -2,
        [],
        0,
        0,
        0,
        "server",
        "2.2.12",
        "A container for slow log commands.",
        Conn(C::Slowlog),
        SLOWLOG_SUBS
    ),
    spec!(
        "latency",
        -2,
        [],
        0,
        0,
        0,
        "server",
        "2.8.13",
        "A container for latency diagnostics commands.",
        Conn(C::Latency),
        LATENCY_SUBS
    ),
    spec!(
        "command",
        -1,
        ["loading", "stale"],
        0,
        0,
        0,
        "server",
        "2.8.13",
        "Returns detailed information about all commands.",
        Conn(C::Command),
        COMMAND_SUBS
    ),
];

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
