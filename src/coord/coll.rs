//! Whole-collection reads and multi-key set operations (the commands are
//! in `cmd::whole` and `cmd::sets`).
//!
//! A collection is read in slices of [`SLICE`] members. The first slice runs
//! on the owner together with the meta read and, when more slices follow,
//! takes a RocksDB snapshot there; every later slice reads that snapshot and
//! seeks past the last member seen. So a million-member HGETALL returns one
//! consistent view of the hash while the owner's core serves other clients
//! between slices (the caller yields after each slice when the owner is its
//! own shard). Set operations gather each source that way, compute on the
//! connection's shard and store the result on the destination's owner, again
//! in slices written under a fresh version that becomes visible in one final
//! meta write. docs/cross-shard.md says what isolation this gives.

use std::collections::HashSet;
use std::sync::Arc;

use bytes::Bytes;

use super::intent::{self, Op as Intent};
use super::S;
use crate::clock::now_ms;
use crate::error::{CmdResult, CORRUPT, WRONGTYPE};
use crate::resp::Reply;
use crate::shard::ShardState;
use crate::slot::owner;
use crate::storage::intent::IntentRef;
use crate::storage::meta::KeyType;
use crate::storage::Snap;
use crate::types::coll::{self, Entry};
use crate::types::keyspace::Keyspace;
use crate::types::notify::class;
use crate::types::zset;

/// Members per slice: about a millisecond of iteration on a warm cache.
pub const SLICE: usize = 1024;

/// What a read keeps of each live member: the members themselves (set
/// algebra), or their reply bytes (RESP bulk strings) ready to go out.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    Entries,
    Fields,
    Values,
    Pairs,
    /// Only how many (HLEN of a big hash its counts cannot answer).
    Count,
}

/// Writes one member as `keep` says (not `Keep::Entries`).
pub fn write_member(r: &mut Reply, keep: Keep, member: &[u8], value: &[u8]) {
    match keep {
        Keep::Fields => r.bulk(member),
        Keep::Values => r.bulk(value),
        Keep::Pairs => {
            r.bulk(member);
            r.bulk(value);
        }
        Keep::Entries | Keep::Count => {}
    }
}

/// One slice of a collection read.
#[derive(Default)]
struct Slice {
    entries: Vec<Entry>,
    wire: Vec<u8>,
    count: usize,
    /// The last member read: where the next slice starts.
    last: Vec<u8>,
    done: bool,
}

/// Reads up to [`SLICE`] live members from `view` (as of `snap`), after
/// member `after`. A sorted set's members are its member records (sub key
/// `m` member, value the score): the read stops at its score records.
#[allow(clippy::too_many_arguments)]
fn read_slice(
    st: &ShardState,
    db: u8,
    key: &[u8],
    (ty, view): (KeyType, &coll::View),
    snap: Option<&Snap>,
    after: Option<&[u8]>,
    now: u64,
    keep: Keep,
) -> CmdResult<Slice> {
    let mut out = Slice::default();
    let mut wire = Reply::new(false);
    let mut past = false;
    coll::scan_members(&st.ks, snap, (db, key), &view.c, after, now, |s, t, v| {
        if ty == KeyType::ZSet && s.first() != Some(&zset::MEMBER) {
            past = true;
            return false;
        }
        match keep {
            Keep::Entries => out.entries.push((s.to_vec(), t, v.to_vec())),
            k => write_member(&mut wire, k, s, v),
        }
        out.last.clear();
        out.last.extend_from_slice(s);
        out.count += 1;
        out.count < SLICE
    })?;
    out.wire = wire.buf;
    // Expired hash fields are skipped without counting; a slice that stopped
    // because it filled up is not the last.
    out.done = out.count < SLICE || past;
    Ok(out)
}

/// The first slice: the meta read (type check) and, when more slices will
/// follow, the snapshot they read.
type First = Option<(KeyType, coll::View, Option<Arc<Snap>>, Slice)>;

fn first_slice(st: &ShardState, db: u8, key: &[u8], tys: &[KeyType], now: u64, keep: Keep, lookup: bool) -> CmdResult<First> {
    if lookup {
        st.ks.begin_lookups();
    }
    let view = coll::view_any(&st.ks, db, key, tys, now);
    if lookup {
        st.ks.end_lookups(view.is_ok());
    }
    let Some((ty, view)) = view? else {
        return Ok(None);
    };
    let snap = (view.c.size as usize > SLICE).then(|| Arc::new(coll::snapshot(&st.ks, db, key, view.c.version)));
    let slice = read_slice(st, db, key, (ty, &view), snap.as_deref(), None, now, keep)?;
    Ok(Some((ty, view, snap, slice)))
}

/// A whole collection read in slices: its members, or their reply bytes
/// one chunk per slice, and how many members.
#[derive(Default)]
pub struct Gathered {
    /// The collection's type (one of those asked for).
    pub ty: Option<KeyType>,
    pub entries: Vec<Entry>,
    pub wire: Vec<Vec<u8>>,
    pub count: usize,
}

/// Every live member of the collection at `key` (type `ty`), read in
/// slices from one snapshot. None when the key is missing; WRONGTYPE for
/// another type. With `lookup`, the key's read is a lookup of the command
/// (`Keyspace::read`: a keyspace hit or miss, `keymiss`).
pub async fn gather_with(shard: &S, db: u8, key: &Bytes, ty: KeyType, keep: Keep, lookup: bool) -> CmdResult<Option<Gathered>> {
    gather_any(shard, db, key, &[ty], keep, lookup).await
}

/// [`gather_with`] for a key of any of the types `tys` (`Gathered::ty`
/// says which): a sorted set's entries are its member records, sub key `m`
/// member and the score's 8 bytes (`coord::zset` reads them).
pub async fn gather_any(shard: &S, db: u8, key: &Bytes, tys: &[KeyType], keep: Keep, lookup: bool) -> CmdResult<Option<Gathered>> {
    let target = owner(key, shard.count());
    let now = now_ms();
    let (k, tys) = (key.clone(), tys.to_vec());
    let first = shard
        .invoke_on(target, move |st: &ShardState| first_slice(st, db, &k, &tys, now, keep, lookup))
        .await?;
    let Some((ty, view, snap, mut slice)) = first else {
        return Ok(None);
    };
    let mut all = Gathered {
        ty: Some(ty),
        ..Gathered::default()
    };
    loop {
        all.entries.append(&mut slice.entries);
        all.wire.push(std::mem::take(&mut slice.wire));
        all.count += slice.count;
        let Some(snap) = snap.clone().filter(|_| !slice.done) else { break };
        if target == shard.id() {
            shards::rt::yield_now().await;
        }
        let (k, last, view) = (key.clone(), std::mem::take(&mut slice.last), view.clone());
        slice = shard
            .invoke_on(target, move |st: &ShardState| {
                read_slice(st, db, &k, (ty, &view), Some(&snap), Some(&last), now, keep)
            })
            .await?;
    }
    Ok(Some(all))
}

/// [`gather_with`] keeping the members, for the set algebra: each source
/// is looked up, as Redis's `lookupKeyRead` (a missing one is `keymiss`).
pub async fn gather(shard: &S, db: u8, key: &Bytes, ty: KeyType) -> CmdResult<Option<Vec<Entry>>> {
    Ok(gather_with(shard, db, key, ty, Keep::Entries, true).await?.map(|g| g.entries))
}

/// Appends gathered reply chunks, letting the shard's other clients run
/// between chunks of a big reply.
pub async fn write_chunks(r: &mut Reply, chunks: Vec<Vec<u8>>) {
    let many = chunks.len() > 1;
    // One allocation up front: growing a 40 MB buffer by doubling copies it
    // in one go, which is a stall of its own.
    r.buf.reserve(chunks.iter().map(Vec::len).sum());
    for c in chunks {
        r.buf.extend_from_slice(&c);
        if many {
            shards::rt::yield_now().await;
        }
    }
}

/// Gathers set members; a missing key is an empty set.
async fn set_members(shard: &S, db: u8, key: &Bytes) -> CmdResult<Vec<Vec<u8>>> {
    Ok(gather(shard, db, key, KeyType::Set)
        .await?
        .map(|v| v.into_iter().map(|e| e.0).collect())
        .unwrap_or_default())
}

/// Writes `members` as the set at `dst` (replacing any key there), in
/// slices that stay invisible until the last step. Returns the set's size.
pub async fn store_set(shard: &S, db: u8, dst: &Bytes, members: Vec<Vec<u8>>, event: &'static str) -> CmdResult<i64> {
    let write: StoreSlice<Vec<u8>> = |ks, db, key, version, _, members| coll::store_members(ks, db, key, version, members);
    store(shard, db, dst, KeyType::Set, members, write, event).await
}

/// Writes the slices of one stored collection: (keyspace, db, key,
/// version, the slice's offset in the whole, its items).
pub type StoreSlice<T> = fn(&Keyspace, u8, &[u8], u64, usize, &[T]) -> CmdResult;

/// Writes `items` as the collection of type `ty` at `dst` (replacing any
/// key there): slices written by `write` under a fresh version, invisible
/// until the final meta write makes them the key, so a crash leaves the old
/// value or the new one, never a part (the orphaned slices are dropped
/// with their version). Then `event` (or `del` when an empty result removed
/// a key), and the clients blocked on `dst` are served. Returns the size.
pub async fn store<T: Clone + Send + 'static>(
    shard: &S,
    db: u8,
    dst: &Bytes,
    ty: KeyType,
    items: Vec<T>,
    write: StoreSlice<T>,
    event: &'static str,
) -> CmdResult<i64> {
    let target = owner(dst, shard.count());
    let size = items.len() as u64;
    let key = dst.clone();
    let version = shard
        .invoke_on(target, move |st: &ShardState| st.ks.next_version(crate::clock::now_us()))
        .await;
    for (i, chunk) in items.chunks(SLICE).enumerate() {
        let (k, chunk) = (key.clone(), chunk.to_vec());
        shard
            .invoke_on(target, move |st: &ShardState| write(&st.ks, db, &k, version, i * SLICE, &chunk))
            .await?;
        if target == shard.id() {
            shards::rt::yield_now().await;
        }
    }
    let class = if ty == KeyType::ZSet { class::ZSET } else { class::SET };
    shard
        .invoke_on(target, move |st: &ShardState| {
            let replaced = coll::finish_store(&st.ks, db, &key, ty, version, size, now_ms())?;
            // As Redis: the store's event, or `del` when an empty result
            // removed what was there.
            if size > 0 {
                st.ks.notify(class, event, db, &key);
                super::serve::key_ready(st, db, &key);
            } else if replaced {
                st.ks.notify(class::GENERIC, "del", db, &key);
            }
            Ok::<_, crate::error::CmdError>(())
        })
        .await?;
    Ok(size as i64)
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Inter,
    Union,
    Diff,
}

/// SINTER / SUNION / SDIFF over gathered sets, sorted for a stable reply.
/// Every key is type-checked before any missing key short-cuts the result,
/// as Redis does.
pub async fn combine(shard: &S, db: u8, keys: &[Bytes], op: Op) -> CmdResult<Vec<Vec<u8>>> {
    let mut sets = Vec::with_capacity(keys.len());
    for k in keys {
        sets.push(set_members(shard, db, k).await?);
    }
    let mut out: Vec<Vec<u8>> = match op {
        Op::Union => {
            let mut all: HashSet<Vec<u8>> = HashSet::new();
            for s in sets {
                all.extend(s);
            }
            all.into_iter().collect()
        }
        Op::Inter => {
            let Some(smallest) = (0..sets.len()).min_by_key(|&i| sets[i].len()) else {
                return Ok(Vec::new());
            };
            let others: Vec<HashSet<&Vec<u8>>> = (0..sets.len())
                .filter(|&i| i != smallest)
                .map(|i| sets[i].iter().collect())
                .collect();
            sets[smallest]
                .iter()
                .filter(|m| others.iter().all(|o| o.contains(m)))
                .cloned()
                .collect()
        }
        Op::Diff => {
            let mut it = sets.into_iter();
            let first = it.next().unwrap_or_default();
            let minus: HashSet<Vec<u8>> = it.flatten().collect();
            first.into_iter().filter(|m| !minus.contains(m)).collect()
        }
    };
    out.sort();
    Ok(out)
}

// The commands, each an `async fn` the command table names (`Conn(...)`).

/// SMOVE. On one owner it is one synchronous step and one batch. Across
/// owners: check both types, then the source's owner removes the member in
/// one batch with the destination's intent part, and the destination's
/// owner adds it and deletes that part in one batch; after a crash the next
/// start completes the move (docs/cross-shard.md).
pub async fn smove(shard: &S, db: u8, src: Bytes, dst: Bytes, member: Bytes) -> CmdResult<i64> {
    // The source's name again, for handing a member back (the closures
    // below take `src`).
    let src_name = src.clone();
    let n = shard.count();
    let (so, dso) = (owner(&src, n), owner(&dst, n));
    let set_type = move |st: &ShardState, key: &[u8]| -> CmdResult<Option<KeyType>> { st.ks.type_of(db, key, now_ms()) };
    if so == dso {
        let moved = shard
            .invoke_on(so, move |st: &ShardState| -> CmdResult<i64> {
                let now = now_ms();
                let Some(sv) = coll::view(&st.ks, db, &src, KeyType::Set, now)? else {
                    // Redis answers 0 for a missing source before checking the destination.
                    return Ok(0);
                };
                if set_type(st, &dst)?.is_some_and(|t| t != KeyType::Set) {
                    return Err(WRONGTYPE);
                }
                if src == dst {
                    return Ok(coll::member(&st.ks, db, &src, &sv.c, &member)?.is_some() as i64);
                }
                move_member(st, db, &src, &dst, &member, now)
            })
            .await?;
        return Ok(moved);
    }
    let s2 = src.clone();
    let src_type = shard.invoke_on(so, move |st: &ShardState| set_type(st, &s2)).await?;
    let Some(src_type) = src_type else {
        return Ok(0);
    };
    let d2 = dst.clone();
    let dst_type = shard.invoke_on(dso, move |st: &ShardState| set_type(st, &d2)).await?;
    if src_type != KeyType::Set || dst_type.is_some_and(|t| t != KeyType::Set) {
        return Err(WRONGTYPE);
    }
    let part = IntentRef {
        id: shard.state().global.engine.next_intent_id(),
        part: 0,
    };
    let carried = Intent::Sadd {
        db,
        key: dst.to_vec(),
        member: member.to_vec(),
        back: Some(src.to_vec()),
    }
    .encode();
    let (s2, m2) = (src.clone(), member.clone());
    let removed = shard
        .invoke_on(so, move |st: &ShardState| -> CmdResult<bool> {
            let Some(mut w) = coll::Writer::open(&st.ks, db, &s2, KeyType::Set, now_ms(), false)? else {
                return Ok(false);
            };
            if w.delete(&m2)? == crate::types::hash::Phys::Missing {
                return Ok(false);
            }
            w.stage_intent(part, &carried);
            w.commit_with(class::SET, &["srem"])?;
            Ok(true)
        })
        .await?;
    if !removed {
        return Ok(0);
    }
    let m2 = member.clone();
    let returned = shard
        .invoke_on(dso, move |st: &ShardState| -> CmdResult<Option<IntentRef>> {
            match intent::add_member(&st.ks, db, &dst, &m2, now_ms(), Some(part)) {
                Err(e) if e == WRONGTYPE => {
                    // The destination stopped being a set since the check:
                    // the member goes back to the source (Redis would have
                    // refused), through one more intent part.
                    let op = Intent::Sadd {
                        db,
                        key: src.to_vec(),
                        member: m2.to_vec(),
                        back: None,
                    };
                    intent::hand_back(&st.ks, part, &op).map(Some)
                }
                other => other.map(|_| None),
            }
        })
        .await?;
    if let Some(back) = returned {
        let src = src_name;
        shard
            .invoke_on(so, move |st: &ShardState| {
                intent::add_member(&st.ks, db, &src, &member, now_ms(), Some(back))
            })
            .await?;
        return Err(WRONGTYPE);
    }
    Ok(1)
}

/// Removes `member` from `src` and adds it to `dst`, both on this shard, in
/// one batch.
fn move_member(st: &ShardState, db: u8, src: &[u8], dst: &[u8], member: &[u8], now: u64) -> CmdResult<i64> {
    let mut from = coll::Writer::open(&st.ks, db, src, KeyType::Set, now, false)?.ok_or(CORRUPT)?;
    if from.delete(member)? == crate::types::hash::Phys::Missing {
        return Ok(0);
    }
    let (src_left, b) = from.finish()?;
    let mut to = coll::Writer::upsert(&st.ks, db, dst, KeyType::Set, now)?.with_batch(b);
    let added = !to.exists(member)?;
    if added {
        to.put(member, 0, b"")?;
    }
    to.commit()?;
    st.ks.notify(class::SET, "srem", db, src);
    if !src_left {
        st.ks.notify(class::GENERIC, "del", db, src);
    }
    if added {
        st.ks.notify(class::SET, "sadd", db, dst);
    }
    Ok(1)
}
