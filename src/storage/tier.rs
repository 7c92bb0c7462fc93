//! Reads that must not wait for the disk (issue 12; docs/larger-than-memory.md).
//!
//! A shard must not stop every client of its core for one read that goes
//! to the disk. Two pieces here:
//! - **Probing.** While a shard runs a read-only command in probe mode
//!   ([`ShardStore::set_probe`]), a point read answers from memory only:
//!   the write group, the meta cache, the memtables and RocksDB's block
//!   cache (`ReadTier::BlockCache`). A read that would need I/O (RocksDB's
//!   `Incomplete`) records its key ([`ShardStore::take_wanted`]) and reads
//!   as absent, so the command goes on and names every record it needs;
//!   the caller drops what the command did and runs it again later.
//! - **The I/O pool.** [`ShardStore::fetch`] hands keys to a pool of
//!   threads; a thread reads the jobs waiting together, one sorted
//!   `MultiGet` per column family (io_uring per SST file; which fills the
//!   block cache, see [`next_batch`] for who takes what), and wakes each
//!   job's task when done; the shard serves other clients meanwhile. The
//!   command then runs again and finds its blocks in memory.
//!
//! The command then reads again on its shard, in its connection's order, so
//! it sees every write accepted meanwhile and nothing here has to know what
//! a command reads or how to order it. The meta records the pool read go
//! into the owner's meta cache when no write reached the store between the
//! fetch's start and its end ([`ShardStore::fetch_into_cache`]): then the
//! second run costs a hash lookup instead of a RocksDB read.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use rocksdb::{DBPinnableSlice, ErrorKind, ReadOptions, ReadTier};

use super::{cache, keys, ShardStore, StorageError};

/// What a memory-only read found.
#[derive(Debug, PartialEq, Eq)]
pub enum InMemory<R> {
    /// Answered from memory (`f`'s result; the record may be absent).
    Done(R),
    /// The answer is on disk only.
    NeedsIo,
}

/// The engine's I/O pool, started on first use.
pub(super) struct Tier {
    pool: OnceLock<IoPool>,
    threads: usize,
    /// Jobs handed to the pool, and the keys they read (INFO stats).
    jobs: AtomicU64,
    keys: AtomicU64,
    /// `MultiGet` calls the pool made (jobs are read together, see
    /// [`BATCH_KEYS`]).
    batches: Arc<AtomicU64>,
    /// An artificial delay before each pool read (`DEBUG SET-IO-DELAY`, for
    /// tests that need a miss to stay in flight).
    delay_us: AtomicU64,
}

impl Tier {
    pub(super) fn new(threads: usize) -> Tier {
        Tier {
            pool: OnceLock::new(),
            threads,
            jobs: AtomicU64::new(0),
            keys: AtomicU64::new(0),
            batches: Arc::new(AtomicU64::new(0)),
            delay_us: AtomicU64::new(0),
        }
    }
}

impl super::Engine {
    /// Sets an artificial delay before each pool read (tests: a miss that
    /// stays in flight; `DEBUG SET-DISK-READ-DELAY`).
    pub fn set_read_delay(&self, d: Duration) {
        self.tier.delay_us.store(d.as_micros() as u64, Ordering::Relaxed);
    }

    /// Puts everything on disk only (tests; `DEBUG DROP-CACHES`): flushes
    /// the shards' memtables, empties the block cache (but what tables pin)
    /// and the meta caches.
    pub fn drop_caches(&self) -> Result<(), StorageError> {
        for (db, cf) in self.shard_families(self.meta_caches.len()) {
            db.flush_cf(cf)?;
        }
        let mut cache = self.block_cache.clone();
        cache.set_capacity(0);
        cache.set_capacity(self.block_cache_bytes as usize);
        for c in self.meta_caches.iter().flatten() {
            c.clear();
        }
        for c in self.member_caches.iter().flatten() {
            c.clear();
        }
        Ok(())
    }

    /// Jobs the I/O pool was given, the keys they read, and the
    /// `MultiGet` calls that read them.
    pub fn read_pool_stats(&self) -> (u64, u64, u64) {
        let t = &self.tier;
        (
            t.jobs.load(Ordering::Relaxed),
            t.keys.load(Ordering::Relaxed),
            t.batches.load(Ordering::Relaxed),
        )
    }
}

/// A shard store's probe mode (one per store: only its thread uses it).
pub(super) struct Probe {
    on: Cell<bool>,
    wanted: RefCell<Vec<Vec<u8>>>,
    ro: ReadOptions,
    /// Records that commands waiting for the pool will read (how many
    /// commands), and the tasks waiting for one of them to be released.
    held: RefCell<ahash::AHashMap<Vec<u8>, u32>>,
    waiters: RefCell<Vec<Waker>>,
    /// Writes still to check before they run since a record was last
    /// found on disk only, and a counter for sampling once that is 0.
    credit: Cell<u32>,
    sample: Cell<u32>,
    /// Counts this store's writes: a fetch's values go into the meta
    /// cache only if no write came between its start and its end.
    writes: Cell<u64>,
}

/// After a record is found on disk only, this many writes check theirs
/// before they run (`ShardStore::check_writes`).
const WRITE_CREDIT: u32 = 100_000;
/// Without a recent miss, one write in this many checks (a dataset in
/// memory does not pay a second lookup per write; a cold one is found at
/// its first sampled write).
const WRITE_SAMPLE: u32 = 64;

impl Default for Probe {
    fn default() -> Probe {
        let mut ro = ReadOptions::default();
        ro.set_read_tier(ReadTier::BlockCache);
        Probe {
            on: Cell::new(false),
            wanted: RefCell::new(Vec::new()),
            ro,
            held: RefCell::new(ahash::AHashMap::new()),
            waiters: RefCell::new(Vec::new()),
            credit: Cell::new(0),
            sample: Cell::new(0),
            writes: Cell::new(0),
        }
    }
}

impl ShardStore {
    /// Reads several member records (no meta records) at once: `f` sees
    /// each one's index in `keys` and its bytes, in the order of `keys`.
    /// Those the staged writes, the write tier or the read-ahead hold are
    /// answered from there; the rest with one RocksDB MultiGet (`keys` in
    /// key order), or one read each while probing (to name every miss).
    pub fn get_many_with(&self, keys: &[Vec<u8>], mut f: impl FnMut(usize, Option<&[u8]>)) -> Result<(), StorageError> {
        let mut held: Vec<Option<Option<bytes::Bytes>>> = vec![None; keys.len()];
        for (i, k) in keys.iter().enumerate() {
            if self.overlaid() {
                if let Some(v) = self.group_read(k)? {
                    held[i] = Some(v);
                    continue;
                }
            }
            if let Some(v) = self.wtier.get(k) {
                held[i] = Some(v.as_deref().map(bytes::Bytes::copy_from_slice));
                continue;
            }
            if let Some(v) = self.members.as_ref().and_then(|m| m.get(k)) {
                held[i] = Some(Some(v));
                continue;
            }
            if let Some(v) = self.ahead.get(k) {
                held[i] = Some(Some(bytes::Bytes::copy_from_slice(&v)));
            }
        }
        let rest = keys.iter().zip(&held).filter(|(_, h)| h.is_none()).map(|(k, _)| &k[..]);
        let mut got = if self.probing() {
            rest.map(|k| self.read_db(k)).collect::<Vec<_>>()
        } else {
            let found = self.db.batched_multi_get_cf(self.sub, rest, true);
            found.into_iter().map(|r| r.map_err(StorageError::from)).collect()
        }
        .into_iter();
        for (i, h) in held.iter().enumerate() {
            match h {
                Some(v) => f(i, v.as_deref()),
                None => {
                    let v = got.next().transpose()?.flatten();
                    if let (Some(m), Some(v)) = (&self.members, &v) {
                        m.insert(&keys[i], bytes::Bytes::copy_from_slice(v));
                    }
                    f(i, v.as_deref());
                }
            }
        }
        Ok(())
    }

    /// [`ShardStore::get_with`] from memory only: never reads the disk.
    pub fn get_in_memory<R>(&self, key: &[u8], f: impl FnOnce(Option<&[u8]>) -> R) -> Result<InMemory<R>, StorageError> {
        if self.overlaid() {
            if let Some(v) = self.group_read(key)? {
                return Ok(InMemory::Done(f(v.as_deref())));
            }
        }
        if let Some(v) = self.wtier.get(key) {
            return Ok(InMemory::Done(f(v.as_deref())));
        }
        if let Some(v) = self.cache.as_ref().filter(|_| cache::is_meta(key)).and_then(|c| c.peek(key)) {
            return Ok(InMemory::Done(f(v.value())));
        }
        if let Some(v) = self.members.as_ref().filter(|_| keys::is_sub(key)).and_then(|m| m.get(key)) {
            return Ok(InMemory::Done(f(Some(&v))));
        }
        match self.db.get_pinned_cf_opt(self.cf_of(key), key, &self.probe.ro) {
            Ok(v) => Ok(InMemory::Done(f(v.as_deref()))),
            Err(e) if e.kind() == ErrorKind::Incomplete => {
                self.probe.credit.set(WRITE_CREDIT);
                Ok(InMemory::NeedsIo)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Whether a write should check for records on disk only before it
    /// runs: always for a while after a miss, else one write in
    /// `WRITE_SAMPLE`.
    #[inline]
    pub fn check_writes(&self) -> bool {
        let p = &self.probe;
        if p.credit.get() > 0 {
            p.credit.set(p.credit.get() - 1);
            return true;
        }
        let n = p.sample.get().wrapping_add(1);
        p.sample.set(n);
        n.is_multiple_of(WRITE_SAMPLE)
    }

    /// For a command about to write `key` (a meta record): true when its
    /// record is on disk only. Found in memory, the record (or its absence)
    /// goes into the meta cache, so the command's own read of it costs a
    /// hash lookup; the write that follows replaces it there anyway.
    pub fn needs_io_before_write(&self, key: &[u8]) -> Result<bool, StorageError> {
        let Some(c) = self.cache.as_ref().filter(|_| cache::is_meta(key)) else {
            return Ok(matches!(self.get_in_memory(key, |_| ())?, InMemory::NeedsIo));
        };
        if c.holds(key) {
            return Ok(false);
        }
        if self.overlaid() && self.group_read(key)?.is_some() || self.wtier.get(key).is_some() {
            return Ok(false);
        }
        // A new key: its write's own read answers from the key filter.
        if self.filtered_out(key, None) {
            return Ok(false);
        }
        match self.db.get_pinned_cf_opt(self.cf_of(key), key, &self.probe.ro) {
            Ok(v) => {
                c.insert(key, v.as_deref());
                Ok(false)
            }
            Err(e) if e.kind() == ErrorKind::Incomplete => {
                self.probe.credit.set(WRITE_CREDIT);
                Ok(true)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// RocksDB's point read as `get_with` does it: from memory only in
    /// probe mode, recording the key when it is on disk only.
    #[inline]
    /// Whether point reads probe the block cache (see the module doc).
    pub(super) fn probing(&self) -> bool {
        self.probe.on.get()
    }

    pub(super) fn read_db(&self, key: &[u8]) -> Result<Option<DBPinnableSlice<'static>>, StorageError> {
        if !self.probe.on.get() {
            return Ok(self.db.get_pinned_cf(self.cf_of(key), key)?);
        }
        match self.db.get_pinned_cf_opt(self.cf_of(key), key, &self.probe.ro) {
            Ok(v) => Ok(v),
            // Answered as absent, so the command goes on and names every
            // record it would read (all of HMGET's fields, not one per
            // round); its reply is dropped (`missed`). Only read-only
            // commands probe, and none writes because a record is absent.
            Err(e) if e.kind() == ErrorKind::Incomplete => {
                self.probe.credit.set(WRITE_CREDIT);
                self.probe.wanted.borrow_mut().push(key.to_vec());
                Ok(None)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Turns probe mode on or off (see the module doc). Only point reads
    /// probe; scans and counts read the disk as before.
    pub fn set_probe(&self, on: bool) {
        self.probe.on.set(on);
    }

    /// The keys probed reads found on disk only since the last call.
    pub fn take_wanted(&self) -> Vec<Vec<u8>> {
        std::mem::take(&mut *self.probe.wanted.borrow_mut())
    }

    /// Whether a probed read has found a record on disk only since the
    /// last [`ShardStore::take_wanted`].
    pub fn missed(&self) -> bool {
        !self.probe.wanted.borrow().is_empty()
    }

    /// Marks `key` as read by a command that waits for the pool, so that a
    /// write to it can wait until that command has run ([`Self::unheld`]).
    pub fn hold(&self, key: &[u8]) {
        *self.probe.held.borrow_mut().entry(key.to_vec()).or_insert(0) += 1;
    }

    /// Undoes one [`Self::hold`] of `key`; wakes the waiting writers.
    pub fn release(&self, key: &[u8]) {
        let mut held = self.probe.held.borrow_mut();
        if let Some(n) = held.get_mut(key) {
            *n -= 1;
            if *n == 0 {
                held.remove(key);
            }
        }
        drop(held);
        for w in self.probe.waiters.borrow_mut().drain(..) {
            w.wake();
        }
    }

    /// Whether any record is held (the common answer, no: one branch).
    #[inline]
    pub fn any_held(&self) -> bool {
        !self.probe.held.borrow().is_empty()
    }

    /// Whether a command waiting for the pool holds `key`.
    pub fn is_held(&self, key: &[u8]) -> bool {
        self.probe.held.borrow().contains_key(key)
    }

    /// Resolves once no command waiting for the pool holds `key`.
    pub fn unheld<'a>(&'a self, key: &'a [u8]) -> Unheld<'a> {
        Unheld { store: self, key }
    }

    /// Whether the meta cache holds `key`'s record (or its absence).
    pub fn meta_cached(&self, key: &[u8]) -> bool {
        self.cache.as_ref().is_some_and(|c| c.holds(key))
    }

    /// Whether misses go to the I/O pool (`disk-read-threads` above 0).
    pub fn tiered(&self) -> bool {
        self.engine.tier.threads > 0
    }

    /// Reads `keys` on the I/O pool (their blocks land in the block cache)
    /// and resolves when done; the shard runs other tasks meanwhile.
    pub fn fetch(&self, keys: Vec<Vec<u8>>) -> Fetch {
        self.send(keys, false)
    }

    /// [`ShardStore::fetch`] for the owner's own store: the meta records
    /// read go into its meta cache too, if no write came in between (then
    /// the command's second run costs a hash lookup, not a RocksDB read).
    pub async fn fetch_into_cache(&self, keys: Vec<Vec<u8>>) {
        let writes = self.probe.writes.get();
        let done = self.send(keys, self.cache.is_some()).0;
        Fetch(done.clone()).await;
        let values = done.values.lock().map(|mut v| std::mem::take(&mut *v)).unwrap_or_default();
        if let Some(c) = self.cache.as_ref().filter(|_| self.probe.writes.get() == writes) {
            // What the write tier holds is newer than what RocksDB gave.
            for (k, v) in values.into_iter().filter(|(k, _)| self.wtier.get(k).is_none()) {
                c.insert(&k, v.as_deref());
            }
        }
    }

    /// Counts a write (see `Probe::writes`).
    #[inline]
    pub(super) fn note_write(&self) {
        self.probe.writes.set(self.probe.writes.get().wrapping_add(1));
    }

    fn send(&self, keys: Vec<Vec<u8>>, keep: bool) -> Fetch {
        let done = Arc::new(Done::default());
        let t = &self.engine.tier;
        let db: &'static rocksdb::DB = self.db;
        let pool = t.pool.get_or_init(|| IoPool::start(db, t.threads.max(1), t.batches.clone()));
        t.jobs.fetch_add(1, Ordering::Relaxed);
        t.keys.fetch_add(keys.len() as u64, Ordering::Relaxed);
        let job = Job {
            cf: self.cf,
            sub: self.sub,
            keys,
            done: done.clone(),
            delay: Duration::from_micros(t.delay_us.load(Ordering::Relaxed)),
            keep,
        };
        let n = job.keys.len();
        pool.queued.fetch_add(n, Ordering::SeqCst);
        let sent = pool
            .tx
            .as_ref()
            .is_some_and(|tx| tx.lock().map(|tx| tx.send(job).is_ok()).unwrap_or(false));
        if !sent {
            pool.queued.fetch_sub(n, Ordering::SeqCst);
            // No pool (its threads could not start): the command reads the
            // disk itself on its next run.
            done.ready.store(true, Ordering::Release);
        }
        Fetch(done)
    }
}

/// See [`ShardStore::unheld`].
pub struct Unheld<'a> {
    store: &'a ShardStore,
    key: &'a [u8],
}

impl Future for Unheld<'_> {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if !self.store.probe.held.borrow().contains_key(self.key) {
            return Poll::Ready(());
        }
        self.store.probe.waiters.borrow_mut().push(cx.waker().clone());
        Poll::Pending
    }
}

struct Job {
    /// The shard's meta family (which also names the shard) and its
    /// member family; each key is read from its own.
    cf: &'static rocksdb::ColumnFamily,
    sub: &'static rocksdb::ColumnFamily,
    keys: Vec<Vec<u8>>,
    done: Arc<Done>,
    delay: Duration,
    /// Hand the meta records read back (`ShardStore::fetch_into_cache`).
    keep: bool,
}

#[derive(Default)]
struct Done {
    ready: AtomicBool,
    waker: Mutex<Option<Waker>>,
    /// The meta records read, when the job was asked to keep them.
    values: Mutex<Vec<(Vec<u8>, Option<bytes::Bytes>)>>,
}

impl Done {
    fn finish(&self) {
        self.ready.store(true, Ordering::Release);
        if let Some(w) = self.waker.lock().ok().and_then(|mut w| w.take()) {
            w.wake();
        }
    }
}

/// Resolves once the pool has read a [`ShardStore::fetch`]'s keys. The
/// waker may be woken from a pool thread: glommio queues a foreign wake to
/// the task's own executor.
pub struct Fetch(Arc<Done>);

impl Future for Fetch {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0.ready.load(Ordering::Acquire) {
            return Poll::Ready(());
        }
        if let Ok(mut w) = self.0.waker.lock() {
            *w = Some(cx.waker().clone());
        }
        // Set after the check above and before the waker was stored: the
        // pool found no waker, so look again.
        if self.0.ready.load(Ordering::Acquire) {
            return Poll::Ready(());
        }
        Poll::Pending
    }
}

/// The pool threads' nice value. They share the shards' cores (the reads
/// cost CPU: ~26 us of system time per synchronous 4 KiB read in our VM,
/// fio psync QD1), and a shard serving hits must come first. Measured with
/// 1 shard on core 0, 10M keys, capped at 512 MB (tuning.md has the runs):
/// the hot range under cold readers 38k/s at nice 0 against 66k at 10;
/// 85k at 10 against 101k at 19, where cold GET -P1 halves (13.8k, 7.4k:
/// the shard then preempts the pool and wakes for every completion).
const IO_NICE: i32 = 10;

/// Threads that read for the shards: blocking reads, so that up to
/// `threads` of them are in flight at once; RocksDB is thread-safe.
struct IoPool {
    /// None when no thread could start.
    tx: Option<Mutex<mpsc::Sender<Job>>>,
    /// Keys sent and not yet taken by a thread.
    queued: Arc<AtomicUsize>,
}

impl IoPool {
    fn start(db: &'static rocksdb::DB, threads: usize, batches: Arc<AtomicU64>) -> IoPool {
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        let idle = Arc::new(AtomicUsize::new(0));
        let queued = Arc::new(AtomicUsize::new(0));
        let mut started = 0;
        for i in 0..threads {
            let rx = rx.clone();
            let batches = batches.clone();
            let idle = idle.clone();
            let queued = queued.clone();
            let spawned = std::thread::Builder::new().name(format!("io-{i}")).spawn(move || {
                // SAFETY: setpriority on this thread's own id (Linux
                // schedules threads one by one).
                unsafe {
                    libc::setpriority(libc::PRIO_PROCESS, libc::syscall(libc::SYS_gettid) as libc::id_t, IO_NICE);
                }
                while let Some(jobs) = next_batch(&rx, &idle, &queued) {
                    read_batch(db, &batches, jobs);
                }
            });
            match spawned {
                Ok(_) => started += 1,
                Err(e) => tracing::warn!("cannot start I/O thread {i}: {e}"),
            }
        }
        IoPool {
            tx: (started > 0).then(|| Mutex::new(tx)),
            queued,
        }
    }
}

/// Keys a pool thread reads in one go at most: it takes the jobs waiting
/// (from every shard and connection) up to this many keys and reads each
/// column family's share with one `MultiGet`, so RocksDB submits the blocks
/// each SST file needs together (io_uring: one submission, many reads in
/// flight) instead of one read per job.
const BATCH_KEYS: usize = 256;
/// Keys queued from which a pool thread takes every waiting job even
/// while other threads are idle ([`next_batch`]). GET over 10M cold keys,
/// 16 threads, 1 shard: 16, 32 and 64 read the same within noise (-P1
/// 13.3k-13.6k, -P16 25.1k-26.8k).
const DEEP: usize = 32;

/// The next jobs for a pool thread: the first waits, the rest are those
/// already queued, up to [`BATCH_KEYS`] keys. None when the pool is gone.
fn next_batch(rx: &Mutex<mpsc::Receiver<Job>>, idle: &AtomicUsize, queued: &AtomicUsize) -> Option<Vec<Job>> {
    idle.fetch_add(1, Ordering::SeqCst);
    let rx = rx.lock().ok();
    let first = rx.as_ref().and_then(|rx| rx.recv().ok());
    idle.fetch_sub(1, Ordering::SeqCst);
    let (rx, first) = (rx?, first?);
    let mut n = first.keys.len();
    queued.fetch_sub(n, Ordering::SeqCst);
    let mut jobs = vec![first];
    // A light load (few keys queued) with another thread idle: the next
    // job is that thread's, so separate reads run in parallel (GET -P1).
    // A deep queue: take it all, so each SST file's blocks go out in one
    // submission and fewer threads wake (GET -P16).
    while n < BATCH_KEYS && (idle.load(Ordering::SeqCst) == 0 || queued.load(Ordering::SeqCst) >= DEEP) {
        match rx.try_recv() {
            Ok(j) => {
                n += j.keys.len();
                queued.fetch_sub(j.keys.len(), Ordering::SeqCst);
                jobs.push(j);
            }
            Err(_) => break,
        }
    }
    Some(jobs)
}

/// Reads `jobs`' keys, one sorted `MultiGet` per column family, hands the
/// kept meta records back and wakes every job.
fn read_batch(db: &'static rocksdb::DB, batches: &AtomicU64, jobs: Vec<Job>) {
    let delay = jobs.iter().map(|j| j.delay).max().unwrap_or_default();
    if !delay.is_zero() {
        std::thread::sleep(delay);
    }
    let mut done = vec![false; jobs.len()];
    for i in 0..jobs.len() {
        if done[i] {
            continue;
        }
        let (cf, sub) = (jobs[i].cf, jobs[i].sub);
        let same: Vec<usize> = (i..jobs.len()).filter(|&j| !done[j] && std::ptr::eq(jobs[j].cf, cf)).collect();
        let mut keys: Vec<&[u8]> = same.iter().flat_map(|&j| jobs[j].keys.iter().map(Vec::as_slice)).collect();
        keys.sort_unstable();
        keys.dedup();
        // Member keys sort after a db's meta keys but before the next db's:
        // split them out, one read per family.
        let (members, metas): (Vec<&[u8]>, Vec<&[u8]>) = keys.iter().partition(|k| keys::is_sub(k));
        let keep = same.iter().any(|&j| jobs[j].keep);
        let mut found: Vec<(&[u8], Option<bytes::Bytes>)> = Vec::new();
        for (family, keys) in [(sub, members), (cf, metas)] {
            if keys.is_empty() {
                continue;
            }
            batches.fetch_add(1, Ordering::Relaxed);
            // Errors are left for the command's own read to report.
            // A lone key is read with a plain Get (RocksDB's pread): a buffered
            // io_uring read that misses the page cache goes to a kernel worker,
            // one more thread switch (GET -P1 12.2k -> 13.4k, one run each).
            let got = if keys.len() == 1 {
                vec![db.get_pinned_cf(family, keys[0])]
            } else {
                db.batched_multi_get_cf(family, &keys, true)
            };
            found.extend(
                keys.iter()
                    .zip(got)
                    .filter(|(k, _)| keep && cache::is_meta(k))
                    .filter_map(|(k, v)| v.ok().map(|v| (*k, v.map(|v| bytes::Bytes::copy_from_slice(&v))))),
            );
        }
        // Only meta records are kept, all read from the sorted `metas`:
        // `found` is in key order for the lookups below.
        for &j in &same {
            done[j] = true;
            let job = &jobs[j];
            if job.keep {
                let kept: Vec<_> = job
                    .keys
                    .iter()
                    .filter_map(|k| {
                        let at = found.binary_search_by(|(f, _)| (*f).cmp(k.as_slice())).ok()?;
                        Some((k.clone(), found[at].1.clone()))
                    })
                    .collect();
                if let Ok(mut values) = job.done.values.lock() {
                    *values = kept;
                }
            }
            job.done.finish();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{keys, sub_cf_name, test_opts, Engine};
    use super::*;

    #[test]
    fn a_record_only_on_disk_needs_io_until_a_read_brings_its_block_in() {
        let dir = tempfile::tempdir().unwrap();
        let e: &'static Engine = Box::leak(Box::new(Engine::open(&test_opts(dir.path(), 1, 0)).unwrap()));
        let s = e.shard(0).unwrap();
        let k = |i: u32| keys::sub_key(0, b"h", 1, &i.to_be_bytes());
        let mut b = s.batch();
        for i in 0..2000u32 {
            s.put(&mut b, &k(i), &[7u8; 100]);
        }
        s.write(b).unwrap();
        let copy = |v: Option<&[u8]>| v.map(|v| v.len());
        // In the memtable: memory.
        assert_eq!(s.get_in_memory(&k(5), copy).unwrap(), InMemory::Done(Some(100)));
        // Flushed to an SST whose data blocks were never read: disk only.
        e.main().flush_cf(e.main().cf_handle(&sub_cf_name(0)).unwrap()).unwrap();
        assert_eq!(s.get_in_memory(&k(5), copy).unwrap(), InMemory::NeedsIo);
        // A normal read loads the block; then memory answers, and so it
        // does for the neighbours in the same 4 KiB block.
        assert_eq!(s.get_with(&k(5), copy).unwrap(), Some(100));
        assert_eq!(s.get_in_memory(&k(5), copy).unwrap(), InMemory::Done(Some(100)));
        assert_eq!(s.get_in_memory(&k(6), copy).unwrap(), InMemory::Done(Some(100)));
        // A staged write in an open group is memory too.
        s.begin_group();
        let mut b = s.batch();
        s.put(&mut b, &k(1999), &[1u8; 3]);
        s.write(b).unwrap();
        assert_eq!(s.get_in_memory(&k(1999), copy).unwrap(), InMemory::Done(Some(3)));
        assert!(s.end_group().is_empty());
    }

    #[test]
    fn fetched_meta_records_reach_the_cache_only_if_no_write_came_between() {
        let dir = tempfile::tempdir().unwrap();
        let mut o = test_opts(dir.path(), 1, 1 << 20);
        o.io_threads = 2;
        let e: &'static Engine = Box::leak(Box::new(Engine::open(&o).unwrap()));
        let s = e.shard(0).unwrap();
        let (a, b) = (keys::meta_key(0, b"a"), keys::meta_key(0, b"b"));
        let mut batch = s.batch();
        s.put(&mut batch, &a, b"old-a");
        s.put(&mut batch, &b, b"old-b");
        s.write(batch).unwrap();
        e.drop_caches().unwrap();
        let cached = |k: &[u8]| s.cache.as_ref().unwrap().peek(k).map(|e| e.to_bytes());
        assert_eq!(cached(&a), None);
        // Nothing written meanwhile: the pool's reads go into the cache.
        futures_lite::future::block_on(s.fetch_into_cache(vec![a.clone()]));
        assert_eq!(cached(&a), Some(Some(bytes::Bytes::from_static(b"old-a"))));
        // A write after the pool read and before the fetch ends: what the
        // pool read is older than the write, so none of it goes in; the
        // cache keeps the write's record.
        e.set_read_delay(Duration::from_millis(100));
        let mut fut = Box::pin(s.fetch_into_cache(vec![b.clone()]));
        let waker = futures_lite::future::block_on(futures_lite::future::poll_fn(|cx| Poll::Ready(cx.waker().clone())));
        assert!(fut.as_mut().poll(&mut Context::from_waker(&waker)).is_pending());
        std::thread::sleep(Duration::from_millis(400));
        let mut batch = s.batch();
        s.put(&mut batch, &b, b"new-b");
        s.write(batch).unwrap();
        futures_lite::future::block_on(fut);
        assert_eq!(cached(&b), Some(Some(bytes::Bytes::from_static(b"new-b"))));
        assert_eq!(s.get_with(&b, |v| v.map(|v| v.to_vec())).unwrap(), Some(b"new-b".to_vec()));
    }

    #[test]
    fn jobs_read_together_each_get_their_own_records() {
        let dir = tempfile::tempdir().unwrap();
        let e: &'static Engine = Box::leak(Box::new(Engine::open(&test_opts(dir.path(), 2, 1 << 20)).unwrap()));
        let (s0, s1) = (e.shard(0).unwrap(), e.shard(1).unwrap());
        let (a, b, gone) = (keys::meta_key(0, b"a"), keys::meta_key(0, b"b"), keys::meta_key(0, b"gone"));
        for s in [&s0, &s1] {
            let mut batch = s.batch();
            s.put(&mut batch, &a, b"A");
            s.put(&mut batch, &b, if std::ptr::eq(s.cf, s0.cf) { b"B0" } else { b"B1" });
            s.write(batch).unwrap();
        }
        // A member record of shard 0: read from its member family.
        let m = keys::sub_key(0, b"h", 1, b"f");
        let mut batch = s0.batch();
        s0.put(&mut batch, &m, b"M");
        s0.write(batch).unwrap();
        let job = |s: &ShardStore, keys: Vec<Vec<u8>>, keep: bool| Job {
            cf: s.cf,
            sub: s.sub,
            keys,
            done: Arc::new(Done::default()),
            delay: Duration::ZERO,
            keep,
        };
        // Two jobs of shard 0 asking for `b` both, one of shard 1.
        let jobs = vec![
            job(&s0, vec![b.clone(), a.clone()], true),
            job(&s1, vec![b.clone()], true),
            job(&s0, vec![gone.clone(), b.clone()], true),
            job(&s0, vec![a.clone(), m.clone()], false),
        ];
        let dones: Vec<Arc<Done>> = jobs.iter().map(|j| j.done.clone()).collect();
        let batches = AtomicU64::new(0);
        read_batch(e.main(), &batches, jobs);
        // One read per column family: shard 0's meta and member families,
        // shard 1's meta family.
        assert_eq!(batches.load(Ordering::Relaxed), 3);
        assert!(dones.iter().all(|d| d.ready.load(Ordering::Acquire)));
        let kept = |d: &Done| d.values.lock().unwrap().clone();
        let v = |x: &'static [u8]| Some(bytes::Bytes::from_static(x));
        assert_eq!(kept(&dones[0]), vec![(b.clone(), v(b"B0")), (a.clone(), v(b"A"))]);
        assert_eq!(kept(&dones[1]), vec![(b.clone(), v(b"B1"))]);
        // An absent record is kept as absent (the meta cache then knows).
        assert_eq!(kept(&dones[2]), vec![(gone, None), (b, v(b"B0"))]);
        assert!(kept(&dones[3]).is_empty());
        // The member was read from its family: its block is in memory now.
        let copy = |v: Option<&[u8]>| v.map(<[u8]>::to_vec);
        assert_eq!(s0.get_in_memory(&m, copy).unwrap(), InMemory::Done(Some(b"M".to_vec())));
    }
}
