//! The write tier (issue 35, item 3; a prototype behind `BASALT_TIER`,
//! off by default): a turn's records reach RocksDB as one log record in the
//! shard's log family (one WAL append, one memtable insert of a sequential
//! key) and wait in a shard-owned hash table ("dirty") that every read of
//! the owner looks in; once it holds `StoreOptions::write_tier` records
//! they are sorted and applied to the shard's families in one batch without
//! the WAL, so the memtable inserts walk the skiplists in key order.
//!
//! Every apply also writes, in both families, the log position it reached
//! (the mark, [`MARK`]); RocksDB persists a family's records in order, so
//! a mark found in the family's SST files says that family holds every
//! record up to it. After each apply the log is cut below the lower of the
//! two persisted marks, and at startup ([`replay`]) whatever the log still
//! holds past it is written again (a record is a whole value, so writing it
//! twice is harmless), before anything else reads the families.
//!
//! A write that skips the tier (a range delete, a transaction, a write
//! while no group is open) goes to the families with the WAL after the
//! tier is applied, and carries its own log record in the same batch: a
//! replay after a crash would otherwise write older log records over it.
//!
//! Other shards read a GET's meta record straight from the owner's meta
//! cache and RocksDB (`PeerStore`), not from the tier. So each tier keeps a
//! [`Held`] filter other shards can read: a bit per hashed meta key the
//! tier holds, set before the write is acknowledged and cleared only after
//! an apply put everything in RocksDB. A peer that misses the meta cache
//! and finds the key's bit set leaves the read to the owner (a false
//! positive costs a hop, never a wrong answer).
//!
//! A transaction over several shards writes every shard's part in one
//! batch (`tx`): each shard with a tier applies it when the transaction
//! opens, and each part it stages carries a log record of its own in the
//! same batch, as a direct write's does.
//!
//! Not yet: the memory budget does not count it; INFO shows what it holds
//! (`wtier_records`, `wtier_bytes`). Off by default.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use ahash::{AHashMap, AHashSet};
use bytes::Bytes;
use rocksdb::{ColumnFamily, ReadOptions, WriteBatch, WriteOptions, DB};

use super::keys::{TAG_META, TAG_SUB};
use super::{ShardStore, StorageError};

/// Where each family keeps the log position its applies reached (sorts
/// before the TTL indexes, `0xFF 'T'`; the compaction filters keep it).
pub(super) const MARK: &[u8] = &[0xFF, b'A'];

/// Log records past the persisted marks after which the family holding the
/// log back is flushed.
const LOG_FLUSH_AFTER: u64 = 4096;

/// The log family of shard `i`.
pub(super) fn log_cf_name(i: usize) -> String {
    format!("shard-{i}-log")
}

/// Bits in a [`Held`] filter (512 KiB): with the default limit of 262144
/// records, about 6% of the meta keys the tier does not hold look held.
const HELD_BITS: usize = 1 << 22;

/// Which meta keys a shard's tier may hold, for other shards' reads (see
/// the module doc). Only the owner sets and clears bits.
pub(super) struct Held {
    words: Box<[AtomicU64]>,
    hasher: ahash::RandomState,
}

impl Held {
    pub(super) fn new() -> Held {
        Held {
            words: (0..HELD_BITS / 64).map(|_| AtomicU64::new(0)).collect(),
            hasher: ahash::RandomState::new(),
        }
    }

    fn bit(&self, key: &[u8]) -> (usize, u64) {
        let h = self.hasher.hash_one(key) as usize % HELD_BITS;
        (h / 64, 1 << (h % 64))
    }

    /// The owner, before the write is acknowledged.
    fn set(&self, key: &[u8]) {
        let (w, b) = self.bit(key);
        if self.words[w].load(Ordering::Relaxed) & b == 0 {
            self.words[w].fetch_or(b, Ordering::Release);
        }
    }

    /// The owner, once RocksDB holds everything the tier held.
    fn clear(&self) {
        for w in self.words.iter() {
            w.store(0, Ordering::Release);
        }
    }

    /// A peer: whether the owner's tier may hold `key`.
    pub(super) fn may_hold(&self, key: &[u8]) -> bool {
        let (w, b) = self.bit(key);
        self.words[w].load(Ordering::Acquire) & b != 0
    }
}

/// The shard's write tier.
pub(super) struct WriteTier {
    pub(super) log: Option<&'static ColumnFamily>,
    /// What other shards consult (None with one shard).
    pub(super) held: Option<Arc<Held>>,
    /// Key and value bytes in `dirty`, for INFO.
    bytes: Cell<u64>,
    limit: usize,
    pos: Cell<u64>,
    /// The log holds no record at or below this position.
    cut: Cell<u64>,
    dirty: RefCell<AHashMap<Bytes, Option<Bytes>>>,
    /// Whether `dirty` holds anything (a cheap check for every read).
    any: Cell<bool>,
    /// What `dirty` holds, for range reads that need not apply it: the
    /// collections with members there (hashed prefixes), whether meta
    /// records, whether anything else (the TTL index).
    colls: RefCell<AHashSet<u64>>,
    meta: Cell<bool>,
    other: Cell<bool>,
    hasher: ahash::RandomState,
}

/// The length of `k`'s collection prefix (`db 'S' slot keylen key
/// version`), if `k` is a member record's key or a prefix that long.
fn coll_prefix_len(k: &[u8]) -> Option<usize> {
    if k.len() < 8 || k[0] == 0xFF || k[1] != TAG_SUB {
        return None;
    }
    let keylen = u32::from_be_bytes(k[4..8].try_into().ok()?) as usize;
    let n = 8 + keylen + 8;
    (k.len() >= n).then_some(n)
}

impl WriteTier {
    /// `start`: the log position replay reached (`replay`).
    pub(super) fn new(log: Option<&'static ColumnFamily>, limit: usize, start: u64, held: Option<Arc<Held>>) -> WriteTier {
        WriteTier {
            log: log.filter(|_| limit > 0),
            held,
            bytes: Cell::new(0),
            limit,
            pos: Cell::new(start),
            cut: Cell::new(start),
            dirty: RefCell::new(AHashMap::new()),
            any: Cell::new(false),
            colls: RefCell::new(AHashSet::new()),
            meta: Cell::new(false),
            other: Cell::new(false),
            hasher: ahash::RandomState::new(),
        }
    }

    /// Notes what class of record `k` is (see `colls`).
    fn note(&self, k: &[u8]) {
        match coll_prefix_len(k) {
            Some(n) => {
                self.colls.borrow_mut().insert(self.hasher.hash_one(&k[..n]));
            }
            None if k.len() >= 2 && k[0] != 0xFF && k[1] == TAG_META => self.meta.set(true),
            None => self.other.set(true),
        }
    }

    /// Whether a range read of `[from, to)` may meet a record the tier holds.
    pub(super) fn meets(&self, from: &[u8], to: &[u8]) -> bool {
        if !self.any.get() {
            return false;
        }
        if let Some(n) = coll_prefix_len(from) {
            // Inside one collection: up to the next version's prefix.
            let same_key = to.len() >= n && to[..n - 8] == from[..n - 8];
            let version = |k: &[u8]| u64::from_be_bytes(k[n - 8..n].try_into().unwrap_or([0xFF; 8]));
            if same_key && version(to) <= version(from).saturating_add(1) {
                return self.colls.borrow().contains(&self.hasher.hash_one(&from[..n]));
            }
            return true;
        }
        let meta_block = |k: &[u8], db: u8| k.len() >= 2 && k[0] == db && (k[1] == TAG_META || (k[1] == TAG_META + 1 && k.len() == 2));
        if from.len() >= 2 && from[0] != 0xFF && from[1] == TAG_META && meta_block(to, from[0]) {
            return self.meta.get();
        }
        if from.first() == Some(&0xFF) && to.first() == Some(&0xFF) {
            return self.other.get();
        }
        true
    }

    #[inline]
    pub(super) fn on(&self) -> bool {
        self.log.is_some()
    }

    /// Records and key and value bytes it holds (INFO).
    pub(super) fn size(&self) -> (u64, u64) {
        (self.dirty.borrow().len() as u64, self.bytes.get())
    }

    /// The next log position, taken (a record written there, or a gap).
    pub(super) fn next_pos(&self) -> u64 {
        let pos = self.pos.get() + 1;
        self.pos.set(pos);
        pos
    }

    /// The tier's latest value of `key`, if it holds one.
    #[inline]
    pub(super) fn get(&self, key: &[u8]) -> Option<Option<Bytes>> {
        if !self.any.get() {
            return None;
        }
        self.dirty.borrow().get(key).cloned()
    }
}

/// The records of a WriteBatch representation (after its 12-byte header):
/// (key, value or None for a delete). None if it holds anything else.
fn records(rep: &Bytes) -> Option<Vec<(Bytes, Option<Bytes>)>> {
    let mut out = Vec::new();
    let mut i = 12;
    let b = rep.as_ref();
    let varint = |i: &mut usize| -> Option<u32> {
        let mut v = 0u32;
        for shift in (0..35).step_by(7) {
            let byte = *b.get(*i)?;
            *i += 1;
            v |= ((byte & 0x7f) as u32) << shift;
            if byte & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    };
    let slice = |i: &mut usize, n: u32| -> Option<Bytes> {
        let end = i.checked_add(n as usize)?;
        (end <= b.len()).then(|| {
            let s = rep.slice(*i..end);
            *i = end;
            s
        })
    };
    while i < b.len() {
        let tag = b[i];
        i += 1;
        match tag {
            // Column-family value / deletion.
            0x5 | 0x4 => {
                varint(&mut i)?;
                let kl = varint(&mut i)?;
                let k = slice(&mut i, kl)?;
                let v = if tag == 0x5 {
                    let vl = varint(&mut i)?;
                    Some(slice(&mut i, vl)?)
                } else {
                    None
                };
                out.push((k, v));
            }
            _ => return None,
        }
    }
    Some(out)
}

/// A log record's batch without its default-family records (intents, the
/// db map): those went through the WAL and only it says whether they
/// survived; writing one again would bring back an intent another shard's
/// part already deleted. A record it cannot parse is kept whole.
fn own_records(rep: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    let varint = |i: &mut usize| -> Option<u32> {
        let mut v = 0u32;
        for shift in (0..35).step_by(7) {
            let byte = *rep.get(*i)?;
            *i += 1;
            v |= ((byte & 0x7f) as u32) << shift;
            if byte & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    };
    let skip = |i: &mut usize| -> Option<()> {
        let n = varint(i)? as usize;
        *i = i.checked_add(n).filter(|&e| e <= rep.len())?;
        Some(())
    };
    let mut out = Vec::with_capacity(rep.len());
    let mut kept = 0u32;
    let mut i = 12;
    while i < rep.len() {
        let start = i;
        let tag = rep[i];
        i += 1;
        let own = match tag {
            // Default family: delete, put, single delete, range delete.
            0x0 | 0x7 => skip(&mut i).map(|_| false),
            0x1 | 0xF => skip(&mut i).and_then(|_| skip(&mut i)).map(|_| false),
            // A family's delete, single delete; put, range delete.
            0x4 | 0x8 => varint(&mut i).and_then(|_| skip(&mut i)).map(|_| true),
            0x5 | 0xE => varint(&mut i).and_then(|_| skip(&mut i)).and_then(|_| skip(&mut i)).map(|_| true),
            _ => None,
        };
        match own {
            None => return std::borrow::Cow::Borrowed(rep),
            Some(true) => {
                if out.is_empty() {
                    out.extend_from_slice(&[0; 12]);
                }
                out.extend_from_slice(&rep[start..i]);
                kept += 1;
            }
            Some(false) => {}
        }
    }
    if out.is_empty() {
        out.extend_from_slice(&[0; 12]);
    }
    out[8..12].copy_from_slice(&kept.to_le_bytes());
    std::borrow::Cow::Owned(out)
}

impl ShardStore {
    /// Writes a group's records (`rep`, a WriteBatch representation with
    /// its count set) as one log record; they wait in the tier.
    pub(super) fn tier_write(&self, rep: Bytes) -> Result<(), StorageError> {
        let Some(log) = self.wtier.log else {
            return self.engine.write_batch(WriteBatch::from_data(&rep));
        };
        let Some(recs) = records(&rep) else {
            // Not a plain batch of puts and deletes: written as it is.
            return self.tier_direct(WriteBatch::from_data(&rep));
        };
        let pos = self.wtier.pos.get() + 1;
        let mut wb = WriteBatch::default();
        wb.put_cf(log, pos.to_be_bytes(), &rep);
        self.engine.write_batch(wb)?;
        self.wtier.pos.set(pos);
        let full = {
            let mut d = self.wtier.dirty.borrow_mut();
            let mut bytes = self.wtier.bytes.get();
            for (k, v) in recs {
                self.wtier.note(&k);
                if let Some(h) = self.wtier.held.as_ref().filter(|_| super::cache::is_meta(&k)) {
                    h.set(&k);
                }
                let (kl, vl) = (k.len() as u64, v.as_ref().map_or(0, |v| v.len()) as u64);
                match d.insert(k, v) {
                    Some(old) => bytes = bytes + vl - old.map_or(0, |v| v.len()) as u64,
                    None => bytes += kl + vl,
                }
            }
            self.wtier.bytes.set(bytes);
            d.len() >= self.wtier.limit
        };
        self.wtier.any.set(true);
        if full {
            self.tier_apply()?;
        }
        Ok(())
    }

    /// Writes `wb` to the families at once (with the WAL), after what the
    /// tier holds; with the tier on, the same batch carries it as a log
    /// record too, so that a replay after a crash writes it again after
    /// the tier's older records, not before them.
    pub(super) fn tier_direct(&self, mut wb: WriteBatch) -> Result<(), StorageError> {
        let Some(log) = self.wtier.log else {
            return self.engine.write_batch(wb);
        };
        self.tier_apply()?;
        let rep = wb.data().to_vec();
        let pos = self.wtier.pos.get() + 1;
        wb.put_cf(log, pos.to_be_bytes(), rep);
        self.engine.write_batch(wb)?;
        self.wtier.pos.set(pos);
        // The marks without the WAL, as an apply writes them: one recovered
        // from the WAL would claim records that earlier applies wrote
        // without it and a crash lost (a test lost writes that way).
        let mut marks = WriteBatch::default();
        marks.put_cf(self.cf, MARK, pos.to_be_bytes());
        marks.put_cf(self.sub, MARK, pos.to_be_bytes());
        let mut wo = WriteOptions::default();
        wo.disable_wal(true);
        self.db.write_opt(marks, &wo)?;
        if pos.is_multiple_of(64) {
            self.tier_cut()?;
        }
        Ok(())
    }

    /// Applies what the tier holds to the shard's families, in key order,
    /// without the WAL (the log has it).
    pub(super) fn tier_apply(&self) -> Result<(), StorageError> {
        if !self.wtier.any.get() {
            return Ok(());
        }
        let map = std::mem::take(&mut *self.wtier.dirty.borrow_mut());
        self.wtier.bytes.set(0);
        self.wtier.any.set(false);
        self.wtier.colls.borrow_mut().clear();
        self.wtier.meta.set(false);
        self.wtier.other.set(false);
        // Sorted by each key's first 16 bytes held inline (one read of
        // each key, then a sort that stays in the CPU's caches), whole keys
        // compared only on a tie.
        let head = |k: &[u8]| {
            let mut h = [0u8; 16];
            let n = k.len().min(16);
            h[..n].copy_from_slice(&k[..n]);
            u128::from_be_bytes(h)
        };
        let mut recs: Vec<(u128, Bytes, Option<Bytes>)> = map.into_iter().map(|(k, v)| (head(&k), k, v)).collect();
        recs.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
        let mut wb = WriteBatch::default();
        for (_, k, v) in &recs {
            match v {
                Some(v) => wb.put_cf(self.cf_of(k), k, v),
                None => wb.delete_cf(self.cf_of(k), k),
            }
        }
        let pos = self.wtier.pos.get().to_be_bytes();
        wb.put_cf(self.cf, MARK, pos);
        wb.put_cf(self.sub, MARK, pos);
        let mut wo = WriteOptions::default();
        wo.disable_wal(true);
        self.db.write_opt(wb, &wo)?;
        if let Some(h) = &self.wtier.held {
            h.clear();
        }
        self.tier_cut()
    }

    /// A part of a transaction over several shards, staged in the engine's
    /// sink (`tx`): with the tier on, its log record too, so that a replay
    /// after a crash writes it again after the tier's older records.
    pub(super) fn tier_log_part(&self, rep: &[u8]) -> Option<WriteBatch> {
        let log = self.wtier.log?;
        let mut wb = WriteBatch::default();
        wb.put_cf(log, self.wtier.next_pos().to_be_bytes(), rep);
        Some(wb)
    }

    /// Cuts the log below what both families persisted.
    fn tier_cut(&self) -> Result<(), StorageError> {
        let Some(log) = self.wtier.log else { return Ok(()) };
        let mut ro = ReadOptions::default();
        ro.set_read_tier(rocksdb::ReadTier::Persisted);
        let mark = |cf| -> Result<u64, StorageError> {
            Ok(self
                .db
                .get_pinned_cf_opt(cf, MARK, &ro)?
                .and_then(|v| v.as_ref().try_into().ok())
                .map_or(0, u64::from_be_bytes))
        };
        let (meta, sub) = (mark(self.cf)?, mark(self.sub)?);
        let safe = meta.min(sub);
        if self.wtier.pos.get() - safe > LOG_FLUSH_AFTER {
            // A family written little flushes seldom and holds the log
            // back: flush it now (in the background).
            let mut fo = rocksdb::FlushOptions::default();
            fo.set_wait(false);
            self.db.flush_cf_opt(if meta <= sub { self.cf } else { self.sub }, &fo)?;
        }
        if safe <= self.wtier.cut.get() {
            return Ok(());
        }
        let mut wb = WriteBatch::default();
        wb.delete_range_cf(log, 0u64.to_be_bytes(), (safe + 1).to_be_bytes());
        self.engine.write_batch(wb)?;
        self.wtier.cut.set(safe);
        Ok(())
    }
}

/// The write tier's log families to open: those a run left, and this
/// run's (`opts.write_tier`).
pub(super) fn logs(existing: &[String], opts: &super::StoreOptions) -> Vec<String> {
    let mut logs: Vec<String> = existing.iter().filter(|n| n.ends_with("-log")).cloned().collect();
    if opts.write_tier > 0 {
        for n in (0..opts.shards).map(log_cf_name) {
            if !logs.contains(&n) {
                logs.push(n);
            }
        }
    }
    logs
}

/// [`replay`] of every log in `logs`: per shard, where its tier goes on.
pub(super) fn replay_all(db: &DB, logs: &[String]) -> Result<Vec<(usize, u64)>, StorageError> {
    let mut starts = Vec::new();
    for n in logs {
        let Some(i) = n
            .strip_prefix("shard-")
            .and_then(|r| r.strip_suffix("-log"))
            .and_then(|i| i.parse().ok())
        else {
            continue;
        };
        let (records, last) = replay(db, i)?;
        if records > 0 {
            tracing::info!(shard = i, records, "write tier: log records written again");
        }
        starts.push((i, last));
    }
    Ok(starts)
}

/// At startup, before anything reads shard `i`'s families: writes again
/// (with the WAL) every record its log holds past what both families
/// persisted, then empties the log. Returns how many log records it wrote
/// and the position to go on from.
pub(super) fn replay(db: &DB, i: usize) -> Result<(usize, u64), StorageError> {
    let (Some(log), Some(meta), Some(sub)) = (
        db.cf_handle(&log_cf_name(i)),
        db.cf_handle(&super::cf_name(i)),
        db.cf_handle(&super::sub_cf_name(i)),
    ) else {
        return Ok((0, 0));
    };
    let mark = |cf| -> Result<u64, StorageError> {
        Ok(db
            .get_pinned_cf(cf, MARK)?
            .and_then(|v| v.as_ref().try_into().ok())
            .map_or(0, u64::from_be_bytes))
    };
    let safe = mark(meta)?.min(mark(sub)?);
    let (mut n, mut last) = (0, safe);
    let mut it = db.raw_iterator_cf(log);
    it.seek((safe + 1).to_be_bytes());
    while it.valid() {
        let (Some(k), Some(v)) = (it.key(), it.value()) else { break };
        let pos = k
            .try_into()
            .map(u64::from_be_bytes)
            .map_err(|_| StorageError(format!("log of shard {i}: a key of {} bytes", k.len())))?;
        db.write(WriteBatch::from_data(&own_records(v)))?;
        (n, last) = (n + 1, pos.max(last));
        it.next();
    }
    it.status()?;
    let mut wb = WriteBatch::default();
    wb.delete_range_cf(log, 0u64.to_be_bytes(), u64::MAX.to_be_bytes());
    wb.put_cf(meta, MARK, last.to_be_bytes());
    wb.put_cf(sub, MARK, last.to_be_bytes());
    db.write(wb)?;
    Ok((n, last))
}

#[cfg(test)]
mod tests {
    use super::super::testkit::{get, peer, put};
    use super::super::{keys, test_opts, Engine};
    use super::*;

    fn stores(limit: usize) -> (tempfile::TempDir, ShardStore, super::super::PeerStore) {
        let dir = tempfile::tempdir().unwrap();
        let mut opts = test_opts(dir.path(), 1, 1 << 20);
        opts.write_tier = limit;
        let e: &'static Engine = Box::leak(Box::new(Engine::open(&opts).unwrap()));
        (dir, e.shard(0).unwrap(), e.peer(0).unwrap())
    }

    #[test]
    fn a_batch_representation_parses_into_its_records() {
        let (_d, s, _p) = stores(0);
        let mut wb = WriteBatch::default();
        wb.put_cf(s.cf, b"k1", b"v1");
        wb.delete_cf(s.sub, b"k2");
        wb.put_cf(s.sub, b"k3", vec![7u8; 300]);
        let recs = records(&Bytes::copy_from_slice(wb.data())).unwrap();
        assert_eq!(
            recs,
            vec![
                (Bytes::from_static(b"k1"), Some(Bytes::from_static(b"v1"))),
                (Bytes::from_static(b"k2"), None),
                (Bytes::from_static(b"k3"), Some(Bytes::from(vec![7u8; 300]))),
            ]
        );
        // A range delete is not a record the tier can hold.
        let mut wb = WriteBatch::default();
        wb.delete_range_cf(s.cf, b"a", b"b");
        assert_eq!(records(&Bytes::copy_from_slice(wb.data())), None);
        // Cut short: refused, not read past its end.
        let mut wb = WriteBatch::default();
        wb.put_cf(s.cf, b"key", b"value");
        let data = wb.data();
        assert_eq!(records(&Bytes::copy_from_slice(&data[..data.len() - 2])), None);
    }

    /// Replay writes a log record's own families' records, not the
    /// default family's (an intent), nor anything past a cut-short end.
    #[test]
    fn replay_keeps_only_the_shards_own_records() {
        let (_d, s, _p) = stores(0);
        let mut wb = WriteBatch::default();
        wb.put(b"intent", b"part");
        wb.put_cf(s.cf, b"k1", b"v1");
        wb.delete(b"gone");
        wb.delete_cf(s.sub, b"k2");
        wb.delete_range_cf(s.sub, b"a", b"b");
        wb.delete_range(b"x", b"y");
        let own = own_records(wb.data());
        let mut want = WriteBatch::default();
        want.put_cf(s.cf, b"k1", b"v1");
        want.delete_cf(s.sub, b"k2");
        want.delete_range_cf(s.sub, b"a", b"b");
        assert_eq!(&own[12..], &want.data()[12..]);
        assert_eq!(own[8..12], 3u32.to_le_bytes());
        // Only default-family records: an empty batch.
        let mut wb = WriteBatch::default();
        wb.put(b"intent", b"part");
        assert_eq!(&own_records(wb.data())[..], &[0u8; 12][..]);
        // Cut short: kept whole (RocksDB refuses it, as before).
        let data = want.data();
        assert_eq!(&own_records(&data[..data.len() - 1])[..], &data[..data.len() - 1]);
    }

    /// Records wait in the tier (the owner reads them, RocksDB does not
    /// have them yet) and reach the families in one sorted apply, at the
    /// limit or before a range read that could meet them.
    #[test]
    fn records_wait_in_the_tier_until_the_limit_or_a_range_read() {
        let (_d, s, p) = stores(4);
        let h = |f: &str| keys::sub_key(0, b"h", 1, f.as_bytes());
        let other = keys::sub_key(0, b"other", 1, b"x");
        let m = keys::meta_key(0, b"m");
        s.begin_group();
        put(&s, &h("b"), b"2");
        put(&s, &h("a"), b"1");
        put(&s, &m, b"meta");
        assert!(s.end_group().is_empty());
        assert_eq!(get(&s, &h("a")), Some(b"1".to_vec()));
        assert_eq!(peer(&p, &h("a")), None, "in the tier only");
        assert!(s.wtier.meets(&keys::sub_range(0, b"h", 1).0, &keys::sub_range(0, b"h", 1).1));
        assert!(!s
            .wtier
            .meets(&keys::sub_range(0, b"other", 1).0, &keys::sub_range(0, b"other", 1).1));
        // A scan of another collection does not apply the tier...
        let (lo, hi) = keys::sub_range(0, b"other", 1);
        s.scan(&lo, &hi, |_, _| true).unwrap();
        assert_eq!(peer(&p, &h("a")), None);
        // ...a scan of this one does, in order.
        let (lo, hi) = keys::sub_range(0, b"h", 1);
        let mut seen = Vec::new();
        s.scan(&lo, &hi, |k, _| {
            seen.push(k.to_vec());
            true
        })
        .unwrap();
        assert_eq!(seen, vec![h("a"), h("b")]);
        assert_eq!(peer(&p, &h("b")), Some(b"2".to_vec()));
        // The limit (4 records) applies it too; a delete wins over the put
        // before it.
        s.begin_group();
        put(&s, &other, b"x");
        let mut b = s.batch();
        s.delete(&mut b, &other);
        s.write(b).unwrap();
        assert!(s.end_group().is_empty());
        assert_eq!(get(&s, &other), None);
        s.begin_group();
        for f in ["c", "d", "e", "f"] {
            put(&s, &h(f), f.as_bytes());
        }
        assert!(s.end_group().is_empty());
        assert_eq!(peer(&p, &h("f")), Some(b"f".to_vec()));
        assert_eq!(peer(&p, &other), None);
        // A write that is not staged applies the tier first: order holds.
        s.begin_group();
        put(&s, &m, b"older");
        assert!(s.end_group().is_empty());
        put(&s, &m, b"newer");
        s.compact_all();
        assert_eq!(get(&s, &m), Some(b"newer".to_vec()));
        assert_eq!(peer(&p, &m), Some(b"newer".to_vec()));
    }

    /// With several shards a peer that misses the meta cache leaves a key
    /// the owner's tier may hold to the owner, until an apply wrote it.
    #[test]
    fn peers_leave_what_the_tier_holds_to_the_owner() {
        let dir = tempfile::tempdir().unwrap();
        let mut opts = test_opts(dir.path(), 2, 0);
        opts.write_tier = 1000;
        let e: &'static Engine = Box::leak(Box::new(Engine::open(&opts).unwrap()));
        let (s, p) = (e.shard(0).unwrap(), e.peer(0).unwrap());
        let (m, other) = (keys::meta_key(0, b"m"), keys::meta_key(0, b"other"));
        put(&s, &m, b"old");
        s.begin_group();
        put(&s, &m, b"new");
        s.defer_group();
        s.end_turn();
        assert_eq!(s.write_tier_size(), (1, m.len() as u64 + 3));
        assert_eq!(get(&s, &m), Some(b"new".to_vec()), "the owner reads its tier");
        assert_eq!(
            p.get_with(&m, |v| v.map(|v| v.to_vec())).unwrap(),
            None,
            "only the owner can answer"
        );
        assert_eq!(peer(&p, &other), None, "a key the tier does not hold is read from RocksDB");
        s.tier_apply().unwrap();
        assert_eq!(s.write_tier_size(), (0, 0));
        assert_eq!(peer(&p, &m), Some(b"new".to_vec()));
    }

    /// Once both families persisted an apply's mark, the next apply cuts
    /// the log below it.
    #[test]
    fn the_log_is_cut_below_what_both_families_persisted() {
        let (_d, s, _p) = stores(2);
        let log = s.wtier.log.unwrap();
        let logged = |s: &ShardStore| {
            let mut it = s.db.raw_iterator_cf(log);
            it.seek_to_first();
            let mut n = 0;
            while it.valid() {
                n += 1;
                it.next();
            }
            n
        };
        let turn = |k: &[u8]| {
            s.begin_group();
            put(&s, &keys::meta_key(0, k), b"v");
            s.defer_group();
            s.end_turn();
        };
        for i in 0..6u32 {
            turn(&i.to_be_bytes());
        }
        assert_eq!(logged(&s), 6, "nothing persisted yet");
        s.db.flush_cf(s.cf).unwrap();
        s.db.flush_cf(s.sub).unwrap();
        turn(b"a");
        turn(b"b");
        assert_eq!(logged(&s), 2, "cut below the persisted mark 6");
        // The compaction filters keep the marks.
        s.compact_all();
        for cf in [s.cf, s.sub] {
            assert_eq!(s.db.get_cf(cf, MARK).unwrap(), Some(8u64.to_be_bytes().to_vec()));
        }
    }
}
