//! Whole-collection reads: HGETALL, HKEYS, HVALS, SMEMBERS. A collection of
//! up to [`SLICE`] members is answered by its shard in one go, so these
//! commands batch and pipeline like any shard command. A bigger one is
//! left to the connection (`Ctx::later`), which reads it in slices from
//! one snapshot without holding the owner's core ([`stream`]).

use bytes::Bytes;

use super::args::Args;
use super::{conn_fn, Conn, ConnFn, Ctx};
use crate::coord::coll::{self as gather, write_member, Keep, SLICE};
use crate::error::CmdResult;
use crate::resp::Reply;
use crate::types::coll;
use crate::types::KeyType;

/// Which whole-collection read.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Whole {
    Hgetall,
    Hkeys,
    Hvals,
    Smembers,
}

impl Whole {
    /// The connection function that streams this read.
    fn streamer(self) -> ConnFn {
        match self {
            Whole::Hgetall => conn_fn!(stream_hgetall),
            Whole::Hkeys => conn_fn!(stream_hkeys),
            Whole::Hvals => conn_fn!(stream_hvals),
            Whole::Smembers => conn_fn!(stream_smembers),
        }
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
    let key = Args::new(argv).key()?;
    let Some(v) = coll::view(ctx.ks(), ctx.db, key, w.ty(), ctx.now_ms)? else {
        w.header(r, 0);
        return Ok(());
    };
    if v.c.size > SLICE as u64 {
        return ctx.later(w.streamer());
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
/// shard handler to answer in one go: read in slices from one snapshot,
/// the reply built from the slices' encoded members.
async fn stream(c: Conn<'_>, argv: &[Bytes], r: &mut Reply, w: Whole) -> CmdResult {
    let key = Args::new(argv).arg()?;
    // The handler that sent it here made the lookup.
    let g = gather::gather_with(c.shard, c.db(), key, w.ty(), w.keep(), false)
        .await?
        .unwrap_or_default();
    w.header(r, g.count);
    gather::write_chunks(r, g.wire).await;
    Ok(())
}

async fn stream_hgetall(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    stream(c, argv, r, Whole::Hgetall).await
}

async fn stream_hkeys(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    stream(c, argv, r, Whole::Hkeys).await
}

async fn stream_hvals(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    stream(c, argv, r, Whole::Hvals).await
}

async fn stream_smembers(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    stream(c, argv, r, Whole::Smembers).await
}
