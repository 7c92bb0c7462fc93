//! Sorted-set writes through the collection writer (`types::zset` has the
//! encoding; kept apart so that the encoding, which `types::coll` reads,
//! does not depend on the writer, which depends on `coll`).

use crate::error::CmdResult;
use crate::storage::keys;
use crate::types::keyspace::Keyspace;
use crate::types::notify::class::ZSET;
use crate::types::writer::Writer;
use crate::types::zblock::{self, position, Changes};
use crate::types::zlayout;
use crate::types::zset::{decode_score, member_sub, score_sub, At, Scored};
use crate::types::KeyType;

/// A sorted set's writer: the collection writer, and what the command did
/// to the score records, for the count blocks ([`ZWriter::commit_with`]).
pub struct ZWriter<'k> {
    pub w: Writer<'k>,
    ch: Changes,
}

impl<'k> ZWriter<'k> {
    /// Opens the sorted set at `key` (creating it with `create`); None when
    /// missing, WRONGTYPE for another type.
    pub fn open(ks: &'k Keyspace, db: u8, key: &'k [u8], now: u64, create: bool) -> CmdResult<Option<ZWriter<'k>>> {
        Ok(Writer::open(ks, db, key, KeyType::ZSet, now, create)?.map(|w| ZWriter { w, ch: Changes::default() }))
    }

    /// Member `m`'s score, through the writer (sees what it staged).
    pub fn score_in(&mut self, m: &[u8]) -> CmdResult<Option<f64>> {
        match self.w.physical_ref(&member_sub(m))? {
            Some((_, v)) => decode_score(v).map(Some),
            None => Ok(None),
        }
    }

    /// Sets member `m`'s score (adding it when missing) over `old`, its
    /// score as [`ZWriter::score_in`] just read it (a ZADD reads it first
    /// for its flags; reading it again here was ~250 instructions of
    /// each). A score of -0 is stored as 0 (ZSCORE then says `0`, as
    /// redis-server does).
    pub fn set_score_over(&mut self, m: &[u8], old: Option<f64>, score: f64) -> CmdResult {
        let score = if score == 0.0 { 0.0 } else { score };
        if let Some(o) = old {
            if o.to_bits() == score.to_bits() {
                return Ok(());
            }
            self.w.delete_raw(&score_sub(o, m));
            self.ch.delete(position(o, m));
        }
        self.w.put(&member_sub(m), 0, &score.to_bits().to_be_bytes())?;
        // The member had another score or none: its record at this one
        // is absent.
        self.w.put_raw_new(&score_sub(score, m), b"");
        self.ch.insert(position(score, m));
        Ok(())
    }

    /// Removes member `m`. Returns whether it was there.
    pub fn remove(&mut self, m: &[u8]) -> CmdResult<bool> {
        let Some(old) = self.score_in(m)? else { return Ok(false) };
        self.w.delete(&member_sub(m))?;
        self.w.delete_raw(&score_sub(old, m));
        self.ch.delete(position(old, m));
        Ok(true)
    }

    /// Brings the count blocks up to date, then commits as
    /// [`Writer::commit_with`].
    pub fn commit_with(mut self, class: u32, events: &[&'static str]) -> CmdResult<bool> {
        zblock::stage(&mut self.w, std::mem::take(&mut self.ch))?;
        let (ks, version) = (self.w.place().0, self.w.c.version);
        let done = self.w.commit_with(class, events);
        if done.is_err() {
            // The layout followed a batch that did not land.
            ks.zlayouts.forget(version);
        }
        done
    }
}

/// Pops up to `count` members from the low end of the sorted set at `key`
/// (the high end with `max`), in one batch with the `zpopmin`/`zpopmax`
/// event (and `del` when it empties the set). The members popped, in pop
/// order; None when the key is missing, WRONGTYPE for another type.
pub fn pop(ks: &Keyspace, db: u8, key: &[u8], now: u64, max: bool, count: u64) -> CmdResult<Option<Vec<Scored>>> {
    let Some(mut w) = ZWriter::open(ks, db, key, now, false)? else {
        return Ok(None);
    };
    let mut items = Vec::new();
    if count > 0 {
        let c = w.w.c.clone();
        zblock::visit(At { ks, db, key, c: &c }, None, max, |s, m| {
            items.push((m.to_vec(), s));
            (items.len() as u64) < count
        })?;
    }
    for (m, _) in &items {
        w.remove(m)?;
    }
    let events = [if max { "zpopmax" } else { "zpopmin" }];
    w.commit_with(ZSET, if items.is_empty() { &[] } else { &events })?;
    Ok(Some(items))
}

/// Writes `items` (member, score, in (score, member) order) as both
/// records of each member under `version` of `key`: the slice at `offset`
/// of a stored sorted set (ZUNIONSTORE...), the meta written last
/// (`coll::finish_store`, which gives it count blocks). A head record
/// starts every block of the block size from the slice's start (the
/// first slice's first head is the empty position).
pub fn store_members(ks: &Keyspace, db: u8, key: &[u8], version: u64, offset: usize, items: &[Scored]) -> CmdResult {
    let mut b = ks.store.batch();
    records(offset, items, |sub, val| {
        ks.store.put(&mut b, &keys::sub_key(db, key, version, sub), val)
    });
    ks.store.write(b)?;
    Ok(())
}

/// The records of `items` (in order, the first at position `offset` of
/// the set): each member's member and score records, and a count block's
/// head every `zset-rank-block` members (RESTORE builds a set with them).
pub fn records(offset: usize, items: &[Scored], mut put: impl FnMut(&[u8], &[u8])) {
    let size = zlayout::block() as usize;
    for (i, (m, s)) in items.iter().enumerate() {
        let s = if *s == 0.0 { 0.0 } else { *s };
        put(&member_sub(m), &s.to_bits().to_be_bytes());
        put(&score_sub(s, m), b"");
        if i % size == 0 {
            let head = if offset + i == 0 { Default::default() } else { position(s, m) };
            let n = size.min(items.len() - i) as u64;
            put(&zblock::head_sub(&head), &n.to_be_bytes());
        }
    }
}
