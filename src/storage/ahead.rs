//! Read-ahead of member records a shard is about to read one by one: the
//! elements at a list's end, which pops take one per command.
//!
//! A pop read its element with a RocksDB point read. Once the list left the
//! memtable, that read searched each level's index and filter, and on a
//! 3M-element list `RPOP -P 16` spent 35% of the shard's time there
//! (`rocksdb::Version::Get`). [`ShardStore::get_ahead`] reads the next
//! elements with one scan instead, and keeps them here for the pops that
//! follow.
//!
//! Exact, as the meta cache is: every put, delete or range delete of a
//! member record through this shard's store removes what it covers here
//! when it is staged, before it is written. Removing early is always safe
//! (a later read goes to RocksDB), so a write that fails needs no undo. A
//! fill scans RocksDB only after the open write group is written (ranges
//! read through `scan`), so it never caches what a staged write replaces.
//! Only the owning shard writes its column families, so nothing else can
//! change a record behind it. Bounded by bytes: full, it starts over.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;

use bytes::Bytes;

use super::{keys, ShardStore, StorageError};

/// What one fill reads at most (bytes of values); it stops after the
/// record that crosses it.
const FILL_BYTES: usize = 64 << 10;
/// What the read-ahead of one shard holds at most (bytes of values).
const MAX_BYTES: usize = 4 << 20;

#[derive(Default)]
pub struct ReadAhead {
    map: RefCell<BTreeMap<Box<[u8]>, Bytes>>,
    bytes: Cell<usize>,
}

impl ReadAhead {
    /// Forgets member record `key` (it is being written).
    #[inline]
    pub(super) fn forget(&self, key: &[u8]) {
        if self.map.borrow().is_empty() {
            return;
        }
        if let Some(v) = self.map.borrow_mut().remove(key) {
            self.bytes.set(self.bytes.get().saturating_sub(v.len()));
        }
    }

    /// Forgets every record in `[from, to)` (a range delete).
    pub(super) fn forget_range(&self, from: &[u8], to: &[u8]) {
        let mut map = self.map.borrow_mut();
        if map.is_empty() || from >= to {
            return;
        }
        let span = (std::ops::Bound::Included(from), std::ops::Bound::Excluded(to));
        let gone: Vec<Box<[u8]>> = map.range::<[u8], _>(span).map(|(k, _)| k.clone()).collect();
        for k in gone {
            if let Some(v) = map.remove(&k) {
                self.bytes.set(self.bytes.get().saturating_sub(v.len()));
            }
        }
    }

    #[inline]
    pub(super) fn get(&self, key: &[u8]) -> Option<Bytes> {
        let map = self.map.borrow();
        if map.is_empty() {
            return None;
        }
        map.get(key).cloned()
    }

    fn insert(&self, key: &[u8], v: Bytes) {
        if self.bytes.get() + v.len() > MAX_BYTES {
            self.map.borrow_mut().clear();
            self.bytes.set(0);
        }
        self.bytes.set(self.bytes.get() + v.len());
        if let Some(old) = self.map.borrow_mut().insert(key.into(), v) {
            self.bytes.set(self.bytes.get().saturating_sub(old.len()));
        }
    }

    /// Bytes of values held (MEMORY STATS).
    pub fn bytes(&self) -> usize {
        self.bytes.get()
    }

    /// Records held (tests).
    pub fn len(&self) -> usize {
        self.map.borrow().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl ShardStore {
    /// Reads member record `key`, which the caller expects to be followed
    /// by reads of the records in `[from, to)` (it lies in that range): a
    /// miss reads the range (up to [`FILL_BYTES`], from the end nearest
    /// `key`) in one scan and keeps it for those reads.
    pub fn get_ahead(&self, key: &[u8], from: &[u8], to: &[u8]) -> Result<Option<Bytes>, StorageError> {
        debug_assert!(keys::is_sub(key) && from <= key && key < to);
        if let Some(v) = self.ahead.get(key) {
            return Ok(Some(v));
        }
        if self.in_tx() {
            // Read one by one: the read-ahead keeps committed records only.
            return self.get_with(key, |v| v.map(Bytes::copy_from_slice));
        }
        let (mut found, mut read) = (None, 0usize);
        let forward = key == from;
        let mut keep = |k: &[u8], v: &[u8]| {
            let v = Bytes::copy_from_slice(v);
            read += v.len();
            if k == key {
                found = Some(v.clone());
            }
            self.ahead.insert(k, v);
            read < FILL_BYTES
        };
        if forward {
            self.scan(from, to, |k, v| keep(k, v))?;
        } else {
            self.scan_back(from, to, |k, v| keep(k, v))?;
        }
        Ok(found)
    }

    /// The read-ahead's records (tests).
    pub fn ahead(&self) -> &ReadAhead {
        &self.ahead
    }
}

#[cfg(test)]
mod tests {
    use super::super::{keys, test_opts, Engine};

    #[test]
    fn reads_ahead_and_forgets_what_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let e: &'static Engine = Box::leak(Box::new(Engine::open(&test_opts(dir.path(), 1, 1 << 20)).unwrap()));
        let s = e.shard(0).unwrap();
        let k = |i: u64| keys::sub_key(0, b"l", 1, &i.to_be_bytes());
        let mut b = s.batch();
        for i in 0..10u64 {
            s.put(&mut b, &k(i), format!("v{i}").as_bytes());
        }
        s.write(b).unwrap();
        // From the right end: one scan keeps 0..=9.
        assert_eq!(s.get_ahead(&k(9), &k(0), &k(10)).unwrap().as_deref(), Some(&b"v9"[..]));
        assert_eq!(s.ahead().len(), 10);
        // A put and a delete are forgotten when staged; the next read sees
        // what was written.
        let mut b = s.batch();
        s.put(&mut b, &k(8), b"new");
        s.delete(&mut b, &k(7));
        assert_eq!(s.ahead().len(), 8);
        s.write(b).unwrap();
        assert_eq!(s.get_ahead(&k(8), &k(0), &k(9)).unwrap().as_deref(), Some(&b"new"[..]));
        assert_eq!(s.get_ahead(&k(7), &k(0), &k(8)).unwrap(), None);
        // A range delete forgets its range.
        let mut b = s.batch();
        s.delete_range(&mut b, &k(0), &k(5));
        s.write(b).unwrap();
        assert_eq!(s.get_ahead(&k(0), &k(0), &k(5)).unwrap(), None);
        assert_eq!(s.get_ahead(&k(5), &k(5), &k(7)).unwrap().as_deref(), Some(&b"v5"[..]));
        // get_with, too, goes through it for members.
        assert_eq!(s.get_with(&k(6), |v| v.map(<[u8]>::to_vec)).unwrap(), Some(b"v6".to_vec()));
    }
}
