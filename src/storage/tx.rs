//! Transactions: every write of an EXEC reaches RocksDB in one batch, so a
//! crash keeps all of it or none of it, however many shards it spans
//! (docs/cross-shard.md, "Transactions").
//!
//! While a shard's transaction is open ([`ShardStore::begin_tx`]), its
//! writes are staged in a journal and never written on their own: not
//! when a read would have written an open group first, not for a range
//! delete, not when it grows large. Reads see them through the journal's
//! overlay, an ordered map of every record it wrote (None: deleted) and
//! the ranges it deleted:
//! - a point read asks the overlay first;
//! - a range read merges the overlay's records of the range with
//!   RocksDB's, skipping what the overlay replaces or a range delete
//!   covers (`merge`);
//! - a snapshot taken meanwhile keeps a copy of the overlay.
//!
//! The records go to one of two places, in the order staged:
//! - a transaction on one shard keeps them in its own journal, and
//!   [`ShardStore::write_own_tx`] writes them;
//! - a transaction over several shards (`shared`) appends every shard's
//!   to the engine's one sink, under its lock, and [`Engine::write_tx`]
//!   writes them. The lock orders the shards' batches as they were made:
//!   a cross-shard command inside the transaction writes an intent record
//!   on one shard and deletes it on another, and the delete comes after.
//!
//! Either is one RocksDB batch per database it reaches: one with a single
//! database; with a database per shard, one each, made all or nothing by
//! redo records (`redo`). [`ShardStore::end_tx`] then updates the
//! meta cache and runs what waited for the write (keyspace notifications),
//! or forgets it all if the write failed.
//!
//! Nothing else may write the shard meanwhile: the caller holds it (one
//! synchronous step on one shard, or the transaction gate on all).
//! Another shard's direct reads (`PeerStore`) do not see the journal; the
//! dispatcher sends such reads to the owner during a transaction.

use std::cell::{Cell, RefCell};
use std::cmp::Ordering as Cmp;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use rocksdb::WriteBatch;

use super::{cache, keys, Batch, Engine, ShardStore, StorageError};

use super::rep::HEADER;

/// One write a batch made, as the overlay needs it (kept only while a
/// transaction is open).
pub(super) enum Op {
    /// A put (Some) or delete (None) of one record.
    Record(Box<[u8]>, Option<Bytes>),
    /// A range delete of `[from, to)`.
    Range(Box<[u8]>, Box<[u8]>),
}

/// A range `[from, to)` a transaction deleted.
pub(super) type Span = (Box<[u8]>, Box<[u8]>);

/// The overlay's records of a range, in the visit's order.
type InRange<'a> = Box<dyn Iterator<Item = (&'a Box<[u8]>, &'a Option<Bytes>)> + 'a>;

/// What a transaction wrote, as reads see it.
#[derive(Default, Clone)]
pub(super) struct Overlay {
    records: BTreeMap<Box<[u8]>, Option<Bytes>>,
    ranges: Vec<Span>,
}

impl Overlay {
    fn apply(&mut self, op: &Op) {
        match op {
            Op::Record(k, v) => {
                self.records.insert(k.clone(), v.clone());
            }
            Op::Range(from, to) => {
                if from < to {
                    let span = (Bound::Included(&from[..]), Bound::Excluded(&to[..]));
                    let gone: Vec<Box<[u8]>> = self.records.range::<[u8], _>(span).map(|(k, _)| k.clone()).collect();
                    for k in gone {
                        self.records.remove(&k);
                    }
                }
                self.ranges.push((from.clone(), to.clone()));
            }
        }
    }

    /// Some(value) when the overlay decides `key`: a record it wrote, or
    /// None inside a range it deleted (a record written after a range
    /// delete replaced its entry there).
    fn get(&self, key: &[u8]) -> Option<Option<Bytes>> {
        if let Some(v) = self.records.get(key) {
            return Some(v.clone());
        }
        self.covers(key).then_some(None)
    }

    fn covers(&self, key: &[u8]) -> bool {
        self.ranges.iter().any(|(a, b)| &a[..] <= key && key < &b[..])
    }

    /// The overlay restricted to `[from, to)`, or None when it has nothing
    /// there (the range reads RocksDB alone).
    pub(super) fn within(&self, from: &[u8], to: &[u8]) -> Option<Overlay> {
        let ranges: Vec<_> = self.ranges.iter().filter(|(a, b)| &a[..] < to && from < &b[..]).cloned().collect();
        let records: BTreeMap<_, _> = if from < to {
            let span = (Bound::Included(from), Bound::Excluded(to));
            self.records.range::<[u8], _>(span).map(|(k, v)| (k.clone(), v.clone())).collect()
        } else {
            BTreeMap::new()
        };
        (!ranges.is_empty() || !records.is_empty()).then_some(Overlay { records, ranges })
    }

    fn is_empty(&self) -> bool {
        self.records.is_empty() && self.ranges.is_empty()
    }
}

/// Staged records, one batch's after another (no WriteBatch header).
#[derive(Default)]
pub(super) struct Records {
    rep: Vec<u8>,
    count: u32,
}

impl Records {
    /// Appends the records of a batch's representation (a `WriteBatch`'s
    /// or a `Rep`'s data).
    fn append(&mut self, data: &[u8]) {
        self.rep.extend_from_slice(data.get(HEADER..).unwrap_or_default());
        self.count += super::rep::count(data) as u32;
    }

    /// Them as one batch (None: nothing staged), emptied.
    fn take(&mut self) -> Option<WriteBatch> {
        let count = std::mem::take(&mut self.count);
        let records = std::mem::take(&mut self.rep);
        if count == 0 {
            return None;
        }
        let mut rep = Vec::with_capacity(HEADER + records.len());
        rep.extend_from_slice(&[0; 8]);
        rep.extend_from_slice(&count.to_le_bytes());
        rep.extend_from_slice(&records);
        Some(WriteBatch::from_data(&rep))
    }
}

/// The engine's sink for transactions over several shards (one at a
/// time): per database (by index), what its shards staged.
pub(super) type Sink = Mutex<Vec<(usize, Records)>>;

/// The sink's records for database `d`, added on first use.
fn sink_for(sink: &mut Vec<(usize, Records)>, d: usize) -> &mut Records {
    let at = match sink.iter().position(|(i, _)| *i == d) {
        Some(at) => at,
        None => {
            sink.push((d, Records::default()));
            sink.len() - 1
        }
    };
    &mut sink[at].1
}

/// A shard's open transaction.
#[derive(Default)]
struct Journal {
    /// Its records, unless they go to the engine's sink; `main`: those
    /// for the first database (`Batch::main`).
    own: Records,
    main: Records,
    overlay: Overlay,
    /// A range delete reached meta records: the meta cache is cleared
    /// once the transaction is written.
    clears_meta: bool,
}

/// A shard store's transaction state (only the owner's thread uses it).
#[derive(Default)]
pub(super) struct TxState {
    on: Cell<bool>,
    shared: Cell<bool>,
    /// The write tier's log position when it began: a shared one's parts
    /// took the positions past it (`tier_log_part`).
    began_at: Cell<u64>,
    journal: RefCell<Journal>,
}

impl TxState {
    #[inline]
    pub(super) fn on(&self) -> bool {
        self.on.get()
    }
}

impl ShardStore {
    /// Opens a transaction on this shard: from now on writes are staged
    /// until [`ShardStore::end_tx`], in the engine's sink when `shared`
    /// (several shards), else in the shard's journal. Writes an open group
    /// first (none is open between commands; a failure would be reported
    /// by its `end_group`). A shared one writes past the write tier, so
    /// what the tier holds of each part is written out as the part is
    /// staged (`tier_write_out`: its drain must not write older values
    /// over the transaction's); a transaction on this shard alone
    /// waits in the tier as any write ([`ShardStore::write_own_tx`]), and
    /// one that cannot applies the tier when it writes (`tier_direct`).
    pub fn begin_tx(&self, shared: bool) {
        let _ = self.flush_group();
        self.tx.shared.set(shared);
        self.tx.began_at.set(self.wtier.last_pos());
        self.tx.on.set(true);
    }

    /// Whether a transaction is open on this shard.
    pub fn in_tx(&self) -> bool {
        self.tx.on()
    }

    /// Stages `b` in the open transaction.
    pub(super) fn tx_stage(&self, b: &Batch) {
        let mut j = self.tx.journal.borrow_mut();
        if self.tx.shared.get() {
            // A failure leaves them in the tier (as a failed apply of the
            // whole tier at the start did): the families that refused this
            // write refuse the commit's too, which reports it.
            if let Err(e) = self.tier_write_out(b.wb.data()) {
                tracing::warn!("write tier: writing a transaction's keys out failed: {e}");
            }
            let log = self.tier_log_part(b.wb.data());
            let mut sink = self.engine.tx_sink.lock().unwrap_or_else(|e| e.into_inner());
            let records = sink_for(&mut sink, self.home_index);
            records.append(b.wb.data());
            if let Some(log) = &log {
                records.append(log.data());
            }
            if let Some(main) = &b.main {
                sink_for(&mut sink, 0).append(main.data());
            }
        } else {
            j.own.append(b.wb.data());
            if let Some(main) = &b.main {
                j.main.append(main.data());
            }
        }
        j.clears_meta |= b.clears_meta;
        for op in &b.ops {
            j.overlay.apply(op);
        }
    }

    /// What the open transaction says of `key` (see [`Overlay::get`]).
    #[inline]
    pub(super) fn tx_read(&self, key: &[u8]) -> Option<Option<Bytes>> {
        self.tx.journal.borrow().overlay.get(key)
    }

    /// The open transaction's overlay within `[from, to)`, if it wrote there.
    pub(super) fn tx_within(&self, from: &[u8], to: &[u8]) -> Option<Overlay> {
        if !self.tx.on() {
            return None;
        }
        self.tx.journal.borrow().overlay.within(from, to)
    }

    /// A copy of the open transaction's overlay for a snapshot (None when
    /// it is closed or wrote nothing).
    pub(super) fn tx_frozen(&self) -> Option<Arc<Overlay>> {
        if !self.tx.on() {
            return None;
        }
        let j = self.tx.journal.borrow();
        (!j.overlay.is_empty()).then(|| Arc::new(j.overlay.clone()))
    }

    /// Whether an open transaction may hold writes not yet in RocksDB.
    pub(super) fn tx_holds_writes(&self) -> bool {
        self.tx.on() && !self.tx.journal.borrow().overlay.is_empty()
    }

    /// Closes the transaction once its write is done: on success the meta
    /// cache learns the records it wrote and what waited for the write
    /// runs; on failure the cache forgets everything and the waiters are
    /// dropped, as for any failed write.
    pub fn end_tx(&self, written: &Result<(), StorageError>) {
        let j = std::mem::take(&mut *self.tx.journal.borrow_mut());
        self.tx.on.set(false);
        match written {
            Ok(()) => {
                if self.tx.shared.get() {
                    // Its parts went past the tier, with direct records.
                    self.tier_marked_clean(self.tx.began_at.get());
                }
                if let Some(m) = &self.members {
                    for (from, to) in &j.overlay.ranges {
                        m.cut(from, to);
                    }
                    for k in j.overlay.records.keys().filter(|k| keys::is_sub(k)) {
                        m.remove(k);
                    }
                }
                if let Some(c) = &self.cache {
                    if j.clears_meta {
                        c.clear();
                    }
                    for (k, v) in j.overlay.records {
                        if cache::is_meta(&k) {
                            c.insert(&k, v.as_deref());
                        }
                    }
                }
                self.run_after();
            }
            Err(_) => {
                self.forget_cached();
                self.drop_after();
            }
        }
    }

    /// A batch with records for the first database (`Batch::main`): after
    /// what the write tier holds of its records (`tier_clear_for`), both parts as one write over two
    /// databases (`redo`), the home part with its log record when the tier
    /// is on (as [`ShardStore::tier_direct`] carries one).
    pub(super) fn write_with_main(&self, wb: WriteBatch, main: &WriteBatch) -> Result<(), StorageError> {
        self.tier_clear_for(wb.data())?;
        let before = self.wtier.last_pos();
        let mut parts = Vec::with_capacity(2);
        if !wb.is_empty() {
            let mut home = Records::default();
            home.append(wb.data());
            if let Some(log) = self.tier_log_part(wb.data()) {
                home.append(log.data());
            }
            if let Some(b) = home.take() {
                parts.push((self.home_index, b.data().to_vec()));
            }
        }
        parts.push((0, main.data().to_vec()));
        self.engine.write_across(parts)?;
        self.tier_marked_clean(before);
        Ok(())
    }

    /// A transaction on this shard alone: writes what it staged (close it
    /// with [`ShardStore::end_tx`]).
    pub fn write_own_tx(&self) -> Result<(), StorageError> {
        let (wb, main, clears_meta) = {
            let mut j = self.tx.journal.borrow_mut();
            (j.own.take(), j.main.take(), j.clears_meta)
        };
        match (wb, main) {
            (wb, Some(main)) => self.write_with_main(wb.unwrap_or_default(), &main),
            (Some(wb), None) => match self.stage_own_tx(wb.data(), clears_meta) {
                Some(done) => done,
                None => self.tier_direct(wb),
            },
            (None, None) => Ok(()),
        }
    }
}

impl Engine {
    /// Writes what a transaction over several shards staged and empties
    /// the sink: one batch per database (one in all with a single
    /// database), all or nothing through redo records (`redo`).
    pub fn write_tx(&self) -> Result<(), StorageError> {
        let staged = std::mem::take(&mut *self.tx_sink.lock().unwrap_or_else(|e| e.into_inner()));
        let parts: Vec<(usize, Vec<u8>)> = staged
            .into_iter()
            .filter_map(|(d, mut r)| r.take().map(|wb| (d, wb.data().to_vec())))
            .collect();
        if parts.is_empty() {
            return Ok(());
        }
        self.write_across(parts)
    }

    /// Empties the sink unwritten (a transaction abandoned).
    pub fn drop_tx(&self) {
        self.tx_sink.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

/// A cursor over records in key order, forward or back: RocksDB's
/// iterator, as `merge` drives it.
pub(super) trait Cursor {
    fn entry(&self) -> Option<(&[u8], &[u8])>;
    fn step(&mut self);
}

/// Visits the records of `[from, to)` as the transaction sees them: the
/// cursor's (RocksDB's) merged with `over`'s, in the cursor's direction
/// (`back`), skipping what `over` deleted; `after` (forward only): start
/// just past it. False when `f` stopped the visit.
pub(super) fn merge<C: Cursor>(
    cur: &mut C,
    over: &Overlay,
    from: &[u8],
    after: Option<&[u8]>,
    to: &[u8],
    back: bool,
    f: impl FnMut(&[u8], &[u8]) -> bool,
) -> bool {
    let lo = match after {
        Some(a) => Bound::Excluded(a),
        None => Bound::Included(from),
    };
    let span = (lo, Bound::Excluded(to));
    let mine: InRange<'_> = if from < to {
        let r = over.records.range::<[u8], _>(span);
        if back {
            Box::new(r.rev())
        } else {
            Box::new(r)
        }
    } else {
        Box::new(std::iter::empty())
    };
    merge_with(cur, mine.map(|(k, v)| (k, v.as_ref())), |k| over.covers(k), back, f)
}

/// Visits the cursor's records merged with `mine` (records in the
/// cursor's direction, `back`, each a value or None: deleted), `mine`'s
/// over the cursor's for one key, skipping the cursor's that `covers`
/// says were deleted. False when `f` stopped the visit.
pub(super) fn merge_with<C: Cursor, K: AsRef<[u8]>, V: AsRef<[u8]>>(
    cur: &mut C,
    mut mine: impl Iterator<Item = (K, Option<V>)>,
    covers: impl Fn(&[u8]) -> bool,
    back: bool,
    mut f: impl FnMut(&[u8], &[u8]) -> bool,
) -> bool {
    let mut next_mine = mine.next();
    loop {
        // Which comes first in the visit's direction: RocksDB's record
        // (Less), the overlay's (Greater), or both of one key (Equal).
        let order = match (cur.entry(), &next_mine) {
            (None, None) => return true,
            (None, Some(_)) => Cmp::Greater,
            (Some(_), None) => Cmp::Less,
            (Some((k, _)), Some((m, _))) => {
                let o = k.cmp(m.as_ref());
                if back {
                    o.reverse()
                } else {
                    o
                }
            }
        };
        if order == Cmp::Less {
            if let Some((k, v)) = cur.entry() {
                if !covers(k) && !f(k, v) {
                    return false;
                }
            }
            cur.step();
            continue;
        }
        if order == Cmp::Equal {
            cur.step();
        }
        if let Some((k, Some(v))) = &next_mine {
            if !f(k.as_ref(), v.as_ref()) {
                return false;
            }
        }
        next_mine = mine.next();
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::{get, peer, put};
    use super::super::{keys, test_opts, Engine};
    use super::*;

    fn stores(shards: usize) -> (tempfile::TempDir, &'static Engine) {
        let dir = tempfile::tempdir().unwrap();
        let opts = test_opts(dir.path(), shards, 1 << 20);
        let e: &'static Engine = Box::leak(Box::new(Engine::open(&opts).unwrap()));
        (dir, e)
    }

    fn del(s: &ShardStore, k: &[u8]) {
        let mut b = s.batch();
        s.delete(&mut b, k);
        s.write(b).unwrap();
    }

    fn scan(s: &ShardStore, from: &[u8], to: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        s.scan(from, to, |k, v| {
            out.push((k.to_vec(), v.to_vec()));
            true
        })
        .unwrap();
        out
    }

    fn scan_back(s: &ShardStore, from: &[u8], to: &[u8]) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        s.scan_back(from, to, |k, _| {
            out.push(k.to_vec());
            true
        })
        .unwrap();
        out
    }

    /// Reads inside a transaction see its writes (point reads, scans both
    /// ways, counts, range deletes), nothing reaches RocksDB before the
    /// commit, and everything does with it.
    #[test]
    fn reads_see_the_journal_and_nothing_is_written_before_the_commit() {
        let (_d, e) = stores(1);
        let s = e.shard(0).unwrap();
        let p = e.peer(0).unwrap();
        let k = |f: &str| keys::sub_key(0, b"h", 1, f.as_bytes());
        let (lo, hi) = keys::sub_range(0, b"h", 1);
        let m = keys::meta_key(0, b"h");
        put(&s, &k("a"), b"1");
        put(&s, &k("c"), b"3");
        put(&s, &k("e"), b"5");
        put(&s, &m, b"meta0");
        s.begin_tx(false);
        s.begin_group();
        put(&s, &k("b"), b"2");
        del(&s, &k("c"));
        put(&s, &k("e"), b"5b");
        put(&s, &m, b"meta1");
        assert!(s.end_group().is_empty());
        // Written nowhere yet, though the group ended.
        assert_eq!(peer(&p, &k("b")), None);
        assert_eq!(peer(&p, &m), Some(b"meta0".to_vec()));
        assert_eq!(get(&s, &k("b")), Some(b"2".to_vec()));
        assert_eq!(get(&s, &k("c")), None);
        assert_eq!(get(&s, &m), Some(b"meta1".to_vec()));
        let want = |ks: &[(&str, &str)]| -> Vec<(Vec<u8>, Vec<u8>)> { ks.iter().map(|(f, v)| (k(f), v.as_bytes().to_vec())).collect() };
        assert_eq!(scan(&s, &lo, &hi), want(&[("a", "1"), ("b", "2"), ("e", "5b")]));
        assert_eq!(scan_back(&s, &lo, &hi), vec![k("e"), k("b"), k("a")]);
        assert_eq!(s.count(&lo, &hi).unwrap(), 3);
        assert_eq!(s.last_key(&lo, &hi).unwrap(), Some(k("e")));
        let mut after_b = Vec::new();
        s.scan_from(None, &lo, Some(&k("b")), &hi, |k, _| {
            after_b.push(k.to_vec());
            true
        })
        .unwrap();
        assert_eq!(after_b, vec![k("e")]);
        // A range delete, then a write inside the range: only the write stays.
        let snap = s.snapshot();
        let mut b = s.batch();
        s.delete_range(&mut b, &lo, &hi);
        s.write(b).unwrap();
        put(&s, &k("d"), b"4");
        assert_eq!(get(&s, &k("a")), None);
        assert_eq!(scan(&s, &lo, &hi), want(&[("d", "4")]));
        assert_eq!(scan_back(&s, &lo, &hi), vec![k("d")]);
        assert_eq!(s.count(&lo, &hi).unwrap(), 1);
        // The snapshot taken before the range delete still reads as then.
        let mut seen = Vec::new();
        s.scan_from(Some(&snap), &lo, None, &hi, |k, _| {
            seen.push(k.to_vec());
            true
        })
        .unwrap();
        assert_eq!(seen, vec![k("a"), k("b"), k("e")]);
        assert_eq!(peer(&p, &k("a")), Some(b"1".to_vec()));
        let w = s.write_own_tx();
        s.end_tx(&w);
        w.unwrap();
        assert!(!s.in_tx());
        assert_eq!(peer(&p, &k("a")), None);
        assert_eq!(peer(&p, &k("d")), Some(b"4".to_vec()));
        assert_eq!(peer(&p, &m), Some(b"meta1".to_vec()));
        assert_eq!(scan(&s, &lo, &hi), want(&[("d", "4")]));
        // Closed: writes go straight to RocksDB again.
        put(&s, &k("f"), b"6");
        assert_eq!(peer(&p, &k("f")), Some(b"6".to_vec()));
    }

    /// Two shards' writes go in as one batch, in the order they were
    /// staged: an intent written on one shard and deleted on the other
    /// does not survive the commit.
    #[test]
    fn parts_of_several_shards_are_written_in_staging_order() {
        let (_d, e) = stores(2);
        let (s0, s1) = (e.shard(0).unwrap(), e.shard(1).unwrap());
        let r = super::super::intent::IntentRef { id: 9, part: 1 };
        s0.begin_tx(true);
        s1.begin_tx(true);
        put(&s1, &keys::meta_key(0, b"early"), b"x");
        let mut b = s0.batch();
        s0.put(&mut b, &keys::meta_key(0, b"k0"), b"v0");
        s0.stage_intent(&mut b, r, b"part");
        s0.write(b).unwrap();
        let mut b = s1.batch();
        s1.put(&mut b, &keys::meta_key(0, b"k1"), b"v1");
        s1.stage_intent_done(&mut b, r);
        s1.write(b).unwrap();
        assert!(e.pending_intents().unwrap().is_empty(), "nothing written before the commit");
        let w = e.write_tx();
        s0.end_tx(&w);
        s1.end_tx(&w);
        w.unwrap();
        assert!(e.pending_intents().unwrap().is_empty(), "the intent's delete came last");
        assert_eq!(get(&s0, &keys::meta_key(0, b"k0")), Some(b"v0".to_vec()));
        assert_eq!(get(&s1, &keys::meta_key(0, b"k1")), Some(b"v1".to_vec()));
        assert_eq!(get(&s1, &keys::meta_key(0, b"early")), Some(b"x".to_vec()));
    }

    /// With a database per shard, each shard's part goes to its own, with
    /// a copy of the whole write (`redo`) in each.
    #[test]
    fn with_a_database_per_shard_each_part_goes_to_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let mut opts = test_opts(dir.path(), 2, 1 << 20);
        opts.split = true;
        let e: &'static Engine = Box::leak(Box::new(Engine::open(&opts).unwrap()));
        let (s0, s1) = (e.shard(0).unwrap(), e.shard(1).unwrap());
        s0.begin_tx(true);
        s1.begin_tx(true);
        put(&s0, &keys::meta_key(0, b"k0"), b"v0");
        put(&s1, &keys::meta_key(0, b"k1"), b"v1");
        put(&s0, &keys::meta_key(0, b"k2"), b"v2");
        let in_db = |d: usize, shard: usize, k: &[u8]| {
            let db = &e.dbs[d].db;
            db.get_cf(db.cf_handle(&crate::storage::cf_name(shard)).unwrap(), k).unwrap()
        };
        assert_eq!(in_db(1, 0, &keys::meta_key(0, b"k0")), None, "nothing written before the commit");
        let w = e.write_tx();
        s0.end_tx(&w);
        s1.end_tx(&w);
        w.unwrap();
        assert_eq!(in_db(1, 0, &keys::meta_key(0, b"k0")), Some(b"v0".to_vec()));
        assert_eq!(in_db(1, 0, &keys::meta_key(0, b"k2")), Some(b"v2".to_vec()));
        assert_eq!(in_db(2, 1, &keys::meta_key(0, b"k1")), Some(b"v1".to_vec()));
        let redo = |d: usize| {
            e.dbs[d]
                .db
                .prefix_iterator(b"basalt:redo:")
                .filter_map(Result::ok)
                .filter(|(k, _)| k.starts_with(b"basalt:redo:"))
                .count()
        };
        assert_eq!((redo(1), redo(2)), (1, 1));
    }

    /// What waits for the write (keyspace notifications) runs at the commit.
    #[test]
    fn waiters_run_when_the_transaction_is_written() {
        let (_d, e) = stores(1);
        let s = e.shard(0).unwrap();
        let ran = std::rc::Rc::new(Cell::new(false));
        s.begin_tx(false);
        put(&s, &keys::meta_key(0, b"k"), b"v");
        let r = ran.clone();
        s.after_write(Box::new(move || r.set(true)));
        assert!(!ran.get());
        let w = s.write_own_tx();
        s.end_tx(&w);
        w.unwrap();
        assert!(ran.get());
    }
}
