//! Storage: the only module that names `rocksdb`.
//!
//! Each shard has two column families, `shard-<i>` (meta records and the
//! TTL indexes) and `shard-<i>-sub` (collection members), in a RocksDB
//! database of its own (`open`: the split layout; or all in one database);
//! only the owning core writes them. This module opens the database,
//! moves data when the shard count changes, and gives each shard a
//! [`ShardStore`]: point reads, atomic write batches, bounded range
//! iteration, range deletes. Key and value layouts live in [`keys`] and
//! [`meta`]; docs/encoding.md pins the bytes.
//!
//! The server leaks its `Engine` on purpose: it lives as long as the process,
//! and a `'static` engine lets every shard hold plain references to its
//! column family with no reference counting on the hot path. Shutdown
//! flushes the WAL explicitly instead of relying on `Drop`.

mod ahead;
mod batch;
pub mod budget;
pub mod cache;
mod dbmap;
pub mod disk;
mod families;
mod functions;
mod keyfilter;
pub use keyfilter::MOST_KEYS as KEY_FILTER_MOST_KEYS;
pub mod gc;
pub mod group;
pub mod intent;
pub mod keys;
mod mcache;
pub mod meta;
mod open;
mod options;
mod peer;
mod read;
mod redo;
mod rep;
mod scan;
mod stats;
mod tx;
mod wal;
mod watch;
mod wtier;
pub use peer::PeerStore;
pub use stats::RocksMemory;
pub use wtier::{TierSize, WriteBack};
pub mod tier;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use rocksdb::{Cache, ColumnFamily, Options, DB};

pub use batch::{Batch, BatchBody};
use families::{cf_name, shard_cf_names, sub_cf_name};

/// A storage failure, reported to the client as `ERR` and logged.
#[derive(Debug, Clone)]
pub struct StorageError(pub String);

impl From<rocksdb::Error> for StorageError {
    fn from(e: rocksdb::Error) -> Self {
        StorageError(e.into_string())
    }
}

impl std::fmt::Display for StorageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// When writes are synced to disk (Redis's `appendfsync`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Fsync {
    /// Every write batch is synced before the reply.
    Always = 0,
    /// A background thread syncs the WAL once a second.
    EverySec = 1,
    /// The OS decides.
    No = 2,
}

impl Fsync {
    pub fn parse(s: &str) -> Option<Fsync> {
        match s.to_ascii_lowercase().as_str() {
            "always" => Some(Fsync::Always),
            "everysec" => Some(Fsync::EverySec),
            "no" => Some(Fsync::No),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Fsync::Always => "always",
            Fsync::EverySec => "everysec",
            Fsync::No => "no",
        }
    }
}

/// Tunables for opening the database.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    pub dir: PathBuf,
    pub shards: usize,
    pub block_cache_bytes: usize,
    pub write_buffer_bytes: usize,
    /// RocksDB buffers WAL records in memory until [`Engine::flush_written`]
    /// (connections call it once per loop iteration, before replying):
    /// one `write(2)` for many writes. RocksDB then treats a failed WAL
    /// write as fatal (no automatic resume), so this is off when the disk
    /// guard is (`min-free-disk 0`).
    pub manual_wal_flush: bool,
    /// The meta caches' budget for the server, split evenly (0: none).
    pub meta_cache_bytes: u64,
    /// Threads reading what the shards must not wait for (`tier`; 0: the
    /// shards read the disk themselves).
    pub io_threads: usize,
    /// The cap on all memtables together (`budget`; 0: none).
    pub memtables_bytes: usize,
    /// How the last level's blocks are compressed (`bottommost-compression`).
    pub bottommost: Compression,
    /// Which of RocksDB's thread pools run at the lowest CPU priority
    /// (`background-priority`).
    pub background: Background,
    /// The write tier's generation size in records (`wtier`, a prototype;
    /// 0: no cap by count; `BASALT_TIER`).
    pub write_tier: usize,
    /// The write tier's memory, all shards together (0: no cap by
    /// memory; `write-tier-memory`). The tier is on when either is set.
    pub write_tier_bytes: u64,
    /// A database per shard (`open`, `redo`); the server's default, off
    /// with `BASALT_SPLIT=0` (and in the unit tests unless they ask).
    pub split: bool,
}

/// Which RocksDB thread pools run at the lowest CPU priority
/// (`StoreOptions::background`, tuning.md "Flushes at the lowest priority").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Background {
    /// Flushes only (`low-flush`, the default).
    #[default]
    LowFlush,
    /// Flushes and compactions (`low`).
    Low,
    /// Neither (`normal`).
    Normal,
}

impl Background {
    /// From the config's word; the default otherwise.
    pub fn named(s: &str) -> Background {
        match s {
            "low" => Background::Low,
            "normal" => Background::Normal,
            _ => Background::LowFlush,
        }
    }
}

/// A compression for SST blocks (`StoreOptions::bottommost`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Compression {
    #[default]
    Zstd,
    Lz4,
    None,
}

impl Compression {
    /// From the config's word (`zstd`, `lz4`, `none`); zstd otherwise.
    pub fn named(word: &str) -> Compression {
        match word {
            "lz4" => Compression::Lz4,
            "none" => Compression::None,
            _ => Compression::Zstd,
        }
    }
}

/// One RocksDB database and what group commit knows of its WAL: writes
/// made so far, and how many of them are known to be written to the WAL
/// file (`flushed`) and synced (`synced`).
pub(super) struct Db {
    pub(super) db: DB,
    written: AtomicU64,
    flushed: AtomicU64,
    synced: AtomicU64,
}

impl Db {
    fn new(db: DB) -> Db {
        Db {
            db,
            written: AtomicU64::new(0),
            flushed: AtomicU64::new(0),
            synced: AtomicU64::new(0),
        }
    }
}

/// The open databases, shared by every shard.
pub struct Engine {
    /// Every database: the first holds the default family (shard count,
    /// intents, the db map, functions, the disk probe); each shard's
    /// families live in its home database (`homes`): its own in the split
    /// layout, the first otherwise (`open`; tuning.md, "Two shards'
    /// writes").
    dbs: Vec<Db>,
    homes: Vec<usize>,
    fsync: AtomicU8,
    dir: PathBuf,
    manual_wal_flush: bool,
    /// Group-commit syncs done (INFO persistence `wal_group_syncs`).
    pub group_syncs: AtomicU64,
    /// Each column family's compaction filter waits here for the database.
    gc_slots: Vec<(String, gc::Slot)>,
    /// Long-expired keys each meta family's filter met, by family name.
    gc_found: Vec<(String, gc::Found)>,
    /// Refuses writes while the disk is (almost) full; see `disk`.
    pub disk: disk::DiskGuard,
    /// The next cross-shard intent id; see `intent`.
    intent_ids: AtomicU64,
    /// What a transaction over several shards stages (`tx`).
    tx_sink: tx::Sink,
    /// Redo records on their way out (`redo`).
    redo_queue: redo::Queue,
    /// Each shard's meta cache (see `cache`), shared by its store and its
    /// peers' read-only views.
    meta_caches: Vec<Option<Arc<cache::MetaCache>>>,
    /// Each shard's cache of member records (`mcache`), its owner's only.
    member_caches: Vec<Option<Arc<mcache::MemberCache>>>,
    /// Threads for the reads the shards must not wait for (`tier`).
    tier: tier::Tier,
    /// The block cache every column family shares, and the memtables' cap.
    block_cache: Cache,
    block_cache_bytes: u64,
    memtables: Option<rocksdb::WriteBufferManager>,
    /// Per shard: the write tier's limits (`StoreOptions::tier_limits`).
    write_tier: wtier::Limits,
    /// Per shard: where its write tier's log positions go on
    /// (`wtier::start_of`; a store dropped moves it past the positions it
    /// took, so the next store of the shard never reuses one).
    tier_starts: Vec<std::sync::atomic::AtomicU64>,
    /// Per shard, with the tier on: its log file (`wtier::file`), and
    /// what its replay loaded until the owner's store takes it.
    tier_logs: wtier::Logs,
    tier_loaded: wtier::Loaded,
    /// While non-zero (a checkpoint copying the logs), no log is cut.
    tier_cut_pauses: std::sync::atomic::AtomicUsize,

    /// Per shard, with the tier on and several shards: what its tier may
    /// hold, for other shards' reads.
    tier_held: Vec<Option<Arc<[wtier::Held; 2]>>>,
}

impl Engine {
    /// Opens (or creates) the database in `opts.dir` with `opts.shards`
    /// column families, moving records between column families if the data
    /// was written with another shard count.
    pub fn open(opts: &StoreOptions) -> Result<Engine, StorageError> {
        std::fs::create_dir_all(&opts.dir).map_err(|e| StorageError(format!("{}: {e}", opts.dir.display())))?;
        // LRU, not HyperClock: tuning.md, "RocksDB options", says why.
        let cache = Cache::new_lru_cache(opts.block_cache_bytes);
        let mut db_opts = Options::default();
        db_opts.create_if_missing(true);
        db_opts.create_missing_column_families(true);
        db_opts.set_max_background_jobs(2);
        // Shards write to one DB from several threads: pipelining the WAL and
        // memtable stages let 2 shards take SET -P1 from 45k to 51-52k ops/s
        // (1 shard: no change beyond noise). tuning.md has the runs.
        db_opts.set_enable_pipelined_write(true);
        db_opts.set_bytes_per_sync(1 << 20);
        db_opts.set_max_total_wal_size(256 << 20);
        db_opts.set_keep_log_file_num(4);
        db_opts.set_manual_wal_flush(opts.manual_wal_flush);
        // Replay the WAL into memtables at startup without flushing them to
        // new SST files: a restart on a nearly full disk (7 MB free, 54 MB of
        // WAL) failed writing those files. rust-rocksdb has no setter for it.
        let mut db_opts = db_opts.get_options_from_string("avoid_flush_during_recovery=true")?;
        db_opts.create_if_missing(true);
        db_opts.create_missing_column_families(true);
        // The memory budget's cap on memtables (no stall: a write never
        // waits for it, it only makes RocksDB flush sooner).
        // RocksDB's flush threads run at the lowest CPU priority: they share
        // the shards' cores, and at the same priority the kernel gave them
        // whole time slices in the middle of a shard's work. 1 shard on core
        // 0 clearing 1M keys due together: PING p99 4.1-5.1 ms at normal
        // priority, 3.7-3.9 at nice 10, 1.3-1.4 with flushes at the lowest,
        // 1.0-1.5 with compactions too (lowering the compaction pool alone
        // did nothing). Compactions stay at normal priority: under 6 minutes
        // of SET -P16 nothing measurable was gained by lowering them, and
        // they keep L0 short. tuning.md, "Flushes at the lowest priority".
        let mut env = rocksdb::Env::new()?;
        if opts.background != Background::Normal {
            env.lower_high_priority_thread_pool_cpu_priority();
        }
        if opts.background == Background::Low {
            env.lower_thread_pool_cpu_priority();
        }
        db_opts.set_env(&env);
        let memtables =
            (opts.memtables_bytes > 0).then(|| rocksdb::WriteBufferManager::new_write_buffer_manager(opts.memtables_bytes, false));
        if let Some(m) = &memtables {
            db_opts.set_write_buffer_manager(m);
        }
        let mut opened = if opts.split {
            open::open_split(&db_opts, &cache, opts)?
        } else {
            open::open_shared(&db_opts, &cache, opts)?
        };
        let main = &opened.dbs[0];
        Self::load_db_map(main)?;
        Self::record_layout(main, opts.shards)?;
        let intent_ids = AtomicU64::new(Self::first_free_intent_id(main));
        // `meta-cache-size` pays for both record caches: a quarter of it
        // for member records.
        let per_shard = opts.meta_cache_bytes / opts.shards.max(1) as u64;
        let (meta_share, member_share) = (per_shard - per_shard / MEMBER_CACHE_DIV, per_shard / MEMBER_CACHE_DIV);
        let tiers = wtier::open_logs(opts, &mut opened)?;
        Ok(Engine {
            dbs: opened.dbs.into_iter().map(Db::new).collect(),
            homes: opened.homes,
            intent_ids,
            tx_sink: Default::default(),
            redo_queue: Default::default(),
            meta_caches: (0..opts.shards)
                .map(|_| (meta_share > 0).then(|| Arc::new(cache::MetaCache::new(meta_share))))
                .collect(),
            member_caches: (0..opts.shards)
                .map(|_| (member_share > 0).then(|| Arc::new(mcache::MemberCache::new(member_share))))
                .collect(),
            fsync: AtomicU8::new(Fsync::EverySec as u8),
            dir: opts.dir.clone(),
            manual_wal_flush: opts.manual_wal_flush,
            group_syncs: AtomicU64::new(0),
            gc_slots: opened.gc_slots,
            gc_found: opened.gc_found,
            disk: disk::DiskGuard::default(),
            tier: tier::Tier::new(opts.io_threads),
            block_cache: cache,
            block_cache_bytes: opts.block_cache_bytes as u64,
            memtables,
            write_tier: opts.tier_limits(),
            tier_starts: tiers.starts.into_iter().map(Into::into).collect(),
            tier_logs: tiers.logs,
            tier_cut_pauses: Default::default(),
            tier_held: tiers.held,
            tier_loaded: tiers.loaded,
        })
    }

    /// Lets the compaction filters read meta records (they keep everything
    /// until then): call once the engine lives for the rest of the process.
    pub fn enable_gc(&'static self) {
        for (name, slot) in &self.gc_slots {
            let meta = name.strip_suffix("-sub").unwrap_or(name);
            let db = &self.home_of_family(meta).db;
            if let Some(cf) = db.cf_handle(meta) {
                let _ = slot.set((db, cf));
            }
        }
    }

    /// The database holding the default family.
    #[inline]
    pub(super) fn main(&self) -> &DB {
        &self.dbs[0].db
    }

    /// The database holding shard `i`'s families.
    #[inline]
    fn home(&self, i: usize) -> &Db {
        self.homes.get(i).and_then(|&d| self.dbs.get(d)).unwrap_or(&self.dbs[0])
    }

    /// The database of the family named `name` (`shard-<i>...`; the first
    /// for any other).
    fn home_of_family(&self, name: &str) -> &Db {
        let i = name
            .strip_prefix("shard-")
            .and_then(|r| r.split('-').next())
            .and_then(|n| n.parse::<usize>().ok());
        i.map_or(&self.dbs[0], |i| self.home(i))
    }

    /// Every shard family of the first `shards` shards, with its database.
    fn shard_families(&self, shards: usize) -> impl Iterator<Item = (&DB, &ColumnFamily)> {
        shard_cf_names(shards).filter_map(move |n| {
            let db = &self.home_of_family(&n).db;
            db.cf_handle(&n).map(|cf| (db, cf))
        })
    }

    pub fn set_fsync(&self, f: Fsync) {
        self.fsync.store(f as u8, Ordering::Relaxed);
    }

    pub fn fsync(&self) -> Fsync {
        match self.fsync.load(Ordering::Relaxed) {
            0 => Fsync::Always,
            1 => Fsync::EverySec,
            _ => Fsync::No,
        }
    }

    /// The store of shard `i`.
    pub fn shard(&'static self, i: usize) -> Result<ShardStore, StorageError> {
        self.store(i, true)
    }

    /// Shard `i`'s store; the owner's takes what its tier's replay loaded.
    fn store(&'static self, i: usize, owner: bool) -> Result<ShardStore, StorageError> {
        let loaded = match self.tier_loaded.get(i).filter(|_| owner) {
            Some(l) => std::mem::take(&mut *l.lock().unwrap_or_else(|e| e.into_inner())),
            None => Vec::new(),
        };
        let home = self.home(i);
        let home_index = self.homes.get(i).copied().unwrap_or(0);
        let db = &home.db;
        let handle = |name: String| {
            db.cf_handle(&name)
                .ok_or_else(|| StorageError(format!("missing column family {name}")))
        };
        let (cf, sub) = (handle(cf_name(i))?, handle(sub_cf_name(i))?);
        let cache = self.meta_caches.get(i).cloned().flatten();
        // One hash of a meta key serves the cache, the tier and the access
        // table (`Keyspace::lookup`).
        let hasher = cache.as_ref().map_or_else(ahash::RandomState::new, |c| c.hasher().clone());
        let s = ShardStore {
            engine: self,
            home,
            home_index,
            db,
            cf,
            sub,
            ids: (rep::cf_id(cf), rep::cf_id(sub)),
            cache,
            members: self.member_caches.get(i).filter(|_| owner).cloned().flatten(),
            ahead: Default::default(),
            watches: Default::default(),
            group: Default::default(),
            tx: Default::default(),
            probe: Default::default(),
            wtier: wtier::WriteTier::new(
                self.tier_logs.get(i).cloned().flatten(),
                self.write_tier,
                self.tier_starts.get(i),
                self.tier_held.get(i).cloned().flatten(),
                loaded,
                hasher,
            ),
            found: self.gc_found.iter().find(|(n, _)| *n == cf_name(i)).map(|(_, f)| f.clone()),
            spare: Default::default(),
            keys: Default::default(),
        };
        s.tier_set_room(0);
        Ok(s)
    }

    /// A read-only view of shard `i` for another shard's thread: it looks
    /// in the owner's meta cache, then RocksDB, and never fills the cache.
    pub fn peer(&'static self, i: usize) -> Result<PeerStore, StorageError> {
        self.store(i, false).map(PeerStore)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// A RocksDB snapshot of the process-wide database. It may travel between
/// shards (rust-rocksdb marks it `Send + Sync`); dropping it releases it.
/// Taken inside a transaction, it keeps a copy of what the transaction
/// had staged (`tx`).
pub struct Snap(rocksdb::SnapshotWithThreadMode<'static, DB>, Option<Arc<tx::Overlay>>);

/// One shard's view of the database: its column families and its meta cache.
/// Only the shard's own thread writes through it (and, before the shards
/// start, intent replay): the cache is exact only under that rule.
pub struct ShardStore {
    engine: &'static Engine,
    /// The database of its families (`db` is its RocksDB handle), and its
    /// index in the engine's.
    home: &'static Db,
    home_index: usize,
    db: &'static DB,
    /// Meta records and the indexes.
    cf: &'static ColumnFamily,
    /// Collection members (`keys::is_sub`).
    sub: &'static ColumnFamily,
    /// Their ids, as a [`rep::Rep`] names them.
    ids: (u32, u32),
    cache: Option<Arc<cache::MetaCache>>,
    /// Clean member records (`mcache`): the owner's store only.
    members: Option<Arc<mcache::MemberCache>>,
    /// Members read ahead of the pops that take them (`ahead`).
    ahead: ahead::ReadAhead,
    /// Keys clients WATCH (`watch`).
    watches: watch::Watches,
    group: group::GroupState,
    tx: tx::TxState,
    probe: tier::Probe,
    /// The write tier (`wtier`, a prototype).
    wtier: wtier::WriteTier,
    /// Long-expired keys the compaction filter met (`gc`).
    found: Option<gc::Found>,
    /// Emptied batches, to be filled again ([`ShardStore::batch`]).
    spare: std::cell::RefCell<Vec<Batch>>,
    /// Which meta keys may exist (`keyfilter`): the owner's, once built.
    keys: keyfilter::KeyFilter,
}

/// The share of `meta-cache-size` the member caches get: one part in this.
const MEMBER_CACHE_DIV: u64 = 4;

/// Batches kept for reuse per shard, and the largest one kept.
const SPARE_BATCHES: usize = 8;
const SPARE_BATCH_BYTES: usize = 64 << 10;

impl ShardStore {
    /// Turns on the owner's key filter (`keyfilter`), holding the keys of
    /// `hashes` (by [`ShardStore::key_hasher`]): every meta record's key
    /// the store holds, counted before any write of this store.
    pub fn build_key_filter(&self, hashes: &[u64]) {
        self.keys.build(hashes);
    }

    /// The key filter's (bytes, keys entered, keys sized for, reads it
    /// answered absent), for INFO.
    pub fn key_filter_stats(&self) -> (usize, usize, usize, u64) {
        self.keys.stats()
    }

    /// Whether the key filter says meta record `key` (hash `h` by the key
    /// hasher, if known) does not exist: RocksDB need not be read.
    #[inline]
    fn filtered_out(&self, key: &[u8], h: Option<u64>) -> bool {
        self.keys.on() && !self.keys.may_hold(h.unwrap_or_else(|| self.wtier.hasher().hash_one(key)))
    }

    /// The meta cache's counters, if this store has one.
    pub fn meta_cache_stats(&self) -> Option<cache::CacheStats> {
        self.cache.as_ref().map(|c| c.stats())
    }

    /// An empty batch: one a staged write left, when there is one (a
    /// write allocated a RocksDB batch, its buffer and two vectors; issue
    /// 52, item 3).
    #[inline]
    pub fn batch(&self) -> Batch {
        self.spare.borrow_mut().pop().unwrap_or_default()
    }

    /// Keeps an emptied `b` for [`ShardStore::batch`] (not a large one).
    fn recycle(&self, mut b: Batch) {
        let mut spare = self.spare.borrow_mut();
        if spare.len() >= SPARE_BATCHES || b.wb.size_in_bytes() > SPARE_BATCH_BYTES || b.main.is_some() {
            return;
        }
        b.clear();
        spare.push(b);
    }

    /// Whether writes are staged (an open group or transaction) rather
    /// than written at once.
    #[inline]
    fn staging(&self) -> bool {
        self.group.active() || self.tx.on()
    }

    /// Whether reads must look at staged records first (a transaction's,
    /// or a group's not yet written, open or held for the turn).
    #[inline]
    fn overlaid(&self) -> bool {
        // With the write tier, staged records wait in it (`tier_stage`).
        (self.group.held() && !self.wtier.on()) || self.tx.on()
    }

    /// The column family record `key` lives in.
    #[inline]
    fn cf_of(&self, key: &[u8]) -> &'static ColumnFamily {
        if keys::is_sub(key) {
            self.sub
        } else {
            self.cf
        }
    }

    #[inline]
    pub fn put(&self, b: &mut Batch, key: &[u8], value: &[u8]) {
        if self.keys.on() && cache::is_meta(key) {
            self.keys.add(self.wtier.hasher().hash_one(key));
        }
        self.put_present(b, key, value);
    }

    /// [`ShardStore::put`] of a meta record its writer read live: the key
    /// filter holds every live key already, so it is not asked again (its
    /// add probes each layer: 2.7% of INCR -P16 over hot keys).
    pub fn put_present(&self, b: &mut Batch, key: &[u8], value: &[u8]) {
        b.wb.put_cf(self.id_of(key), key, value);
        b.has_sub |= keys::is_sub(key);
        self.ahead.forget(key);
        self.touch(key);
        if self.tx.on() {
            b.ops.push(tx::Op::Record(key.into(), Some(Bytes::copy_from_slice(value))));
        } else {
            self.note(b, key, || Some(Bytes::copy_from_slice(value)));
        }
    }

    /// [`ShardStore::put`] of a member record its writer read absent (a
    /// new member or score record, a stream's new entry): deleted while
    /// the tier's generation still holds it, it leaves no tombstone.
    #[inline]
    pub fn put_new(&self, b: &mut Batch, key: &[u8], value: &[u8]) {
        if self.wtier.on() && !self.tx.on() && keys::is_sub(key) {
            if let Ok(i) = u32::try_from(b.wb.len()) {
                b.fresh.push(i);
            }
        }
        self.put(b, key, value);
    }

    #[inline]
    pub fn delete(&self, b: &mut Batch, key: &[u8]) {
        b.wb.delete_cf(self.id_of(key), key);
        b.has_sub |= keys::is_sub(key);
        self.ahead.forget(key);
        self.touch(key);
        if self.tx.on() {
            b.ops.push(tx::Op::Record(key.into(), None));
        } else {
            self.note(b, key, || None);
        }
    }

    /// Records what the cache and an open group need to know of a write.
    #[inline]
    fn note(&self, b: &mut Batch, key: &[u8], value: impl FnOnce() -> Option<Bytes>) {
        let grouping = self.group.active();
        if grouping && self.wtier.on() {
            // Staged into the tier from the batch itself; written past it
            // instead, the batch tells the cache its records then.
            b.unnoted = true;
            return;
        }
        if grouping {
            b.hashes.push(self.group.hash(key));
        }
        if (grouping || self.cache.is_some()) && cache::is_meta(key) {
            b.meta.push((key.into(), value()));
        }
    }

    pub fn delete_range(&self, b: &mut Batch, from: &[u8], to: &[u8]) {
        self.touch_range(from, to);
        let (meta, sub) = keys::range_families(from, to);
        if meta {
            b.wb.delete_range_cf(self.ids.0, from, to);
        }
        if sub {
            b.wb.delete_range_cf(self.ids.1, from, to);
            self.ahead.forget_range(from, to);
            if self.members.is_some() {
                b.sub_ranges.push((from.into(), to.into()));
            }
        }
        b.has_range = true;
        if self.tx.on() {
            b.ops.push(tx::Op::Range(from.into(), to.into()));
        }
        if !cache::range_spares_meta(from, to) {
            b.clears_meta = true;
        }
    }

    /// Applies a batch atomically, synced according to `appendfsync`.
    /// With a group open (`group`), the batch joins the group instead.
    pub fn write(&self, mut b: Batch) -> Result<(), StorageError> {
        if b.wb.is_empty() && b.main.is_none() {
            self.recycle(b);
            return Ok(());
        }
        self.note_write();
        if self.staging() {
            if self.stage(&mut b) {
                self.recycle(b);
                return Ok(());
            }
            // Written on its own, after what the group holds (what waits
            // for a write waits for this one too).
            self.flush_group_only()?;
        } else if let Some(done) = self.tier_stage_alone(&mut b) {
            self.recycle(b);
            return done;
        } else if self.group.held() {
            // Held records of this turn go first: they are older.
            self.flush_group()?;
        }
        // Never a sync per write: under `always` the connection syncs once
        // for every write of the loop iteration before it replies (group
        // commit, as Redis's beforeSleep does for its AOF).
        // Staged for the tier, its meta records were not noted: the cache
        // learns them from the batch (a write past the tier is rare). The
        // member cache forgets the member records it writes.
        let rep = (b.unnoted || b.has_sub).then(|| b.wb.data().to_vec());
        let written = match &b.main {
            None => self.tier_direct(b.wb.to_batch()),
            Some(main) => self.write_with_main(b.wb.to_batch(), &main.to_batch()),
        };
        if let Err(e) = written {
            // RocksDB may hold the batch or not: forget what the caches knew.
            self.forget_cached();
            self.drop_after();
            return Err(e);
        }
        if let Some(c) = self.cache.as_ref().filter(|_| b.clears_meta) {
            c.clear();
        }
        if let Some(rep) = rep {
            let meta = self.cache.as_ref().filter(|_| b.unnoted);
            let whole = wtier::each_record(&rep, |k, v| {
                if cache::is_meta(k) {
                    if let Some(c) = meta {
                        c.insert(k, v);
                    }
                } else if let Some(m) = self.members.as_ref().filter(|_| keys::is_sub(k)) {
                    m.remove(k);
                }
            });
            if !whole {
                self.forget_cached();
            }
        }
        if let Some(m) = &self.members {
            for (from, to) in &b.sub_ranges {
                m.cut(from, to);
            }
        }
        if let Some(c) = &self.cache {
            for (k, v) in b.meta.drain(..) {
                c.insert(&k, v.as_deref());
            }
        }
        self.recycle(b);
        self.run_after();
        Ok(())
    }
}

#[cfg(test)]
mod testkit;
#[cfg(test)]
use testkit::test_opts;
