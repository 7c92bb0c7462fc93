//! The write tier's write-back: dirty becomes the draining generation at
//! its limit, each later write of the tier applies the next slice of it to
//! the shard's families (without the WAL: the log has it), and the log is
//! cut below what both families persisted (see the module above for the
//! whole design).

use rocksdb::{ReadOptions, WriteBatch, WriteOptions};

use super::gen::{self, Gen};
use super::slab::Span;
use super::{direct_key, runs, MARK};
use crate::storage::{keys, ShardStore, StorageError};

/// Log records past the persisted marks after which the family holding the
/// log back is flushed.
const LOG_FLUSH_AFTER: u64 = 4096;

/// Records of the draining generation each write of the tier applies, per
/// record it adds: the generation is in RocksDB by the time dirty is half
/// full again, and the apply's cost is spread evenly over the writes (a
/// slice of 4096 per write made turns of SET -P16 wait 2-3 ms during each
/// drain: p99 45-56 ms against 16-22 ms without the tier).
pub(super) const PACE: usize = 2;

/// What [`ShardStore::tier_write_back`] left.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteBack {
    /// The tier holds nothing.
    Done,
    /// Records are left.
    More,
    /// Nothing written: try again later.
    Wait,
}

/// A generation being applied slice by slice.
pub(super) struct Drain {
    pub(super) gen: Gen,
    /// Its keys not yet applied, in key order.
    pub(super) order: runs::Merge,
    /// The log position it reached: the mark its last slice writes.
    pub(super) mark: u64,
    /// Which of the two `Held` filters stands for it.
    pub(super) filter: usize,
}

impl ShardStore {
    /// After a write of the tier: at the limit dirty starts draining, and
    /// the draining generation takes its next slice.
    pub(super) fn tier_settle(&self, full: bool, added: usize) -> Result<(), StorageError> {
        if full {
            if self.wtier.drain.borrow().is_some() {
                // Written faster than it drains: the rest goes at once.
                self.tier_drain(usize::MAX)?;
            }
            self.tier_start_drain();
        }
        self.tier_drain(PACE * added.max(1))
    }

    /// Makes dirty the draining generation, its keys sorted.
    pub(super) fn tier_start_drain(&self) {
        let t = &self.wtier;
        // The turn's undo list holds spans of dirty's chunks: a generation
        // starts draining only once the turn is logged (every caller
        // flushes the group first), so no span of it outlives its chunks.
        debug_assert!(t.undo.borrow().is_empty(), "a generation drains with its turn unlogged");
        t.logged.set(0);
        let mut gen = {
            let mut dirty = t.dirty.borrow_mut();
            let spare = t.spare.take();
            let mut room = Gen::with_room_in(dirty.map.len(), spare, &t.hasher, gen::chunk_size(t.limit.bytes));
            dirty.pass_spare(&mut room);
            std::mem::replace(&mut *dirty, room)
        };
        // Sorted as it filled: only its last run is sorted now.
        let order = gen.take_order();
        let filter = t.cur.get();
        t.cur.set(1 - filter);
        self.tier_set_room(gen.charge());
        *t.drain.borrow_mut() = Some(Drain {
            gen,
            order,
            mark: t.pos.get(),
            filter,
        });
    }

    /// Sets what the next generation may take before it drains (dirty's
    /// room), while one of `draining` bytes drains: half the shard's share
    /// of `write-tier-memory`, plus half the meta cache's free room beyond
    /// what the draining generation's records will take there, and as many
    /// log bytes (from [`Limits::log`] to [`LOG_BORROWED_MAX`]). Most of
    /// what a write-back costs is paid once per key per generation (its
    /// memtable insert, its flush, its share of each compaction), so a
    /// generation that holds a whole working set of a million keys (~230
    /// MB of 100-byte strings) writes each key back once per cycle of the
    /// log instead of once per ~560k writes (tuning.md, session 63). A
    /// cache filled by the data (larger than memory) leaves no room: the
    /// share alone, as before.
    pub(in crate::storage) fn tier_set_room(&self, draining: u64) {
        let t = &self.wtier;
        if t.limit.bytes == u64::MAX {
            return;
        }
        let half = t.limit.bytes / 2;
        let borrowed = self.cache.as_ref().map_or(0, |c| c.room().saturating_sub(draining) / 2);
        let room = half.saturating_add(borrowed);
        t.room.set(room);
        t.log_room.set(t.limit.log.max(room.min(super::LOG_BORROWED_MAX)));
    }

    /// Applies up to `n` more records of the draining generation, without
    /// the WAL (the log has them); its last slice writes its marks, clears
    /// its filter and cuts the log.
    pub(super) fn tier_drain(&self, n: usize) -> Result<(), StorageError> {
        let t = &self.wtier;
        let mut slot = t.drain.borrow_mut();
        let Some(d) = slot.as_mut() else { return Ok(()) };
        // Built in Rust, handed to RocksDB whole (`rep`), in room the
        // slices before it grew.
        let mut room = t.rep.borrow_mut();
        let wb = &mut *room;
        wb.clear();
        let slice: Vec<Span> = d.order.by_ref().take(n).collect();
        // Each record's value, found with one probe of the generation's
        // map and reused for the meta cache (it probed three times: the
        // write, the cache's insert and the record's removal; the later
        // two hit the lines the first brought in, so what the drain pays
        // is that first probe's misses: tuning.md, session 59).
        let vals: Vec<Option<Option<Span>>> = slice.iter().map(|k| d.gen.get(k)).collect();
        let cache = self.cache.as_ref();
        for (k, v) in slice.iter().zip(&vals) {
            // Its meta cache entry is written after RocksDB's write: the
            // line is on its way meanwhile.
            if let Some(c) = cache.filter(|_| crate::storage::cache::is_meta(k)) {
                c.prefetch_slot(k);
            }
            match v {
                Some(Some(v)) => wb.put_cf(self.id_of(k), k, v),
                Some(None) => wb.delete_cf(self.id_of(k), k),
                // Staged, then put back when its log append failed.
                None => {}
            }
        }
        let last = d.order.left() == 0;
        if last {
            wb.put_cf(self.ids.0, MARK, &d.mark.to_be_bytes());
            wb.put_cf(self.ids.1, MARK, &d.mark.to_be_bytes());
        }
        let mut wo = WriteOptions::default();
        wo.disable_wal(true);
        let written = self.db.write_opt(wb.to_batch(), &wo);
        if wb.capacity() > 16 << 20 {
            // A whole generation's at once (`tier_apply`): not kept. A
            // turn's slice of packed lists' records passes 1 MiB (3200
            // records of ~450 bytes at LPUSH -P16): dropped at 1 MiB, it
            // grew again from nothing every turn (2.3% of the shard).
            *wb = crate::storage::rep::Rep::default();
        }
        drop(room);
        if let Err(e) = written {
            // Not applied: the next slice takes them again.
            d.order.put_back(slice);
            return Err(e.into());
        }
        // The meta cache learns what left for the families (a write into
        // the tier does not touch it: every read of the owner looks in
        // the tier first, and other shards leave keys it may hold to the
        // owner), before the generation's `Held` filter is cleared.
        if let Some(c) = &self.cache {
            // Dirty's later write is the newer value (peers trust the cache).
            let dirty = t.dirty.try_borrow().ok();
            let metas = || slice.iter().zip(&vals).filter(|(k, _)| crate::storage::cache::is_meta(k));
            for (k, _) in metas() {
                c.prefetch_entry(k);
            }
            for (k, v) in metas() {
                let newer = dirty.as_ref().and_then(|d| d.get(k));
                if let Some(v) = newer.or(*v) {
                    c.insert(k, v.as_deref());
                }
            }
        }
        // The member cache forgets them (`mcache`: a read refills it).
        if let Some(m) = &self.members {
            for k in slice.iter().filter(|k| keys::is_sub(k)) {
                m.remove(k);
            }
        }
        // Written: the generation keeps them to its end (a read finds the
        // value RocksDB now holds; a write goes to dirty, read first).
        // They were removed here a slice at a time while records held
        // reference counts, whose drop with the map took one turn 13-30
        // ms for a million; a map of spans is emptied by a memset.
        if !last {
            return Ok(());
        }
        if let Some(h) = &t.held {
            h[d.filter].clear();
        }
        // Its chunks go to dirty once nothing of it is left (`gen`): now,
        // or once no read holds a span of them (`slab::Pins`); and its
        // runs' room.
        let chunks = d.gen.take_chunks();
        let runs = slot.take().map(|Drain { gen, order, .. }| {
            *t.spare.borrow_mut() = gen.into_spare_map();
            order.into_spare()
        });
        drop((slot, slice));
        // A turn not yet logged holds spans in its undo list: never of
        // this generation (see `tier_start_drain`), but its chunks wait
        // for the turn's end anyway rather than trust that.
        let unlogged = t.undo.try_borrow().map_or(true, |u| !u.is_empty());
        let dirty = t.dirty.try_borrow_mut();
        t.pins.release(chunks, unlogged, |c| {
            if let Ok(mut d) = dirty {
                // As many as dirty's room takes (a generation that
                // borrowed the cache's room freed and faulted in hundreds
                // of MB of chunks each time when only half the share was
                // kept).
                d.give_chunks(c, t.room.get().saturating_mul(2));
                d.reuse_runs(runs.unwrap_or_default(), t.room.get().saturating_mul(2));
            }
        });
        t.any.set(!t.dirty.borrow().map.is_empty());
        self.tier_cut()
    }

    /// Applies everything the tier holds to the shard's families: the
    /// draining generation's rest, then dirty, in key order, without the
    /// WAL (the log has it).
    pub(in crate::storage) fn tier_apply(&self) -> Result<(), StorageError> {
        if !self.wtier.any.get() {
            return Ok(());
        }
        if self.group.held() {
            // Staged records reach the families only once logged.
            self.flush_group()?;
        }
        self.tier_drain(usize::MAX)?;
        if self.wtier.dirty.borrow().map.is_empty() {
            return Ok(());
        }
        self.tier_start_drain();
        self.tier_drain(usize::MAX)
    }

    /// Before a range read of `[from, to)`: what the tier holds that the
    /// read could meet is written to the families first. A read inside one
    /// collection (its members, the common case) writes only that
    /// collection's records (older generation first, without the WAL) and
    /// drops them from the tier (a 1M-member RENAME stalled PINGs 190 ms
    /// applying a 128 MB tier whole); any other read that meets the tier
    /// applies all of it ([`ShardStore::tier_apply`]).
    pub(in crate::storage) fn tier_apply_range(&self, from: &[u8], to: &[u8]) -> Result<(), StorageError> {
        let t = &self.wtier;
        if !t.meets(from, to) {
            return Ok(());
        }
        let Some(coll) = Gen::coll_of_range(from, to, &t.hasher) else {
            return self.tier_apply();
        };
        self.tier_write_coll(coll, usize::MAX).map(|_| ())
    }

    /// Writes up to `max` of what the tier holds of `[from, to)` (a read
    /// inside one collection, in slices) to the families and drops it from
    /// the tier; true when the tier holds none of it after. Called again
    /// between turns until it is true, a big collection's records are
    /// written a part at a time before its snapshot ([`ShardStore::snapshot_of`]).
    pub fn write_out_part(&self, from: &[u8], to: &[u8], max: usize) -> Result<bool, StorageError> {
        let t = &self.wtier;
        if !t.meets(from, to) {
            return Ok(true);
        }
        match Gen::coll_of_range(from, to, &t.hasher) {
            Some(coll) => self.tier_write_coll(coll, max),
            None => Ok(true),
        }
    }

    /// Whether the member family's memtables wait for flushes (two or
    /// more immutable ones): RocksDB is about to delay writes, sleeping the
    /// shard's thread in them, so a write-out that can wait should
    /// (`write_out_part`'s callers; with 4 MB write buffers a big RENAME's
    /// write-out stalled both shards 220-260 ms that way).
    pub fn flush_behind(&self) -> bool {
        self.behind(self.sub)
    }

    fn behind(&self, cf: &rocksdb::ColumnFamily) -> bool {
        self.db
            .property_int_value_cf(cf, "rocksdb.num-immutable-mem-table")
            .ok()
            .flatten()
            .is_some_and(|n| n >= 2)
    }

    /// Writes back up to `n` of the tier's records while the shard has
    /// nothing else to do (`write-tier-idle-drain`): the draining
    /// generation's next ones, or dirty's, made the draining generation
    /// when none drains. A burst of writes after an idle spell then finds
    /// the tier empty and pays no drain of older records (the rows of
    /// perf/compare after its 1.5M-key preload paid for it: SET -P16 on
    /// 1000 keys 0.62 -> 0.31 of redis-server with the 256 MB tier).
    pub fn tier_write_back(&self, n: usize) -> Result<WriteBack, StorageError> {
        let t = &self.wtier;
        if !t.any.get() {
            return Ok(WriteBack::Done);
        }
        if self.group.held() || self.in_tx() || self.engine.disk.short() || self.behind(self.cf) || self.behind(self.sub) {
            // Staged records are not logged yet (a new draining generation
            // would take them), a transaction is open here, the disk is (nearly) full (what it writes
            // takes space the log still takes too: a full-disk test found
            // 8 MB free where 24 MB were freed), or the families' flushes
            // are behind (RocksDB would delay the writes, sleeping the
            // shard).
            return Ok(WriteBack::Wait);
        }
        if t.drain.borrow().is_none() {
            if t.dirty.borrow().map.is_empty() {
                return Ok(WriteBack::Done);
            }
            self.tier_start_drain();
        }
        self.tier_drain(n)?;
        Ok(if t.any.get() { WriteBack::More } else { WriteBack::Done })
    }

    /// Writes up to `max` records of the collection hashed `coll` (the
    /// older generation's first, without the WAL) and drops them from the
    /// tier; true when it holds none of the collection after.
    pub(super) fn tier_write_coll(&self, coll: u64, max: usize) -> Result<bool, StorageError> {
        let t = &self.wtier;
        if self.group.held() {
            // Staged records reach the families only once logged.
            self.flush_group()?;
        }
        // The part taken is read after the borrows end.
        let _pin = t.pins.pin();
        let mut left = max;
        loop {
            // The older generation's first: dirty's record of a key both
            // hold is the newer.
            let older = t.drain.borrow().as_ref().is_some_and(|d| d.gen.holds_coll(coll));
            let (part, n) = if older {
                let drain = t.drain.borrow();
                drain.as_ref().map(|d| d.gen.coll_part(coll, left)).unwrap_or_default()
            } else {
                t.dirty.borrow().coll_part(coll, left)
            };
            if !part.is_empty() {
                let mut wb = WriteBatch::default();
                for (k, v) in &part {
                    match v {
                        Some(v) => wb.put_cf(self.sub, &k[..], &v[..]),
                        None => wb.delete_cf(self.sub, &k[..]),
                    }
                }
                let mut wo = WriteOptions::default();
                wo.disable_wal(true);
                self.db.write_opt(wb, &wo)?;
                if let Some(m) = &self.members {
                    for (k, _) in &part {
                        m.remove(k);
                    }
                }
            }
            let emptied = if older {
                t.drain.borrow_mut().as_mut().is_none_or(|d| d.gen.drop_coll_keys(coll, n))
            } else {
                t.dirty.borrow_mut().drop_coll_keys(coll, n)
            };
            t.any.set(!t.dirty.borrow().map.is_empty() || t.drain.borrow().is_some());
            left -= n;
            if !older || !emptied || left == 0 {
                return Ok(emptied && (!older || !t.dirty.borrow().holds_coll(coll)));
            }
        }
    }

    /// Forgets what both generations hold in `[from, to)`: a range delete
    /// (a DEL of a collection, a trim, FLUSHDB) replaces it all.
    /// (Applied first, a FLUSHALL after a burst of SETs wrote the whole
    /// tier to the memtables only to delete it.)
    /// Inside one collection, only its own keys are looked at.
    pub(super) fn tier_forget_range(&self, from: &[u8], to: &[u8]) {
        let t = &self.wtier;
        let coll = Gen::coll_of_range(from, to, &t.hasher);
        let forget = |g: &mut Gen| match coll {
            Some(c) => g.forget_coll_range(c, from, to),
            None => g.forget_range(from, to),
        };
        if let Some(d) = t.drain.borrow_mut().as_mut() {
            forget(&mut d.gen);
        }
        forget(&mut t.dirty.borrow_mut());
    }

    /// Writes what the shard holds in memory (its open group, its write
    /// tier) to its families, so that they hold every write so far
    /// (COMPACT, DEBUG COMPACT and DEBUG RELOAD, before they flush and
    /// compact).
    pub fn write_back(&self) -> Result<(), StorageError> {
        self.flush_group()?;
        self.tier_apply()
    }

    /// Cuts the log below what both families persisted (not while a
    /// checkpoint copies it).
    pub(super) fn tier_cut(&self) -> Result<(), StorageError> {
        let Some(log) = &self.wtier.log else { return Ok(()) };
        let mut ro = ReadOptions::default();
        ro.set_read_tier(rocksdb::ReadTier::Persisted);
        let mark = |cf| -> Result<u64, StorageError> {
            Ok(self
                .db
                .get_pinned_cf_opt(cf, MARK, &ro)?
                .and_then(|v| v.as_ref().try_into().ok())
                .map_or(0, u64::from_be_bytes))
        };
        let (meta, sub) = (mark(self.cf)?, mark(self.sub)?);
        let safe = meta.min(sub);
        if safe > self.wtier.cut.get() && !self.engine.tier_cuts_paused() {
            log.cut(safe)?;
            let mut wb = WriteBatch::default();
            wb.delete_range_cf(self.cf, direct_key(0), direct_key(safe + 1));
            self.engine.write_in(self.home, wb)?;
            self.wtier.cut.set(safe);
        }
        // A family written little flushes seldom and holds the log back: flush it
        // now (from another thread). So do hot keys written in place, once the log
        // holds closed segments the marks do not pass: their drains put little in
        // the memtables (1000 keys' SETs left 160 MB of log before 4096
        // positions). Not while only the open segment is left: no cut follows.
        let held = || log.has_closed() && log.bytes() > 2 * self.wtier.log_room.get();
        if self.wtier.pos.get() - safe > LOG_FLUSH_AFTER || held() {
            crate::storage::wal::flush_aside(self.db, if meta <= sub { self.cf } else { self.sub }, &self.wtier.flushing);
        }
        Ok(())
    }
}
