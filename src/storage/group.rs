//! Group commit inside a shard: the writes of a run of pipelined commands
//! reach RocksDB as one batch.
//!
//! A RocksDB write has a fixed cost beyond its records: the write queue
//! (shared by every shard, since they share one database), the WAL record
//! and its checksum, the sequence number. Under a pipeline, paying it once
//! per command was a third of a shard's time with two shards (each waiting
//! in the queue for the other's writes: `WriteThread::AwaitState`).
//!
//! While a group is open ([`ShardStore::begin_group`]), [`ShardStore::write`]
//! appends a batch's records to the group instead of writing it, and the
//! group is written when it closes ([`ShardStore::end_group`]), when it grows
//! past [`MAX_RECORDS`] or [`MAX_BYTES`], before a batch with a range delete,
//! and before a read that could see its records:
//! - with the write tier on, every record staged is in the tier's table at
//!   once (`wtier::tier_stage`), where every read of the owner looks; the
//!   group only gathers the turn's batch for the log append. Without it:
//! - a meta record read answers from the group's own copy of the meta
//!   records it changed (the overlay);
//! - any other point read of a key the group wrote (by hash), and every
//!   range read, snapshot or count, writes the group first.
//!
//! So a command always reads what the commands before it wrote. Nothing
//! else can observe the group: it is opened and closed inside one
//! synchronous run of commands on the shard's thread, other shards read
//! only what RocksDB (or the meta cache, updated after the write) has, and
//! the connection replies only after the group is written (and the WAL
//! flushed). A group that fails to write is lost as a whole, like a failed
//! batch; the staged writes it held are returned by `end_group` so that the
//! connection turns those commands' replies into the error.
//!
//! **Turns: one write for every connection of a loop iteration.** A
//! connection's own run can close its group unwritten
//! ([`ShardStore::defer_group`]): the records stay staged ("held") while
//! the other connections ready in the same iteration of the shard's loop
//! run and stage theirs, and the first connection past the iteration's
//! yield writes them all ([`ShardStore::end_turn`]) before any of them
//! replies; each then finds its own losses with [`ShardStore::lost_since`].
//! While records are held every read of this store still looks at them
//! first, a write that is not staged writes them before itself, and a
//! shard answering another shard's request writes them before it answers,
//! so nobody reads a write that could still be lost, and order holds.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;

use ahash::{AHashMap, AHashSet};
use bytes::Bytes;
use rocksdb::WriteBatch;

use super::{cache, keys, wtier, Batch, ShardStore, StorageError};

/// A group is written once it holds this many records...
pub const MAX_RECORDS: u32 = 4096;
/// ...or this many bytes.
pub const MAX_BYTES: usize = 4 << 20;

use super::rep::HEADER;

/// How many losses are kept for connections to look up after their turn
/// (more than a loop iteration's connections can stage).
const LOST_KEPT: usize = 1024;

/// Staged writes lost with a group that failed to write: the writes
/// numbered `from..to` (see [`ShardStore::staged`]) and why.
#[derive(Debug, Clone)]
pub struct Lost {
    pub from: u64,
    pub to: u64,
    pub error: StorageError,
}

impl Lost {
    /// Whether the staged writes numbered `from..to` were lost here.
    pub fn covers(&self, from: u64, to: u64) -> bool {
        from < to && from < self.to && self.from < to
    }
}

/// The records a group holds, not yet in RocksDB (empty: `count == 0`).
/// Kept between groups, so a group allocates nothing once warm.
struct Pending {
    /// WriteBatch representation: header, then the staged batches' records
    /// (without the write tier: with it the records wait in the tier, and
    /// the log record is built from there, `ShardStore::tier_commit`).
    rep: Vec<u8>,
    /// The staged batches' record bytes (without their headers).
    bytes: usize,
    count: u32,
    /// Hashes of every key a record was written under.
    keys: AHashSet<u64>,
    /// The latest staged value of each meta record (None: deleted).
    meta: AHashMap<Box<[u8]>, Option<Bytes>>,
    /// The staged number of the first write in it.
    first: u64,
}

/// A shard store's grouping state (only the owner's thread uses it).
pub(super) struct GroupState {
    active: Cell<bool>,
    /// Whether `pending` holds records (a cheap check for every read).
    held: Cell<bool>,
    /// The staged count when the open group began.
    began: Cell<u64>,
    pending: RefCell<Pending>,
    /// Writes staged so far (a running number, never reset).
    staged: Cell<u64>,
    /// The latest losses, oldest first (at most [`LOST_KEPT`]).
    lost: RefCell<VecDeque<Lost>>,
    /// A write of staged records failed since the key counts were last
    /// made exact ([`ShardStore::take_recount`]).
    recount: Cell<bool>,
    hasher: ahash::RandomState,
    /// What must happen once the staged writes are in RocksDB
    /// ([`ShardStore::after_write`]).
    after: RefCell<Vec<Box<dyn FnOnce()>>>,
    /// Writes that failed so far (a running number): state derived from
    /// staged writes (sorted-set layouts) is dropped when it moves.
    failures: Cell<u64>,
}

impl Default for GroupState {
    fn default() -> Self {
        GroupState {
            active: Cell::new(false),
            held: Cell::new(false),
            began: Cell::new(0),
            pending: RefCell::new(Pending {
                rep: vec![0; HEADER],
                bytes: 0,
                count: 0,
                keys: AHashSet::new(),
                meta: AHashMap::new(),
                first: 0,
            }),
            staged: Cell::new(0),
            lost: RefCell::new(VecDeque::new()),
            recount: Cell::new(false),
            after: RefCell::new(Vec::new()),
            failures: Cell::new(0),
            hasher: ahash::RandomState::with_seeds(0x6261_7361, 0x6c74_6772, 0x6f75_7073, 0x2121_2121),
        }
    }
}

impl GroupState {
    #[inline]
    pub(super) fn active(&self) -> bool {
        self.active.get()
    }

    /// Whether staged records wait to be written (a group open or not).
    #[inline]
    pub(super) fn held(&self) -> bool {
        self.held.get()
    }

    #[inline]
    pub(super) fn hash(&self, key: &[u8]) -> u64 {
        self.hasher.hash_one(key)
    }
}

/// An emptied overlay map to keep for the next group.
fn recycled(mut m: AHashMap<Box<[u8]>, Option<Bytes>>) -> AHashMap<Box<[u8]>, Option<Bytes>> {
    m.clear();
    m
}

impl ShardStore {
    /// Opens a group: writes from now on are staged (see the module doc).
    pub fn begin_group(&self) {
        self.group.active.set(true);
        self.group.began.set(self.group.staged.get());
    }

    /// Writes the group and closes it; returns the staged writes lost with
    /// any part of it that failed to write since it opened.
    #[must_use]
    pub fn end_group(&self) -> Vec<Lost> {
        let _ = self.flush_group();
        self.group.active.set(false);
        self.lost_since(self.group.began.get())
    }

    /// Closes the group and leaves what it staged held, for
    /// [`ShardStore::end_turn`] to write with the records of the other
    /// connections of this loop iteration (see the module doc).
    pub fn defer_group(&self) {
        self.group.active.set(false);
    }

    /// Writes every held record, if any: before a connection replies, and
    /// before this shard answers another shard. A failure is recorded for
    /// [`ShardStore::lost_since`].
    #[inline]
    pub fn end_turn(&self) {
        if self.group.held.get() {
            let _ = self.flush_group();
        }
    }

    /// The losses of staged writes numbered `from` or later.
    pub fn lost_since(&self, from: u64) -> Vec<Lost> {
        let lost = self.group.lost.borrow();
        lost.iter().filter(|l| l.to > from).cloned().collect()
    }

    /// Whether a write of staged records failed since the last call (the
    /// key counts, moved as commands staged, must be counted again).
    pub fn take_recount(&self) -> bool {
        self.group.recount.replace(false)
    }

    /// The number of writes staged in groups so far: a command that moved
    /// it staged writes (compare with [`Lost`]).
    #[inline]
    pub fn staged(&self) -> u64 {
        self.group.staged.get()
    }

    /// Stages `b` in the open group. False when it must be written on its
    /// own (a range delete: reads could not tell what it covers).
    pub(super) fn stage(&self, b: &mut Batch) -> bool {
        if self.tx.on() {
            self.tx_stage(b);
            self.group.staged.set(self.group.staged.get() + 1);
            return true;
        }
        if b.clears_meta || b.has_range || b.main.is_some() {
            return false;
        }
        // With the write tier the records wait in it, not in an overlay.
        let tiered = self.wtier.on();
        if tiered && !self.tier_stage(b.wb.data(), &b.fresh) {
            return false;
        }
        if !tiered {
            let mut p = self.group.pending.borrow_mut();
            p.keys.extend(b.hashes.iter().copied());
            // Moved, not copied: the batch is spent once staged.
            for (k, v) in b.meta.drain(..) {
                p.meta.insert(k, v);
            }
        }
        if self.pend(b.wb.data(), b.wb.len() as u32) {
            // A failure is recorded in `lost` and reported by `end_group`.
            let _ = self.flush_group();
        }
        true
    }

    /// Adds a staged batch's records (`data`, `count` of them) to the
    /// group's pending write; whether the group is full.
    fn pend(&self, data: &[u8], count: u32) -> bool {
        let full = {
            let mut p = self.group.pending.borrow_mut();
            if p.count == 0 {
                p.first = self.group.staged.get();
            }
            let records = data.get(HEADER..).unwrap_or_default();
            if !self.wtier.on() {
                p.rep.extend_from_slice(records);
            }
            p.bytes += records.len();
            p.count += count;
            p.count >= MAX_RECORDS || p.bytes >= MAX_BYTES
        };
        self.group.held.set(true);
        self.group.staged.set(self.group.staged.get() + 1);
        full
    }

    /// A transaction's write on this shard alone (a script's, an EXEC's:
    /// `data`, its batch) with the write tier on: staged into the tier and
    /// logged at once, with what the group held before it, one log record
    /// holding it whole, as a lone write is (`tier_stage_alone`). None
    /// when it goes past the tier (the tier off, more than a lone write
    /// stages, a range delete, a `clears_meta` write). Past the tier it
    /// first applied whatever the tier held, then made two RocksDB writes
    /// (EVAL of an INCR at -P16: RocksDB's writes were 32% of the shard).
    pub(super) fn stage_own_tx(&self, data: &[u8], clears_meta: bool) -> Option<Result<(), StorageError>> {
        let count = super::rep::count(data);
        if !self.wtier.on() || clears_meta || count > wtier::LONE_TIER_RECORDS || !self.tier_stage(data, &[]) {
            return None;
        }
        self.pend(data, count as u32);
        // Reported here, not only at the group's end: the transaction's
        // close (`end_tx`) hands its records to the caches on success.
        Some(self.flush_group())
    }

    /// What the group says about `key`: Some(value) for a meta record it
    /// changed; None when RocksDB (or the cache) has the answer, after
    /// writing the group first if it wrote `key`.
    #[inline]
    pub(super) fn group_read(&self, key: &[u8]) -> Result<Option<Option<Bytes>>, StorageError> {
        if self.tx.on() {
            return Ok(self.tx_read(key));
        }
        let hit = {
            let p = self.group.pending.borrow();
            if p.count == 0 {
                return Ok(None);
            }
            if let Some(v) = p.meta.get(key) {
                return Ok(Some(v.clone()));
            }
            p.keys.contains(&self.group.hash(key))
        };
        if hit {
            self.flush_group()?;
        }
        Ok(None)
    }

    /// Runs `f` once every write staged so far is in RocksDB: now when
    /// nothing is staged, else after the group's next write (dropped if
    /// that write fails). Keyspace notifications wait here, so that a
    /// subscriber who reads the key it was told of finds the change.
    pub fn after_write(&self, f: Box<dyn FnOnce()>) {
        if self.group.pending.borrow().count == 0 && self.group.after.borrow().is_empty() && !self.tx_holds_writes() {
            f();
        } else {
            self.group.after.borrow_mut().push(f);
        }
    }

    /// Runs `f` after the next write succeeds (dropped if it fails), in
    /// order with what [`ShardStore::after_write`] queued: for what must
    /// follow a write being built now (a key's `new` event).
    pub fn after_next_write(&self, f: Box<dyn FnOnce()>) {
        self.group.after.borrow_mut().push(f);
    }

    /// Runs what waited for a write that just succeeded.
    pub(super) fn run_after(&self) {
        if self.group.after.borrow().is_empty() {
            return;
        }
        let after = std::mem::take(&mut *self.group.after.borrow_mut());
        for f in after {
            f();
        }
    }

    /// Forgets what waited for a write that failed.
    pub(super) fn drop_after(&self) {
        self.group.after.borrow_mut().clear();
        self.group.failures.set(self.group.failures.get() + 1);
    }

    /// How many writes failed on this shard so far (every failure path
    /// drops what waited for its write, [`ShardStore::drop_after`]).
    pub fn write_failures(&self) -> u64 {
        self.group.failures.get()
    }

    /// Writes what the group holds, if anything; the group stays open.
    /// A served blocked client calls it before its reply leaves: its pop
    /// must be in RocksDB before another connection learns of it.
    pub fn flush_group(&self) -> Result<(), StorageError> {
        if self.flush_group_only()? {
            self.run_after();
        }
        Ok(())
    }

    /// [`ShardStore::flush_group`] that leaves what waits for a write
    /// waiting (the caller writes one more batch right after); whether it
    /// wrote anything.
    pub(super) fn flush_group_only(&self) -> Result<bool, StorageError> {
        let mut p = self.group.pending.borrow_mut();
        if p.count == 0 {
            return Ok(false);
        }
        let count = p.count;
        p.rep[8..HEADER].copy_from_slice(&count.to_le_bytes());
        let first = p.first;
        let meta = std::mem::take(&mut p.meta);
        let mut rep = std::mem::take(&mut p.rep);
        p.count = 0;
        p.bytes = 0;
        p.keys.clear();
        drop(p);
        self.group.held.set(false);
        let written = if self.wtier.on() {
            // Its records wait in the tier already (`stage`): the log
            // append is the write.
            self.tier_commit(count as usize)
        } else {
            let w = self.engine.write_in(self.home, WriteBatch::from_data(&rep));
            if let Some(m) = self.members.as_ref().filter(|_| w.is_ok()) {
                // The member records it wrote are in RocksDB now.
                if !wtier::each_record(&rep, |k, _| {
                    if keys::is_sub(k) {
                        m.remove(k);
                    }
                }) {
                    m.clear();
                }
            }
            w
        };
        rep.truncate(HEADER);
        if rep.capacity() > MAX_BYTES {
            rep.shrink_to(64 * 1024);
        }
        self.group.pending.borrow_mut().rep = rep;
        if let Err(e) = written {
            self.forget_cached();
            let mut lost = self.group.lost.borrow_mut();
            if lost.len() == LOST_KEPT {
                lost.pop_front();
            }
            lost.push_back(Lost {
                from: first,
                to: self.group.staged.get(),
                error: e.clone(),
            });
            drop(lost);
            self.group.recount.set(true);
            self.group.pending.borrow_mut().meta = recycled(meta);
            self.drop_after();
            return Err(e);
        }
        let mut meta = meta;
        if let Some(c) = &self.cache {
            for (k, v) in meta.drain() {
                if cache::is_meta(&k) {
                    c.insert(&k, v.as_deref());
                }
            }
        }
        self.group.pending.borrow_mut().meta = recycled(meta);
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::{get, peer, put};
    use super::super::{keys, test_opts, Engine, PeerStore};
    use super::*;

    fn stores(meta_cache_bytes: u64) -> (tempfile::TempDir, ShardStore, PeerStore) {
        let dir = tempfile::tempdir().unwrap();
        let opts = test_opts(dir.path(), 1, meta_cache_bytes);
        let e: &'static Engine = Box::leak(Box::new(Engine::open(&opts).unwrap()));
        (dir, e.shard(0).unwrap(), e.peer(0).unwrap())
    }

    /// What waits for the group's write (keyspace notifications) runs
    /// only once a peer can read the write; with nothing staged, at once.
    #[test]
    fn after_write_waits_for_the_staged_writes() {
        let (_d, s, p) = stores(0);
        let p = std::rc::Rc::new(p);
        let k = keys::meta_key(0, b"k");
        let seen = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let probe = |tag: &'static str| {
            let seen = seen.clone();
            let p = p.clone();
            let k = k.clone();
            Box::new(move || seen.borrow_mut().push((tag, peer(&p, &k)))) as Box<dyn FnOnce()>
        };
        s.after_write(probe("idle"));
        s.begin_group();
        put(&s, &k, b"v1");
        s.after_write(probe("staged"));
        assert_eq!(seen.borrow().len(), 1, "ran before the group's write");
        assert!(s.end_group().is_empty());
        assert_eq!(*seen.borrow(), vec![("idle", None), ("staged", Some(b"v1".to_vec()))]);
    }

    fn scan_keys(s: &ShardStore, from: &[u8], to: &[u8]) -> Vec<Vec<u8>> {
        let mut ks = Vec::new();
        s.scan(from, to, |k, _| {
            ks.push(k.to_vec());
            true
        })
        .unwrap();
        ks
    }

    #[test]
    fn the_owner_reads_staged_writes_others_see_them_once_written() {
        for cache in [1 << 20, 0] {
            let (_d, s, p) = stores(cache);
            let m = keys::meta_key(0, b"k");
            let sub = keys::sub_key(0, b"h", 7, b"f");
            s.begin_group();
            let mut b = s.batch();
            s.put(&mut b, &m, b"v1");
            s.put(&mut b, &sub, b"x");
            s.write(b).unwrap();
            assert_eq!(s.staged(), 1);
            // Not in RocksDB yet: another shard reads nothing.
            assert_eq!(peer(&p, &m), None);
            // The owner reads its meta record from the group, which stays unwritten.
            assert_eq!(get(&s, &m), Some(b"v1".to_vec()));
            assert_eq!(peer(&p, &m), None);
            put(&s, &m, b"v2");
            assert_eq!(get(&s, &m), Some(b"v2".to_vec()));
            let mut b = s.batch();
            s.delete(&mut b, &m);
            s.write(b).unwrap();
            assert_eq!(get(&s, &m), None, "cache {cache}");
            assert_eq!(s.staged(), 3);
            // Reading a member record the group wrote writes the group first.
            assert_eq!(peer(&p, &sub), None);
            assert_eq!(get(&s, &sub), Some(b"x".to_vec()));
            assert_eq!(peer(&p, &sub), Some(b"x".to_vec()));
            assert_eq!(peer(&p, &m), None);
            put(&s, &m, b"v3");
            assert_eq!(peer(&p, &m), None);
            assert!(s.end_group().is_empty());
            assert_eq!(peer(&p, &m), Some(b"v3".to_vec()), "cache {cache}");
            assert_eq!(get(&s, &m), Some(b"v3".to_vec()));
            // Closed: writes go straight to RocksDB again.
            put(&s, &m, b"v4");
            assert_eq!(peer(&p, &m), Some(b"v4".to_vec()));
            assert_eq!(s.staged(), 4);
        }
    }

    /// A group closed unwritten holds its records for the turn: the owner
    /// reads them, peers do not, and whatever writes next on the store
    /// (a direct write, a scan, the turn's end) writes them first.
    #[test]
    fn held_records_wait_for_the_turn_and_keep_their_order() {
        for cache in [1 << 20, 0] {
            let (_d, s, p) = stores(cache);
            let (a, b) = (keys::meta_key(0, b"a"), keys::meta_key(0, b"b"));
            let sub = keys::sub_key(0, b"h", 1, b"f");
            s.begin_group();
            put(&s, &a, b"1");
            put(&s, &sub, b"x");
            s.defer_group();
            assert_eq!(get(&s, &a), Some(b"1".to_vec()), "cache {cache}");
            assert_eq!(peer(&p, &a), None);
            // Another connection's group joins the held records.
            s.begin_group();
            put(&s, &b, b"2");
            s.defer_group();
            assert_eq!(peer(&p, &b), None);
            s.end_turn();
            assert_eq!(peer(&p, &a), Some(b"1".to_vec()));
            assert_eq!(peer(&p, &b), Some(b"2".to_vec()));
            assert_eq!(peer(&p, &sub), Some(b"x".to_vec()));
            // A direct write after held records: both land, in order.
            s.begin_group();
            put(&s, &a, b"old");
            s.defer_group();
            put(&s, &a, b"new");
            assert_eq!(peer(&p, &a), Some(b"new".to_vec()));
            assert_eq!(get(&s, &a), Some(b"new".to_vec()));
            // A member read of a held key writes the records first.
            s.begin_group();
            put(&s, &sub, b"y");
            s.defer_group();
            assert_eq!(get(&s, &sub), Some(b"y".to_vec()));
            assert_eq!(peer(&p, &sub), Some(b"y".to_vec()));
            s.end_turn();
            assert!(s.lost_since(0).is_empty());
            assert!(!s.take_recount());
        }
    }

    #[test]
    fn scans_and_range_deletes_come_after_the_staged_writes() {
        let (_d, s, p) = stores(1 << 20);
        let (lo, hi) = keys::sub_range(0, b"h", 1);
        let k = |f: &str| keys::sub_key(0, b"h", 1, f.as_bytes());
        s.begin_group();
        put(&s, &k("a"), b"1");
        put(&s, &k("b"), b"2");
        assert_eq!(scan_keys(&s, &lo, &hi), vec![k("a"), k("b")]);
        put(&s, &k("c"), b"3");
        // A range delete is written on its own, after what the group held.
        let mut b = s.batch();
        s.delete_range(&mut b, &lo, &hi);
        s.write(b).unwrap();
        put(&s, &k("d"), b"4");
        assert_eq!(peer(&p, &k("d")), None);
        assert_eq!(scan_keys(&s, &lo, &hi), vec![k("d")]);
        assert!(s.end_group().is_empty());
        assert_eq!(peer(&p, &k("c")), None);
        assert_eq!(peer(&p, &k("d")), Some(b"4".to_vec()));
    }

    #[test]
    fn a_group_that_grows_large_is_written_without_waiting_for_the_end() {
        let (_d, s, p) = stores(1 << 20);
        s.begin_group();
        for i in 0..MAX_RECORDS {
            put(&s, &keys::sub_key(0, b"h", 1, &i.to_be_bytes()), b"v");
        }
        assert_eq!(peer(&p, &keys::sub_key(0, b"h", 1, &0u32.to_be_bytes())), Some(b"v".to_vec()));
        put(&s, &keys::sub_key(0, b"h", 1, b"last"), b"v");
        assert_eq!(peer(&p, &keys::sub_key(0, b"h", 1, b"last")), None);
        assert!(s.end_group().is_empty());
        assert_eq!(peer(&p, &keys::sub_key(0, b"h", 1, b"last")), Some(b"v".to_vec()));
    }
}
