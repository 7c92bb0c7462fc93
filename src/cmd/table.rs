//! The command table. Each family module declares its own commands beside
//! their handlers (`COMMANDS`, one line per command, written with
//! [`commands!`]); this module joins the families in a fixed order into
//! [`TABLE`] (a command's position there is its index in the per-shard
//! stats) and builds the name index that [`super::lookup`] reads.
//!
//! A declaration line reads:
//! `"name" arity [flags] first last step Kind(handler) group "since" "summary" [subs LIST];`
//! with Redis's conventions for arity (N exact, -N at least N, the name
//! included) and key positions (last -1: up to the last argument).

use std::collections::HashMap;
use std::sync::LazyLock;

use super::{connection, hashes, keys, server, sets, strings, CommandSpec};

/// Declares a family's commands, one line each (see the module doc). The
/// braces keep rustfmt from spreading a line over twelve.
macro_rules! commands {
    ($($name:literal $arity:literal [$($flag:ident)*] $fk:literal $lk:literal $step:literal $kind:ident($f:path) $group:ident $since:literal $summary:literal $(subs $subs:path)?;)*) => {
        &[$($crate::cmd::CommandSpec {
            name: $name,
            arity: $arity,
            flags: &[$(stringify!($flag)),*],
            bits: $crate::cmd::flag_bits(&[$(stringify!($flag)),*]),
            first_key: $fk,
            last_key: $lk,
            step: $step,
            group: stringify!($group),
            since: $since,
            summary: $summary,
            exec: $crate::cmd::exec!($kind $f),
            subcommands: $crate::cmd::commands!(@subs $($subs)?),
        }),*]
    };
    (@subs) => { &[] };
    (@subs $subs:path) => { $subs };
}

/// A declaration's `Shard(handler)` or `Conn(handler)`; a connection
/// handler is an `async fn`, whose future is boxed here.
macro_rules! exec {
    (Shard $f:path) => {
        $crate::cmd::Exec::Shard($f)
    };
    (Conn $f:path) => {
        $crate::cmd::Exec::Conn({
            fn boxed<'a>(
                c: $crate::cmd::Conn<'a>,
                argv: &'a [bytes::Bytes],
                r: &'a mut $crate::resp::Reply,
            ) -> $crate::cmd::ConnFuture<'a> {
                Box::pin($f(c, argv, r))
            }
            boxed
        })
    };
}

/// Declares a container command's subcommands, one line each:
/// `"name" arity [flags] "summary";`.
macro_rules! subcommands {
    ($($name:literal $arity:literal [$($flag:ident)*] $summary:literal;)*) => {
        &[$($crate::cmd::SubSpec { name: $name, arity: $arity, flags: &[$(stringify!($flag)),*], summary: $summary }),*]
    };
}

pub(crate) use {commands, exec, subcommands};

/// Every command, family by family.
pub static TABLE: LazyLock<Vec<CommandSpec>> = LazyLock::new(|| {
    [
        connection::COMMANDS,
        strings::COMMANDS,
        keys::COMMANDS,
        server::COMMANDS,
        hashes::COMMANDS,
        sets::COMMANDS,
    ]
    .concat()
});

/// Lower-case name to index in [`TABLE`].
pub(super) static INDEX: LazyLock<HashMap<&'static [u8], usize, ahash::RandomState>> =
    LazyLock::new(|| TABLE.iter().enumerate().map(|(i, c)| (c.name.as_bytes(), i)).collect());
