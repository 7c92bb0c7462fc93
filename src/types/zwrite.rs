//! Sorted-set writes through the collection writer (`types::zset` has the
//! encoding; kept apart so that the encoding, which `types::coll` reads,
//! does not depend on the writer, which depends on `coll`).

use crate::error::CmdResult;
use crate::storage::keys;
use crate::types::keyspace::Keyspace;
use crate::types::notify::class::ZSET;
use crate::types::writer::Writer;
use crate::types::zset::{decode_score, member_sub, score_sub, walk, Scored};
use crate::types::KeyType;

/// Member `m`'s score, through the writer (sees what it staged).
pub fn score_in(w: &mut Writer<'_>, m: &[u8]) -> CmdResult<Option<f64>> {
    match w.physical(&member_sub(m))? {
        Some((_, v)) => decode_score(&v).map(Some),
        None => Ok(None),
    }
}

/// Sets member `m`'s score (adding it when missing). Returns its score before.
/// A score of -0 is stored as 0 (ZSCORE then says `0`, as redis-server does).
pub fn set_score(w: &mut Writer<'_>, m: &[u8], score: f64) -> CmdResult<Option<f64>> {
    let score = if score == 0.0 { 0.0 } else { score };
    let old = score_in(w, m)?;
    if let Some(o) = old {
        if o.to_bits() == score.to_bits() {
            return Ok(old);
        }
        w.delete_raw(&score_sub(o, m));
    }
    w.put(&member_sub(m), 0, &score.to_bits().to_be_bytes())?;
    w.put_raw(&score_sub(score, m), b"");
    Ok(old)
}

/// Removes member `m`. Returns whether it was there.
pub fn remove(w: &mut Writer<'_>, m: &[u8]) -> CmdResult<bool> {
    let Some(old) = score_in(w, m)? else { return Ok(false) };
    w.delete(&member_sub(m))?;
    w.delete_raw(&score_sub(old, m));
    Ok(true)
}

/// Pops up to `count` members from the low end of the sorted set at `key`
/// (the high end with `max`), in one batch with the `zpopmin`/`zpopmax`
/// event (and `del` when it empties the set). The members popped, in pop
/// order; None when the key is missing, WRONGTYPE for another type.
pub fn pop(ks: &Keyspace, db: u8, key: &[u8], now: u64, max: bool, count: u64) -> CmdResult<Option<Vec<Scored>>> {
    let Some(mut w) = Writer::open(ks, db, key, KeyType::ZSet, now, false)? else {
        return Ok(None);
    };
    let mut items = Vec::new();
    if count > 0 {
        walk(ks, db, key, &w.c, None, max, |s, m| {
            items.push((m.to_vec(), s));
            (items.len() as u64) < count
        })?;
    }
    for (m, _) in &items {
        remove(&mut w, m)?;
    }
    let events = [if max { "zpopmax" } else { "zpopmin" }];
    w.commit_with(ZSET, if items.is_empty() { &[] } else { &events })?;
    Ok(Some(items))
}

/// Writes `items` (member, score) as both records of each member under
/// `version` of `key`: a slice of a stored sorted set (ZUNIONSTORE...), the
/// meta written last (`coll::finish_store`).
pub fn store_members(ks: &Keyspace, db: u8, key: &[u8], version: u64, items: &[Scored]) -> CmdResult {
    let mut b = ks.store.batch();
    for (m, s) in items {
        let s = if *s == 0.0 { 0.0 } else { *s };
        ks.store
            .put(&mut b, &keys::sub_key(db, key, version, &member_sub(m)), &s.to_bits().to_be_bytes());
        ks.store.put(&mut b, &keys::sub_key(db, key, version, &score_sub(s, m)), b"");
    }
    ks.store.write(b)?;
    Ok(())
}
