//! Sorted-set commands over keys of any shards (`coord::zset` runs them):
//! ZMPOP and the blocking pops, ZRANGESTORE, and the combining commands
//! ZUNION, ZINTER, ZDIFF, their STORE forms and ZINTERCARD.

use bytes::Bytes;

use super::args::{is, parse_f64, parse_i64, Args};
use super::lists::{mpop_args, timeout_of};
use super::zsets::{parse_query, reply_members, reply_pairs, Kind};
use super::Conn;
use super::{commands, CommandSpec};
use crate::coord::blocking;
use crate::coord::zset::{self as across, Aggregate, Combine, Op};
use crate::error::{CmdError, CmdResult, NOT_INT, SYNTAX};
use crate::resp::Reply;

/// The commands (`cmd::table` has the line format).
#[rustfmt::skip]
pub(super) const COMMANDS: &[CommandSpec] = commands! {
    "zmpop"       -4 [write movablekeys]             0 0 0  Conn(zmpop)       sorted_set "7.0.0" "Returns the highest- or lowest-scoring members from one or more sorted sets after removing them. Deletes the sorted set if the last member was popped.";
    "bzpopmin"    -3 [write noscript blocking fast]  1 -2 1 Conn(bzpopmin)    sorted_set "5.0.0" "Removes and returns the member with the lowest score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.";
    "bzpopmax"    -3 [write noscript blocking fast]  1 -2 1 Conn(bzpopmax)    sorted_set "5.0.0" "Removes and returns the member with the highest score from one or more sorted sets. Blocks until a member available otherwise.  Deletes the sorted set if the last element was popped.";
    "bzmpop"      -5 [write blocking movablekeys]    0 0 0  Conn(bzmpop)      sorted_set "7.0.0" "Removes and returns a member by score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.";
    "zrangestore" -5 [write denyoom]                 1 2 1  Conn(zrangestore) sorted_set "6.2.0" "Stores a range of members from sorted set in a key.";
    "zunion"      -3 [readonly movablekeys]          0 0 0  Conn(zunion)      sorted_set "6.2.0" "Returns the union of multiple sorted sets.";
    "zinter"      -3 [readonly movablekeys]          0 0 0  Conn(zinter)      sorted_set "6.2.0" "Returns the intersect of multiple sorted sets.";
    "zdiff"       -3 [readonly movablekeys]          0 0 0  Conn(zdiff)       sorted_set "6.2.0" "Returns the difference between multiple sorted sets.";
    "zunionstore" -4 [write denyoom movablekeys]     1 1 1  Conn(zunionstore) sorted_set "2.0.0" "Stores the union of multiple sorted sets in a key.";
    "zinterstore" -4 [write denyoom movablekeys]     1 1 1  Conn(zinterstore) sorted_set "2.0.0" "Stores the intersect of multiple sorted sets in a key.";
    "zdiffstore"  -4 [write denyoom movablekeys]     1 1 1  Conn(zdiffstore)  sorted_set "6.2.0" "Stores the difference of multiple sorted sets in a key.";
    "zintercard"  -3 [readonly movablekeys]          0 0 0  Conn(zintercard)  sorted_set "7.0.0" "Returns the number of members of the intersect of multiple sorted sets.";
};

/// MIN or MAX: whether the high end.
fn side(a: &[u8]) -> CmdResult<bool> {
    if is(a, "min") {
        Ok(false)
    } else if is(a, "max") {
        Ok(true)
    } else {
        Err(SYNTAX)
    }
}

/// ZMPOP's and BZMPOP's reply: the key and its [member, score] pairs
/// (nested in RESP2 too), or a null array.
fn reply_key_pairs(r: &mut Reply, got: Option<(Bytes, Vec<across::Scored>)>) {
    match got {
        Some((key, items)) => {
            r.array(2);
            r.bulk(&key);
            reply_pairs(r, &items, true);
        }
        None => r.null_array(),
    }
}

pub async fn zmpop(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let (keys, max, count) = mpop_args(argv, 1, side)?;
    reply_key_pairs(r, across::mpop(c.shard, c.db(), &keys, max, count).await?);
    Ok(())
}

pub async fn bzmpop(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let (keys, max, count) = mpop_args(argv, 2, side)?;
    let timeout = timeout_of(&c, Args::new(argv).bytes()?)?;
    let got = blocking::zpop(c.shard, &c.client.info, c.db(), keys, max, Some(count), timeout).await?;
    reply_key_pairs(r, got);
    Ok(())
}

/// BZPOPMIN, BZPOPMAX: `key... timeout`; the reply is flat: key, member,
/// score.
async fn bzpop(c: Conn<'_>, argv: &[Bytes], r: &mut Reply, max: bool) -> CmdResult {
    let all = Args::new(argv).rest();
    let (keys, timeout) = all.split_at(all.len().saturating_sub(1));
    let timeout = timeout_of(&c, timeout.first().ok_or(SYNTAX)?)?;
    match blocking::zpop(c.shard, &c.client.info, c.db(), keys.to_vec(), max, None, timeout).await? {
        Some((key, items)) => {
            let Some((m, s)) = items.first() else {
                r.null_array();
                return Ok(());
            };
            r.array(3);
            r.bulk(&key);
            r.bulk(m);
            r.double(*s);
        }
        None => r.null_array(),
    }
    Ok(())
}

pub async fn bzpopmin(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    bzpop(c, argv, r, false).await
}

pub async fn bzpopmax(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    bzpop(c, argv, r, true).await
}

/// ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count]
pub async fn zrangestore(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let (dst, src) = (args.arg()?.clone(), args.arg()?.clone());
    let q = parse_query(argv, 3, Kind::Auto, None, true)?;
    let n = across::rangestore(c.shard, c.db(), &dst, &src, q.range, q.rev, (q.offset, q.count)).await?;
    r.int(n);
    Ok(())
}

/// What a combining command was asked, once its arguments are read.
struct Request {
    keys: Vec<Bytes>,
    how: Combine,
    withscores: bool,
    limit: u64,
}

/// Which of the combining commands: its operation, whether it stores
/// (then the key list starts one later), whether it only counts.
#[derive(Clone, Copy)]
struct Form {
    name: &'static str,
    op: Op,
    store: bool,
    card: bool,
}

/// Reads `numkeys key... [WEIGHTS w...] [AGGREGATE SUM|MIN|MAX]
/// [WITHSCORES] [LIMIT n]` as Redis's `zunionInterDiffGenericCommand`
/// does: the keys are looked up (a WRONGTYPE) before the options are read.
async fn request(c: &Conn<'_>, argv: &[Bytes], form: Form) -> CmdResult<Request> {
    let at = if form.store { 2 } else { 1 };
    let numkeys = parse_i64(&argv[at]).ok_or(NOT_INT)?;
    if numkeys < 1 {
        return Err(CmdError::new(format!(
            "ERR at least 1 input key is needed for '{}' command",
            form.name
        )));
    }
    if numkeys as u64 > (argv.len() - at - 1) as u64 {
        return Err(SYNTAX);
    }
    let keys = argv[at + 1..at + 1 + numkeys as usize].to_vec();
    let options = options(&argv[at + 1 + keys.len()..], keys.len(), form);
    if options.is_err() {
        across::check_sources(c.shard, c.db(), &keys).await?;
    }
    let (weights, aggregate, withscores, limit) = options?;
    Ok(Request {
        keys,
        how: Combine {
            op: form.op,
            weights,
            aggregate,
        },
        withscores,
        limit,
    })
}

type Options = (Vec<f64>, Aggregate, bool, u64);

fn options(rest: &[Bytes], n: usize, form: Form) -> CmdResult<Options> {
    let (mut weights, mut aggregate, mut withscores, mut limit) = (Vec::new(), Aggregate::Sum, false, 0u64);
    let scored = form.op != Op::Diff && !form.card;
    let mut i = 0;
    while i < rest.len() {
        let (a, remaining) = (&rest[i], rest.len() - i);
        if scored && remaining > n && is(a, "weights") {
            weights = rest[i + 1..=i + n]
                .iter()
                .map(|w| parse_f64(w).ok_or_else(|| CmdError::new("ERR weight value is not a float")))
                .collect::<CmdResult<_>>()?;
            i += n + 1;
        } else if scored && remaining >= 2 && is(a, "aggregate") {
            let w = &rest[i + 1];
            aggregate = match () {
                _ if is(w, "sum") => Aggregate::Sum,
                _ if is(w, "min") => Aggregate::Min,
                _ if is(w, "max") => Aggregate::Max,
                _ => return Err(SYNTAX),
            };
            i += 2;
        } else if !form.store && !form.card && is(a, "withscores") {
            withscores = true;
            i += 1;
        } else if form.card && remaining >= 2 && is(a, "limit") {
            limit = parse_i64(&rest[i + 1])
                .filter(|l| *l >= 0)
                .ok_or_else(|| CmdError::new("ERR LIMIT can't be negative"))? as u64;
            i += 2;
        } else {
            return Err(SYNTAX);
        }
    }
    Ok((weights, aggregate, withscores, limit))
}

async fn combine(c: Conn<'_>, argv: &[Bytes], r: &mut Reply, form: Form) -> CmdResult {
    let req = request(&c, argv, form).await?;
    let (shard, db) = (c.shard, c.db());
    if form.card {
        r.int(across::intercard(shard, db, &req.keys, req.limit).await? as i64);
        return Ok(());
    }
    let out = across::combine(shard, db, &req.keys, &req.how).await?;
    if form.store {
        r.int(across::store_scored(shard, db, &argv[1], out, form.name).await?);
    } else {
        reply_members(r, &out, req.withscores);
    }
    Ok(())
}

const fn form(name: &'static str, op: Op, store: bool) -> Form {
    Form {
        name,
        op,
        store,
        card: false,
    }
}

pub async fn zunion(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    combine(c, argv, r, form("zunion", Op::Union, false)).await
}

pub async fn zinter(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    combine(c, argv, r, form("zinter", Op::Inter, false)).await
}

pub async fn zdiff(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    combine(c, argv, r, form("zdiff", Op::Diff, false)).await
}

pub async fn zunionstore(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    combine(c, argv, r, form("zunionstore", Op::Union, true)).await
}

pub async fn zinterstore(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    combine(c, argv, r, form("zinterstore", Op::Inter, true)).await
}

pub async fn zdiffstore(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    combine(c, argv, r, form("zdiffstore", Op::Diff, true)).await
}

pub async fn zintercard(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let card = Form {
        card: true,
        ..form("zintercard", Op::Inter, false)
    };
    combine(c, argv, r, card).await
}
