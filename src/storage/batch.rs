//! A shard's write batch ([`Batch`]): the records of one atomic write and
//! what the caches must learn from it.

use bytes::Bytes;

use super::{rep, tx};

/// Writes staged for one atomic [`ShardStore::write`](super::ShardStore::write) to one shard, with the
/// meta records they change (applied to the shard's meta cache once RocksDB
/// has them). Boxed, and the boxes reused ([`ShardStore::batch`](super::ShardStore::batch)): a
/// command's batch is moved from its writer to the store several times,
/// and inline its 176 bytes were a `memcpy` each time (with the collection
/// writer around it, ~10% of SADD -P16's CPU was `memmove`).
#[derive(Default)]
pub struct Batch(Box<BatchBody>);

impl std::ops::Deref for Batch {
    type Target = BatchBody;
    #[inline]
    fn deref(&self) -> &BatchBody {
        &self.0
    }
}

impl std::ops::DerefMut for Batch {
    #[inline]
    fn deref_mut(&mut self) -> &mut BatchBody {
        &mut self.0
    }
}

/// What a [`Batch`] holds.
#[derive(Default)]
pub struct BatchBody {
    pub(super) wb: rep::Rep,
    pub(super) meta: Vec<(Box<[u8]>, Option<Bytes>)>,
    pub(super) clears_meta: bool,
    /// Has a range delete (written on its own, never grouped).
    pub(super) has_range: bool,
    /// Hashes of the keys written, while a group is open (`group`).
    pub(super) hashes: Vec<u64>,
    /// The writes, while a transaction is open (`tx`).
    pub(super) ops: Vec<tx::Op>,
    /// With a database per shard: records for the first database's
    /// default family (intents, `intent`), written with `wb` as one write.
    /// Made only when needed: every command's batch would otherwise
    /// allocate a second RocksDB batch.
    pub(super) main: Option<rep::Rep>,
    /// Its meta records are not in `meta` (made for the write tier).
    pub(super) unnoted: bool,
    /// Its range deletes over member records, for the member cache.
    pub(super) sub_ranges: Vec<tx::Span>,
    /// It writes member records (the member cache must forget them).
    pub(super) has_sub: bool,
    /// Indexes in `wb` of [`ShardStore::put_new`](super::ShardStore::put_new)'s puts, ascending.
    pub(super) fresh: Vec<u32>,
}

impl BatchBody {
    /// Empties it for reuse, keeping its buffers' room.
    pub(super) fn clear(&mut self) {
        self.wb.clear();
        self.meta.clear();
        self.hashes.clear();
        self.ops.clear();
        self.clears_meta = false;
        self.has_range = false;
        self.unnoted = false;
        self.sub_ranges.clear();
        self.has_sub = false;
        self.fresh.clear();
    }
}
