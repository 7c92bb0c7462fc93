//! The engine's durability: each write batch, the WAL's group flushes and
//! syncs (`appendfsync`), the disk guard's probe, memtable flushes,
//! compactions and checkpoints.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rocksdb::WriteBatch;

use super::{disk, Db, Engine, Fsync, StorageError};

impl Engine {
    /// The disk guard's periodic check (about once a second): free space of
    /// the data directory, and a probe write while writes are refused.
    pub fn check_disk(&self) {
        let free = disk::free_bytes(&self.dir).unwrap_or(u64::MAX);
        self.disk.check(free, || {
            let stamp = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64);
            let db = self.main();
            db.put(b"basalt:disk-probe", stamp.to_be_bytes()).map_err(|e| e.into_string())?;
            // With a buffered WAL the put alone does not touch the disk.
            db.flush_wal(false).map_err(|e| e.into_string())
        });
    }

    /// Syncs every write tier log and every database's WAL to disk (the
    /// logs first: a batch that skipped the tier is in its log before its
    /// WAL, `wtier`).
    pub fn sync_wal(&self) -> Result<(), StorageError> {
        self.sync_tier_logs()?;
        for d in &self.dbs {
            // Noted by the disk guard: with a database per shard, this
            // sync may be the first to meet a full disk, and the writes
            // after it get RocksDB's "Writer has previous error".
            self.flush_wal(d, true)?;
        }
        Ok(())
    }

    /// True when a write made so far is not yet where a reply may promise
    /// it is: in the WAL file (with `manual_wal_flush`), synced (under
    /// `appendfsync always`). The connection must call
    /// [`Engine::flush_written`] before it replies.
    pub fn unflushed(&self) -> bool {
        let always = self.fsync() == Fsync::Always;
        if always && self.tier_logs.iter().flatten().any(|l| l.unsynced()) {
            return true;
        }
        self.dbs.iter().any(|d| {
            let w = d.written.load(Ordering::Acquire);
            if always {
                d.synced.load(Ordering::Acquire) < w
            } else {
                self.manual_wal_flush && d.flushed.load(Ordering::Acquire) < w
            }
        })
    }

    /// Group commit: one WAL write (and under `always` one sync) per
    /// database covers every write made in it before, from any shard.
    /// Connections call this after running their batch (having first let
    /// the other ready connections run theirs) and before replying; the
    /// first pays, the rest find their writes already flushed.
    pub fn flush_written(&self) -> Result<(), StorageError> {
        let always = self.fsync() == Fsync::Always;
        // The write tier's logs are in their files already (one write per
        // turn, `wtier`); under `always` they are synced, before the WALs.
        if always {
            let synced = self.sync_tier_logs()?;
            self.group_syncs.fetch_add(synced, Ordering::Relaxed);
        }
        for d in &self.dbs {
            let target = d.written.load(Ordering::Acquire);
            if always {
                if d.synced.load(Ordering::Acquire) >= target {
                    continue;
                }
                self.flush_wal(d, true)?;
                d.synced.fetch_max(target, Ordering::AcqRel);
                self.group_syncs.fetch_add(1, Ordering::Relaxed);
            } else if self.manual_wal_flush && d.flushed.load(Ordering::Acquire) < target {
                self.flush_wal(d, false)?;
            }
            d.flushed.fetch_max(target, Ordering::AcqRel);
        }
        Ok(())
    }

    /// Writes RocksDB's buffered WAL records to the file (with `manual_wal_flush`;
    /// the every-second thread calls it so background writes such as
    /// expirations reach the file too).
    pub fn flush_buffered(&self) -> Result<(), StorageError> {
        if self.manual_wal_flush {
            for d in &self.dbs {
                let target = d.written.load(Ordering::Acquire);
                self.flush_wal(d, false)?;
                d.flushed.fetch_max(target, Ordering::AcqRel);
            }
        }
        Ok(())
    }

    /// Writes the WAL records RocksDB still buffers to their files, in
    /// every database that has some, before the write tier appends a log
    /// record (`ShardStore::tier_append`): a log record reaches its file at
    /// once, and one that depends on a write past the tier (a stored
    /// collection's meta record after its slices) must not outlive it. Left
    /// in RocksDB's buffer until the reply, a kill -9 between the two kept
    /// the meta of a ZUNIONSTORE's new key without its members ("corrupt
    /// record in storage", tests/crash_atomic.rs). Only then: a write past
    /// the tier with no log record after it in the turn (a script's, an
    /// EXEC's) waits for the turn's one flush ([`Engine::flush_written`]).
    pub(super) fn flush_before_log(&self) -> Result<(), StorageError> {
        if !self.manual_wal_flush {
            return Ok(());
        }
        for d in &self.dbs {
            let target = d.written.load(Ordering::Acquire);
            if d.flushed.load(Ordering::Acquire) < target {
                self.flush_wal(d, false)?;
                d.flushed.fetch_max(target, Ordering::AcqRel);
            }
        }
        Ok(())
    }

    /// Syncs the first database's WAL (a write of the default family that
    /// must be on disk before it takes effect: SWAPDB, FUNCTION).
    pub(super) fn sync_main(&self) -> Result<(), StorageError> {
        self.flush_wal(&self.dbs[0], true)
    }

    /// Syncs the write tier's logs that have records not yet synced; how
    /// many it synced (group syncs, as the WALs' count).
    fn sync_tier_logs(&self) -> Result<u64, StorageError> {
        let mut n = 0;
        for l in self.tier_logs.iter().flatten() {
            if l.unsynced() {
                l.sync().inspect_err(|e| self.disk.note_write_error(&e.0))?;
                n += 1;
            }
        }
        Ok(n)
    }

    /// Whether the write tier's logs must not be cut now (a checkpoint is
    /// copying them).
    pub(super) fn tier_cuts_paused(&self) -> bool {
        self.tier_cut_pauses.load(Ordering::Acquire) > 0
    }

    fn flush_wal(&self, d: &Db, sync: bool) -> Result<(), StorageError> {
        d.db.flush_wal(sync).map_err(|e| {
            let e = StorageError::from(e);
            self.disk.note_write_error(&e.0);
            e
        })
    }

    /// Flushes memtables and syncs the WAL: used at shutdown.
    pub fn shutdown(&self) -> Result<(), StorageError> {
        self.sync_wal()?;
        self.flush_memtables()
    }

    /// Flushes every column family's memtable to SST files, after which
    /// RocksDB drops the WAL files they covered (BGREWRITEAOF, DEBUG RELOAD).
    pub fn flush_memtables(&self) -> Result<(), StorageError> {
        // Every column family: `DB::flush` alone flushes only the default
        // one, and the shards' memtables came back from the WAL on restart.
        for (db, cf) in self.shard_families(self.meta_caches.len()) {
            db.flush_cf(cf)?;
        }
        for d in &self.dbs {
            d.db.flush()?;
        }
        Ok(())
    }

    /// Compacts every shard's column families whole, down to and through
    /// the last level, so the compaction filters (`gc`) see every record and
    /// range tombstones give their space back (COMPACT, DEBUG COMPACT).
    /// Blocking: run it off the shards' threads.
    pub fn compact_all(&self) -> Result<(), StorageError> {
        self.flush_memtables()?;
        let mut o = rocksdb::CompactOptions::default();
        o.set_bottommost_level_compaction(rocksdb::BottommostLevelCompaction::Force);
        o.set_exclusive_manual_compaction(false);
        for (db, cf) in self.shard_families(self.meta_caches.len()) {
            db.compact_range_cf_opt(cf, None::<&[u8]>, None::<&[u8]>, &o);
        }
        Ok(())
    }

    /// Creates a RocksDB checkpoint (hard links, consistent) at `path`.
    ///
    /// With the write tier on, each shard's log is copied in beside its
    /// database once that database's copy is made, no log being cut in
    /// between: the copy holds every record past what the copied families
    /// persisted (and perhaps later ones), which its opening replays.
    pub fn checkpoint(&self, path: &Path) -> Result<(), StorageError> {
        if path.exists() {
            std::fs::remove_dir_all(path).map_err(|e| StorageError(e.to_string()))?;
        }
        self.tier_cut_pauses.fetch_add(1, Ordering::AcqRel);
        let made = self.checkpoint_dbs(path).and_then(|()| self.checkpoint_logs(path));
        self.tier_cut_pauses.fetch_sub(1, Ordering::AcqRel);
        made
    }

    /// The write tier's logs into a checkpoint at `path` (as
    /// [`Engine::checkpoint`] places each database).
    fn checkpoint_logs(&self, path: &Path) -> Result<(), StorageError> {
        for (i, log) in self.tier_logs.iter().enumerate() {
            let Some(log) = log else { continue };
            let d = self.homes.get(i).copied().unwrap_or(0);
            let at = if d == 0 {
                path.to_path_buf()
            } else {
                path.join(format!("shard-{}", d - 1))
            };
            log.copy_to(&super::wtier::log_dir(&at, i))?;
        }
        Ok(())
    }

    fn checkpoint_dbs(&self, path: &Path) -> Result<(), StorageError> {
        let cp = rocksdb::checkpoint::Checkpoint::new(self.main())?;
        cp.create_checkpoint(path)?;
        // With a database per shard, each one's beside the first's, in
        // `shard-<i>` under it. They are taken one after another: a write
        // over several databases in between is in some of them, with its
        // redo records, which complete it when the copy is opened.
        for (i, d) in self.dbs.iter().enumerate().skip(1) {
            let cp = rocksdb::checkpoint::Checkpoint::new(&d.db)?;
            cp.create_checkpoint(path.join(format!("shard-{}", i - 1)))?;
        }
        Ok(())
    }

    /// Writes one batch to database `d` (a shard's home, or the first),
    /// whatever it holds (a command's, a write group, a transaction). A
    /// failure is noted by the disk guard; a success spends the guard's
    /// budget and moves the database's `written`, so the connection
    /// flushes its WAL before it replies.
    pub(super) fn write_in(&self, d: &Db, wb: WriteBatch) -> Result<(), StorageError> {
        let bytes = wb.size_in_bytes();
        if let Err(e) = d.db.write(wb) {
            let e = StorageError::from(e);
            self.disk.note_write_error(&e.0);
            return Err(e);
        }
        if self.disk.spend(bytes) {
            self.check_disk();
        }
        d.written.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }
}

/// Asks RocksDB to flush `cf` in the background, from a thread of its own,
/// one request at a time (`busy` says one is under way): a manual flush
/// first waits in its caller until it would not stall writes
/// (`allow_write_stall`, which the C API cannot set), and on a shard's
/// thread (the write tier's cut, `wtier`) that held every client of the
/// core 40-110 ms, every half second under SET -P16 over 1M keys.
pub(super) fn flush_aside(db: &'static rocksdb::DB, cf: &'static rocksdb::ColumnFamily, busy: &Arc<AtomicBool>) {
    if busy.swap(true, Ordering::AcqRel) {
        return;
    }
    let done = busy.clone();
    let spawned = std::thread::Builder::new().name("tier-flush".into()).spawn(move || {
        let mut fo = rocksdb::FlushOptions::default();
        fo.set_wait(false);
        if let Err(e) = db.flush_cf_opt(cf, &fo) {
            tracing::warn!("a flush for the write tier's cut failed: {e}");
        }
        done.store(false, Ordering::Release);
    });
    if let Err(e) = spawned {
        tracing::warn!("no thread for a flush: {e}");
        busy.store(false, Ordering::Release);
    }
}
