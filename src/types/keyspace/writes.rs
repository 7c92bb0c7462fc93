//! The keyspace's side of write groups, turns and transactions
//! (`storage::group`, `storage::tx`): the key counts move as commands stage
//! their writes, so after a write that failed they are counted again from
//! the meta records.

use std::cell::Cell;

use crate::error::CmdResult;
use crate::storage::group::Lost;
use crate::storage::keys;
use crate::storage::meta::Meta;
use crate::storage::StorageError;

use super::Keyspace;

/// A shard's key counts at one moment ([`Keyspace::counters`]).
pub struct Counters {
    counts: Vec<i64>,
    expires: Vec<i64>,
    ttl_sums: Vec<i128>,
}

impl Keyspace {
    /// Counts each db's keys and keys with an expiry from the meta records
    /// (one scan), and raises the version floor to the newest on disk.
    pub(super) fn recount(&self) -> CmdResult<()> {
        self.count_keys(None)
    }

    /// [`Keyspace::recount`] at the open, which also turns on the store's
    /// key filter with every key it counted (`storage::keyfilter`; none
    /// past the most it takes).
    pub(super) fn count_and_filter_keys(&self) -> CmdResult<()> {
        let mut hashes = Vec::new();
        self.count_keys(Some(&mut hashes))?;
        // Past the most it takes (the scan stops one past), it stays off.
        self.store.build_key_filter(&hashes);
        Ok(())
    }

    fn count_keys(&self, mut hashes: Option<&mut Vec<u64>>) -> CmdResult<()> {
        let hasher = self.store.key_hasher().clone();
        // The newest collection version on disk: versions come from the wall
        // clock, which may have gone back since they were written, and a
        // new incarnation must never reuse an old one's version.
        let mut newest_version = self.last_version.get();
        for db in 0..self.counts.len() {
            let (lo, hi) = keys::meta_db_range(db as u8);
            let (mut n, mut with_ttl, mut sum) = (0i64, 0i64, 0i128);
            self.store.scan(&lo, &hi, |k, v| {
                n += 1;
                if let Some(h) = hashes.as_deref_mut().filter(|h| h.len() <= crate::storage::KEY_FILTER_MOST_KEYS) {
                    h.push(hasher.hash_one(k));
                }
                if let Some(m) = Meta::decode(v) {
                    with_ttl += (m.expire_ms != 0) as i64;
                    sum += m.expire_ms as i128;
                    newest_version = newest_version.max(m.coll().map_or(0, |c| c.version));
                }
                true
            })?;
            self.counts[db].set(n);
            self.expires[db].set(with_ttl);
            self.ttl_sums[db].set(sum);
        }
        self.last_version.set(newest_version);
        Ok(())
    }

    /// Opens a write group on this shard's store (`storage::group`): the
    /// writes of the commands run until [`Keyspace::end_group`] go to
    /// RocksDB as one batch.
    pub fn begin_group(&self) {
        self.store.begin_group();
    }

    /// Writes and closes the group; returns the staged writes that were
    /// lost. The key counts were moved as each command staged its writes,
    /// so after a loss they are counted again from the records.
    #[must_use]
    pub fn end_group(&self) -> Vec<Lost> {
        let lost = self.store.end_group();
        self.recount_if_lost();
        lost
    }

    /// Closes the group unwritten: what it staged waits for
    /// [`Keyspace::end_turn`] (`storage::group`, "Turns").
    pub fn defer_group(&self) {
        self.store.defer_group();
    }

    /// Writes what this loop iteration's connections staged, if anything
    /// still waits; the key counts are counted again after a loss.
    #[inline]
    pub fn end_turn(&self) {
        self.store.end_turn();
        self.recount_if_lost();
    }

    /// Counts the keys again if a write of staged records failed: the
    /// counts moved as the commands staged their writes.
    fn recount_if_lost(&self) {
        if self.store.take_recount() {
            if let Err(e) = self.recount() {
                tracing::error!(error = %e.0, "recounting keys after a failed write");
            }
        }
    }

    /// Closes this shard's transaction once its write is done
    /// (`storage::tx`); after a failed write the key counts, moved as the
    /// commands staged their writes, are counted again.
    pub fn end_tx(&self, written: &Result<(), StorageError>) {
        self.store.end_tx(written);
        if written.is_err() {
            if let Err(e) = self.recount() {
                tracing::error!(error = %e.0, "recounting keys after a failed transaction");
            }
        }
    }

    /// The key counts as they are now, for [`Keyspace::abort_tx`].
    pub fn counters(&self) -> Counters {
        Counters {
            counts: self.counts.iter().map(Cell::get).collect(),
            expires: self.expires.iter().map(Cell::get).collect(),
            ttl_sums: self.ttl_sums.iter().map(Cell::get).collect(),
        }
    }

    /// Drops the open transaction unwritten (a script that must run again
    /// elsewhere): the caches forget what it staged and the key counts go
    /// back to `before` (taken when it began), without the recount a
    /// failed write needs.
    pub fn abort_tx(&self, before: &Counters) {
        self.store.end_tx(&Err(StorageError("transaction dropped".into())));
        for (c, v) in self.counts.iter().zip(&before.counts) {
            c.set(*v);
        }
        for (c, v) in self.expires.iter().zip(&before.expires) {
            c.set(*v);
        }
        for (c, v) in self.ttl_sums.iter().zip(&before.ttl_sums) {
            c.set(*v);
        }
    }

    /// Writes a transaction on this shard alone and closes it ([`Keyspace::end_tx`]).
    pub fn commit_tx(&self) -> Result<(), StorageError> {
        let written = self.store.write_own_tx();
        self.end_tx(&written);
        written
    }
}
