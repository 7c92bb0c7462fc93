//! The write tier (issue 35, item 3; issue 52, item 1; on by default,
//! `write-tier-memory`): a turn's records are appended as one record to
//! the shard's log file (`file`; one write(2) per turn, synced with the
//! WALs: before a reply under `appendfsync always`, once a second under
//! `everysec`) and wait in a shard-owned hash table ("dirty") that every
//! read of the owner looks in. A command's records enter dirty when it
//! stages them ([`ShardStore::tier_stage`]), copied into the generation's
//! chunks (`gen`); the turn's log append ([`ShardStore::tier_commit`]:
//! each key it changed once, at its last value) makes them durable, or
//! puts back what they replaced if it fails. With
//! one shard the meta cache learns a record when the drain applies it
//! (with several, see below). Once it holds
//! `StoreOptions::write_tier` records it becomes the draining generation:
//! its keys were sorted in runs as they came (`runs`), and each later
//! write of the tier applies the next [`drain::PACE`] times as many of them as it
//! adds to the shard's families, in one batch without the WAL, so the
//! memtable inserts walk the skiplists in key order and no write stops the
//! shard for a whole generation. Reads look in dirty, then in the draining
//! generation. A write that skips it (a range delete, a batch with an
//! intent, one too big) first has the tier's records of its own keys
//! forgotten and a collection it range-deletes written, or applies both
//! generations when its range is wider ([`ShardStore::tier_clear_for`]);
//! a shared transaction applies both ([`ShardStore::tier_apply`]); a
//! range read that could meet a record it holds writes only that
//! collection's records when it stays inside one collection, merges the
//! tier's records when it reads the meta records forward (`view`), else
//! applies both ([`ShardStore::tier_apply_range`]).
//!
//! The last slice of a generation also writes, in both families, the log
//! position the generation reached (the mark, [`MARK`]); RocksDB persists a
//! family's records in order, so a mark found in the family's SST files
//! says that family holds every record up to it. After each apply the log's
//! segments wholly below the lower of the two persisted marks are deleted,
//! and at startup (`log::replay_files`) whatever the log still holds past
//! it is written again, before anything else reads the families, each
//! record only into a family whose own mark is below it (`own_records_past`).
//!
//! A plain write while no group is open (a one-shard MSET's, expiry's)
//! is a group of its own (`ShardStore::write`). A write that skips the
//! tier (a range delete, a transaction, a batch with an intent record)
//! goes to the families with the WAL after the tier is applied, carrying a copy of itself as a direct record
//! ([`DIRECT`]) in the same batch: a replay after a crash would otherwise
//! write older log records over it.
//!
//! Other shards read a GET's meta record straight from the owner's meta
//! cache and RocksDB (`PeerStore`), not from the tier. So each tier keeps
//! two [`held::Held`] filters other shards read, one per generation: a bit
//! per hashed meta key the generation holds, set before the write is
//! acknowledged and cleared once the generation is applied. A peer that
//! misses the meta cache and finds the key's bit set leaves the read to
//! the owner (a false positive costs a hop, never a wrong answer). A peer
//! that finds the key in the cache answers from it: with several shards
//! staging a meta record updates the entry the cache holds, the owner's
//! read of a key the tier holds caches it, a drain never puts an older
//! value over dirty's, and a failed log append empties the cache.
//!
//! A transaction over several shards writes every shard's part in one
//! batch (`tx`): each shard with a tier applies it when the transaction
//! opens, and each part it stages carries a direct record of its own.
//!
//! Until issue 52 the log was a column family (`shard-<i>-log`); one left
//! by an older run is replayed through the WAL at startup and dropped.
//!
//! Its memory is `write-tier-memory` (all shards together; [`Limits`]):
//! dirty starts draining at half a shard's share (`Gen::charge`), or once
//! the log grew by the share since the last drain began (64 KiB to 64 MiB,
//! [`Limits::log`]). While the shard's meta cache has room, dirty also
//! borrows half of it, for records and as many log bytes (up to 128 MiB;
//! values they overwrote still drain it at half the share): a working set
//! of a million keys stays in one generation and is written back once a
//! cycle of the log ([`ShardStore::tier_set_room`]). INFO memory: `wtier_records`, `wtier_bytes`,
//! `wtier_log_bytes`, `wtier_budget`, `wtier_room`. On by default: 256 MB, or 10% of a
//! memory budget (`budget`); `write-tier-memory 0` (and no `BASALT_TIER`)
//! turns it off.

mod drain;
pub use drain::WriteBack;
mod file;
mod gen;
mod held;
mod limits;
pub(super) use limits::Limits;
use limits::LOG_BORROWED_MAX;
mod log;
mod recs;
mod runs;
mod slab;
#[cfg(test)]
mod tests;
mod turn;
mod view;

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use ahash::AHashSet;
use bytes::Bytes;
use rocksdb::{WriteBatch, WriteOptions};

use super::{ShardStore, StorageError};
use drain::Drain;
pub(super) use file::{log_dir, TierLog};
use gen::Gen;
#[cfg(test)]
use gen::RECORD_OVERHEAD;
pub(super) use held::Held;
pub(super) use log::{each_record, logs, replay_all, replay_files, start_of, Replayed};

/// Where each family keeps the log position its applies reached (sorts
/// before the TTL indexes, `0xFF 'T'`; the compaction filters keep it).
pub(super) const MARK: &[u8] = &[0xFF, b'A'];

/// Where a batch that skipped the tier keeps its copy, in the shard's meta
/// family, by log position (`0xFF 'B' pos`, after the marks, before the
/// TTL index; the compaction filters keep it): written in the batch itself,
/// so it exists exactly when the batch does, and replayed in position
/// order among the log file's records.
pub(super) const DIRECT: &[u8] = &[0xFF, b'B'];

/// The direct record key of position `pos`.
pub(super) fn direct_key(pos: u64) -> [u8; 10] {
    let mut k = [0; 10];
    k[..2].copy_from_slice(DIRECT);
    k[2..].copy_from_slice(&pos.to_be_bytes());
    k
}

/// The most records a write outside any group may have to go through the
/// tier ([`ShardStore::tier_stage_alone`]).
pub(super) const LONE_TIER_RECORDS: usize = 64;

/// What a shard's tier holds (INFO memory, summed over the shards).
#[derive(Clone, Copy, Debug, Default)]
pub struct TierSize {
    /// Records in memory, and the memory they take (with
    /// [`gen::RECORD_OVERHEAD`] each).
    pub records: u64,
    pub bytes: u64,
    /// Bytes in its log's segments.
    pub log_bytes: u64,
    /// Its share of `write-tier-memory` (0: no cap by memory).
    pub budget: u64,
    /// What dirty may take before it drains, with what it borrowed of the
    /// meta cache's room ([`ShardStore::tier_set_room`]; 0: no cap).
    pub room: u64,
}

/// Per shard, its log (with the tier on).
pub(super) type Logs = Vec<Option<Arc<TierLog>>>;

/// Per shard, the batches its log replay loaded, until the owner's store
/// takes them ([`Replayed::loaded`]).
pub(super) type Loaded = Vec<std::sync::Mutex<Vec<Bytes>>>;

/// Each shard's tier, as the engine keeps it (`open_logs`).
pub(super) struct Tiers {
    pub(super) starts: Vec<u64>,
    pub(super) logs: Logs,
    pub(super) loaded: Loaded,
    /// With the tier on and several shards: what each tier may hold, for
    /// other shards' reads.
    pub(super) held: Vec<Option<Arc<[Held; 2]>>>,
}

/// Per shard: where its log positions go on, and its log (with the tier
/// on), in the directory of the database holding its families; what its
/// replay loaded, whose meta keys are marked in the shard's first `held`
/// filter before any peer reads.
pub(super) fn open_logs(opts: &crate::storage::StoreOptions, opened: &mut super::open::Opened) -> Result<Tiers, StorageError> {
    let held: Vec<_> = (0..opts.shards)
        .map(|_| (opts.tier_on() && opts.shards > 1).then(|| Arc::new([Held::new(), Held::new()])))
        .collect();
    let mut loaded: Loaded = (0..opts.shards).map(|_| Default::default()).collect();
    for r in opened.tier_starts.iter_mut().filter(|r| r.shard < opts.shards) {
        let batches = std::mem::take(&mut r.loaded);
        if let Some(h) = held.get(r.shard).and_then(|h| h.as_ref()) {
            for (k, _) in batches.iter().filter_map(log::records).flatten() {
                if super::cache::is_meta(&k) {
                    h[0].set(&k);
                }
            }
        }
        if let Some(l) = loaded.get_mut(r.shard) {
            l.get_mut().unwrap_or_else(|e| e.into_inner()).extend(batches);
        }
    }
    let (starts, logs) = start_logs(opts, opened)?;
    Ok(Tiers {
        starts,
        logs,
        loaded,
        held,
    })
}

fn start_logs(opts: &crate::storage::StoreOptions, opened: &super::open::Opened) -> Result<(Vec<u64>, Logs), StorageError> {
    let (mut starts, mut logs) = (Vec::with_capacity(opts.shards), Vec::with_capacity(opts.shards));
    for i in 0..opts.shards {
        let d = opened.homes.get(i).copied().unwrap_or(0);
        starts.push(start_of(&opened.dbs[d], i, &opened.tier_starts)?);
        let log = match opts.tier_on() {
            false => None,
            true => Some(Arc::new(TierLog::open(log_dir(&opened.db_dirs[d], i))?)),
        };
        logs.push(log);
    }
    Ok((starts, logs))
}

/// The log family of shard `i` (before issue 52).
pub(super) fn log_cf_name(i: usize) -> String {
    format!("shard-{i}-log")
}

/// The shard's write tier.
pub(super) struct WriteTier {
    /// The engine's next position for the shard, moved past this tier's
    /// last when it is dropped (intent replay's stores come before the
    /// shard's own: positions taken twice would let a persisted mark
    /// claim the later store's records).
    resume: Option<&'static AtomicU64>,
    pub(super) log: Option<Arc<TierLog>>,
    /// What other shards consult, a filter per generation (None with one
    /// shard); `cur` is dirty's.
    pub(super) held: Option<Arc<[Held; 2]>>,
    cur: Cell<usize>,
    limit: Limits,
    pos: Cell<u64>,
    /// The persisted mark the log was last cut below (at start, where
    /// replay ended: a replay that kept the log leaves older records in it
    /// until a mark past them is persisted and the next cut takes them).
    cut: Cell<u64>,
    /// Log bytes appended since dirty last started draining.
    logged: Cell<u64>,
    /// What dirty may take before it drains: memory as the budget counts
    /// it ([`Gen::charge`]) and log bytes; half the shard's share and
    /// [`Limits::log`], and more when the meta cache has room
    /// ([`ShardStore::tier_set_room`]).
    room: Cell<u64>,
    log_room: Cell<u64>,
    dirty: RefCell<Gen>,
    drain: RefCell<Option<Drain>>,
    /// The last applied generation's map, emptied, for the next one
    /// ([`recs::Recs::into_spare`]).
    spare: RefCell<Option<recs::Map>>,
    /// Whether dirty or the draining generation holds anything (a cheap
    /// check for every read).
    any: Cell<bool>,
    hasher: ahash::RandomState,
    /// What dirty held before each record staged since the last log
    /// append, put back if the append fails ([`ShardStore::tier_stage`]).
    undo: RefCell<Vec<gen::Undo>>,
    /// The bytes of the values written over in place since the last log
    /// append, in order (`Gen::put_over`), for the same.
    saved: RefCell<Vec<u8>>,
    /// The turn's log record ([`ShardStore::tier_commit`]), its room kept.
    turn: RefCell<super::rep::Rep>,
    /// The keys it holds so far (by address of the tier's key), and where
    /// in `undo` each one's last change is.
    seen: RefCell<AHashSet<usize>>,
    last: RefCell<Vec<usize>>,
    /// Whether a flush the cut asked for is under way (`wal::flush_aside`).
    flushing: Arc<AtomicBool>,
    /// The drain's batch, its room kept from slice to slice.
    rep: RefCell<super::rep::Rep>,
    /// Reads under way that hold spans of the tier's chunks, and the
    /// chunks an applied generation left meanwhile (`slab`).
    pins: slab::Pins,
}

impl WriteTier {
    /// `resume`: where its log positions go on (past where replay reached, `log::replay`, and past any earlier store of the shard).
    /// `loaded`: the batches its log replay loaded (`log::replay_files`),
    /// in log order, back in dirty as before the restart.
    pub(super) fn new(
        log: Option<Arc<TierLog>>,
        limit: Limits,
        resume: Option<&'static AtomicU64>,
        held: Option<Arc<[Held; 2]>>,
        loaded: Vec<Bytes>,
        hasher: ahash::RandomState,
    ) -> WriteTier {
        let start = resume.map_or(0, |r| r.load(Ordering::Acquire));
        // Every generation's map hashes with `hasher` (the meta cache's,
        // when there is one): a reader that hashed a key once looks it up
        // with that hash ([`WriteTier::get_hashed`]).
        let t = WriteTier {
            resume,
            log,
            held,
            cur: Cell::new(0),
            limit,
            pos: Cell::new(start),
            cut: Cell::new(start),
            logged: Cell::new(0),
            room: Cell::new(limit.bytes / 2),
            log_room: Cell::new(limit.log),
            dirty: RefCell::new(Gen::with_room(0, &hasher, gen::chunk_size(limit.bytes))),
            drain: RefCell::default(),
            spare: RefCell::default(),
            any: Cell::new(false),
            hasher,
            undo: RefCell::default(),
            saved: RefCell::default(),
            turn: RefCell::default(),
            seen: RefCell::default(),
            last: RefCell::default(),
            flushing: Arc::default(),
            rep: RefCell::default(),
            pins: slab::Pins::default(),
        };
        if t.log.is_some() && !loaded.is_empty() {
            let mut d = t.dirty.borrow_mut();
            for (k, v) in loaded.iter().filter_map(log::records).flatten() {
                d.put(&k, v.as_deref(), false, &t.hasher);
            }
            t.any.set(!d.map.is_empty());
        }
        t
    }

    /// Whether a range read of `[from, to)` may meet a record the tier holds.
    pub(super) fn meets(&self, from: &[u8], to: &[u8]) -> bool {
        self.any.get()
            && (self.dirty.borrow().meets(from, to, &self.hasher)
                || self.drain.borrow().as_ref().is_some_and(|d| d.gen.meets(from, to, &self.hasher)))
    }

    #[inline]
    pub(super) fn on(&self) -> bool {
        self.log.is_some()
    }

    /// Records it holds in memory and the memory they take (INFO).
    pub(super) fn size(&self) -> (u64, u64) {
        let (d, g) = (self.dirty.borrow(), self.drain.borrow());
        // The draining generation's records not yet applied (it keeps
        // the applied ones to its end, charged).
        let (n, b) = g.as_ref().map_or((0, 0), |g| (g.order.left() as u64, g.gen.charge()));
        (d.map.len() as u64 + n, d.charge() + b)
    }

    /// Its memory budget (INFO; 0: none).
    pub(super) fn budget(&self) -> u64 {
        match self.limit.bytes {
            u64::MAX => 0,
            b => b,
        }
    }

    /// The last log position taken.
    pub(super) fn last_pos(&self) -> u64 {
        self.pos.get()
    }

    /// The next log position, taken (a record written there, or a gap).
    pub(super) fn next_pos(&self) -> u64 {
        let pos = self.pos.get() + 1;
        self.pos.set(pos);
        pos
    }

    /// Whether other shards read this shard's records (its `Held` filters).
    #[inline]
    pub(super) fn shared(&self) -> bool {
        self.held.is_some()
    }

    /// Whether another shard must leave `key` to the owner (`Held`).
    #[inline]
    pub(super) fn may_hold(&self, key: &[u8]) -> bool {
        self.held.as_ref().is_some_and(|h| h[0].may_hold(key) || h[1].may_hold(key))
    }

    /// The tier's latest value of `key`, if it holds one, readable while
    /// the answer lives (it pins the tier's chunks: code that runs
    /// meanwhile may write, and a drain that ends then leaves its chunks
    /// in limbo, `slab::Pins`).
    #[inline]
    pub(super) fn get(&self, key: &[u8]) -> Option<slab::Found<'_>> {
        if !self.any.get() {
            return None;
        }
        self.get_hashed(self.hasher.hash_one(key), key)
    }

    /// [`WriteTier::get`] with `key`'s hash ([`WriteTier::hasher`]).
    #[inline]
    pub(super) fn get_hashed(&self, h: u64, key: &[u8]) -> Option<slab::Found<'_>> {
        if !self.any.get() {
            return None;
        }
        let v = match self.dirty.borrow().get_hashed(h, key) {
            Some(v) => v,
            None => self.drain.borrow().as_ref().and_then(|d| d.gen.get_hashed(h, key))?,
        };
        Some(slab::Found::new(v, self.pins.pin()))
    }

    /// The access stamp copy of `key` (hashed `h`) in dirty, when dirty
    /// holds its record ([`Gen::with_stamp`]); false otherwise, or while
    /// dirty is borrowed.
    #[inline]
    pub(super) fn with_stamp(&self, h: u64, key: &[u8], f: impl FnOnce(u64) -> Option<u64>) -> bool {
        if !self.any.get() {
            return false;
        }
        match self.dirty.try_borrow_mut() {
            Ok(mut d) => d.with_stamp(h, key, f),
            Err(_) => false,
        }
    }

    /// The hasher of its maps: one hash of a key serves them and the
    /// shard's other tables keyed by it (the access table).
    pub(super) fn hasher(&self) -> &ahash::RandomState {
        &self.hasher
    }
}

impl Drop for WriteTier {
    fn drop(&mut self) {
        if let Some(r) = self.resume {
            r.fetch_max(self.pos.get(), Ordering::AcqRel);
        }
    }
}

impl ShardStore {
    /// Stages a batch's records (`data`, its WriteBatch representation)
    /// straight into dirty, where every read of the owner finds them: the
    /// group's log append ([`ShardStore::tier_commit`]) makes them durable,
    /// or puts back what they replaced if it fails. Other shards leave
    /// their keys to the owner from now on (`Held`). False, with nothing
    /// staged, if the batch is not plain puts and deletes. `fresh`: the
    /// indexes (ascending) of its puts whose writer read the key absent
    /// (`Gen::put`).
    pub(super) fn tier_stage(&self, data: &[u8], fresh: &[u32]) -> bool {
        let t = &self.wtier;
        // Only a plain batch of puts and deletes is staged (checked first:
        // nothing is staged from one that is not).
        if !log::each_put(data, |_, _| ()) {
            return false;
        }
        let mut d = t.dirty.borrow_mut();
        let mut undo = t.undo.borrow_mut();
        let mut saved = t.saved.borrow_mut();
        // A value of the same length is written over in place unless a
        // read holds a span of the tier (a command that writes while it
        // reads a value: its value must not change under it).
        let over = t.pins.free();
        let mut put = |d: &mut Gen, k: &[u8], v: Option<&[u8]>, new: bool| match over {
            true => d.put_over(k, v, new, &t.hasher, &mut saved),
            false => d.put(k, v, new, &t.hasher),
        };
        let held = t.held.as_ref().map(|h| &h[t.cur.get()]);
        let (mut at, mut next) = (0u32, fresh.iter().copied().peekable());
        log::each_put(data, |k, v| {
            let new = next.next_if_eq(&at).is_some();
            at += 1;
            let Some(h) = held.filter(|_| super::cache::is_meta(k)) else {
                undo.extend(put(&mut d, k, v, new));
                return;
            };
            h.set(k);
            let changed = put(&mut d, k, v, new);
            // Other shards answer a key the meta cache holds from it, so an
            // entry follows every write (`PeerStore::get_with`).
            if let Some(c) = self.cache.as_ref().filter(|c| c.holds(k)) {
                if let Some((key, value)) = d.get_key_value(k) {
                    c.update(&key, value.as_deref());
                }
            }
            undo.extend(changed);
        });
        t.any.set(true);
        true
    }

    /// Appends what a group staged ([`ShardStore::tier_stage`], `added`
    /// records) to the log as one record: dirty's latest value of each key
    /// it changed, once (`tier_turn_record`). On failure what they replaced
    /// in dirty is put back.
    pub(super) fn tier_commit(&self, added: usize) -> Result<(), StorageError> {
        let t = &self.wtier;
        let Some(log) = &t.log else { return Ok(()) };
        let mut body = t.turn.borrow_mut();
        self.tier_turn_record(&mut body);
        if body.is_empty() {
            // Every record it staged was already there, unchanged, and
            // logged (dirty's records are past the marks): nothing to add.
            drop(body);
            return self.tier_committed(added, 0);
        }
        let pos = t.pos.get() + 1;
        let appended = self.tier_append(log, file::BATCH, pos, body.data());
        let bytes = body.data().len() as u64;
        if body.capacity() > 4 << 20 {
            *body = super::rep::Rep::default();
        }
        drop(body);
        if let Err(e) = appended {
            // The staged values it holds go back too (`tier_stage`).
            if let Some(c) = self.cache.as_ref().filter(|_| t.held.is_some()) {
                c.clear();
            }
            let mut d = t.dirty.borrow_mut();
            let mut saved = t.saved.borrow_mut();
            for u in t.undo.borrow_mut().drain(..).rev() {
                d.restore(u, &mut saved);
            }
            saved.clear();
            t.any.set(!d.map.is_empty() || t.drain.borrow().is_some());
            return Err(e);
        }
        t.pos.set(pos);
        self.tier_committed(added, bytes)
    }

    /// After a group's log append (`bytes` of it): what it replaced is
    /// dropped, and dirty drains or starts draining ([`ShardStore::tier_settle`]).
    fn tier_committed(&self, added: usize, bytes: u64) -> Result<(), StorageError> {
        let t = &self.wtier;
        t.undo.borrow_mut().clear();
        let mut saved = t.saved.borrow_mut();
        saved.clear();
        if saved.capacity() > 1 << 20 {
            *saved = Vec::new();
        }
        drop(saved);
        // Chunks an applied generation left while a read held spans of
        // them, once none does.
        t.pins.settle(|c| {
            if let Ok(mut d) = t.dirty.try_borrow_mut() {
                d.give_chunks(c, t.room.get().saturating_mul(2));
            }
        });
        t.logged.set(t.logged.get() + bytes);
        // What dirty borrowed of the meta cache's room is for records, not
        // for the values they overwrote: those drain it at half the share
        // as before (a list's head record rewritten with each LPUSH left
        // ~400 bytes a push, and generations three times as big cost LPUSH
        // -P16 ~10% more CPU, their chunks cold).
        let full = {
            let d = t.dirty.borrow();
            d.map.len() >= t.limit.records
                || d.charge() >= t.room.get()
                || d.waste() >= t.limit.bytes / 2
                || t.logged.get() >= t.log_room.get()
        };
        // The write is in the log from here on: a failed apply does not
        // undo it (reads find it in the tier, a restart writes it again),
        // so the failure is logged, not returned; the next log append
        // reports a disk that stopped taking writes.
        if let Err(e) = self.tier_settle(full, added) {
            tracing::warn!("write tier: applying to the families failed: {e}");
        }
        Ok(())
    }

    /// Writes `wb` to the families now (with the WAL), after what the tier
    /// holds, carrying its copy as a direct record ([`DIRECT`]): a replay
    /// writes it after the tier's older log records (a copy in the log
    /// file outlived a WAL write that never happened, tests/crash_atomic.rs).
    pub(super) fn tier_direct(&self, mut wb: WriteBatch) -> Result<(), StorageError> {
        if !self.wtier.on() {
            return self.engine.write_in(self.home, wb);
        }
        let whole = self.tier_clear_for(wb.data())?;
        let rep = wb.data().to_vec();
        let pos = self.wtier.pos.get() + 1;
        wb.put_cf(self.cf, direct_key(pos), rep);
        self.engine.write_in(self.home, wb)?;
        self.wtier.pos.set(pos);
        if whole {
            self.tier_marked_clean(pos - 1);
        }
        // Else the tier still holds records below `pos`: a later drain's
        // marks pass it.
        Ok(())
    }

    /// After a write past the tier whose direct records took the log
    /// positions past `before`: when the tier holds nothing, the families
    /// hold every record up to the last position, and the marks say so;
    /// the log and the direct records are cut each time the positions
    /// pass a multiple of 64. Unmarked, a shard written only by
    /// transactions over several shards (or scripts behind the gate) kept
    /// every direct record, and each restart loaded them all into its tier.
    /// A failure is logged, not returned: the write is done (a caller took
    /// the marks' error for the write's), the marks only let the log be
    /// cut sooner, and the next drain writes them.
    pub(super) fn tier_marked_clean(&self, before: u64) {
        let t = &self.wtier;
        let pos = t.pos.get();
        if !t.on() || t.any.get() || pos == before {
            return;
        }
        // The marks without the WAL, as an apply writes them: one recovered
        // from the WAL would claim records that earlier applies wrote
        // without it and a crash lost (a test lost writes that way).
        let mut marks = WriteBatch::default();
        marks.put_cf(self.cf, MARK, pos.to_be_bytes());
        marks.put_cf(self.sub, MARK, pos.to_be_bytes());
        let mut wo = WriteOptions::default();
        wo.disable_wal(true);
        let done = self.db.write_opt(marks, &wo).map_err(StorageError::from).and_then(|()| {
            if pos / 64 != before / 64 {
                self.tier_cut()
            } else {
                Ok(())
            }
        });
        if let Err(e) = done {
            tracing::warn!("write tier: marking a write past the tier failed: {e}");
        }
    }

    /// Before `rep` (a batch's representation) is written past the tier:
    /// what the tier holds of the records it writes must not reach the
    /// families after it. Its keys are forgotten (the batch holds their
    /// newer value; a replay after a crash writes its direct record after
    /// their log records), a range delete inside one collection has that
    /// collection's records written first ([`ShardStore::tier_apply_range`]),
    /// and any other range (or a batch it cannot read) applies the whole
    /// tier. True when the tier holds nothing after (applied whole, or
    /// all it held replaced).
    ///
    /// Applied whole every time, a DEL of a one-field hash after a burst of
    /// SETs (a range delete of its members) stalled the shard 210-260 ms
    /// writing 16 MB of unrelated records.
    pub(super) fn tier_clear_for(&self, rep: &[u8]) -> Result<bool, StorageError> {
        self.tier_clear(rep, false)
    }

    /// Before a shared transaction's part (`rep`) is staged: what the tier
    /// holds of its records is written to the families now (without the
    /// WAL: the log has it) and leaves the tier, so no drain writes it
    /// over the transaction's commit, and an abandoned transaction loses
    /// nothing. (Applying the whole tier when such a transaction opened,
    /// a MULTI over two shards after a burst of SETs took 142 ms with the
    /// 32 MB tier.)
    pub(in crate::storage) fn tier_write_out(&self, rep: &[u8]) -> Result<(), StorageError> {
        self.tier_clear(rep, true).map(|_| ())
    }

    /// [`ShardStore::tier_clear_for`]; `write`: the tier's values of the
    /// batch's keys are written before they are forgotten.
    fn tier_clear(&self, rep: &[u8], write: bool) -> Result<bool, StorageError> {
        let t = &self.wtier;
        if !t.any.get() {
            return Ok(true);
        }
        let (mut points, mut ranges) = (Vec::new(), Vec::new());
        let read = log::each_op(rep, |op| match op {
            log::Op::Record(k, _) => points.push(k),
            log::Op::Range(from, to) => ranges.push((from, to)),
        });
        let wide = |(from, to): &(&[u8], &[u8])| Gen::coll_of_range(from, to, &t.hasher).is_none();
        if !read || (write && ranges.iter().any(wide)) {
            self.tier_apply()?;
            return Ok(true);
        }
        for (from, to) in ranges {
            if write {
                // A shared transaction's part: what the tier holds there
                // must be in the families if the transaction is abandoned.
                self.tier_apply_range(from, to)?;
            } else {
                // The batch deletes every record the tier holds in the
                // range, and its direct record replays after their log
                // records: they are dropped, not written first (a DEL of a
                // big set wrote all the tier held of it, to delete it).
                self.tier_forget_range(from, to);
            }
        }
        if write {
            self.tier_write_keys(&points)?;
        }
        let mut dirty = t.dirty.borrow_mut();
        let mut drain = t.drain.borrow_mut();
        for k in points {
            dirty.forget(k);
            if let Some(d) = drain.as_mut() {
                d.gen.forget(k);
            }
        }
        // Nothing left: the families hold every record up to the batch.
        let empty = dirty.map.is_empty() && drain.is_none();
        if empty {
            t.any.set(false);
        }
        Ok(empty)
    }

    /// Writes the tier's latest value of each of `keys` it holds to the
    /// families (without the WAL, as a drain does) and tells the caches.
    fn tier_write_keys(&self, keys: &[&[u8]]) -> Result<(), StorageError> {
        let t = &self.wtier;
        if self.group.held() {
            // Staged records reach the families only once logged.
            self.flush_group()?;
        }
        let held: Vec<(Bytes, Option<Bytes>)> = {
            let (dirty, drain) = (t.dirty.borrow(), t.drain.borrow());
            keys.iter()
                .filter_map(|k| {
                    let v = dirty.get(k).or_else(|| drain.as_ref().and_then(|d| d.gen.get(k)))?;
                    Some((Bytes::copy_from_slice(k), v.map(|v| Bytes::copy_from_slice(&v))))
                })
                .collect()
        };
        if held.is_empty() {
            return Ok(());
        }
        let mut wb = WriteBatch::default();
        for (k, v) in &held {
            match v {
                Some(v) => wb.put_cf(self.cf_of(k), k, v),
                None => wb.delete_cf(self.cf_of(k), k),
            }
        }
        let mut wo = WriteOptions::default();
        wo.disable_wal(true);
        self.db.write_opt(wb, &wo)?;
        for (k, v) in &held {
            if let Some(c) = self.cache.as_ref().filter(|_| super::cache::is_meta(k)) {
                c.insert(k, v.as_deref());
            }
            if let Some(m) = self.members.as_ref().filter(|_| super::keys::is_sub(k)) {
                m.remove(k);
            }
        }
        Ok(())
    }

    /// A part of a transaction over several shards, staged in the engine's
    /// sink (`tx`), or the home part of a write over two databases: with
    /// the tier on, its copy as a direct record for the same batch (as
    /// [`ShardStore::tier_direct`] writes one).
    pub(super) fn tier_log_part(&self, rep: &[u8]) -> Option<WriteBatch> {
        if !self.wtier.on() {
            return None;
        }
        let mut wb = WriteBatch::default();
        wb.put_cf(self.cf, direct_key(self.wtier.next_pos()), rep);
        Some(wb)
    }

    /// Appends a record to the log (the WALs' buffered writes first,
    /// [`Engine::flush_before_log`]), the disk guard counting its bytes.
    fn tier_append(&self, log: &TierLog, kind: u8, pos: u64, body: &[u8]) -> Result<(), StorageError> {
        self.engine.flush_before_log()?;
        if let Err(e) = log.append(kind, pos, body) {
            self.engine.disk.note_write_error(&e.0);
            return Err(e);
        }
        if self.engine.disk.spend(body.len()) {
            self.engine.check_disk();
        }
        Ok(())
    }

    /// A write outside any group (a one-shard MSET's, expiry, a sweep)
    /// with the tier on: staged and written to the tier now, as a group of
    /// its own; None when it must go past the tier (`ShardStore::write`),
    /// which first applies all the tier holds (MSET -P16 over 1M keys: 192
    /// us of CPU a request, 74 with the tier off). A batch over
    /// [`LONE_TIER_RECORDS`] (a slice of a collection moved between
    /// shards) still goes past it: through the tier it would drain twice
    /// its size in one turn (a 1M-member RENAME stalled PINGs 190 ms).
    pub(super) fn tier_stage_alone(&self, b: &mut super::Batch) -> Option<Result<(), StorageError>> {
        if !self.wtier.on() || b.wb.len() > LONE_TIER_RECORDS {
            return None;
        }
        let from = self.staged();
        if !self.stage(b) {
            return None;
        }
        Some(self.flush_group().and_then(|()| match self.lost_since(from).pop() {
            Some(l) => Err(l.error),
            None => Ok(()),
        }))
    }

    /// Whether the write tier is on: writes go through it only from a
    /// group.
    pub fn write_tier_on(&self) -> bool {
        self.wtier.on()
    }

    /// What the tier holds, and its budget (INFO).
    pub fn write_tier_size(&self) -> TierSize {
        let (records, bytes) = self.wtier.size();
        TierSize {
            records,
            bytes,
            log_bytes: self.wtier.log.as_ref().map_or(0, |l| l.bytes()),
            budget: self.wtier.budget(),
            room: match self.wtier.budget() {
                0 => 0,
                _ => self.wtier.room.get(),
            },
        }
    }
}
