//! The write tier (issue 35, item 3; a prototype behind `BASALT_TIER`,
//! off by default): a turn's records reach RocksDB as one log record in the
//! shard's log family (one WAL append, one memtable insert of a sequential
//! key) and wait in a shard-owned hash table ("dirty") that every read of
//! the owner looks in; once it holds [`ShardStore::tier_limit`] records
//! they are sorted and applied to the shard's families in one batch without
//! the WAL, so the memtable inserts walk the skiplists in key order.
//!
//! Not yet: recovery (replaying the log past what the families persisted),
//! truncating the log, transactions and peers' reads. Measure only.

use std::cell::{Cell, RefCell};

use ahash::{AHashMap, AHashSet};
use bytes::Bytes;
use rocksdb::{ColumnFamily, WriteBatch, WriteOptions};

use super::keys::{TAG_META, TAG_SUB};
use super::{ShardStore, StorageError};

/// The shard's write tier.
pub(super) struct WriteTier {
    pub(super) log: Option<&'static ColumnFamily>,
    limit: usize,
    pos: Cell<u64>,
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
    pub(super) fn new(log: Option<&'static ColumnFamily>, limit: usize) -> WriteTier {
        WriteTier {
            log: log.filter(|_| limit > 0),
            limit,
            pos: Cell::new(0),
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

impl ShardStore {
    /// Writes a group's records (`rep`, a WriteBatch representation with
    /// its count set) as one log record; they wait in the tier.
    pub(super) fn tier_write(&self, rep: Bytes) -> Result<(), StorageError> {
        let Some(log) = self.wtier.log else {
            return self.engine.write_batch(WriteBatch::from_data(&rep));
        };
        let Some(recs) = records(&rep) else {
            // Not a plain batch of puts and deletes: applied as it is,
            // after what the tier holds.
            self.tier_apply()?;
            return self.engine.write_batch(WriteBatch::from_data(&rep));
        };
        let pos = self.wtier.pos.get() + 1;
        let mut wb = WriteBatch::default();
        wb.put_cf(log, pos.to_be_bytes(), &rep);
        self.engine.write_batch(wb)?;
        self.wtier.pos.set(pos);
        let full = {
            let mut d = self.wtier.dirty.borrow_mut();
            for (k, v) in recs {
                self.wtier.note(&k);
                d.insert(k, v);
            }
            d.len() >= self.wtier.limit
        };
        self.wtier.any.set(true);
        if full {
            self.tier_apply()?;
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
        let mut wo = WriteOptions::default();
        wo.disable_wal(true);
        Ok(self.db.write_opt(wb, &wo)?)
    }
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
}
