//! Whole-collection reads: HGETALL, HKEYS, HVALS, SMEMBERS. A collection of
//! up to [`SLICE`] members is answered by its shard in one go, so these
//! commands batch and pipeline like any shard command. A bigger one is
//! left to the connection (`error::STREAM`), which reads it in slices from
//! one snapshot without holding the owner's core ([`stream`]).

use std::rc::Rc;

use bytes::Bytes;
use shards::Shard;

use super::Ctx;
use crate::coord::coll::{self as gather, write_member, Keep, SLICE};
use crate::error::{CmdError, CmdResult, STREAM};
use crate::resp::Reply;
use crate::shard::ShardState;
use crate::storage::meta::KeyType;
use crate::types::coll;

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

/// HGETALL, HKEYS, HVALS or SMEMBERS of a collection too big for its
/// shard handler to answer in one go (`cmd::whole`): read in slices from one
/// snapshot, the reply built from the slices' encoded members.
pub async fn stream(shard: &Rc<Shard<ShardState>>, db: u8, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let w = Whole::of(&argv[0]).ok_or_else(|| CmdError::new("ERR internal routing error"))?;
    let g = gather::gather_with(shard, db, &argv[1], w.ty(), w.keep())
        .await?
        .unwrap_or_default();
    w.header(r, g.count);
    gather::write_chunks(r, g.wire).await;
    Ok(())
}
