//! Sorted-set commands that take members out by position or range:
//! ZPOPMIN, ZPOPMAX and ZREMRANGEBYRANK/SCORE/LEX (`zsets` has the
//! reads and the range parsing they share).

use bytes::Bytes;

use super::args::{parse_i64, Args};
use super::zsets::{at, reply_pairs};
use super::Ctx;
use super::{commands, CommandSpec};
use crate::error::{CmdError, CmdResult, NOT_INT};
use crate::resp::Reply;
use crate::types::coll;
use crate::types::notify::class::ZSET;
use crate::types::zrange::{lex_range, score_range, select, Range};
use crate::types::zwrite;
use crate::types::zwrite::ZWriter;
use crate::types::KeyType;

/// The commands (`cmd::table` has the line format).
#[rustfmt::skip]
pub(super) const COMMANDS: &[CommandSpec] = commands! {
    "zpopmin"          -2 [write fast] 1 1 1 Shard(zpopmin)          sorted_set "5.0.0" "Returns the lowest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.";
    "zpopmax"          -2 [write fast] 1 1 1 Shard(zpopmax)          sorted_set "5.0.0" "Returns the highest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.";
    "zremrangebyrank"  4  [write]      1 1 1 Shard(zremrangebyrank)  sorted_set "2.0.0" "Removes members in a sorted set within a range of indexes. Deletes the sorted set if all members were removed.";
    "zremrangebyscore" 4  [write]      1 1 1 Shard(zremrangebyscore) sorted_set "1.2.0" "Removes members in a sorted set within a range of scores. Deletes the sorted set if all members were removed.";
    "zremrangebylex"   4  [write]      1 1 1 Shard(zremrangebylex)   sorted_set "2.8.9" "Removes members in a sorted set within a lexicographical range. Deletes the sorted set if all members were removed.";
};

const Z: KeyType = KeyType::ZSet;

/// Removes `items` (members of the sorted set at `key`) in one batch, with
/// `event` (and `del` when the set is left empty). Returns how many.
fn take_out(ctx: &Ctx, key: &[u8], items: &[(Vec<u8>, f64)], event: &'static str) -> CmdResult<usize> {
    if items.is_empty() {
        return Ok(0);
    }
    let Some(mut w) = ZWriter::open(ctx.ks(), ctx.db, key, ctx.now_ms, false)? else {
        return Ok(0);
    };
    let mut n = 0;
    for (m, _) in items {
        n += w.remove(m)? as usize;
    }
    w.commit_with(ZSET, &[event])?;
    Ok(n)
}

fn pop(ctx: &Ctx, argv: &[Bytes], r: &mut Reply, max: bool) -> CmdResult {
    let mut args = Args::new(argv);
    let key = args.key()?;
    let count = match args.left() {
        0 => None,
        1 => {
            let positive = CmdError::new("ERR value is out of range, must be positive");
            match parse_i64(args.bytes()?) {
                Some(c) if c >= 0 => Some(c),
                _ => return Err(positive),
            }
        }
        _ => return Err(crate::error::SYNTAX),
    };
    let items = zwrite::pop(ctx.ks(), ctx.db, key, ctx.now_ms, max, count.unwrap_or(1) as u64)?.unwrap_or_default();
    // With a count, RESP3 nests each pair; without one the reply is flat.
    reply_pairs(r, &items, count.is_some() && r.resp3);
    Ok(())
}

pub fn zpopmin(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    pop(ctx, argv, r, false)
}

pub fn zpopmax(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    pop(ctx, argv, r, true)
}

/// ZREMRANGEBY*: the range is parsed before the key is looked up, as Redis.
fn remove_range(
    ctx: &Ctx,
    argv: &[Bytes],
    r: &mut Reply,
    range: impl FnOnce(&[u8], &[u8]) -> CmdResult<Range>,
    event: &'static str,
) -> CmdResult {
    let mut args = Args::new(argv);
    let key = args.key()?;
    let range = range(args.bytes()?, args.bytes()?)?;
    let items = match coll::view(ctx.ks(), ctx.db, key, Z, ctx.now_ms)? {
        Some(v) => select(at(ctx, key, &v), &range, false, 0, -1)?,
        None => Vec::new(),
    };
    r.int(take_out(ctx, key, &items, event)? as i64);
    Ok(())
}

pub fn zremrangebyrank(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let rank = |a: &[u8], b: &[u8]| Ok(Range::Rank(parse_i64(a).ok_or(NOT_INT)?, parse_i64(b).ok_or(NOT_INT)?));
    remove_range(ctx, argv, r, rank, "zrembyrank")
}

pub fn zremrangebyscore(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let score = |a: &[u8], b: &[u8]| score_range(a, b).map(|(lo, hi)| Range::Score(lo, hi));
    remove_range(ctx, argv, r, score, "zrembyscore")
}

pub fn zremrangebylex(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let lex = |a: &[u8], b: &[u8]| lex_range(a, b).map(|(lo, hi)| Range::Lex(lo, hi));
    remove_range(ctx, argv, r, lex, "zrembylex")
}
