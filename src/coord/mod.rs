//! Cross-shard coordination: how an operation whose keys may live on
//! several shards (MGET MSET MSETNX DEL UNLINK EXISTS TOUCH RENAME RENAMENX
//! COPY, the set algebra) is split, sent and merged. The commands
//! themselves (argument parsing, replies) are in `cmd`, which calls these;
//! nothing here knows a command's arguments.
//!
//! Keys are grouped by owning shard; each owner runs its half (the
//! `cmd::keys::*_keys` functions) in one message; replies are merged in
//! argument order. When every key has one owner the whole command is one
//! synchronous call on that shard, so it is atomic there. Across shards the
//! isolation is weaker; docs/cross-shard.md says exactly what holds.
//! `gate` is the transaction gate a multi-shard EXEC runs behind.

use std::rc::Rc;

use bytes::Bytes;
use shards::Shard;

use crate::clock::now_ms;
use crate::error::CmdResult;
use crate::shard::ShardState;
use crate::slot::first_slot_of;
use crate::slot::owner;
use crate::storage::intent::{IntentRef, Rider};
use crate::types::multi as k;
use crate::types::notify::class::GENERIC;

pub mod bigmove;
pub mod blocking;
pub mod coll;
pub mod gate;
pub mod intent;
pub mod list;
pub mod misses;
pub mod serve;
pub mod swapdb;
pub mod xread;
pub mod zset;

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
pub async fn fan_out<R, F>(shard: &S, db: u8, keys: &[(usize, Bytes)], access: Access, job: F) -> Vec<(Vec<usize>, CmdResult<R>)>
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
pub enum Access {
    Read,
    Write,
}

pub fn keys_from(argv: &[Bytes], from: usize, step: usize) -> Vec<(usize, Bytes)> {
    (from..argv.len()).step_by(step).map(|i| (i, argv[i].clone())).collect()
}

/// Sums an integer-per-shard command (DEL, EXISTS, TOUCH).
/// `touch`: TOUCH, whose reads update the keys' access times.
pub async fn sum(shard: &S, db: u8, argv: &[Bytes], del: bool, touch: bool) -> CmdResult<i64> {
    let access = if del { Access::Write } else { Access::Read };
    let parts = fan_out(shard, db, &keys_from(argv, 1, 1), access, move |st, ks| {
        if del {
            k::del_keys(&st.ks, db, ks, now_ms())
        } else {
            // EXISTS and TOUCH look their keys up (`Keyspace::read`).
            st.ks.begin_lookups();
            let now = now_ms();
            st.ks.access.begin(touch, now);
            let n = k::exists_keys(&st.ks, db, ks, now);
            st.ks.access.end();
            n
        }
    })
    .await;
    let mut total = 0;
    for (_, r) in parts {
        total += r?;
    }
    Ok(total)
}

pub async fn mset(shard: &S, db: u8, argv: &[Bytes], nx: bool) -> CmdResult<bool> {
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
pub async fn move_key(
    shard: &S,
    src_db: u8,
    src: &Bytes,
    dst_db: u8,
    dst: &Bytes,
    replace: bool,
    delete_src: bool,
) -> CmdResult<Option<bool>> {
    let done = move_key_once(shard, src_db, src, dst_db, dst, replace, delete_src).await?;
    if done == Some(true) {
        serve::wake(shard, dst_db, dst).await;
    }
    Ok(done)
}

async fn move_key_once(
    shard: &S,
    src_db: u8,
    src: &Bytes,
    dst_db: u8,
    dst: &Bytes,
    replace: bool,
    delete_src: bool,
) -> CmdResult<Option<bool>> {
    let n = shard.count();
    let (so, dso) = (owner(src, n), owner(dst, n));
    let kind = if delete_src { bigmove::Kind::Rename } else { bigmove::Kind::Copy };
    let (src, dst) = (src.clone(), dst.clone());
    if so == dso {
        // Same owner: one synchronous step and one batch, unless the
        // source is too big for one step (`bigmove`).
        let (s, d) = (src.clone(), dst.clone());
        let one_step = shard
            .invoke_on(so, move |st: &ShardState| {
                let now = now_ms();
                if (src_db, &s) != (dst_db, &d) && k::is_big(&st.ks, src_db, &s, now, coll::SLICE as u64)? {
                    return Ok(None);
                }
                let done = k::move_local(&st.ks, (src_db, &s), (dst_db, &d), now, replace, delete_src)?;
                if done == Some(true) && (src_db, &s) != (dst_db, &d) {
                    notify_moved(&st.ks, (src_db, &s), (dst_db, &d), delete_src);
                }
                Ok::<_, crate::error::CmdError>(Some(done))
            })
            .await?;
        if let Some(done) = one_step {
            return Ok(done);
        }
        if let Some(done) = bigmove::move_big(shard, (src_db, &src), (dst_db, &dst), replace, kind).await? {
            return Ok(Some(done));
        }
        return shard
            .invoke_on(so, move |st: &ShardState| {
                let done = k::move_local(&st.ks, (src_db, &src), (dst_db, &dst), now_ms(), replace, delete_src)?;
                if done == Some(true) {
                    notify_moved(&st.ks, (src_db, &src), (dst_db, &dst), delete_src);
                }
                Ok(done)
            })
            .await;
    }
    if let Some(done) = bigmove::move_big(shard, (src_db, &src), (dst_db, &dst), replace, kind).await? {
        return Ok(Some(done));
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
                let placed = k::put_value(&st.ks, dst_db, &dst, &v, now_ms(), replace, None)?;
                if placed {
                    st.ks.notify(GENERIC, "copy_to", dst_db, &dst);
                }
                Ok::<_, crate::error::CmdError>(placed)
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
            let v = k::take_out(&st.ks, src_db, &src, now_ms(), |v| {
                let op = Op::Place {
                    db: dst_db,
                    key: d2.to_vec(),
                    value: v.clone(),
                };
                (r, op.encode())
            })?;
            if v.is_some() {
                st.ks.notify(GENERIC, "rename_from", src_db, &src);
            }
            Ok::<_, crate::error::CmdError>(v)
        })
        .await?
    else {
        return Ok(None);
    };
    shard
        .invoke_on(dso, move |st: &ShardState| {
            k::put_value(&st.ks, dst_db, &dst, &v, now_ms(), true, Some(r))?;
            st.ks.notify(GENERIC, "rename_to", dst_db, &dst);
            Ok::<_, crate::error::CmdError>(())
        })
        .await?;
    Ok(Some(true))
}

/// MOVE of `key` from `db` to `dst`: false when it is missing or `dst`
/// has it already. A big collection moves in slices (`bigmove`).
pub async fn move_db(shard: &S, db: u8, key: &Bytes, dst: u8) -> CmdResult<bool> {
    let moved = move_db_once(shard, db, key, dst).await?;
    if moved {
        serve::wake(shard, dst, key).await;
    }
    Ok(moved)
}

async fn move_db_once(shard: &S, db: u8, key: &Bytes, dst: u8) -> CmdResult<bool> {
    let o = owner(key, shard.count());
    let one = |check: bool| {
        let key = key.clone();
        move |st: &ShardState| -> CmdResult<Option<bool>> {
            let now = now_ms();
            if check && k::is_big(&st.ks, db, &key, now, coll::SLICE as u64)? {
                return Ok(None);
            }
            let moved = crate::types::coll::move_to_db(&st.ks, db, &key, dst, now)?;
            if moved {
                st.ks.notify(GENERIC, "move_from", db, &key);
                st.ks.notify(GENERIC, "move_to", dst, &key);
            }
            Ok(Some(moved))
        }
    };
    if let Some(moved) = shard.invoke_on(o, one(true)).await? {
        return Ok(moved);
    }
    if let Some(moved) = bigmove::move_big(shard, (db, key), (dst, key), false, bigmove::Kind::Move).await? {
        return Ok(moved);
    }
    Ok(shard.invoke_on(o, one(false)).await?.unwrap_or(false))
}

/// The events of a key moved on one shard: RENAME's `rename_from` and
/// `rename_to`, or COPY's `copy_to` (Redis sends none for the source).
fn notify_moved(ks: &crate::types::keyspace::Keyspace, src: (u8, &[u8]), dst: (u8, &[u8]), renamed: bool) {
    if renamed {
        ks.notify(GENERIC, "rename_from", src.0, src.1);
        ks.notify(GENERIC, "rename_to", dst.0, dst.1);
    } else {
        ks.notify(GENERIC, "copy_to", dst.0, dst.1);
    }
}

/// A cheap random number (xorshift over the clock): RANDOMKEY needs no more.
fn random_u64() -> u64 {
    let mut x = crate::clock::now_us() ^ 0x9E37_79B9_7F4A_7C15;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    x
}

pub async fn random_key(shard: &S, db: u8) -> CmdResult<Option<Bytes>> {
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
