//! What the storage unit tests share: small options, and reads and writes.

use std::path::Path;

use super::{Background, Compression, PeerStore, ShardStore, StoreOptions};

/// Small options for the storage unit tests (8 MB block cache, 1 MB
/// write buffers, buffered WAL).
pub(super) fn test_opts(dir: &Path, shards: usize, meta_cache_bytes: u64) -> StoreOptions {
    StoreOptions {
        dir: dir.to_path_buf(),
        shards,
        block_cache_bytes: 8 << 20,
        write_buffer_bytes: 1 << 20,
        manual_wal_flush: true,
        meta_cache_bytes,
        io_threads: 2,
        memtables_bytes: 0,
        bottommost: Compression::Zstd,
        background: Background::LowFlush,
        write_tier: 0,
        write_tier_bytes: 0,
        split: false,
    }
}

// Reads and writes the storage unit tests share.

/// A record as the owner reads it (staged writes included).
pub fn get(s: &ShardStore, k: &[u8]) -> Option<Vec<u8>> {
    s.get_with(k, |v| v.map(|v| v.to_vec())).unwrap()
}

/// What another shard reads: RocksDB and the owner's cache only.
pub fn peer(p: &PeerStore, k: &[u8]) -> Option<Vec<u8>> {
    p.get_with(k, |v| v.map(|v| v.to_vec())).unwrap().expect("a peer can read it")
}

/// One put, as one batch.
pub fn put(s: &ShardStore, k: &[u8], v: &[u8]) {
    let mut b = s.batch();
    s.put(&mut b, k, v);
    s.write(b).unwrap();
}

/// A put (`Some`) or delete (`None`) as a group of its own: what its log
/// append lost (`ShardStore::end_group`).
pub fn grouped(s: &ShardStore, k: &[u8], v: Option<&[u8]>) -> Vec<super::group::Lost> {
    s.begin_group();
    let mut b = s.batch();
    match v {
        Some(v) => s.put(&mut b, k, v),
        None => s.delete(&mut b, k),
    }
    s.write(b).unwrap();
    s.end_group()
}
