//! Another shard's view of a shard's column families (`Engine::peer`): a
//! GET of a key another shard owns reads it from here, without a hop.

use super::{cache, ShardStore, StorageError};

/// Another shard's column family, read from this shard's thread.
pub struct PeerStore(pub(super) ShardStore);

impl PeerStore {
    /// Reads a meta record as the owner would: None when only the owner
    /// can answer (its write tier may hold the record, `wtier::Held`).
    #[inline]
    pub fn get_with<R>(&self, key: &[u8], f: impl FnOnce(Option<&[u8]>) -> R) -> Result<Option<R>, StorageError> {
        let s = &self.0;
        // The cache first: the owner updates an entry it holds when the
        // record is staged into the tier (`tier_stage`), so an entry is the
        // latest value even for a key the tier holds. A cached absence (a
        // deleted key) is as exact as a cached record.
        if let Some(v) = s.cache.as_ref().filter(|_| cache::is_meta(key)).and_then(|c| c.peek(key)) {
            return Ok(Some(f(v.value())));
        }
        // Not cached: the tier's latest value is the owner's to give.
        if s.wtier.may_hold(key) {
            return Ok(None);
        }
        let v = s.read_db(key)?;
        Ok(Some(f(v.as_deref())))
    }

    /// The probe and the read pool, as [`ShardStore`]'s, for this view's
    /// reads (`tier`): a miss is fetched into the shared block cache.
    pub fn store(&self) -> &ShardStore {
        &self.0
    }
}
