//! List operations that may span shards: LMOVE and RPOPLPUSH (source and
//! destination on different owners) and LMPOP (keys tried in order, each
//! on its owner). The blocking forms build on these (`coord::blocking`);
//! the pops they share with serving blocked clients are in `coord::serve`.
//!
//! A move across shards goes through an intent (docs/cross-shard.md): the
//! source's owner pops the element in the batch that records "push it on
//! the destination"; the destination's owner pushes it in the batch that
//! deletes that record. A crash in between is completed at the next start
//! (`coord::intent::replay`), so the element is moved exactly once.

use bytes::Bytes;

use super::intent::Op as Intent;
use super::serve::{key_ready, pop_for_move, pop_some};
use super::S;
use crate::clock::now_ms;
use crate::error::{CmdResult, WRONGTYPE};
use crate::shard::ShardState;
use crate::slot::owner;
use crate::storage::intent::IntentRef;
use crate::types::list::{self, End};
use crate::types::notify::class;
use crate::types::KeyType;

/// LMOVE: the element moved, None when `src` is missing.
pub async fn lmove(shard: &S, db: u8, src: Bytes, dst: Bytes, from: End, to: End) -> CmdResult<Option<Vec<u8>>> {
    let n = shard.count();
    let (so, dso) = (owner(&src, n), owner(&dst, n));
    if so == dso {
        return shard
            .invoke_on(so, move |st: &ShardState| {
                let moved = list::move_element(&st.ks, db, &src, &dst, (from, to), now_ms())?;
                if moved.is_some() {
                    key_ready(st, db, &dst);
                }
                Ok(moved)
            })
            .await;
    }
    let s2 = src.clone();
    let src_type = shard.invoke_on(so, move |st: &ShardState| st.ks.type_of(db, &s2, now_ms())).await?;
    match src_type {
        None => return Ok(None),
        Some(KeyType::List) => {}
        Some(_) => return Err(WRONGTYPE),
    }
    let d2 = dst.clone();
    let dst_type = shard
        .invoke_on(dso, move |st: &ShardState| st.ks.type_of(db, &d2, now_ms()))
        .await?;
    if dst_type.is_some_and(|t| t != KeyType::List) {
        return Err(WRONGTYPE);
    }
    let part = IntentRef {
        id: shard.state().global.engine.next_intent_id(),
        part: 0,
    };
    let (s2, d2) = (src.clone(), dst.clone());
    let popped = shard
        .invoke_on(so, move |st: &ShardState| pop_for_move(st, db, &s2, from, &d2, to, part))
        .await?;
    let Some(popped) = popped else { return Ok(None) };
    finish_move(shard, db, src, dst, (from, to), popped, part).await
}

/// The destination half of a cross-shard move whose source half (intent
/// `part`) is written: pushes `element` on the destination's owner, then
/// sends the pop's events (and `del` when the source went, `emptied`), in
/// Redis's order: push, pop, del. If the destination stopped being a list
/// since it was checked, the element goes back to the source (Redis would
/// have refused the move: no event) and the move answers WRONGTYPE.
pub async fn finish_move(
    shard: &S,
    db: u8,
    src: Bytes,
    dst: Bytes,
    (from, to): (End, End),
    (element, emptied): (Vec<u8>, bool),
    part: IntentRef,
) -> CmdResult<Option<Vec<u8>>> {
    let n = shard.count();
    let (so, dso) = (owner(&src, n), owner(&dst, n));
    let src_name = src.clone();
    let e2 = element.clone();
    let returned = shard
        .invoke_on(dso, move |st: &ShardState| -> CmdResult<Option<IntentRef>> {
            match list::push_one(&st.ks, db, &dst, to, &e2, now_ms(), Some(part)) {
                Err(e) if e == WRONGTYPE => {
                    let op = Intent::Push {
                        db,
                        key: src.to_vec(),
                        element: e2.clone(),
                        end: from,
                        back: None,
                    };
                    super::intent::hand_back(&st.ks, part, &op).map(Some)
                }
                Err(e) => Err(e),
                Ok(()) => {
                    st.ks.notify(class::LIST, from.pop_event(), db, &src);
                    if emptied {
                        st.ks.notify(class::GENERIC, "del", db, &src);
                    }
                    key_ready(st, db, &dst);
                    Ok(None)
                }
            }
        })
        .await?;
    if let Some(back) = returned {
        let e2 = element.clone();
        let key = src_name;
        shard
            .invoke_on(so, move |st: &ShardState| {
                list::push_back(&st.ks, db, &key, from, &e2, now_ms(), back)?;
                key_ready(st, db, &key);
                Ok::<_, crate::error::CmdError>(())
            })
            .await?;
        return Err(WRONGTYPE);
    }
    Ok(Some(element))
}

/// LMPOP: pops up to `count` elements at `end` of the first of `keys` that
/// is a non-empty list, each key tried on its owner in turn; WRONGTYPE at
/// the first key of another type, as Redis.
pub async fn mpop(shard: &S, db: u8, keys: &[Bytes], end: End, count: u64) -> CmdResult<Option<(Bytes, Vec<Vec<u8>>)>> {
    for key in keys {
        let k = key.clone();
        let got = shard
            .invoke_on(owner(key, shard.count()), move |st: &ShardState| pop_some(st, db, &k, end, count))
            .await?;
        if let Some(got) = got {
            return Ok(Some((key.clone(), got)));
        }
    }
    Ok(None)
}
