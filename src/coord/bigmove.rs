//! RENAME, RENAMENX, COPY and MOVE of a big collection (more than
//! [`SLICE`] members, or a big string's chunks), in slices, so that no
//! step stalls a core (issue 31): the one-step path (`types::multi`)
//! copies a million members in one synchronous step and one batch.
//!
//! 1. The source's owner takes a snapshot and watches the source key.
//! 2. Slice by slice, the source's owner reads raw member records from the
//!    snapshot and the destination's owner writes them under a fresh
//!    version of the destination key. Nothing names that version yet, so
//!    no reader sees them; both cores serve other clients in between.
//! 3. One last step makes them the key: a meta record naming the version.
//!    Both keys on one shard: one batch (replace the destination, name the
//!    members, delete the source for RENAME/MOVE), atomic across a crash.
//!    RENAME across shards: the source's owner deletes the source and
//!    writes the destination's intent part (the meta value, a few bytes) in
//!    one batch; the destination's owner applies it, as a small RENAME
//!    does. COPY across shards: one batch on the destination's owner.
//!
//! If the source was written meanwhile (the watch fired) the copy is given
//! up, its members deleted, and the move starts over; after [`TRIES`] the
//! one-step path runs. A crash in step 2 leaves members nothing names: the
//! compaction filter drops them once they are [`GRACE_MS`] old when no key
//! is at the destination (`storage::gc`).
//!
//! [`GRACE_MS`]: crate::storage::gc::GRACE_MS

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::Bytes;

use super::coll::SLICE;
use super::intent::Op;
use super::S;
use crate::clock::now_ms;
use crate::error::{CmdError, CmdResult, CORRUPT};
use crate::shard::ShardState;
use crate::slot::owner;
use crate::storage::intent::IntentRef;
use crate::storage::Snap;
use crate::types::keyspace::Stored;
use crate::types::multi as k;
use crate::types::notify::class::GENERIC;

/// Attempts before the one-step path runs instead.
const TRIES: usize = 3;

/// What a move is: RENAME (and MOVE), or COPY.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Rename,
    Copy,
    /// MOVE: a rename to the same key in another db that never replaces.
    Move,
}

/// What the first step on the source's owner found.
struct Start {
    raw: Vec<u8>,
    version: u64,
    snap: Arc<Snap>,
    flag: Arc<AtomicBool>,
}

/// Member records written from the write tier per turn before a big
/// move's snapshot (~5-10 ms of memtable inserts), and at most how many
/// turns, waits for flushes included (the snapshot writes what is left).
const WRITE_OUT_PART: usize = 4096;
const WRITE_OUT_PARTS: usize = 4096;

/// Moves `src` to `dst` in slices when it is big. `None`: it is not (or
/// is missing, or kept changing): the caller takes the one-step path.
/// Otherwise what that path returns: `Some(false)` when `dst` exists and
/// may not be replaced.
pub async fn move_big(
    shard: &S,
    (src_db, src): (u8, &Bytes),
    (dst_db, dst): (u8, &Bytes),
    replace: bool,
    kind: Kind,
) -> CmdResult<Option<bool>> {
    for _ in 0..TRIES {
        match attempt(shard, (src_db, src), (dst_db, dst), replace, kind).await? {
            Attempt::Done(r) => return Ok(Some(r)),
            Attempt::Small => return Ok(None),
            Attempt::Changed => continue,
        }
    }
    Ok(None)
}

enum Attempt {
    Done(bool),
    Small,
    Changed,
}

async fn attempt(shard: &S, (src_db, src): (u8, &Bytes), (dst_db, dst): (u8, &Bytes), replace: bool, kind: Kind) -> CmdResult<Attempt> {
    let n = shard.count();
    let (so, dso) = (owner(src, n), owner(dst, n));
    // What the write tier holds of the source's members goes to RocksDB a
    // part at a time, a turn of the owner each, before the snapshot
    // (written in the snapshot's turn, a set of 1M members just filled
    // stalled its shard 320-430 ms with the 256 MB tier).
    // A part waits while RocksDB's memtables wait for flushes.
    for _ in 0..WRITE_OUT_PARTS {
        let s = src.clone();
        let (done, behind) = shard
            .invoke_on(so, move |st: &ShardState| -> CmdResult<(bool, bool)> {
                let Some(stored) = st.ks.get(src_db, &s, now_ms())? else {
                    return Ok((true, false));
                };
                match stored.meta().coll() {
                    Some(c) => crate::types::coll::write_out_part(&st.ks, src_db, &s, c.version, WRITE_OUT_PART),
                    None => Ok((true, false)),
                }
            })
            .await?;
        if done {
            break;
        }
        if behind {
            shards::rt::sleep(std::time::Duration::from_millis(2)).await;
        } else {
            // An invocation on this shard's own core runs at once: without
            // a yield the parts took one turn after all (PINGs waited
            // 280-430 ms behind them).
            shards::rt::yield_now().await;
        }
    }
    let s = src.clone();
    let start = shard
        .invoke_on(so, move |st: &ShardState| -> CmdResult<Option<Start>> {
            let now = now_ms();
            if !k::is_big(&st.ks, src_db, &s, now, SLICE as u64)? {
                return Ok(None);
            }
            let Some(stored) = st.ks.get(src_db, &s, now)? else {
                return Ok(None);
            };
            let version = stored.meta().coll().ok_or(CORRUPT)?.version;
            let flag = Arc::new(AtomicBool::new(false));
            st.ks.watch(src_db, &s, now, &flag)?;
            Ok(Some(Start {
                raw: stored.raw.to_vec(),
                version,
                snap: Arc::new(crate::types::coll::snapshot(&st.ks, src_db, &s, version)),
                flag,
            }))
        })
        .await?;
    let Some(start) = start else {
        return Ok(Attempt::Small);
    };
    // A destination that must not be replaced is checked before the copy
    // (and again at the end).
    if !replace {
        let d = dst.clone();
        let taken = shard
            .invoke_on(dso, move |st: &ShardState| k::exists(&st.ks, dst_db, &d, now_ms()))
            .await?;
        if taken {
            return Ok(Attempt::Done(false));
        }
    }
    let d = dst.clone();
    let version = shard
        .invoke_on(dso, move |st: &ShardState| st.ks.next_version(crate::clock::now_us()))
        .await;
    copy_members(shard, (so, src_db, src, start.version), (dso, dst_db, dst, version), &start.snap).await?;
    let raw = k::with_version(&start.raw, version)?;
    let outcome = finish(shard, (so, src_db, src), (dso, dst_db, dst), &start, raw, replace, kind).await;
    if !matches!(outcome, Ok(Attempt::Done(true))) {
        // Given up or refused: nothing will name the copied members.
        shard
            .invoke_on(dso, move |st: &ShardState| k::drop_raw_members(&st.ks, dst_db, &d, version))
            .await?;
    }
    outcome
}

/// Step 2: every member record of `from` (as of `snap`) written under `to`.
async fn copy_members(shard: &S, from: (usize, u8, &Bytes, u64), to: (usize, u8, &Bytes, u64), snap: &Arc<Snap>) -> CmdResult {
    let (so, src_db, src, src_version) = from;
    let (dso, dst_db, dst, dst_version) = to;
    let mut after: Option<Vec<u8>> = None;
    loop {
        let (s, sn, a) = (src.clone(), snap.clone(), after.take());
        let (members, last, done) = shard
            .invoke_on(so, move |st: &ShardState| {
                k::raw_members(&st.ks, &sn, (src_db, &s, src_version), a.as_deref(), SLICE)
            })
            .await?;
        if !members.is_empty() {
            let d = dst.clone();
            shard
                .invoke_on(dso, move |st: &ShardState| {
                    k::put_raw_members(&st.ks, dst_db, &d, dst_version, &members)
                })
                .await?;
        }
        if done {
            return Ok(());
        }
        after = Some(last);
        if so == shard.id() || dso == shard.id() {
            shards::rt::yield_now().await;
        }
    }
}

/// Step 3: the meta record `raw` (naming the copied members) placed at
/// `dst`, and the source deleted for a rename.
async fn finish(
    shard: &S,
    (so, src_db, src): (usize, u8, &Bytes),
    (dso, dst_db, dst): (usize, u8, &Bytes),
    start: &Start,
    raw: Vec<u8>,
    replace: bool,
    kind: Kind,
) -> CmdResult<Attempt> {
    let (s, d) = (src.clone(), dst.clone());
    let (flag, was) = (start.flag.clone(), start.raw.clone());
    // The source, if it is as it was when the copy began (else the copy
    // is stale).
    let unchanged = move |st: &ShardState, s: &[u8]| -> CmdResult<Option<Stored>> {
        if flag.load(Ordering::SeqCst) {
            return Ok(None);
        }
        Ok(st.ks.get(src_db, s, now_ms())?.filter(|v| v.raw[..] == was[..]))
    };
    if so == dso {
        return shard
            .invoke_on(so, move |st: &ShardState| -> CmdResult<Attempt> {
                let Some(stored) = unchanged(st, &s)? else {
                    return Ok(Attempt::Changed);
                };
                let now = now_ms();
                let mut b = st.ks.store.batch();
                if !k::stage_moved(&st.ks, &mut b, dst_db, &d, &raw, now, replace)? {
                    return Ok(Attempt::Done(false));
                }
                if kind != Kind::Copy {
                    st.ks.stage_delete(&mut b, src_db, &s, &stored.meta());
                }
                st.ks.store.write(b)?;
                notify(st, kind, (src_db, &s), (dst_db, &d));
                Ok(Attempt::Done(true))
            })
            .await;
    }
    if kind == Kind::Copy {
        // A point-in-time copy: the snapshot's members, whatever the source
        // did since.
        return shard
            .invoke_on(dso, move |st: &ShardState| -> CmdResult<Attempt> {
                let mut b = st.ks.store.batch();
                if !k::stage_moved(&st.ks, &mut b, dst_db, &d, &raw, now_ms(), replace)? {
                    return Ok(Attempt::Done(false));
                }
                st.ks.store.write(b)?;
                st.ks.notify(GENERIC, "copy_to", dst_db, &d);
                Ok(Attempt::Done(true))
            })
            .await;
    }
    let r = IntentRef {
        id: shard.state().global.engine.next_intent_id(),
        part: 0,
    };
    let part = Op::PlaceMoved {
        db: dst_db,
        key: d.to_vec(),
        raw: raw.clone(),
    }
    .encode();
    let taken = shard
        .invoke_on(so, move |st: &ShardState| -> CmdResult<bool> {
            let Some(stored) = unchanged(st, &s)? else {
                return Ok(false);
            };
            let mut b = st.ks.store.batch();
            st.ks.stage_delete(&mut b, src_db, &s, &stored.meta());
            st.ks.store.stage_intent(&mut b, r, &part);
            st.ks.store.write(b)?;
            st.ks.notify(GENERIC, "rename_from", src_db, &s);
            Ok(true)
        })
        .await?;
    if !taken {
        return Ok(Attempt::Changed);
    }
    shard
        .invoke_on(dso, move |st: &ShardState| {
            k::place_moved(&st.ks, dst_db, &d, &raw, now_ms(), Some(r))?;
            st.ks.notify(GENERIC, "rename_to", dst_db, &d);
            Ok::<_, CmdError>(())
        })
        .await?;
    Ok(Attempt::Done(true))
}

/// The events of a move on one shard, as the one-step path sends them.
fn notify(st: &ShardState, kind: Kind, (src_db, src): (u8, &[u8]), (dst_db, dst): (u8, &[u8])) {
    let (from, to) = match kind {
        Kind::Rename => (Some("rename_from"), "rename_to"),
        Kind::Move => (Some("move_from"), "move_to"),
        Kind::Copy => (None, "copy_to"),
    };
    if let Some(from) = from {
        st.ks.notify(GENERIC, from, src_db, src);
    }
    st.ks.notify(GENERIC, to, dst_db, dst);
}
