//! Point reads that must not wait for the disk (issue 12's first piece).
//!
//! A shard must not stop every client of its core for one read that goes
//! to the disk. The first step is to know, without blocking, whether a read
//! can be answered from memory: the write group, the meta cache, the
//! memtables and RocksDB's block cache (`ReadTier::BlockCache`). RocksDB
//! answers `Incomplete` when the read would need I/O; the caller can then
//! send it elsewhere (docs: the closing note of session 7 has the plan).

use rocksdb::{ErrorKind, ReadOptions, ReadTier};

use super::{cache, ShardStore, StorageError};

/// What a memory-only read found.
#[derive(Debug, PartialEq, Eq)]
pub enum InMemory<R> {
    /// Answered from memory (`f`'s result; the record may be absent).
    Done(R),
    /// The answer is on disk only.
    NeedsIo,
}

impl ShardStore {
    /// [`ShardStore::get_with`] from memory only: never reads the disk.
    pub fn get_in_memory<R>(&self, key: &[u8], f: impl FnOnce(Option<&[u8]>) -> R) -> Result<InMemory<R>, StorageError> {
        if self.group.active() {
            if let Some(v) = self.group_read(key)? {
                return Ok(InMemory::Done(f(v.as_deref())));
            }
        }
        if let Some(v) = self.cache.as_ref().filter(|_| cache::is_meta(key)).and_then(|c| c.peek(key)) {
            return Ok(InMemory::Done(f(v.as_deref())));
        }
        let mut ro = ReadOptions::default();
        ro.set_read_tier(ReadTier::BlockCache);
        match self.db.get_pinned_cf_opt(self.cf, key, &ro) {
            Ok(v) => Ok(InMemory::Done(f(v.as_deref()))),
            Err(e) if e.kind() == ErrorKind::Incomplete => Ok(InMemory::NeedsIo),
            Err(e) => Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{cf_name, keys, test_opts, Engine};
    use super::*;

    #[test]
    fn a_record_only_on_disk_needs_io_until_a_read_brings_its_block_in() {
        let dir = tempfile::tempdir().unwrap();
        let e: &'static Engine = Box::leak(Box::new(Engine::open(&test_opts(dir.path(), 1, 0)).unwrap()));
        let s = e.shard(0).unwrap();
        let k = |i: u32| keys::sub_key(0, b"h", 1, &i.to_be_bytes());
        let mut b = s.batch();
        for i in 0..2000u32 {
            s.put(&mut b, &k(i), &[7u8; 100]);
        }
        s.write(b).unwrap();
        let copy = |v: Option<&[u8]>| v.map(|v| v.len());
        // In the memtable: memory.
        assert_eq!(s.get_in_memory(&k(5), copy).unwrap(), InMemory::Done(Some(100)));
        // Flushed to an SST whose data blocks were never read: disk only.
        e.db.flush_cf(e.db.cf_handle(&cf_name(0)).unwrap()).unwrap();
        assert_eq!(s.get_in_memory(&k(5), copy).unwrap(), InMemory::NeedsIo);
        // A normal read loads the block; then memory answers, and so it
        // does for the neighbours in the same 4 KiB block.
        assert_eq!(s.get_with(&k(5), copy).unwrap(), Some(100));
        assert_eq!(s.get_in_memory(&k(5), copy).unwrap(), InMemory::Done(Some(100)));
        assert_eq!(s.get_in_memory(&k(6), copy).unwrap(), InMemory::Done(Some(100)));
        // A staged write in an open group is memory too.
        s.begin_group();
        let mut b = s.batch();
        s.put(&mut b, &k(1999), &[1u8; 3]);
        s.write(b).unwrap();
        assert_eq!(s.get_in_memory(&k(1999), copy).unwrap(), InMemory::Done(Some(3)));
        assert!(s.end_group().is_empty());
    }
}
