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
        ks.stage_drop_members(&mut b, db, k, prior.as_ref().and_then(|p| p.1.clone()));
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

/// Bytes of member values a slice of a moved collection carries at most
/// (a big string's chunks are large; a set's members small).
const MOVE_SLICE_BYTES: usize = 1 << 20;

/// Whether the live key `key` is a collection too big to move in one step
/// (`coord::bigmove`): more than `slice` members (a big string: bytes).
pub fn is_big(ks: &Keyspace, db: u8, key: &[u8], now_ms: u64, slice: u64) -> CmdResult<bool> {
    ks.read(db, key, now_ms, |m| m.and_then(|m| m.coll()).is_some_and(|c| c.size > slice))
}

/// Raw member records (member suffix, stored value), the last record key
/// read, and whether that was all of them.
pub type RawSlice = (Vec<(Vec<u8>, Vec<u8>)>, Vec<u8>, bool);

/// Up to `max` raw member records of incarnation `version` of `key` as of
/// `snap`, after member key `after` (a full record key): (member suffix,
/// stored value) pairs, the last record key read, and whether that was all.
pub fn raw_members(
    ks: &Keyspace,
    snap: &crate::storage::Snap,
    (db, key, version): (u8, &[u8], u64),
    after: Option<&[u8]>,
    max: usize,
) -> CmdResult<RawSlice> {
    let (lo, hi) = crate::storage::keys::sub_range(db, key, version);
    let (mut out, mut last, mut bytes) = (Vec::new(), Vec::new(), 0usize);
    ks.store.scan_from(Some(snap), &lo, after, &hi, |k, v| {
        out.push((k[lo.len()..].to_vec(), v.to_vec()));
        bytes += k.len() + v.len();
        last.clear();
        last.extend_from_slice(k);
        out.len() < max && bytes < MOVE_SLICE_BYTES
    })?;
    // Stopped short of a limit: the range ran out.
    let done = out.len() < max && bytes < MOVE_SLICE_BYTES;
    Ok((out, last, done))
}

/// Writes raw member records under incarnation `version` of `key`: nothing
/// reads them until a meta record names that version ([`stage_moved`]).
pub fn put_raw_members(ks: &Keyspace, db: u8, key: &[u8], version: u64, members: &[(Vec<u8>, Vec<u8>)]) -> CmdResult {
    let mut b = ks.store.batch();
    for (sub, val) in members {
        ks.store.put(&mut b, &crate::storage::keys::sub_key(db, key, version, sub), val);
    }
    ks.store.write(b)?;
    Ok(())
}

/// Deletes the member records of incarnation `version` of `key` (a move
/// given up: nothing names them).
pub fn drop_raw_members(ks: &Keyspace, db: u8, key: &[u8], version: u64) -> CmdResult {
    let (lo, hi) = crate::storage::keys::sub_range(db, key, version);
    let mut b = ks.store.batch();
    ks.store.delete_range(&mut b, &lo, &hi);
    ks.store.write(b)?;
    Ok(())
}

/// `raw` (a collection's meta value) renamed to incarnation `version`.
pub fn with_version(raw: &[u8], version: u64) -> CmdResult<Vec<u8>> {
    let m = Meta::decode(raw).ok_or(CORRUPT)?;
    let mut c = m.coll().ok_or(CORRUPT)?;
    c.version = version;
    Ok(c.encode(m.ty, m.expire_ms))
}

/// The last step of a collection moved in slices: its members are at `key`
/// under the version `raw` names; stages the meta record that makes them
/// the key (and a hash's field expiration entry), replacing what is there
/// if `replace`. False (nothing staged) when a live key is there and may
/// not be replaced.
pub fn stage_moved(
    ks: &Keyspace,
    b: &mut crate::storage::Batch,
    db: u8,
    key: &[u8],
    raw: &[u8],
    now_ms: u64,
    replace: bool,
) -> CmdResult<bool> {
    if !stage_replace(ks, b, db, key, now_ms, replace)? {
        return Ok(false);
    }
    let m = Meta::decode(raw).ok_or(CORRUPT)?;
    let c = m.coll().ok_or(CORRUPT)?;
    if m.is_expired(now_ms) {
        return Ok(true);
    }
    if let Some(h) = c.hfe.as_ref().filter(|_| m.ty == crate::storage::meta::KeyType::Hash) {
        crate::types::hash::stage_repair_at(ks, b, db, key, &c, h.lower);
    }
    ks.stage_put(b, db, key, raw, None);
    Ok(true)
}

/// Applies a moved collection's meta at `key` (RENAME's destination across
/// shards, `done` its intent part), replacing what is there.
pub fn place_moved(ks: &Keyspace, db: u8, key: &[u8], raw: &[u8], now_ms: u64, done: Option<IntentRef>) -> CmdResult {
    let mut b = ks.store.batch();
    if let Some(r) = done {
        ks.store.stage_intent_done(&mut b, r);
    }
    stage_moved(ks, &mut b, db, key, raw, now_ms, true)?;
    ks.store.write(b)?;
    Ok(())
}
