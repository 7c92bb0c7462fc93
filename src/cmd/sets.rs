//! Set commands that run on one shard. SMEMBERS and the multi-key ones
//! (SINTER, SUNION, SDIFF and their STORE forms, SINTERCARD, SMOVE) run in
//! `coord`, which gathers members from each owner in slices.

use bytes::Bytes;

use super::args::int;
use super::Ctx;
use crate::error::{CmdError, CmdResult, SYNTAX};
use crate::resp::Reply;
use crate::storage::meta::KeyType;
use crate::types::coll::{self, Rng, View, Writer};

const S: KeyType = KeyType::Set;

fn view(ctx: &Ctx, key: &[u8]) -> CmdResult<Option<View>> {
    coll::view(ctx.ks(), ctx.db, key, S, ctx.now_ms)
}

fn is_member(ctx: &Ctx, key: &[u8], v: &View, m: &[u8]) -> CmdResult<bool> {
    Ok(coll::member(ctx.ks(), ctx.db, key, &v.c, m)?.is_some())
}

pub fn sadd(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut w = Writer::upsert(ctx.ks(), ctx.db, &argv[1], S, ctx.now_ms)?;
    let mut added = 0;
    for m in &argv[2..] {
        if w.physical(m)?.is_none() {
            w.put(m, 0, b"")?;
            added += 1;
        }
    }
    w.commit()?;
    r.int(added);
    Ok(())
}

pub fn srem(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let Some(mut w) = Writer::open(ctx.ks(), ctx.db, &argv[1], S, ctx.now_ms, false)? else {
        r.int(0);
        return Ok(());
    };
    let mut removed = 0;
    for m in &argv[2..] {
        removed += (w.delete(m)? != crate::types::hash::Phys::Missing) as i64;
    }
    w.commit()?;
    r.int(removed);
    Ok(())
}

pub fn scard(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    r.int(view(ctx, &argv[1])?.map_or(0, |v| v.c.size as i64));
    Ok(())
}

pub fn sismember(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let found = match view(ctx, &argv[1])? {
        Some(v) => is_member(ctx, &argv[1], &v, &argv[2])?,
        None => false,
    };
    r.int(found as i64);
    Ok(())
}

pub fn smismember(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let v = view(ctx, &argv[1])?;
    r.array(argv.len() - 2);
    for m in &argv[2..] {
        let found = match &v {
            Some(v) => is_member(ctx, &argv[1], v, m)?,
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
    if argv.len() > 3 {
        return Err(SYNTAX);
    }
    if argv.len() == 2 {
        let v = view(ctx, &argv[1])?;
        match pick(ctx, &argv[1], &v, -1, &mut rng)?.first() {
            Some(e) => r.bulk(&e.0),
            None => r.null(),
        }
        return Ok(());
    }
    let l = int(&argv[2])?;
    if l == i64::MIN {
        return Err(CmdError::new(super::hashes::RANDOM_COUNT_RANGE));
    }
    let v = view(ctx, &argv[1])?;
    let picks = pick(ctx, &argv[1], &v, l, &mut rng)?;
    r.array(picks.len());
    for e in &picks {
        r.bulk(&e.0);
    }
    Ok(())
}

pub fn spop(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut rng = Rng::seeded();
    if argv.len() > 3 {
        return Err(SYNTAX);
    }
    let count = match argv.get(2) {
        None => None,
        Some(a) => {
            let c = int(a).map_err(|_| CmdError::new("ERR value is out of range, must be positive"))?;
            if c < 0 {
                return Err(CmdError::new("ERR value is out of range, must be positive"));
            }
            Some(c)
        }
    };
    let Some(mut w) = Writer::open(ctx.ks(), ctx.db, &argv[1], S, ctx.now_ms, false)? else {
        match count {
            None => r.null(),
            Some(_) => r.set(0),
        }
        return Ok(());
    };
    let picks = coll::random_members(ctx.ks(), ctx.db, &argv[1], &w.c, ctx.now_ms, count.unwrap_or(-1), &mut rng)?;
    match count {
        Some(_) => r.set(picks.len()),
        None if picks.is_empty() => r.null(),
        None => {}
    }
    for e in &picks {
        r.bulk(&e.0);
        w.delete(&e.0)?;
    }
    w.commit()?;
    Ok(())
}

pub fn sscan(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    super::hashes::scan_collection(ctx, argv, r, S)
}
