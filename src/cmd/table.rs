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

use std::sync::LazyLock;

use super::{
    acl, bits, cluster, connection, functions, geo, hashes, hll, keys, lists, migrate, monitor, multi, pubsub, scripting, server, sets,
    sort, streams, strings, xgroups, xread, zedit, zmulti, zscan, zsets, CommandSpec,
};

/// Declares a family's commands, one line each (see the module doc). The
/// braces keep rustfmt from spreading a line over twelve.
macro_rules! commands {
    ($($name:literal $arity:literal [$($flag:ident)*] $fk:literal $lk:literal $step:literal $kind:ident($f:path) $group:ident $since:literal $summary:literal $(subs $subs:path)?;)*) => {
        &[$($crate::cmd::CommandSpec {
            name: $name,
            arity: $arity,
            flags: &[$(stringify!($flag)),*],
            bits: $crate::cmd::spec_bits($name, &[$(stringify!($flag)),*]),
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

/// A declaration's `Shard(handler)` or `Conn(handler)`.
macro_rules! exec {
    (Shard $f:path) => {
        $crate::cmd::Exec::Shard($f)
    };
    (Conn $f:path) => {
        $crate::cmd::Exec::Conn($crate::cmd::conn_fn!($f))
    };
    (Script $f:path) => {
        $crate::cmd::Exec::Script($f)
    };
}

/// The [`ConnFn`](super::ConnFn) of a connection handler written as an
/// `async fn`: its future boxed.
macro_rules! conn_fn {
    ($f:path) => {{
        fn boxed<'a>(c: $crate::cmd::Conn<'a>, argv: &'a [bytes::Bytes], r: &'a mut $crate::resp::Reply) -> $crate::cmd::ConnFuture<'a> {
            Box::pin($f(c, argv, r))
        }
        boxed as $crate::cmd::ConnFn
    }};
}

/// Declares a container command's subcommands, one line each:
/// `"name" arity [flags] "summary";`.
macro_rules! subcommands {
    ($($name:literal $arity:literal [$($flag:ident)*] $summary:literal;)*) => {
        &[$($crate::cmd::SubSpec { name: $name, arity: $arity, flags: &[$(stringify!($flag)),*], summary: $summary }),*]
    };
}

pub(crate) use {commands, conn_fn, exec, subcommands};

/// Every command, family by family.
pub static TABLE: LazyLock<Vec<CommandSpec>> = LazyLock::new(|| {
    [
        connection::COMMANDS,
        acl::COMMANDS,
        cluster::COMMANDS,
        strings::COMMANDS,
        bits::COMMANDS,
        hll::COMMANDS,
        keys::COMMANDS,
        migrate::COMMANDS,
        sort::COMMANDS,
        server::COMMANDS,
        hashes::COMMANDS,
        sets::COMMANDS,
        zsets::COMMANDS,
        zedit::COMMANDS,
        zmulti::COMMANDS,
        zscan::COMMANDS,
        geo::COMMANDS,
        lists::COMMANDS,
        streams::COMMANDS,
        xgroups::COMMANDS,
        xread::COMMANDS,
        multi::COMMANDS,
        pubsub::COMMANDS,
        monitor::COMMANDS,
        scripting::COMMANDS,
        functions::COMMANDS,
    ]
    .concat()
});

/// Slots of [`INDEX`]: a power of two over twice the commands, so probes
/// stay short.
const SLOTS: usize = 512;

/// Lower-case name to index in [`TABLE`]: open addressing over
/// [`name_hash`], each slot the command's index plus one (0: empty). Built
/// once; a lookup is one pass over the name (lower-casing and hashing
/// together), one slot read and one compare in the common case.
/// Measured against the linear scan it replaced and a `HashMap` (tuning.md,
/// "Command lookup").
pub(super) struct NameIndex {
    slots: [u16; SLOTS],
}

/// The hash of a lower-case name (FxHash's step; the top bits pick the slot).
#[inline]
pub(super) fn name_hash(h: u64, byte: u8) -> u64 {
    (h.rotate_left(5) ^ byte as u64).wrapping_mul(0x517c_c1b7_2722_0a95)
}

impl NameIndex {
    #[inline]
    fn slot(h: u64) -> usize {
        (h >> (64 - SLOTS.trailing_zeros())) as usize
    }

    fn build(table: &[CommandSpec]) -> NameIndex {
        assert!(table.len() * 2 <= SLOTS, "the name index needs more slots");
        let mut slots = [0u16; SLOTS];
        for (i, c) in table.iter().enumerate() {
            let h = c.name.bytes().fold(0, name_hash);
            let mut s = Self::slot(h);
            while slots[s] != 0 {
                s = (s + 1) % SLOTS;
            }
            slots[s] = i as u16 + 1;
        }
        NameIndex { slots }
    }

    /// The index of the command named `lower` (hashed to `h`).
    #[inline]
    pub(super) fn find(&self, table: &[CommandSpec], lower: &[u8], h: u64) -> Option<usize> {
        let mut s = Self::slot(h);
        loop {
            let i = (self.slots[s] as usize).checked_sub(1)?;
            if table[i].name.as_bytes() == lower {
                return Some(i);
            }
            s = (s + 1) % SLOTS;
        }
    }
}

pub(super) static INDEX: LazyLock<NameIndex> = LazyLock::new(|| NameIndex::build(&TABLE));
