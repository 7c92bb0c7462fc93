//! The per-shard halves of multi-key operations (DEL, EXISTS, MGET, MSET,
//! RENAME, COPY, and the replay of cross-shard intents): each runs on the
//! shard that owns its keys, against that shard's keyspace, in one batch.
//! `coord` sends them to the owners and merges what they return; nothing
//! here knows about other shards, commands or replies.

use super::notify::class;
use bytes::Bytes;

use crate::error::{CmdResult, CORRUPT};
use crate::storage::intent::{IntentRef, Rider};
use crate::storage::meta::Meta;
use crate::types::bigstr;
use crate::types::coll::{self, Owned};
use crate::types::keyspace::Keyspace;

/// DEL/UNLINK on this shard: how many of `keys` existed.
pub fn del_keys(ks: &Keyspace, db: u8, keys: &[Bytes], now_ms: u64) -> CmdResult<i64> {
    let mut n = 0;
    for k in keys {
        if ks.delete(db, k, now_ms)? {
            n += 1;
            ks.notify(class::GENERIC, "del", db, k);
        }
    }
    Ok(n)
}

/// EXISTS/TOUCH on this shard: how many of `keys` exist (repeats count).
pub fn exists_keys(ks: &Keyspace, db: u8, keys: &[Bytes], now_ms: u64) -> CmdResult<i64> {
    let mut n = 0;
    for k in keys {
        n += ks.read(db, k, now_ms, |m| m.is_some())? as i64;
    }
    Ok(n)
}

/// MGET on this shard: each key's string value, None for missing or non-strings.
pub fn mget_keys(ks: &Keyspace, db: u8, keys: &[Bytes], now_ms: u64) -> CmdResult<Vec<Option<Bytes>>> {
    let mut out = Vec::with_capacity(keys.len());
    for k in keys {
        let v = ks.read(db, k, now_ms, |m| -> CmdResult<Option<Bytes>> {
            match m.as_ref().map(bigstr::of).transpose()?.flatten() {
                Some(bigstr::Str::Inline(body)) => Ok(Some(Bytes::copy_from_slice(body))),
                Some(big) => Ok(Some(bigstr::read_all(ks, db, k, big)?.into())),
                None => Ok(None),
            }
        })??;
        out.push(v);
    }
    Ok(out)
}

/// MSET on this shard: one atomic batch. With `only_if_none_exist`
/// (MSETNX on one shard) nothing is written if any key exists.
///
/// O(n) in the pairs: a key given more than once is read and written once,
/// with its last value (what Redis leaves). A key that was a collection
/// loses its members in the same batch, as SET does.
///
/// `rider`: the intent records of a cross-shard MSET that go in the same
/// batch (this part's delete, or the other parts' intents).
pub fn mset_pairs(
    ks: &Keyspace,
    db: u8,
    pairs: &[(Bytes, Bytes)],
    now_ms: u64,
    only_if_none_exist: bool,
    rider: Rider<'_>,
) -> CmdResult<bool> {
    let mut last: ahash::AHashMap<&[u8], usize> = ahash::AHashMap::with_capacity(pairs.len());
    for (i, (k, _)) in pairs.iter().enumerate() {
        last.insert(&k[..], i);
    }
    let mut priors = Vec::with_capacity(last.len());
    for (i, (k, _)) in pairs.iter().enumerate() {
        if last.get(&k[..]) == Some(&i) {
            priors.push((i, ks.read(db, k, now_ms, |m| m.map(|m| (m.expire_ms, m.coll())))?));
        }
    }
    if only_if_none_exist && priors.iter().any(|(_, p)| p.is_some()) {
        return Ok(false);
    }
    let mut b = ks.store.batch();
    ks.store.stage_rider(&mut b, rider);
    for (i, prior) in priors {
        let (k, v) = &pairs[i];
        ks.stage_drop_members(&mut b, db, k, prior.and_then(|p| p.1));
        bigstr::stage_put(ks, &mut b, db, k, 0, v, prior.map(|p| p.0));
    }
    ks.store.write(b)?;
    // As Redis: one event per pair given, repeats too.
    for (k, _) in pairs {
        ks.notify(class::STRING, "set", db, k);
    }
    Ok(true)
}

/// A live key's whole value, for COPY across shards.
pub fn take_value(ks: &Keyspace, db: u8, key: &[u8], now_ms: u64) -> CmdResult<Option<Owned>> {
    coll::take(ks, db, key, now_ms)
}

/// RENAME's source half across shards: takes a live key out and deletes it
/// in one batch that also writes the destination's intent part (`carry`
/// encodes it from the value), so a crash after this write still renames.
/// A write to the source after this step makes a new key: nothing is lost.
pub fn take_out(
    ks: &Keyspace,
    db: u8,
    key: &[u8],
    now_ms: u64,
    carry: impl FnOnce(&Owned) -> (IntentRef, Vec<u8>),
) -> CmdResult<Option<Owned>> {
    let Some(v) = coll::take(ks, db, key, now_ms)? else {
        return Ok(None);
    };
    let m = Meta::decode(&v.raw).ok_or(CORRUPT)?;
    let mut b = ks.store.batch();
    ks.stage_delete(&mut b, db, key, &m);
    let (r, body) = carry(&v);
    ks.store.stage_intent(&mut b, r, &body);
    ks.store.write(b)?;
    Ok(Some(v))
}

/// Writes a moved/copied value at its destination (under a new version for
/// a collection). Returns false when the destination exists and must not
/// be replaced. `done`: the intent part this applies (RENAME across shards).
pub fn put_value(ks: &Keyspace, db: u8, key: &[u8], v: &Owned, now_ms: u64, replace: bool, done: Option<IntentRef>) -> CmdResult<bool> {
    // One read of the destination: staged for deletion if it may be replaced.
    let mut b = ks.store.batch();
    if let Some(r) = done {
        ks.store.stage_intent_done(&mut b, r);
    }
    if !stage_replace(ks, &mut b, db, key, now_ms, replace)? {
        return Ok(false);
    }
    if !Meta::decode(&v.raw).is_some_and(|m| m.is_expired(now_ms)) {
        coll::stage_place(ks, &mut b, db, key, v, None)?;
    }
    ks.store.write(b)?;
    Ok(true)
}

/// Makes room for a value at `key`: when a live key is there, stages its
/// deletion in `b` if `replace`, else says no (false) and stages nothing.
fn stage_replace(ks: &Keyspace, b: &mut crate::storage::Batch, db: u8, key: &[u8], now_ms: u64, replace: bool) -> CmdResult<bool> {
    let exists = ks.read(db, key, now_ms, |m| {
        m.map(|m| {
            if replace {
                ks.stage_delete(b, db, key, &m);
            }
        })
        .is_some()
    })?;
    Ok(!exists || replace)
}

/// RENAME, RENAMENX or COPY with both keys on this shard: one batch, so it
/// is atomic here and across a crash. None when the source is missing,
/// Some(false) when the destination exists and may not be replaced.
pub fn move_local(
    ks: &Keyspace,
    (src_db, src): (u8, &[u8]),
    (dst_db, dst): (u8, &[u8]),
    now_ms: u64,
    replace: bool,
    delete_src: bool,
) -> CmdResult<Option<bool>> {
    let Some(v) = coll::take(ks, src_db, src, now_ms)? else {
        return Ok(None);
    };
    if src == dst && src_db == dst_db {
        return Ok(Some(replace));
    }
    let mut b = ks.store.batch();
    if !stage_replace(ks, &mut b, dst_db, dst, now_ms, replace)? {
        return Ok(Some(false));
    }
    coll::stage_place(ks, &mut b, dst_db, dst, &v, None)?;
    if delete_src {
        let m = Meta::decode(&v.raw).ok_or(CORRUPT)?;
        ks.stage_delete(&mut b, src_db, src, &m);
    }
    ks.store.write(b)?;
    Ok(Some(true))
}

/// Whether a live key exists (RENAMENX/COPY pre-checks).
pub fn exists(ks: &Keyspace, db: u8, key: &[u8], now_ms: u64) -> CmdResult<bool> {
    ks.read(db, key, now_ms, |m| m.is_some())
}
