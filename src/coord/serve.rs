//! Serving blocked clients, on the owner of the key that got data
//! (docs/cross-shard.md, "Blocking"): a write that fills a key calls
//! [`key_ready`] after its command, and the key's waiters are served in
//! arrival order while it holds data. Also the shard-local pops that
//! serving, LMPOP and a cross-shard LMOVE share. `coord::blocking` is the
//! client's side (registering, waiting, timeouts); `coord::list` the moves.

use bytes::Bytes;

use super::intent::Op as Intent;
use super::xread::From;
use crate::blocked::{Served, Wait, Waiter};
use crate::clock::now_ms;
use crate::error::CmdResult;
use crate::shard::ShardState;
use crate::slot::owner;
use crate::storage::intent::IntentRef;
use crate::types::list::{self, End, List};
use crate::types::stream::Stream;
use crate::types::zwrite;

/// A key of this shard got data: serves its waiters now, or after the run
/// that holds serving back (`Blocked::hold`). One hash lookup when nobody
/// is blocked on it.
pub fn key_ready(st: &ShardState, db: u8, key: &[u8]) {
    if !st.blocked.has_waiters(db, key) || st.blocked.defer(db, key) {
        return;
    }
    serve(st, db, key);
}

/// A key that got its value some other way than a push (RENAME, COPY,
/// MOVE): its waiters are served on its owner, as Redis's `dbAdd` signals
/// every new list, sorted set or stream ready.
pub async fn wake(shard: &super::S, db: u8, key: &Bytes) {
    let k = key.clone();
    shard
        .invoke_on(owner(key, shard.count()), move |st: &ShardState| key_ready(st, db, &k))
        .await;
}

/// Holds serving back on this shard while a transaction runs: pushes
/// inside it serve their waiters at [`release`], after it, as Redis
/// serves blocked clients after EXEC.
pub fn hold(st: &ShardState) {
    st.blocked.hold();
}

/// Ends a [`hold`] and serves the keys that got data meanwhile.
pub fn release(st: &ShardState) {
    for (db, key) in st.blocked.release() {
        serve(st, db, &key);
    }
}

/// Serves the waiters of `key`, first come first served, while it holds
/// data; waiters for another type of key (a BLPOP on a key that became a
/// sorted set) stay waiting, as in Redis.
fn serve(st: &ShardState, db: u8, key: &[u8]) {
    for w in st.blocked.waiting(db, key) {
        let Ok(Some(ty)) = st.ks.type_of(db, key, now_ms()) else {
            return;
        };
        if ty != w.wait.key_type() || !w.is_waiting() || !stream_ready(st, &w, key) {
            continue;
        }
        st.blocked.remove(db, key, &w);
        if w.claim() {
            w.deliver(Ok(take_for(st, &w, key)));
        }
    }
}

/// Whether `key` holds data for waiter `w` (a key exists only while it
/// holds members).
pub(super) fn has_data(st: &ShardState, w: &Waiter, key: &[u8]) -> bool {
    matches!(st.ks.type_of(w.db, key, now_ms()), Ok(Some(t)) if t == w.wait.key_type()) && stream_ready(st, w, key)
}

/// For a stream waiter, whether `key` has what it reads (entries after its
/// ID, or new to its group); true for every other waiter. A stream whose
/// group went away is ready: the read answers the error.
fn stream_ready(st: &ShardState, w: &Waiter, key: &[u8]) -> bool {
    let Wait::XRead(x) = &w.wait else {
        return true;
    };
    let after = match &x.group {
        None => Some(x.after(key)),
        Some((g, _, _)) => match Stream::open(&st.ks, w.db, key, now_ms(), false) {
            Ok(Some(s)) => match s.group(g) {
                Ok(Some(grp)) => Some(grp.last),
                _ => None,
            },
            _ => None,
        },
    };
    match after {
        None => true,
        Some(a) => super::xread::has_after(st, w.db, key, a).unwrap_or(true),
    }
}

/// Does what claimed waiter `w` waits to do, on `key` of this shard, and
/// writes it out of any open write group: the waiter's connection replies
/// at once, so what it took must be in RocksDB by then.
pub(super) fn take_for(st: &ShardState, w: &Waiter, key: &[u8]) -> CmdResult<Served> {
    let served = take(st, w, key)?;
    st.ks.store.flush_group()?;
    Ok(served)
}

fn take(st: &ShardState, w: &Waiter, key: &[u8]) -> CmdResult<Served> {
    let db = w.db;
    let served = |elements, pending| Served {
        key: Bytes::copy_from_slice(key),
        elements,
        scores: Vec::new(),
        entries: Vec::new(),
        pending,
    };
    match &w.wait {
        Wait::Pop { end, count } => {
            let got = pop_some(st, db, key, *end, count.unwrap_or(1))?.unwrap_or_default();
            Ok(served(got, None))
        }
        Wait::ZPop { max, count } => {
            let got = zwrite::pop(&st.ks, db, key, now_ms(), *max, count.unwrap_or(1))?.unwrap_or_default();
            let (members, scores) = got.into_iter().unzip();
            Ok(Served {
                scores,
                ..served(members, None)
            })
        }
        Wait::XRead(x) => {
            let got = match &x.group {
                None => super::xread::read_key(st, db, key, From::After(x.after(key)), x.count)?,
                Some((g, c, noack)) => super::xread::read_group_key(st, db, key, g, c, From::New, x.count, *noack)?,
            };
            Ok(Served {
                entries: got.unwrap_or_default(),
                ..served(Vec::new(), None)
            })
        }
        Wait::Move { dst, from, to } => {
            if owner(dst, st.global.shards) == st.id {
                let moved = list::move_element(&st.ks, db, key, dst, (*from, *to), now_ms())?;
                if moved.is_some() {
                    key_ready(st, db, dst);
                }
                Ok(served(moved.into_iter().collect(), None))
            } else {
                let part = IntentRef {
                    id: st.global.engine.next_intent_id(),
                    part: 0,
                };
                Ok(match pop_for_move(st, db, key, *from, dst, *to, part)? {
                    Some((element, emptied)) => served(vec![element], Some((part, emptied))),
                    None => served(Vec::new(), None),
                })
            }
        }
    }
}

/// The source half of a cross-shard move, on the source's owner: pops at
/// `from` of `src` in the batch that records intent part `part` (push it
/// at `to` of `dst`, or back to `src` if `dst` is no list by then). The
/// element, and whether `src` is gone; the pop's events are the
/// destination's to send, after its push, in Redis's order
/// ([`super::list::finish_move`]).
pub fn pop_for_move(
    st: &ShardState,
    db: u8,
    src: &[u8],
    from: End,
    dst: &[u8],
    to: End,
    part: IntentRef,
) -> CmdResult<Option<(Vec<u8>, bool)>> {
    let Some(mut l) = List::open(&st.ks, db, src, now_ms(), false)? else {
        return Ok(None);
    };
    let Some(element) = l.pop(from)? else { return Ok(None) };
    let carried = Intent::Push {
        db,
        key: dst.to_vec(),
        element: element.clone(),
        end: to,
        back: Some((src.to_vec(), from)),
    }
    .encode();
    l.stage_intent(part, &carried);
    let exists = l.commit()?;
    Ok(Some((element, !exists)))
}

/// Pops up to `count` elements at `end` of `key` on its owner; None when
/// the key is missing.
pub fn pop_some(st: &ShardState, db: u8, key: &[u8], end: End, count: u64) -> CmdResult<Option<Vec<Vec<u8>>>> {
    let Some(mut l) = List::open(&st.ks, db, key, now_ms(), false)? else {
        return Ok(None);
    };
    let got = l.pop_many(end, count)?;
    let events = [end.pop_event()];
    l.commit_with(if got.is_empty() { &[] } else { &events })?;
    Ok((!got.is_empty()).then_some(got))
}
