//! The command table, declared once: one file per command family, joined
//! in a fixed order into [`TABLE`] (a command's position there is its index
//! in the per-shard stats). The container commands' subcommands are here.

use std::sync::LazyLock;

use super::ConnCmd as C;
use super::Exec::{Conn, Shard};
use super::{hashes, keys, sets, strings, whole, CommandSpec, SubSpec};

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
mod connection_cmds;
mod hash_cmds;
mod key_cmds;
mod server_cmds;
mod set_cmds;
mod string_cmds;

/// Every command, in the order the families are listed here.
pub static TABLE: LazyLock<Vec<CommandSpec>> = LazyLock::new(|| {
    [
        connection_cmds::SPECS,
        string_cmds::SPECS,
        key_cmds::SPECS,
        server_cmds::SPECS,
        hash_cmds::SPECS,
        set_cmds::SPECS,
    ]
    .concat()
});
