//! Range reads over the meta records (SCAN, KEYS, RANDOMKEY) and the
//! indexes (active expiry's scans of the TTL indexes) merge what the tier
//! holds into RocksDB's records instead of having it written first: the tier's keys in the range, in key order, a chunk at a time
//! from each generation's sorted runs (`runs`), dirty's value over the
//! draining generation's. Written first, the whole tier went into the
//! memtables in one turn (a SCAN after a burst of SETs stalled the shard
//! 160-230 ms with the 32 MB tier, 590-810 ms with a 256 MB one).

use std::collections::VecDeque;

use bytes::Bytes;

use super::gen::Gen;
use super::runs::{Start, Taken};
use crate::storage::ShardStore;

/// Keys the first chunk takes from each run (a SCAN's COUNT 10 takes one
/// chunk); each later chunk takes twice as many, up to [`MOST`] (a KEYS
/// over a 256 MB tier took 2.6 s in chunks of 32).
const CHUNK: usize = 16;
const MOST: usize = 4096;

/// The tier's records of a range in key order, each a value or None
/// (deleted in the tier), taken a chunk at a time: no borrow of the tier
/// is held between records (a read's visit may write, as a SCAN that
/// repairs a hash with no live field does).
pub(in crate::storage) struct TierRecords<'s> {
    store: &'s ShardStore,
    buf: VecDeque<(Bytes, Option<Bytes>)>,
    /// Where the next chunk starts (just past it), while more may follow.
    next: Option<Bytes>,
    /// Keys the next chunk takes from each run.
    n: usize,
    hi: Box<[u8]>,
}

impl Iterator for TierRecords<'_> {
    type Item = (Bytes, Option<Bytes>);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(r) = self.buf.pop_front() {
                return Some(r);
            }
            let lo = self.next.take()?;
            self.n = (self.n * 2).min(MOST);
            let (recs, next) = self.store.tier_records_in(Start { lo: &lo, past: true }, &self.hi, self.n);
            self.buf = recs.into();
            self.next = next;
        }
    }
}

impl ShardStore {
    /// Whether a range read of `[from, to)` merges the tier's records
    /// ([`ShardStore::tier_records`]) rather than having them written
    /// first: one the tier could meet, but not one inside one collection's
    /// members (that collection's records are written first, which the
    /// member cache and the read-ahead build on: `tier_apply_range`).
    pub(in crate::storage) fn tier_merges(&self, from: &[u8], to: &[u8]) -> bool {
        let t = &self.wtier;
        t.on() && Gen::coll_of_range(from, to, &t.hasher).is_none() && t.meets(from, to)
    }

    /// The tier's records in `[from, to)` (just past `after` when given),
    /// in key order.
    pub(in crate::storage) fn tier_records(&self, from: &[u8], after: Option<&[u8]>, to: &[u8]) -> TierRecords<'_> {
        let start = match after {
            Some(a) => Start { lo: a, past: true },
            None => Start { lo: from, past: false },
        };
        let (recs, next) = self.tier_records_in(start, to, CHUNK);
        TierRecords {
            store: self,
            buf: recs.into(),
            next,
            n: CHUNK,
            hi: to.into(),
        }
    }

    /// The tier's first records in `[from, hi)`: up to `n` keys from each
    /// of its runs, those up to the least key a run had more after
    /// ([`Taken`]), with dirty's value, else the draining generation's (a
    /// key neither holds any more is left out). With them, where the next
    /// chunk starts when more may follow.
    fn tier_records_in(&self, from: Start<'_>, hi: &[u8], n: usize) -> (Vec<(Bytes, Option<Bytes>)>, Option<Bytes>) {
        let t = &self.wtier;
        let mut taken = Taken::default();
        t.dirty.borrow_mut().keys_in(from, hi, n, &mut taken);
        let drain = t.drain.borrow();
        if let Some(d) = drain.as_ref() {
            // Keys it applied already are RocksDB's to answer.
            d.order.keys_in(from, hi, n, &mut taken);
        }
        let Taken {
            keys: mut found,
            bound: next,
        } = taken;
        if let Some(b) = &next {
            found.retain(|k| k <= b);
        }
        found.sort_unstable();
        found.dedup();
        // Copied out: the caller's visit may write (and end a drain).
        let dirty = t.dirty.borrow();
        let recs = found
            .into_iter()
            .filter_map(|k| {
                let v = dirty.get(&k).or_else(|| drain.as_ref().and_then(|d| d.gen.get(&k)))?;
                Some((Bytes::copy_from_slice(&k), v.map(|v| Bytes::copy_from_slice(&v))))
            })
            .collect();
        let next = next.map(|b| Bytes::copy_from_slice(&b));
        (recs, next)
    }
}
