//! Whole-collection reads: HGETALL, HKEYS, HVALS, SMEMBERS. A collection of
//! up to [`SLICE`] members is answered by its shard in one go, so these
//! commands batch and pipeline like any shard command. A bigger one is
//! left to the connection (`error::STREAM`), which reads it in slices from
//! one snapshot without holding the owner's core (`coord::coll::stream`).

use bytes::Bytes;

use super::Ctx;
use crate::error::{CmdResult, STREAM};
use crate::resp::Reply;
use crate::storage::meta::KeyType;
use crate::types::coll;

/// Members per slice: about a millisecond of iteration on a warm cache.
pub const SLICE: usize = 1024;

/// What a read keeps of each live member: the members themselves (set
/// algebra), or their reply bytes (RESP bulk strings) ready to go out.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    Entries,
    Fields,
    Values,
    Pairs,
}

/// Which whole-collection read.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Whole {
    Hgetall,
    Hkeys,
    Hvals,
    Smembers,
}

impl Whole {
    /// The read a command name asks for.
    pub fn of(name: &[u8]) -> Option<Whole> {
        Some(match name.to_ascii_lowercase().as_slice() {
            b"hgetall" => Whole::Hgetall,
            b"hkeys" => Whole::Hkeys,
            b"hvals" => Whole::Hvals,
            b"smembers" => Whole::Smembers,
            _ => return None,
        })
    }

    pub fn ty(self) -> KeyType {
        if self == Whole::Smembers {
            KeyType::Set
        } else {
            KeyType::Hash
        }
    }

    pub fn keep(self) -> Keep {
        match self {
            Whole::Hgetall => Keep::Pairs,
            Whole::Hvals => Keep::Values,
            Whole::Hkeys | Whole::Smembers => Keep::Fields,
        }
    }

    /// The reply's header for `n` members: a map, a set or an array.
    pub fn header(self, r: &mut Reply, n: usize) {
        match self {
            Whole::Hgetall => r.map(n),
            Whole::Smembers => r.set(n),
            Whole::Hkeys | Whole::Hvals => r.array(n),
        }
    }
}

/// Writes one member as `keep` says (not `Keep::Entries`).
pub fn write_member(r: &mut Reply, keep: Keep, member: &[u8], value: &[u8]) {
    match keep {
        Keep::Fields => r.bulk(member),
        Keep::Values => r.bulk(value),
        Keep::Pairs => {
            r.bulk(member);
            r.bulk(value);
        }
        Keep::Entries => {}
    }
}

fn read(ctx: &Ctx, argv: &[Bytes], r: &mut Reply, w: Whole) -> CmdResult {
    let key = super::args::Args::new(argv).key()?;
    let Some(v) = coll::view(ctx.ks(), ctx.db, key, w.ty(), ctx.now_ms)? else {
        w.header(r, 0);
        return Ok(());
    };
    if v.c.size > SLICE as u64 {
        return Err(STREAM);
    }
    let all = coll::all_members(ctx.ks(), ctx.db, key, &v.c, ctx.now_ms)?;
    w.header(r, all.len());
    for (m, _, val) in &all {
        write_member(r, w.keep(), m, val);
    }
    Ok(())
}

pub fn hgetall(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    read(ctx, argv, r, Whole::Hgetall)
}

pub fn hkeys(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    read(ctx, argv, r, Whole::Hkeys)
}

pub fn hvals(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    read(ctx, argv, r, Whole::Hvals)
}

pub fn smembers(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    read(ctx, argv, r, Whole::Smembers)
}
