//! Which meta keys a shard's tier may hold, for other shards' reads: a bit
//! per hashed key, set by the owner before the write is acknowledged and
//! cleared once RocksDB holds every record of the tier's generation that
//! set it (see the module doc of `wtier`).

use std::sync::atomic::{AtomicU64, Ordering};

/// Bits per filter (512 KiB): a generation of 262144 records leaves about
/// 6% of the other meta keys looking held.
const BITS: usize = 1 << 22;

pub(in crate::storage) struct Held {
    words: Box<[AtomicU64]>,
    hasher: ahash::RandomState,
}

impl Held {
    pub(in crate::storage) fn new() -> Held {
        Held {
            words: (0..BITS / 64).map(|_| AtomicU64::new(0)).collect(),
            hasher: ahash::RandomState::new(),
        }
    }

    fn bit(&self, key: &[u8]) -> (usize, u64) {
        let h = self.hasher.hash_one(key) as usize % BITS;
        (h / 64, 1 << (h % 64))
    }

    /// The owner, before the write is acknowledged.
    pub(super) fn set(&self, key: &[u8]) {
        let (w, b) = self.bit(key);
        if self.words[w].load(Ordering::Relaxed) & b == 0 {
            self.words[w].fetch_or(b, Ordering::Release);
        }
    }

    /// The owner, once RocksDB holds everything the bits stood for.
    pub(super) fn clear(&self) {
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
