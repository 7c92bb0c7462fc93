//! Cross-shard coordination: commands whose keys may live on several shards
//! (MGET MSET MSETNX DEL UNLINK EXISTS TOUCH RENAME RENAMENX COPY LCS) and
//! commands over the whole keyspace (SCAN KEYS RANDOMKEY DBSIZE FLUSHDB
//! FLUSHALL).
//!
//! Keys are grouped by owning shard; each owner runs its half (the
//! `cmd::keys::*_keys` functions) in one message; replies are merged in
//! argument order. When every key has one owner the whole command is one
//! synchronous call on that shard, so it is atomic there. Across shards the
//! isolation is weaker; docs/cross-shard.md says exactly what holds.

use std::rc::Rc;

use bytes::Bytes;
use shards::Shard;

use crate::clock::now_ms;
use crate::cmd::args::{db_index, scan_cursor, Args, ScanKind, ScanOpts};
use crate::cmd::keys as k;
use crate::cmd::{arity_error, Conn};
use crate::error::{CmdError, CmdResult, NO_SUCH_KEY, SYNTAX};
use crate::glob;
use crate::resp::Reply;
use crate::shard::ShardState;
use crate::storage::intent::{IntentRef, Rider};
use crate::storage::keys::SLOTS;
use crate::storage::owner;
use crate::storage::{first_slot_of, shard_of_slot};

pub mod coll;
pub mod intent;
pub mod misses;

use intent::Op;

pub(crate) type S = Rc<Shard<ShardState>>;

/// Groups argument positions by owning shard, keeping argument order inside a group.
fn group(keys: &[(usize, Bytes)], shards: usize) -> Vec<(usize, Vec<(usize, Bytes)>)> {
    let mut groups: Vec<(usize, Vec<(usize, Bytes)>)> = Vec::new();
    for (pos, key) in keys {
        let o = owner(key, shards);
        match groups.iter_mut().find(|(s, _)| *s == o) {
            Some((_, v)) => v.push((*pos, key.clone())),
            None => groups.push((o, vec![(*pos, key.clone())])),
        }
    }
    groups
}

/// Runs `job(keys)` on each owner of `keys` concurrently; results per
/// group. A job that reads (`Access::Read`) probes, and one that writes
/// waits for the reads in flight on its keys: records on disk only are
/// read by the pool, off the owner's thread (`misses::read_job`,
/// `misses::write_job`).
async fn fan_out<R, F>(shard: &S, db: u8, keys: &[(usize, Bytes)], access: Access, job: F) -> Vec<(Vec<usize>, CmdResult<R>)>
where
    R: Send + 'static,
    F: Fn(&ShardState, &[Bytes]) -> CmdResult<R> + Send + Sync + Clone + 'static,
{
    let groups = group(keys, shard.count());
    let mut futs = Vec::with_capacity(groups.len());
    let mut positions = Vec::with_capacity(groups.len());
    for (target, items) in groups {
        let (pos, ks): (Vec<usize>, Vec<Bytes>) = items.into_iter().unzip();
        positions.push(pos);
        let job = job.clone();
        futs.push(shard.invoke_on_then(target, move |st: &Rc<ShardState>| match access {
            Access::Read => misses::read_job(st, db, ks, job),
            Access::Write => misses::write_job(st, db, ks, job),
        }));
    }
    positions.into_iter().zip(shards::join_all(futs).await).collect()
}

/// What a fanned-out job does with its keys.
#[derive(Clone, Copy)]
enum Access {
    Read,
    Write,
}

fn keys_from(argv: &[Bytes], from: usize, step: usize) -> Vec<(usize, Bytes)> {
    (from..argv.len()).step_by(step).map(|i| (i, argv[i].clone())).collect()
}

/// Sums an integer-per-shard command (DEL, EXISTS, TOUCH).
async fn sum(shard: &S, db: u8, argv: &[Bytes], del: bool) -> CmdResult<i64> {
    let access = if del { Access::Write } else { Access::Read };
    let parts = fan_out(shard, db, &keys_from(argv, 1, 1), access, move |st, ks| {
        if del {
            k::del_keys(&st.ks, db, ks, now_ms())
        } else {
            k::exists_keys(&st.ks, db, ks, now_ms())
        }
    })
    .await;
    let mut total = 0;
    for (_, r) in parts {
        total += r?;
    }
    Ok(total)
}

// The commands, each an `async fn` the command table names (`Conn(...)`).

pub async fn del(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    r.int(sum(c.shard, c.db(), argv, true).await?);
    Ok(())
}

/// EXISTS and TOUCH.
pub async fn exists(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    r.int(sum(c.shard, c.db(), argv, false).await?);
    Ok(())
}

pub async fn mget(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let db = c.db();
    let parts = fan_out(c.shard, db, &keys_from(argv, 1, 1), Access::Read, move |st, ks| {
        k::mget_keys(&st.ks, db, ks, now_ms())
    })
    .await;
    let mut values: Vec<Option<Bytes>> = vec![None; argv.len()];
    for (pos, res) in parts {
        for (p, v) in pos.into_iter().zip(res?) {
            values[p] = v;
        }
    }
    r.array(argv.len() - 1);
    for v in &values[1..] {
        match v {
            Some(v) => r.bulk(v),
            None => r.null(),
        }
    }
    Ok(())
}

pub async fn mset(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    if argv.len().is_multiple_of(2) {
        return Err(CmdError::new(arity_error("mset")));
    }
    mset_pairs(c.shard, c.db(), argv, false).await?;
    r.ok();
    Ok(())
}

pub async fn msetnx(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    if argv.len().is_multiple_of(2) {
        return Err(CmdError::new(arity_error("msetnx")));
    }
    let done = mset_pairs(c.shard, c.db(), argv, true).await?;
    r.int(done as i64);
    Ok(())
}

pub async fn rename(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let (src, dst) = (args.next()?, args.next()?);
    let db = c.db();
    move_key(c.shard, db, src, db, dst, true, true).await?.ok_or(NO_SUCH_KEY)?;
    r.ok();
    Ok(())
}

pub async fn renamenx(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let (src, dst) = (args.next()?, args.next()?);
    let db = c.db();
    let done = move_key(c.shard, db, src, db, dst, false, true).await?.ok_or(NO_SUCH_KEY)?;
    r.int(done as i64);
    Ok(())
}

pub async fn copy(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let db = c.db();
    let mut args = Args::new(argv);
    let (src, dst) = (args.next()?, args.next()?);
    let mut dst_db = db;
    let mut replace = false;
    while !args.is_empty() {
        if args.flag("replace") {
            replace = true;
        } else if args.left() >= 2 && args.flag("db") {
            dst_db = db_index(args.bytes()?, c.st().ks.databases())?;
        } else {
            return Err(SYNTAX);
        }
    }
    if dst_db == db && src == dst {
        return Err(CmdError::new("ERR source and destination objects are the same"));
    }
    let done = move_key(c.shard, db, src, dst_db, dst, replace, false).await?;
    r.int(done.unwrap_or(false) as i64);
    Ok(())
}

pub async fn keys(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let db = c.db();
    let pattern = Args::new(argv).next()?.clone();
    let found = c
        .shard
        .broadcast(move |st: &ShardState| {
            let n = st.global.shards;
            let (from, to) = (first_slot_of(st.id, n), first_slot_of(st.id + 1, n));
            let mut out = Vec::new();
            let res = st.ks.scan_slots(db, from, to, now_ms(), |key, _| {
                if glob::matches(&pattern, key, false) {
                    out.push(Bytes::copy_from_slice(key));
                }
                true
            });
            res.map(|_| out)
        })
        .await;
    let mut all = Vec::new();
    for part in found {
        all.extend(part?);
    }
    r.array(all.len());
    for key in &all {
        r.bulk(key);
    }
    Ok(())
}

pub async fn dbsize(c: Conn<'_>, _: &[Bytes], r: &mut Reply) -> CmdResult {
    let db = c.db();
    let counts = c.shard.broadcast(move |st: &ShardState| st.ks.count(db)).await;
    r.int(counts.iter().sum());
    Ok(())
}

pub async fn flushdb(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    flush(c, argv, r, false).await
}

pub async fn flushall(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    flush(c, argv, r, true).await
}

/// FLUSHDB and FLUSHALL, each with an optional SYNC or ASYNC (both run
/// the same: a range delete per column family is quick).
async fn flush(c: Conn<'_>, argv: &[Bytes], r: &mut Reply, all: bool) -> CmdResult {
    let mut args = Args::new(argv);
    args.word(&["sync", "async"]);
    args.finish()?;
    let db = c.db();
    let res = c
        .shard
        .broadcast(move |st: &ShardState| {
            if all {
                (0..st.ks.databases()).try_for_each(|d| st.ks.flush_db(d as u8))
            } else {
                st.ks.flush_db(db)
            }
        })
        .await;
    res.into_iter().collect::<CmdResult<Vec<()>>>()?;
    r.ok();
    Ok(())
}

pub async fn randomkey(c: Conn<'_>, _: &[Bytes], r: &mut Reply) -> CmdResult {
    match random_key(c.shard, c.db()).await? {
        Some(key) => r.bulk(&key),
        None => r.null(),
    }
    Ok(())
}

async fn mset_pairs(shard: &S, db: u8, argv: &[Bytes], nx: bool) -> CmdResult<bool> {
    let keys = keys_from(argv, 1, 2);
    let groups = group(&keys, shard.count());
    let pairs_of =
        |items: &[(usize, Bytes)]| -> Vec<(Bytes, Bytes)> { items.iter().map(|(p, key)| (key.clone(), argv[p + 1].clone())).collect() };
    if groups.len() == 1 {
        let (target, items) = &groups[0];
        let pairs = pairs_of(items);
        return shard
            .invoke_on(*target, move |st: &ShardState| {
                k::mset_pairs(&st.ks, db, &pairs, now_ms(), nx, Rider::None)
            })
            .await;
    }
    if nx {
        // Phase one: does any key exist anywhere? Nothing is written if so.
        let parts = fan_out(shard, db, &keys, Access::Read, move |st, ks| {
            k::exists_keys(&st.ks, db, ks, now_ms())
        })
        .await;
        for (_, n) in parts {
            if n? > 0 {
                return Ok(false);
            }
        }
    }
    // Every other owner's part goes into an intent record, written in the
    // batch that applies this shard's own part when it is an owner (else in
    // a batch of its own); each other owner then applies its part and
    // deletes its record in one batch. After a crash, the next start
    // completes whatever was not applied.
    let st = shard.state();
    let id = st.global.engine.next_intent_id();
    let here = shard.id();
    let mut carried = Vec::with_capacity(groups.len());
    let mut work = Vec::with_capacity(groups.len());
    let mut local = None;
    for (i, (target, items)) in groups.iter().enumerate() {
        let pairs = pairs_of(items);
        if *target == here {
            local = Some(pairs);
            continue;
        }
        let r = IntentRef { id, part: i as u16 };
        carried.push((r, Op::Mset { db, pairs: pairs.clone() }.encode()));
        work.push((*target, r, pairs));
    }
    match local {
        Some(pairs) => {
            k::mset_pairs(&st.ks, db, &pairs, now_ms(), false, Rider::Carry(&carried))?;
        }
        None => {
            let mut b = st.ks.store.batch();
            st.ks.store.stage_rider(&mut b, Rider::Carry(&carried));
            st.ks.store.write(b)?;
        }
    }
    let mut futs = Vec::new();
    for (target, r, pairs) in work {
        futs.push(shard.invoke_on(target, move |st: &ShardState| {
            k::mset_pairs(&st.ks, db, &pairs, now_ms(), false, Rider::Done(r))
        }));
    }
    for res in shards::join_all(futs).await {
        res?;
    }
    Ok(true)
}

/// RENAME / RENAMENX / COPY. Returns None when the source is missing,
/// Some(false) when the destination exists and may not be replaced.
async fn move_key(shard: &S, src_db: u8, src: &Bytes, dst_db: u8, dst: &Bytes, replace: bool, delete_src: bool) -> CmdResult<Option<bool>> {
    let n = shard.count();
    let (so, dso) = (owner(src, n), owner(dst, n));
    let (src, dst) = (src.clone(), dst.clone());
    if so == dso {
        // Same owner: one synchronous step and one batch.
        return shard
            .invoke_on(so, move |st: &ShardState| {
                k::move_local(&st.ks, (src_db, &src), (dst_db, &dst), now_ms(), replace, delete_src)
            })
            .await;
    }
    if !delete_src {
        // COPY: a read, then one write on the destination's owner.
        let Some(v) = shard
            .invoke_on(so, move |st: &ShardState| k::take_value(&st.ks, src_db, &src, now_ms()))
            .await?
        else {
            return Ok(None);
        };
        let placed = shard
            .invoke_on(dso, move |st: &ShardState| {
                k::put_value(&st.ks, dst_db, &dst, &v, now_ms(), replace, None)
            })
            .await?;
        return Ok(Some(placed));
    }
    if !replace {
        // RENAMENX checks the destination first; a key created there before
        // the rename lands is replaced (docs/cross-shard.md).
        let (s2, d2) = (src.clone(), dst.clone());
        let src_exists = shard
            .invoke_on(so, move |st: &ShardState| k::exists(&st.ks, src_db, &s2, now_ms()))
            .await;
        let dst_exists = shard
            .invoke_on(dso, move |st: &ShardState| k::exists(&st.ks, dst_db, &d2, now_ms()))
            .await;
        if !src_exists? {
            return Ok(None);
        }
        if dst_exists? {
            return Ok(Some(false));
        }
    }
    // The source's owner takes the value out and deletes it in one batch
    // with the destination's intent part; the destination's owner places it
    // and deletes that part in one batch.
    let r = IntentRef {
        id: shard.state().global.engine.next_intent_id(),
        part: 0,
    };
    let d2 = dst.clone();
    let Some(v) = shard
        .invoke_on(so, move |st: &ShardState| {
            k::take_out(&st.ks, src_db, &src, now_ms(), |v| {
                let op = Op::Place {
                    db: dst_db,
                    key: d2.to_vec(),
                    value: v.clone(),
                };
                (r, op.encode())
            })
        })
        .await?
    else {
        return Ok(None);
    };
    shard
        .invoke_on(dso, move |st: &ShardState| {
            k::put_value(&st.ks, dst_db, &dst, &v, now_ms(), true, Some(r))
        })
        .await?;
    Ok(Some(true))
}

pub async fn lcs(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let (shard, db) = (c.shard, c.db());
    let mut args = Args::new(argv);
    let (a, b) = (args.next()?, args.next()?);
    let (mut want_len, mut want_idx, mut with_len, mut min_len) = (false, false, false, 0i64);
    while !args.is_empty() {
        if args.flag("idx") {
            want_idx = true;
        } else if args.flag("len") {
            want_len = true;
        } else if args.flag("withmatchlen") {
            with_len = true;
        } else if args.left() >= 2 && args.flag("minmatchlen") {
            min_len = args.int()?.max(0);
        } else {
            return Err(SYNTAX);
        }
    }
    let mut values = Vec::with_capacity(2);
    for key in [a, b] {
        let key = key.clone();
        let v = shard
            .invoke_on(owner(&key, shard.count()), move |st: &ShardState| {
                st.ks.read(db, &key, now_ms(), |m| match m {
                    None => Ok(Vec::new()),
                    Some(m) => match crate::types::bigstr::of(&m)? {
                        Some(s) => crate::types::bigstr::read_all(&st.ks, db, &key, s),
                        None => Err(CmdError::new("ERR The specified keys must contain string values")),
                    },
                })?
            })
            .await?;
        values.push(v);
    }
    if want_len && want_idx {
        return Err(CmdError::new("ERR If you want both the length and indexes, please just use IDX."));
    }
    if (values[0].len() as u64 + 1) * (values[1].len() as u64 + 1) * 4 > shard.state().global.max_string_len() as u64 {
        return Err(CmdError::new(
            "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len",
        ));
    }
    let res = crate::types::string::lcs(&values[0], &values[1]);
    if want_len {
        r.int(res.seq.len() as i64);
    } else if want_idx {
        let kept: Vec<_> = res.matches.iter().filter(|m| (m.1 - m.0 + 1) as i64 >= min_len).collect();
        r.map(2);
        r.bulk(b"matches");
        r.array(kept.len());
        for (a0, a1, b0, b1) in kept {
            r.array(if with_len { 3 } else { 2 });
            r.array(2);
            r.int(*a0 as i64);
            r.int(*a1 as i64);
            r.array(2);
            r.int(*b0 as i64);
            r.int(*b1 as i64);
            if with_len {
                r.int((a1 - a0 + 1) as i64);
            }
        }
        r.bulk(b"len");
        r.int(res.seq.len() as i64);
    } else {
        r.bulk(&res.seq);
    }
    Ok(())
}

/// SCAN: the cursor is the next hash slot to visit. Each call visits whole
/// slots on the shard owning the cursor's slot, so a key present for the
/// whole scan is returned exactly once, and the cursor is a plain number.
pub async fn scan(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let (shard, db) = (c.shard, c.db());
    let mut args = Args::new(argv);
    let cursor = scan_cursor(args.next()?)?;
    let ScanOpts { pattern, count, ty, .. } = ScanOpts::parse(&mut args, ScanKind::Keys)?;
    if cursor >= SLOTS as u64 {
        r.array(2);
        r.bulk(b"0");
        r.array(0);
        return Ok(());
    }
    let slot = cursor as u16;
    let n = shard.count();
    let target = shard_of_slot(slot, n);
    let end = first_slot_of(target + 1, n);
    let (next, keys) = shard
        .invoke_on(target, move |st: &ShardState| {
            let mut out = Vec::new();
            let mut visited = 0usize;
            let next = st.ks.scan_slots(db, slot, end, now_ms(), |key, m| {
                visited += 1;
                let type_ok = ty.as_deref().is_none_or(|t| t == m.ty.name());
                let match_ok = pattern.as_ref().is_none_or(|p| glob::matches(p, key, false));
                if type_ok && match_ok {
                    out.push(Bytes::copy_from_slice(key));
                }
                visited < count
            })?;
            Ok::<_, CmdError>((next, out))
        })
        .await?;
    let next = if next >= SLOTS { 0 } else { next };
    r.array(2);
    r.bulk(next.to_string().as_bytes());
    r.array(keys.len());
    for key in &keys {
        r.bulk(key);
    }
    Ok(())
}

/// A cheap random number (xorshift over the clock): RANDOMKEY needs no more.
fn random_u64() -> u64 {
    let mut x = crate::clock::now_us() ^ 0x9E37_79B9_7F4A_7C15;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    x
}

async fn random_key(shard: &S, db: u8) -> CmdResult<Option<Bytes>> {
    let counts = shard.broadcast(move |st: &ShardState| st.ks.count(db)).await;
    let total: i64 = counts.iter().sum();
    if total <= 0 {
        return Ok(None);
    }
    // Pick a shard weighted by its key count, then a random slot within it.
    let mut pick = (random_u64() % total as u64) as i64;
    let mut target = 0;
    for (i, c) in counts.iter().enumerate() {
        if pick < *c {
            target = i;
            break;
        }
        pick -= c;
    }
    let seed = random_u64();
    shard
        .invoke_on(target, move |st: &ShardState| {
            let n = st.global.shards;
            let from = first_slot_of(st.id, n);
            let to = first_slot_of(st.id + 1, n);
            let start = from + (seed % (to - from).max(1) as u64) as u16;
            for (a, b) in [(start, to), (from, start)] {
                let mut found = None;
                st.ks.scan_slots(db, a, b, now_ms(), |key, _| {
                    found = Some(Bytes::copy_from_slice(key));
                    false
                })?;
                if found.is_some() {
                    return Ok(found);
                }
            }
            Ok(None)
        })
        .await
}
