//! A shard's point reads: the open group or transaction first, then the
//! write tier, the meta cache or the member cache, then RocksDB.

use bytes::Bytes;

use super::{cache, keys, ShardStore, StorageError};

impl ShardStore {
    /// Reads a record; `f` sees the stored bytes without a copy (a meta
    /// record through the cache: a hit reads no RocksDB at all).
    #[inline]
    pub fn get_with<R>(&self, key: &[u8], f: impl FnOnce(Option<&[u8]>) -> R) -> Result<R, StorageError> {
        self.get_hashed(key, None, f)
    }

    /// [`ShardStore::get_with`] with `key`'s hash by [`ShardStore::key_hasher`].
    #[inline]
    pub fn get_with_hash<R>(&self, key: &[u8], h: u64, f: impl FnOnce(Option<&[u8]>) -> R) -> Result<R, StorageError> {
        self.get_hashed(key, Some(h), f)
    }

    /// Whether the meta cache's table is past the core's caches: only then
    /// is a pipeline's prefetch worth its hashes (`Keyspace::prefetch`).
    #[inline]
    pub fn meta_cache_big(&self) -> bool {
        self.cache.as_ref().is_some_and(|c| c.big())
    }

    /// Asks the CPU for the meta cache's slot of the meta key whose hash
    /// ([`ShardStore::key_hasher`]) is `h`: a pipeline's commands prefetch
    /// their keys' lines before the first runs.
    #[inline]
    pub fn prefetch_meta(&self, h: u64) {
        if let Some(c) = &self.cache {
            c.prefetch_slot_hashed(h);
        }
    }

    /// Then the entry that slot points to (after [`ShardStore::prefetch_meta`]),
    /// or, when the slot holds another key, the key filter's lines: the
    /// read of a key the cache does not hold asks the filter next.
    #[inline]
    pub fn prefetch_meta_entry(&self, h: u64) {
        if let Some(c) = &self.cache {
            if !c.prefetch_entry_hashed(h) {
                self.keys.prefetch(h);
            }
        }
    }

    /// The owner's copy of the access stamp of meta key `key` (hashed `h`
    /// by [`ShardStore::key_hasher`]): on its record in the write tier's
    /// dirty generation (`WriteTier::with_stamp`), else on the meta
    /// cache's slot (`MetaCache::with_stamp`); `f` sees it (0: none yet)
    /// and returns the one to keep. False when neither holds the key.
    /// `all`: `f` is asked for both places (a stamp set, not read).
    #[inline]
    pub fn with_meta_stamp(&self, h: u64, key: &[u8], all: bool, f: impl Fn(u64) -> Option<u64>) -> bool {
        let tier = self.wtier.with_stamp(h, key, &f);
        if tier && !all {
            return true;
        }
        let cache = self.cache.as_ref().is_some_and(|c| c.with_stamp(h, &f));
        tier || cache
    }

    /// The hasher the write tier's maps use: a caller that hashes a key
    /// with it for its own table reads the tier with the same hash.
    pub fn key_hasher(&self) -> &ahash::RandomState {
        self.wtier.hasher()
    }

    #[inline]
    fn get_hashed<R>(&self, key: &[u8], h: Option<u64>, f: impl FnOnce(Option<&[u8]>) -> R) -> Result<R, StorageError> {
        let tier = || match h {
            Some(h) => self.wtier.get_hashed(h, key),
            None => self.wtier.get(key),
        };
        if self.overlaid() {
            if let Some(v) = self.group_read(key)? {
                return Ok(f(v.as_deref()));
            }
        }
        if let Some(c) = self.cache.as_ref().filter(|_| cache::is_meta(key)) {
            // No lock is held while `f` runs: `f` may read or write. The
            // write tier first: what it holds is the latest value (every
            // write goes there or applies it first), and a hot key written
            // again is found with one probe of a shard-owned map, not the
            // shared cache's.
            let held = tier();
            if let Some(v) = held.as_ref().filter(|_| self.wtier.shared()) {
                // Other shards read the cache, not the tier: an entry lets
                // them answer this key themselves from now on (the write
                // path keeps it current, `tier_stage`).
                if !c.holds(key) {
                    c.insert(key, v.as_deref());
                }
            }
            if let Some(v) = held {
                return Ok(f(v.as_deref()));
            }
            // The entry is kept by its count while `f` runs, not copied.
            let cached = match h {
                Some(h) => c.get_hashed(h, key),
                None => c.get(key),
            };
            if let Some(e) = cached {
                return Ok(f(e.value()));
            }
            // Not a key the store holds (`keyfilter`): RocksDB's filters on
            // every level need not say so.
            if self.filtered_out(key, h) {
                return Ok(f(None));
            }
            let v = self.read_db(key)?;
            // Absent keys are not cached on a read: a stream of new keys
            // (INCR of fresh counters) would only churn the cache (SET -P16
            // 96k with, 116k without, one run each).
            if let Some(v) = &v {
                c.insert(key, Some(v));
            }
            return Ok(f(v.as_deref()));
        }
        if let Some(v) = tier() {
            return Ok(f(v.as_deref()));
        }
        let members = self.members.as_ref().filter(|_| keys::is_sub(key));
        if let Some(v) = members.and_then(|m| m.get(key)) {
            return Ok(f(Some(&v)));
        }
        if let Some(v) = self.ahead.get(key) {
            return Ok(f(Some(&v)));
        }
        if cache::is_meta(key) && self.filtered_out(key, h) {
            return Ok(f(None));
        }
        let v = self.read_db(key)?;
        if let (Some(m), Some(v)) = (members, &v) {
            m.insert(key, Bytes::copy_from_slice(v));
        }
        Ok(f(v.as_deref()))
    }
}
