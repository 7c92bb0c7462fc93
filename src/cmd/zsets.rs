//! Sorted-set commands that run on one shard (`types::zset` has the
//! encoding). Ranks, rank ranges and ZCOUNT of a big set go through its
//! count blocks (`types::zblock`); a small set's are walks.

use bytes::Bytes;

use super::args::{is, parse_f64, parse_i64, Args};
use super::Ctx;
use super::{commands, CommandSpec};
use crate::coord::serve::key_ready;
use crate::error::{CmdError, CmdResult, NOT_FLOAT, NOT_INT, SYNTAX};
use crate::resp::Reply;
use crate::types::coll::{self, View};
use crate::types::notify::class::ZSET;
use crate::types::zrange::{count, lex_range, score_range, select, Range};
use crate::types::zwrite::ZWriter;
use crate::types::KeyType;
use crate::types::{zblock, zset};

/// The sorted-set commands (`cmd::table` has the line format).
#[rustfmt::skip]
pub(super) const COMMANDS: &[CommandSpec] = commands! {
    "zadd"             -4 [write denyoom fast] 1 1 1 Shard(zadd)             sorted_set "1.2.0" "Adds one or more members to a sorted set, or updates their scores. Creates the key if it doesn't exist.";
    "zincrby"          4  [write denyoom fast] 1 1 1 Shard(zincrby)          sorted_set "1.2.0" "Increments the score of a member in a sorted set.";
    "zrem"             -3 [write fast]         1 1 1 Shard(zrem)             sorted_set "1.2.0" "Removes one or more members from a sorted set. Deletes the sorted set if all members were removed.";
    "zcard"            2  [readonly fast]      1 1 1 Shard(zcard)            sorted_set "1.2.0" "Returns the number of members in a sorted set.";
    "zscore"           3  [readonly fast]      1 1 1 Shard(zscore)           sorted_set "1.2.0" "Returns the score of a member in a sorted set.";
    "zmscore"          -3 [readonly fast]      1 1 1 Shard(zmscore)          sorted_set "6.2.0" "Returns the score of one or more members in a sorted set.";
    "zrank"            -3 [readonly fast]      1 1 1 Shard(zrank)            sorted_set "2.0.0" "Returns the index of a member in a sorted set ordered by ascending scores.";
    "zrevrank"         -3 [readonly fast]      1 1 1 Shard(zrevrank)         sorted_set "2.0.0" "Returns the index of a member in a sorted set ordered by descending scores.";
    "zcount"           4  [readonly fast]      1 1 1 Shard(zcount)           sorted_set "2.0.0" "Returns the count of members in a sorted set that have scores within a range.";
    "zlexcount"        4  [readonly fast]      1 1 1 Shard(zlexcount)        sorted_set "2.8.9" "Returns the number of members in a sorted set within a lexicographical range.";
    "zrange"           -4 [readonly]           1 1 1 Shard(zrange)           sorted_set "1.2.0" "Returns members in a sorted set within a range of indexes.";
    "zrevrange"        -4 [readonly]           1 1 1 Shard(zrevrange)        sorted_set "1.2.0" "Returns members in a sorted set within a range of indexes in reverse order.";
    "zrangebyscore"    -4 [readonly]           1 1 1 Shard(zrangebyscore)    sorted_set "1.0.5" "Returns members in a sorted set within a range of scores.";
    "zrevrangebyscore" -4 [readonly]           1 1 1 Shard(zrevrangebyscore) sorted_set "2.2.0" "Returns members in a sorted set within a range of scores in reverse order.";
    "zrangebylex"      -4 [readonly]           1 1 1 Shard(zrangebylex)      sorted_set "2.8.9" "Returns members in a sorted set within a lexicographical range.";
    "zrevrangebylex"   -4 [readonly]           1 1 1 Shard(zrevrangebylex)   sorted_set "2.8.9" "Returns members in a sorted set within a lexicographical range in reverse order.";
};

const Z: KeyType = KeyType::ZSet;

/// Where the sorted set `v` at `key` is, for the range and rank reads.
pub(super) fn at<'a>(ctx: &'a Ctx, key: &'a [u8], v: &'a View) -> zset::At<'a> {
    zset::At {
        ks: ctx.ks(),
        db: ctx.db,
        key,
        c: &v.c,
    }
}

fn view(ctx: &Ctx, key: &[u8]) -> CmdResult<Option<View>> {
    coll::view(ctx.ks(), ctx.db, key, Z, ctx.now_ms)
}

fn err(msg: &'static str) -> CmdError {
    CmdError::new(msg)
}

const NAN_RESULT: &str = "ERR resulting score is not a number (NaN)";

/// ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]
pub fn zadd(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let key = args.key()?;
    let (mut nx, mut xx, mut gt, mut lt, mut ch, mut incr) = (false, false, false, false, false, false);
    while let Some(a) = args.peek() {
        let flag = match () {
            _ if is(a, "nx") => &mut nx,
            _ if is(a, "xx") => &mut xx,
            _ if is(a, "gt") => &mut gt,
            _ if is(a, "lt") => &mut lt,
            _ if is(a, "ch") => &mut ch,
            _ if is(a, "incr") => &mut incr,
            _ => break,
        };
        *flag = true;
        args.arg()?;
    }
    let pairs = args.rest();
    if pairs.is_empty() || !pairs.len().is_multiple_of(2) {
        return Err(SYNTAX);
    }
    if nx && xx {
        return Err(err("ERR XX and NX options at the same time are not compatible"));
    }
    if ((gt || lt) && nx) || (gt && lt) {
        return Err(err("ERR GT, LT, and/or NX options at the same time are not compatible"));
    }
    if incr && pairs.len() > 2 {
        return Err(err("ERR INCR option supports a single increment-element pair"));
    }
    let mut scores: smallvec::SmallVec<[f64; 8]> = smallvec::SmallVec::with_capacity(pairs.len() / 2);
    for p in pairs.chunks(2) {
        scores.push(parse_f64(&p[0]).ok_or(NOT_FLOAT)?);
    }
    let mut w = match ZWriter::open(ctx.ks(), ctx.db, key, ctx.now_ms, !xx)? {
        Some(w) => w,
        None => {
            // XX on a missing key: nothing to update.
            if incr {
                r.null();
            } else {
                r.int(0);
            }
            return Ok(());
        }
    };
    let (mut added, mut updated) = (0i64, 0i64);
    let mut incr_result = None;
    for (p, &s) in pairs.chunks(2).zip(&scores) {
        let m = &p[1][..];
        let old = w.score_in(m)?;
        let new = match (old, incr) {
            (Some(o), true) => o + s,
            _ => s,
        };
        if new.is_nan() {
            return Err(err(NAN_RESULT));
        }
        let new = if new == 0.0 { 0.0 } else { new };
        match old {
            None if xx => continue,
            None => {
                w.set_score_over(m, old, new)?;
                added += 1;
            }
            Some(_) if nx => continue,
            Some(o) if (gt && new <= o) || (lt && new >= o) => continue,
            Some(o) => {
                if o != new {
                    w.set_score_over(m, old, new)?;
                    updated += 1;
                }
            }
        }
        incr_result = Some(new);
    }
    let events: &[&'static str] = match (added + updated > 0, incr) {
        (false, _) => &[],
        (true, true) => &["zincr"],
        (true, false) => &["zadd"],
    };
    w.commit_with(ZSET, events)?;
    if added > 0 {
        // A new member may be a new key: its blocked clients are served.
        key_ready(ctx.shard, ctx.db, key);
    }
    if incr {
        match incr_result {
            Some(v) => r.double(v),
            None => r.null(),
        }
    } else {
        r.int(if ch { added + updated } else { added });
    }
    Ok(())
}

/// ZINCRBY key increment member
pub fn zincrby(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let key = args.key()?;
    let by = parse_f64(args.bytes()?).ok_or(NOT_FLOAT)?;
    let m = args.bytes()?;
    let mut w = ZWriter::open(ctx.ks(), ctx.db, key, ctx.now_ms, true)?.ok_or(crate::error::CORRUPT)?;
    let old = w.score_in(m)?;
    let new = old.map_or(by, |o| o + by);
    if new.is_nan() {
        return Err(err(NAN_RESULT));
    }
    let new = if new == 0.0 { 0.0 } else { new };
    w.set_score_over(m, old, new)?;
    let added = old.is_none();
    w.commit_with(ZSET, &["zincr"])?;
    if added {
        key_ready(ctx.shard, ctx.db, key);
    }
    r.double(new);
    Ok(())
}

pub fn zrem(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let (key, members) = (args.key()?, args.rest());
    let Some(mut w) = ZWriter::open(ctx.ks(), ctx.db, key, ctx.now_ms, false)? else {
        r.int(0);
        return Ok(());
    };
    let mut removed = 0;
    for m in members {
        removed += w.remove(m)? as i64;
    }
    w.commit_with(ZSET, if removed > 0 { &["zrem"] } else { &[] })?;
    r.int(removed);
    Ok(())
}

pub fn zcard(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    r.int(view(ctx, Args::new(argv).key()?)?.map_or(0, |v| v.c.size as i64));
    Ok(())
}

pub fn zscore(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let (key, m) = (args.key()?, args.bytes()?);
    let s = match view(ctx, key)? {
        Some(v) => zset::score(ctx.ks(), ctx.db, key, &v.c, m)?,
        None => None,
    };
    match s {
        Some(s) => r.double(s),
        None => r.null(),
    }
    Ok(())
}

pub fn zmscore(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let (key, members) = (args.key()?, args.rest());
    let v = view(ctx, key)?;
    r.array(members.len());
    for m in members {
        let s = match &v {
            Some(v) => zset::score(ctx.ks(), ctx.db, key, &v.c, m)?,
            None => None,
        };
        match s {
            Some(s) => r.double(s),
            None => r.null(),
        }
    }
    Ok(())
}

fn rank(ctx: &Ctx, argv: &[Bytes], r: &mut Reply, rev: bool) -> CmdResult {
    let mut args = Args::new(argv);
    let (key, m) = (args.key()?, args.bytes()?);
    let withscore = match args.left() {
        0 => false,
        1 if is(args.bytes()?, "withscore") => true,
        _ => return Err(SYNTAX),
    };
    let found = match view(ctx, key)? {
        Some(v) => match zset::score(ctx.ks(), ctx.db, key, &v.c, m)? {
            Some(s) => {
                let z = at(ctx, key, &v);
                let n = zblock::rank_of(z, &zblock::position(s, m))?;
                let rank = if rev { v.c.size.saturating_sub(n + 1) } else { n };
                Some((rank, s))
            }
            None => None,
        },
        None => None,
    };
    match found {
        None => r.null(),
        Some((rank, s)) if withscore => {
            r.array(2);
            r.int(rank as i64);
            r.double(s);
        }
        Some((rank, _)) => r.int(rank as i64),
    }
    Ok(())
}

pub fn zrank(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    rank(ctx, argv, r, false)
}

pub fn zrevrank(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    rank(ctx, argv, r, true)
}

pub(super) fn reply_members(r: &mut Reply, items: &[(Vec<u8>, f64)], withscores: bool) {
    if !withscores {
        r.array(items.len());
        for (m, _) in items {
            r.bulk(m);
        }
        return;
    }
    reply_pairs(r, items, r.resp3);
}

/// Members with their scores: flat (member, score, ...) or, `nested`, one
/// [member, score] array each (RESP3's pairs).
pub(super) fn reply_pairs(r: &mut Reply, items: &[(Vec<u8>, f64)], nested: bool) {
    r.array(if nested { items.len() } else { items.len() * 2 });
    for (m, s) in items {
        if nested {
            r.array(2);
        }
        r.bulk(m);
        r.double(*s);
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Auto,
    Rank,
    Score,
    Lex,
}

/// A parsed range query: ZRANGE's and ZRANGESTORE's arguments after the key.
pub(super) struct Query {
    pub range: Range,
    pub rev: bool,
    pub offset: i64,
    pub count: i64,
    pub withscores: bool,
}

/// Redis's `zrangeGenericCommand` argument parsing, from `min max` at
/// `at`: `kind`/`rev` fixed by the command (ZRANGEBYSCORE...) or left to
/// the options (ZRANGE, ZRANGESTORE: `store`, where WITHSCORES is a syntax
/// error).
pub(super) fn parse_query(argv: &[Bytes], at: usize, mut kind: Kind, rev: Option<bool>, store: bool) -> CmdResult<Query> {
    let mut args = Args::at(argv, at);
    let (a, b) = (args.bytes()?, args.bytes()?);
    let (mut withscores, mut limit, mut reverse) = (false, None, rev);
    while !args.is_empty() {
        let left = args.left();
        let w = args.arg()?;
        if !store && is(w, "withscores") {
            withscores = true;
        } else if is(w, "limit") && left > 2 {
            let o = parse_i64(args.bytes()?).ok_or(NOT_INT)?;
            let c = parse_i64(args.bytes()?).ok_or(NOT_INT)?;
            limit = Some((o, c));
        } else if rev.is_none() && reverse.is_none() && is(w, "rev") {
            reverse = Some(true);
        } else if kind == Kind::Auto && is(w, "bylex") {
            kind = Kind::Lex;
        } else if kind == Kind::Auto && is(w, "byscore") {
            kind = Kind::Score;
        } else {
            return Err(SYNTAX);
        }
    }
    let rev = reverse.unwrap_or(false);
    if kind == Kind::Auto {
        kind = Kind::Rank;
    }
    if limit.is_some() && kind == Kind::Rank {
        return Err(err(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        ));
    }
    if withscores && kind == Kind::Lex {
        return Err(err("ERR syntax error, WITHSCORES not supported in combination with BYLEX"));
    }
    // By score or lex in reverse, the range is given as max, min.
    let (min, max) = if rev && kind != Kind::Rank { (b, a) } else { (a, b) };
    let range = match kind {
        Kind::Score => {
            let (lo, hi) = score_range(min, max)?;
            Range::Score(lo, hi)
        }
        Kind::Lex => {
            let (lo, hi) = lex_range(min, max)?;
            Range::Lex(lo, hi)
        }
        _ => Range::Rank(parse_i64(min).ok_or(NOT_INT)?, parse_i64(max).ok_or(NOT_INT)?),
    };
    let (offset, count) = limit.unwrap_or((0, -1));
    Ok(Query {
        range,
        rev,
        offset,
        count,
        withscores,
    })
}

fn range_generic(ctx: &Ctx, argv: &[Bytes], r: &mut Reply, kind: Kind, rev: Option<bool>) -> CmdResult {
    let key = Args::new(argv).key()?;
    let q = parse_query(argv, 2, kind, rev, false)?;
    let Some(v) = view(ctx, key)? else {
        r.array(0);
        return Ok(());
    };
    let items = select(at(ctx, key, &v), &q.range, q.rev, q.offset, q.count)?;
    reply_members(r, &items, q.withscores);
    Ok(())
}

pub fn zrange(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    range_generic(ctx, argv, r, Kind::Auto, None)
}

pub fn zrevrange(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    range_generic(ctx, argv, r, Kind::Rank, Some(true))
}

pub fn zrangebyscore(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    range_generic(ctx, argv, r, Kind::Score, Some(false))
}

pub fn zrevrangebyscore(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    range_generic(ctx, argv, r, Kind::Score, Some(true))
}

pub fn zrangebylex(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    range_generic(ctx, argv, r, Kind::Lex, Some(false))
}

pub fn zrevrangebylex(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    range_generic(ctx, argv, r, Kind::Lex, Some(true))
}

/// ZCOUNT and ZLEXCOUNT: the range is parsed before the key is looked up.
fn count_range(ctx: &Ctx, argv: &[Bytes], r: &mut Reply, parse: fn(&[u8], &[u8]) -> CmdResult<Range>) -> CmdResult {
    let mut args = Args::new(argv);
    let key = args.key()?;
    let range = parse(args.bytes()?, args.bytes()?)?;
    let n = match view(ctx, key)? {
        Some(v) => count(at(ctx, key, &v), &range)?,
        None => 0,
    };
    r.int(n);
    Ok(())
}

pub fn zcount(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    count_range(ctx, argv, r, |a, b| score_range(a, b).map(|(lo, hi)| Range::Score(lo, hi)))
}

pub fn zlexcount(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    count_range(ctx, argv, r, |a, b| lex_range(a, b).map(|(lo, hi)| Range::Lex(lo, hi)))
}
