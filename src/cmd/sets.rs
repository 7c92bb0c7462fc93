//! Set commands that run on one shard. SMEMBERS and the multi-key ones
//! (SINTER, SUNION, SDIFF and their STORE forms, SINTERCARD, SMOVE) run in
//! `coord`, which gathers members from each owner in slices.

use bytes::Bytes;
use smallvec::SmallVec;

use super::args::{parse_i64, Args};
use super::{commands, CommandSpec};
use super::{Conn, Ctx};
use crate::coord::coll as gather;
use crate::error::{CmdError, CmdResult, SYNTAX};
use crate::resp::Reply;
use crate::types::coll::{self, Rng, View, Writer};
use crate::types::notify::class::SET;
use crate::types::KeyType;

/// The set commands (`cmd::table` has the line format).
#[rustfmt::skip]
pub(super) const COMMANDS: &[CommandSpec] = commands! {
    "sadd"        -3 [write denyoom fast]   1 1 1  Shard(sadd)                   set "1.0.0" "Adds one or more members to a set. Creates the key if it doesn't exist.";
    "srem"        -3 [write fast]           1 1 1  Shard(srem)                   set "1.0.0" "Removes one or more members from a set. Deletes the set if the last member was removed.";
    "scard"       2  [readonly fast]        1 1 1  Shard(scard)                  set "1.0.0" "Returns the number of members in a set.";
    "sismember"   3  [readonly fast]        1 1 1  Shard(sismember)              set "1.0.0" "Determines whether a member belongs to a set.";
    "smismember"  -3 [readonly fast]        1 1 1  Shard(smismember)             set "6.2.0" "Determines whether multiple members belong to a set.";
    "smembers"    2  [readonly]             1 1 1  Shard(super::whole::smembers) set "1.0.0" "Returns all members of a set.";
    "srandmember" -2 [readonly]             1 1 1  Shard(srandmember)            set "1.0.0" "Get one or multiple random members from a set";
    "spop"        -2 [write fast]           1 1 1  Shard(spop)                   set "1.0.0" "Returns one or more random members from a set after removing them. Deletes the set if the last member was popped.";
    "smove"       4  [write fast]           1 2 1  Conn(smove)                   set "1.0.0" "Moves a member from one set to another.";
    "sinter"      -2 [readonly]             1 -1 1 Conn(sinter)                  set "1.0.0" "Returns the intersect of multiple sets.";
    "sintercard"  -3 [readonly movablekeys] 0 0 0  Conn(sintercard)              set "7.0.0" "Returns the number of members of the intersect of multiple sets.";
    "sinterstore" -3 [write denyoom]        1 -1 1 Conn(sinterstore)             set "1.0.0" "Stores the intersect of multiple sets in a key.";
    "sunion"      -2 [readonly]             1 -1 1 Conn(sunion)                  set "1.0.0" "Returns the union of multiple sets.";
    "sunionstore" -3 [write denyoom]        1 -1 1 Conn(sunionstore)             set "1.0.0" "Stores the union of multiple sets in a key.";
    "sdiff"       -2 [readonly]             1 -1 1 Conn(sdiff)                   set "1.0.0" "Returns the difference of multiple sets.";
    "sdiffstore"  -3 [write denyoom]        1 -1 1 Conn(sdiffstore)              set "1.0.0" "Stores the difference of multiple sets in a key.";
    "sscan"       -3 [readonly]             1 1 1  Shard(sscan)                  set "2.8.0" "Iterates over members of a set.";
};

const S: KeyType = KeyType::Set;

fn view(ctx: &Ctx, key: &[u8]) -> CmdResult<Option<View>> {
    coll::view(ctx.ks(), ctx.db, key, S, ctx.now_ms)
}

fn is_member(ctx: &Ctx, key: &[u8], v: &View, m: &[u8]) -> CmdResult<bool> {
    Ok(coll::member(ctx.ks(), ctx.db, key, &v.c, m)?.is_some())
}

pub fn sadd(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let (key, members) = (args.key()?, args.rest());
    // A SADD of members the set holds already writes nothing (Redis
    // neither notifies nor propagates it, and WATCH sees no change): it
    // is answered as SMISMEMBER would be, without a writer (its open,
    // batch and commit). Otherwise the writer takes what was read.
    let mut seen: SmallVec<[bool; 4]> = SmallVec::new();
    if let Some(v) = view(ctx, key)? {
        for m in members {
            let found = coll::member_with(ctx.ks(), ctx.db, key, &v.c, m, |_| ())?.is_some();
            seen.push(found);
            if !found {
                // One to add: the writer reads the rest.
                break;
            }
        }
        // The loop stops at the first member missing: none missing, all held.
        if !seen.contains(&false) {
            r.int(0);
            return Ok(());
        }
    }
    let mut w = Writer::upsert(ctx.ks(), ctx.db, key, S, ctx.now_ms)?;
    for (m, found) in members.iter().zip(&seen) {
        w.seed(m, found.then_some((0, &b""[..])));
    }
    let mut added = 0;
    for m in members {
        if !w.exists(m)? {
            w.put(m, 0, b"")?;
            added += 1;
        }
    }
    w.commit_with(SET, if added > 0 { &["sadd"] } else { &[] })?;
    r.int(added);
    Ok(())
}

pub fn srem(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let (key, members) = (args.key()?, args.rest());
    let Some(mut w) = Writer::open(ctx.ks(), ctx.db, key, S, ctx.now_ms, false)? else {
        r.int(0);
        return Ok(());
    };
    let mut removed = 0;
    for m in members {
        removed += (w.delete(m)? != crate::types::hash::Phys::Missing) as i64;
    }
    w.commit_with(SET, if removed > 0 { &["srem"] } else { &[] })?;
    r.int(removed);
    Ok(())
}

pub fn scard(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    r.int(view(ctx, Args::new(argv).key()?)?.map_or(0, |v| v.c.size as i64));
    Ok(())
}

pub fn sismember(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let (key, member) = (args.key()?, args.bytes()?);
    let found = match view(ctx, key)? {
        Some(v) => is_member(ctx, key, &v, member)?,
        None => false,
    };
    r.int(found as i64);
    Ok(())
}

pub fn smismember(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let (key, members) = (args.key()?, args.rest());
    let v = view(ctx, key)?;
    r.array(members.len());
    for m in members {
        let found = match &v {
            Some(v) => is_member(ctx, key, v, m)?,
            None => false,
        };
        r.int(found as i64);
    }
    Ok(())
}

fn pick(ctx: &Ctx, key: &[u8], v: &Option<View>, count: i64, rng: &mut Rng) -> CmdResult<Vec<coll::Entry>> {
    match v {
        Some(v) => coll::random_members(ctx.ks(), ctx.db, key, &v.c, ctx.now_ms, count, rng),
        None => Ok(Vec::new()),
    }
}

pub fn srandmember(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut rng = Rng::seeded();
    let mut args = Args::new(argv);
    let key = args.key()?;
    if args.left() > 1 {
        return Err(SYNTAX);
    }
    if args.is_empty() {
        let v = view(ctx, key)?;
        match pick(ctx, key, &v, -1, &mut rng)?.first() {
            Some(e) => r.bulk(&e.0),
            None => r.null(),
        }
        return Ok(());
    }
    let l = args.int()?;
    if l == i64::MIN {
        return Err(CmdError::new(super::hashes::RANDOM_COUNT_RANGE));
    }
    let v = view(ctx, key)?;
    let picks = pick(ctx, key, &v, l, &mut rng)?;
    r.array(picks.len());
    for e in &picks {
        r.bulk(&e.0);
    }
    Ok(())
}

pub fn spop(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut rng = Rng::seeded();
    let mut args = Args::new(argv);
    let key = args.key()?;
    if args.left() > 1 {
        return Err(SYNTAX);
    }
    let count = match args.peek() {
        None => None,
        Some(_) => {
            let c = args
                .int()
                .map_err(|_| CmdError::new("ERR value is out of range, must be positive"))?;
            if c < 0 {
                return Err(CmdError::new("ERR value is out of range, must be positive"));
            }
            Some(c)
        }
    };
    let Some(mut w) = Writer::open(ctx.ks(), ctx.db, key, S, ctx.now_ms, false)? else {
        match count {
            None => r.null(),
            Some(_) => r.set(0),
        }
        return Ok(());
    };
    let picks = coll::random_members(ctx.ks(), ctx.db, key, &w.c, ctx.now_ms, count.unwrap_or(-1), &mut rng)?;
    match count {
        Some(_) => r.set(picks.len()),
        None if picks.is_empty() => r.null(),
        None => {}
    }
    for e in &picks {
        r.bulk(&e.0);
        w.delete(&e.0)?;
    }
    w.commit_with(SET, if picks.is_empty() { &[] } else { &["spop"] })?;
    Ok(())
}

pub fn sscan(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    super::hashes::scan_collection(ctx, argv, r, S)
}

// ---- commands over sets of several shards (`coord::coll` gathers them) ----

/// SMOVE: `coord::coll::smove` moves the member, across shards when the
/// two sets live on different ones.
pub async fn smove(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let (src, dst, member) = (args.arg()?.clone(), args.arg()?.clone(), args.arg()?.clone());
    r.int(gather::smove(c.shard, c.db(), src, dst, member).await?);
    Ok(())
}

pub async fn sinter(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    algebra(c, argv, r, gather::Op::Inter).await
}

pub async fn sunion(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    algebra(c, argv, r, gather::Op::Union).await
}

pub async fn sdiff(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    algebra(c, argv, r, gather::Op::Diff).await
}

async fn algebra(c: Conn<'_>, argv: &[Bytes], r: &mut Reply, op: gather::Op) -> CmdResult {
    let out = gather::combine(c.shard, c.db(), Args::new(argv).rest(), op).await?;
    reply_members(r, &out);
    Ok(())
}

pub async fn sinterstore(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    algebra_store(c, argv, r, gather::Op::Inter).await
}

pub async fn sunionstore(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    algebra_store(c, argv, r, gather::Op::Union).await
}

pub async fn sdiffstore(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    algebra_store(c, argv, r, gather::Op::Diff).await
}

async fn algebra_store(c: Conn<'_>, argv: &[Bytes], r: &mut Reply, op: gather::Op) -> CmdResult {
    let mut args = Args::new(argv);
    let (dst, keys) = (args.arg()?, args.rest());
    let (shard, db) = (c.shard, c.db());
    let out = gather::combine(shard, db, keys, op).await?;
    let event = match op {
        gather::Op::Inter => "sinterstore",
        gather::Op::Union => "sunionstore",
        gather::Op::Diff => "sdiffstore",
    };
    r.int(gather::store_set(shard, db, dst, out, event).await?);
    Ok(())
}

pub async fn sintercard(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let n = parse_i64(args.bytes()?)
        .filter(|n| *n > 0)
        .ok_or_else(|| CmdError::new("ERR numkeys should be greater than 0"))?;
    if n > args.left() as i64 {
        return Err(CmdError::new("ERR Number of keys can't be greater than number of args"));
    }
    let (keys, options) = args.rest().split_at(n as usize);
    let mut args = Args::at(options, 0);
    let mut limit = 0i64;
    while !args.is_empty() {
        if args.option("limit", 1) {
            limit = parse_i64(args.bytes()?)
                .filter(|l| *l >= 0)
                .ok_or_else(|| CmdError::new("ERR LIMIT can't be negative"))?;
        } else {
            return Err(SYNTAX);
        }
    }
    let out = gather::combine(c.shard, c.db(), keys, gather::Op::Inter).await?;
    let count = out.len() as i64;
    r.int(if limit > 0 { count.min(limit) } else { count });
    Ok(())
}

fn reply_members<T: AsRef<[u8]>>(r: &mut Reply, items: &[T]) {
    r.set(items.len());
    for m in items {
        r.bulk(m.as_ref());
    }
}
