//! A shard's keyspace: meta records with lazy expiration, the TTL index,
//! exact per-database key counts, key versions. No RESP here.
//!
//! Invariants:
//! - An expired key is never returned: every read checks the expiry and
//!   deletes what is due (lazy expiration, as Redis's `expireIfNeeded`).
//! - `counts[db]` is the number of meta records of `db` on this shard
//!   (expired-but-not-yet-deleted ones included, as Redis's DBSIZE does).
//!   Every write that creates or deletes a meta record adjusts it.
//! - `expires[db]` counts the meta records of `db` with an expiry (INFO
//!   keyspace `expires=`); writes pass the key's prior state ([`Prior`]) so
//!   it moves without another read.
//! - A key with an expiry has a TTL index entry at that expiry. Entries left
//!   behind by a changed expiry are stale; active expiration drops them.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use crate::error::{CmdError, CmdResult, CORRUPT};
use crate::storage::keys::{self, meta_key, meta_key_buf, ttl_key};
use crate::storage::meta::{self, Coll, KeyType, Meta};
use crate::storage::{Batch, ShardStore};

mod writes;
pub use writes::Counters;

/// The meta cache's counters, as INFO reports them.
pub use crate::storage::cache::CacheStats;

/// An owned copy of a key's meta value.
#[derive(Debug, Clone)]
pub struct Stored {
    pub raw: Vec<u8>,
}

impl Stored {
    /// The decoded view (the bytes were checked when the copy was made).
    pub fn meta(&self) -> Meta<'_> {
        Meta::decode(&self.raw).unwrap_or(Meta {
            ty: KeyType::String,
            expire_ms: 0,
            body: &[],
        })
    }
}

/// Counters the shard owns; INFO sums them over shards.
#[derive(Debug, Default)]
pub struct KeyspaceStats {
    pub expired_keys: Cell<u64>,
    /// Hash fields dropped because they expired (INFO `expired_subkeys`).
    pub expired_fields: Cell<u64>,
    pub hits: Cell<u64>,
    pub misses: Cell<u64>,
    /// Active expiry's running estimate of the share (0-1) of keys with an
    /// expiry that are due but not yet deleted (INFO `expired_stale_perc`).
    pub stale_share: Cell<f64>,
    /// Expiry cycles that stopped at their time cap with keys still due
    /// (`expired_time_cap_reached_count`).
    pub time_cap_reached: Cell<u64>,
    /// Time spent in active expiry cycles, µs (`expire_cycle_cpu_milliseconds`).
    pub cycle_us: Cell<u64>,
}

impl KeyspaceStats {
    /// Ends an active expiry cycle that deleted `expired` keys out of the
    /// `with_expiry` keys there were, took `took_us` and reached its time cap
    /// with keys still due or not: Redis's running average (5% the new
    /// cycle's share of expired keys, 95% the old estimate).
    pub fn end_cycle(&self, expired: u64, with_expiry: u64, capped: bool, took_us: u64) {
        let share = if with_expiry == 0 {
            0.0
        } else {
            (expired as f64 / with_expiry as f64).min(1.0)
        };
        self.stale_share.set(share * 0.05 + self.stale_share.get() * 0.95);
        self.time_cap_reached.set(self.time_cap_reached.get() + capped as u64);
        self.cycle_us.set(self.cycle_us.get() + took_us);
    }

    /// CONFIG RESETSTAT.
    pub fn reset(&self) {
        for c in [
            &self.expired_keys,
            &self.expired_fields,
            &self.hits,
            &self.misses,
            &self.time_cap_reached,
            &self.cycle_us,
        ] {
            c.set(0);
        }
        self.stale_share.set(0.0);
    }
}

/// One incarnation of a collection: (db, key, version).
pub type Incarnation = (u8, Vec<u8>, u64);

/// A collection's first and last member.
pub type Bounds = (Vec<u8>, Vec<u8>);

/// A key's state before a write: `None` when no live key was there, else
/// `Some(expire_ms)` of the live key (0: no expiry).
pub type Prior = Option<u64>;

/// Settles the meta record of a hash whose fields may all have expired
/// (`types::hash::settle`, passed in by `types::open`): the meta value to
/// read on with, None when no field was live and the key is gone.
pub type Repair = fn(&Keyspace, u8, &[u8], &[u8], u64) -> CmdResult<Option<Vec<u8>>>;

/// Active field expiration of one hash whose index entry is due
/// (`types::hash::visit_due`): given the key, its meta value, the entry
/// (key, value) and now, it repairs the hash or runs a slice of its sweep,
/// deletes the entry (in its own batch) and returns the fields it visited
/// and whether a sweep goes on (its next slice is due at once).
pub type Visit = fn(&Keyspace, u8, &[u8], &[u8], (&[u8], &[u8]), u64) -> CmdResult<(usize, bool)>;

/// The hash hooks a keyspace calls (`types::open` passes them in: the hash
/// code sits above the keyspace).
#[derive(Clone, Copy)]
pub struct HashHooks {
    pub repair: Repair,
    pub visit: Visit,
}

/// True when a hash's meta cannot prove it still has a live field: it has
/// no persistent field and some TTL candidate may be due.
#[inline]
pub fn may_be_empty(m: &Meta<'_>, now: u64) -> bool {
    if m.ty != KeyType::Hash {
        return false;
    }
    matches!(m.coll(), Some(Coll { size, hfe: Some(h), .. }) if size > 0 && h.persist == 0 && now >= h.lower)
}

pub struct Keyspace {
    pub store: ShardStore,
    pub(super) hooks: HashHooks,
    counts: Vec<Cell<i64>>,
    expires: Vec<Cell<i64>>,
    /// The sum of those keys' expiry times (ms), for INFO's `avg_ttl`.
    ttl_sums: Vec<Cell<i128>>,
    last_version: Cell<u64>,
    pub stats: KeyspaceStats,
    /// First and last member of big collections, by (db, key, version):
    /// where random picks seek (`types::coll::random_members`). Stale
    /// entries are harmless hints; the map is cleared when it grows large.
    pub sample_bounds: RefCell<HashMap<Incarnation, Bounds>>,
    /// The count-block layouts of the big sorted sets commands used lately.
    pub zlayouts: super::zlayout::Layouts,
    /// Where active expiry walks the TTL index (see [`Keyspace::expire_due`]).
    pub(super) ttl_walk: IndexWalk,
    /// Where active field expiry walks the field expiration index.
    pub(super) field_walk: IndexWalk,
    /// Active expiry's last cycle stopped at its cap with keys still due:
    /// writes pay their debt ([`Keyspace::pay_expiry_debt`]).
    pub expiry_behind: Cell<bool>,
    /// Expirations owed by keys, and by hash fields, written with an
    /// expiry while behind.
    pub(super) expiry_debt: Cell<(u32, u32)>,
    /// Keyspace notifications' hook, set once by the server (`notify`).
    pub notifier: std::cell::OnceCell<super::notify::Notifier>,
    /// `keymiss` events of the command running (`note_lookup`).
    keymisses: RefCell<Vec<(u8, Box<[u8]>)>>,
    /// A read command runs: reads are its lookups (`begin_lookups`).
    lookups: Cell<bool>,
    /// When each key was last accessed, and how often (`types::access`).
    pub access: super::access::Access,
}

/// Where active expiry walks an expiry index: a cursor within a round, a
/// floor between rounds (`types::expiry` walks it and says why).
#[derive(Default)]
pub(super) struct IndexWalk {
    pub(super) cursor: RefCell<Option<Vec<u8>>>,
    pub(super) floor: Cell<u64>,
    /// The earliest time of an entry placed this round (`IndexWalk::place`).
    pub(super) pending: Cell<Option<u64>>,
}

pub(super) fn bump(c: &Cell<u64>) {
    c.set(c.get() + 1);
}

impl Keyspace {
    /// Opens a shard's keyspace and counts its keys and the keys with an
    /// expiry (one scan of each db's meta records).
    pub fn open(store: ShardStore, databases: usize, hooks: HashHooks) -> CmdResult<Keyspace> {
        let hasher = store.key_hasher().clone();
        let ks = Keyspace {
            store,
            hooks,
            counts: (0..databases).map(|_| Cell::new(0)).collect(),
            expires: (0..databases).map(|_| Cell::new(0)).collect(),
            ttl_sums: (0..databases).map(|_| Cell::new(0)).collect(),
            last_version: Cell::new(0),
            sample_bounds: RefCell::new(HashMap::new()),
            zlayouts: Default::default(),
            ttl_walk: IndexWalk::default(),
            field_walk: IndexWalk::default(),
            expiry_behind: Cell::new(false),
            expiry_debt: Cell::new((0, 0)),
            notifier: Default::default(),
            keymisses: Default::default(),
            lookups: Cell::new(false),
            access: super::access::Access::new(crate::clock::wall_ms(), hasher),
            stats: KeyspaceStats::default(),
        };
        ks.count_and_filter_keys()?;
        Ok(ks)
    }

    pub fn databases(&self) -> usize {
        self.counts.len()
    }

    /// Keys of `db` on this shard.
    pub fn count(&self, db: u8) -> i64 {
        self.counts.get(db as usize).map_or(0, |c| c.get())
    }

    /// Keys of `db` on this shard that have an expiry.
    pub fn expires(&self, db: u8) -> i64 {
        self.expires.get(db as usize).map_or(0, |c| c.get())
    }

    /// Milliseconds since `key` was last accessed (OBJECT IDLETIME).
    pub fn idle_ms(&self, db: u8, key: &[u8], now_ms: u64) -> u64 {
        self.access.idle_ms(&meta_key_buf(db, key), now_ms)
    }

    /// `key`'s access counter (OBJECT FREQ).
    pub fn freq(&self, db: u8, key: &[u8], now_ms: u64) -> u8 {
        self.access.freq(&meta_key_buf(db, key), now_ms)
    }

    /// A read elsewhere accessed `key` (a cross-shard GET): one table
    /// update, no read (an entry for a key deleted meanwhile is harmless:
    /// a new key starts fresh).
    pub fn touch(&self, db: u8, key: &[u8], now_ms: u64) {
        self.access.touch(&meta_key_buf(db, key), now_ms, &self.store);
    }

    /// RESTORE's IDLETIME and FREQ for `key`.
    pub fn set_access(&self, db: u8, key: &[u8], now_ms: u64, idle_s: Option<u64>, freq: Option<u8>) {
        self.access.set(&meta_key_buf(db, key), now_ms, idle_s, freq, &self.store);
    }

    /// SWAPDB `a` `b` on this shard, once the engine switched its map
    /// (`Engine::swap_dbs`): the key counts follow their data, and watches
    /// follow their `SELECT` index (`ShardStore::swap_watched`).
    pub fn swap_dbs(&self, a: u8, b: u8) {
        let (a, b) = (a as usize, b as usize);
        if a < self.counts.len() && b < self.counts.len() {
            self.counts[a].swap(&self.counts[b]);
            self.expires[a].swap(&self.expires[b]);
            self.ttl_sums[a].swap(&self.ttl_sums[b]);
        }
        self.store.swap_watched(keys::physical(a as u8), keys::physical(b as u8));
    }

    fn adjust(&self, db: u8, delta: i64) {
        if let Some(c) = self.counts.get(db as usize) {
            c.set(c.get() + delta);
        }
    }

    fn adjust_expires(&self, db: u8, delta: i64) {
        if let Some(c) = self.expires.get(db as usize) {
            c.set(c.get() + delta);
        }
    }

    /// Count changes for a write from `prior` to a key with expiry `expire_ms`
    /// (`None`: the key is deleted).
    fn account(&self, db: u8, prior: Prior, after: Option<u64>) {
        self.adjust(db, after.is_some() as i64 - prior.is_some() as i64);
        let ttl = |p: Option<u64>| p.is_some_and(|e| e != 0) as i64;
        self.adjust_expires(db, ttl(after) - ttl(prior));
        if let Some(s) = self.ttl_sums.get(db as usize) {
            s.set(s.get() + after.unwrap_or(0) as i128 - prior.unwrap_or(0) as i128);
        }
    }

    /// INFO keyspace's `avg_ttl`: the mean time left (ms) of `db`'s keys
    /// with an expiry, exact (Redis estimates it from the keys its expiry
    /// cycle samples); 0 when none has one. Keys due but not yet reclaimed
    /// pull it down; it never goes below 0.
    pub fn avg_ttl(&self, db: u8, now_ms: u64) -> u64 {
        let n = self.expires(db);
        let sum = self.ttl_sums.get(db as usize).map_or(0, Cell::get);
        if n <= 0 {
            return 0;
        }
        (sum / n as i128 - now_ms as i128).max(0) as u64
    }

    /// A version unique to this shard and never going backwards:
    /// microseconds since the epoch shifted left 11 bits, plus a counter.
    pub fn next_version(&self, now_us: u64) -> u64 {
        let v = (now_us << 11).max(self.last_version.get() + 1);
        self.last_version.set(v);
        v
    }

    /// Reads a live key: `f` sees its meta (borrowed, no copy) or `None`.
    /// An expired key is deleted on the way and reads as missing. So is a
    /// hash whose every field has expired (its metadata is repaired first
    /// when it cannot prove that on its own, see `types::hash`).
    /// WATCH of `key`: reads it first (a key already expired is deleted
    /// now, so that deletion cannot spoil the watch later), then registers
    /// `flag` on its meta key (`storage::watch`). Its expiry time then, 0
    /// when it has none or is absent.
    pub fn watch(&self, db: u8, key: &[u8], now_ms: u64, flag: &std::sync::Arc<std::sync::atomic::AtomicBool>) -> CmdResult<u64> {
        let expire_ms = self.read(db, key, now_ms, |m| m.map_or(0, |m| m.expire_ms))?;
        self.store.watch(&meta_key(db, key), flag);
        Ok(expire_ms)
    }

    /// Reads a live key: `f` sees its meta (borrowed, no copy) or `None`.
    /// While a read command runs ([`Keyspace::begin_lookups`]) the read is
    /// one of its lookups: counted as a keyspace hit or miss, a miss also a
    /// `keymiss` event, as Redis's `lookupKeyRead` (reads made inside it,
    /// by a repair, are not lookups of their own).
    #[inline]
    pub fn read<R>(&self, db: u8, key: &[u8], now_ms: u64, f: impl FnOnce(Option<Meta<'_>>) -> R) -> CmdResult<R> {
        if !self.lookups.get() {
            return self.lookup(db, key, now_ms, f);
        }
        let mut hit = false;
        self.lookups.set(false);
        let r = self.lookup(db, key, now_ms, |m| {
            hit = m.is_some();
            f(m)
        });
        self.lookups.set(true);
        if r.is_ok() {
            self.note_lookup(db, key, hit);
        }
        r
    }

    pub(super) fn lookup<R>(&self, db: u8, key: &[u8], now_ms: u64, f: impl FnOnce(Option<Meta<'_>>) -> R) -> CmdResult<R> {
        enum Step<R> {
            Done(R),
            Expired(u64, Option<Box<Coll>>),
            Repair(Vec<u8>),
        }
        let mk = meta_key_buf(db, key);
        // One hash for the tier's map and the access table.
        let h = self.store.key_hasher().hash_one(&mk[..]);
        let mut f = Some(f);
        let mut live = false;
        let step = self.store.get_with_hash(&mk, h, |v| match v {
            None => Ok(f.take().map(|f| Step::Done(f(None)))),
            Some(raw) => match Meta::decode(raw) {
                None => Err(CORRUPT),
                Some(m) if m.is_expired(now_ms) => Ok(Some(Step::Expired(m.expire_ms, m.coll().map(Box::new)))),
                Some(m) if may_be_empty(&m, now_ms) => Ok(Some(Step::Repair(raw.to_vec()))),
                Some(m) => {
                    live = true;
                    Ok(f.take().map(|f| Step::Done(f(Some(m)))))
                }
            },
        })??;
        if live && self.access.touching() {
            self.access.touch_hashed(h, &mk, now_ms, &self.store);
        }
        let f = f.take();
        match (step, f) {
            (Some(Step::Done(r)), _) => Ok(r),
            (Some(Step::Expired(at, coll)), Some(f)) => {
                // During CLIENT PAUSE the key reads as gone but stays, as
                // Redis keeps the dataset still.
                if !crate::pause::holds_expiry(crate::clock::wall_ms()) {
                    self.expire_key(db, key, at, coll.map(|c| *c))?;
                }
                Ok(f(None))
            }
            (Some(Step::Repair(raw)), Some(f)) => match (self.hooks.repair)(self, db, key, &raw, now_ms)? {
                Some(fixed) => Ok(f(Meta::decode(&fixed))),
                None => Ok(f(None)),
            },
            _ => Err(CORRUPT),
        }
    }

    /// Asks the CPU for what the lookups of `keys` (the next commands of a
    /// pipeline, in db `db`) will read from tables past its caches: each
    /// key's meta cache slot and access word, then the cache entry each slot
    /// points to. A guess that is no key costs a hash; nothing when the
    /// meta cache is small. GET -P16 over a million keys waited on these
    /// lines one command at a time (tuning.md, session 49).
    pub fn prefetch<'a>(&self, db: u8, keys: impl Iterator<Item = &'a [u8]>) {
        const MOST: usize = 32;
        if !self.store.meta_cache_big() {
            return;
        }
        let mut hashes = [0u64; MOST];
        let mut n = 0;
        for k in keys.take(MOST) {
            let mk = meta_key_buf(db, k);
            let h = self.store.key_hasher().hash_one(&mk[..]);
            self.store.prefetch_meta(h);
            self.access.prefetch(h);
            hashes[n] = h;
            n += 1;
        }
        for &h in &hashes[..n] {
            self.store.prefetch_meta_entry(h);
        }
    }

    /// An owned copy of a live key's meta value (one read).
    pub fn get(&self, db: u8, key: &[u8], now_ms: u64) -> CmdResult<Option<Stored>> {
        self.read(db, key, now_ms, |m| {
            m.map(|m| Stored {
                raw: meta::encode(m.ty, m.expire_ms, m.body),
            })
        })
    }

    /// The type of a live key.
    pub fn type_of(&self, db: u8, key: &[u8], now_ms: u64) -> CmdResult<Option<KeyType>> {
        self.read(db, key, now_ms, |m| m.map(|m| m.ty))
    }

    /// Deletes a key found expired (at `at`), with its TTL index entry,
    /// counting it as Redis counts expired keys.
    fn expire_key(&self, db: u8, key: &[u8], at: u64, coll: Option<Coll>) -> CmdResult<()> {
        let mut b = self.store.batch();
        self.store.delete(&mut b, &meta_key_buf(db, key));
        self.store.delete(&mut b, &ttl_key(at, db, key));
        self.stage_drop_members(&mut b, db, key, coll);
        self.store.write(b)?;
        // Only a key with an expiry expires.
        self.account(db, Some(1), None);
        bump(&self.stats.expired_keys);
        self.notify(super::notify::class::EXPIRED, "expired", db, key);
        Ok(())
    }

    /// Adds the writes that store `raw` as `key`'s meta value to `b`.
    /// `prior`: the key's state before (for the key and expiry counts).
    pub fn stage_put(&self, b: &mut Batch, db: u8, key: &[u8], raw: &[u8], prior: Prior) {
        let mk = meta_key_buf(db, key);
        if prior.is_none() {
            // A new key starts with a fresh access time and counter.
            self.access.created(&mk, self.access.now(), &self.store);
        } else if !self.access.touching() {
            // A write that read no key first (MSET, a move's destination)
            // still accesses it.
            self.access.touch(&mk, self.access.now(), &self.store);
        }
        if prior.is_some() {
            self.store.put_present(b, &mk, raw);
        } else {
            self.store.put(b, &mk, raw);
        }
        let expire_ms = Meta::decode(raw).map_or(0, |m| m.expire_ms);
        // The old index entry goes in the same batch: a key whose TTL
        // changes often leaves no stale entries behind. A write that keeps
        // the expiry (INCR, APPEND, HSET on a key with a TTL) keeps the
        // entry it has and writes none.
        if let Some(old) = prior.filter(|&old| old != 0 && old != expire_ms) {
            self.store.delete(b, &ttl_key(old, db, key));
        }
        if expire_ms != 0 && prior != Some(expire_ms) {
            self.store.put(b, &ttl_key(expire_ms, db, key), b"");
            self.owe_expiry(false);
        }
        self.account(db, prior, Some(expire_ms));
        if prior.is_none() {
            self.notify_new(db, key);
        }
    }

    /// Adds the delete of live key `key` (meta `m`) to `b`: its meta record
    /// and, for a collection, one range delete over its members.
    pub fn stage_delete(&self, b: &mut Batch, db: u8, key: &[u8], m: &Meta<'_>) {
        self.stage_delete_meta(b, db, key, m);
        if m.expire_ms != 0 {
            self.store.delete(b, &ttl_key(m.expire_ms, db, key));
        }
    }

    /// [`Keyspace::stage_delete`] but for the TTL index entry, which the
    /// caller deletes (active expiry deletes its slice's in index order).
    pub(super) fn stage_delete_meta(&self, b: &mut Batch, db: u8, key: &[u8], m: &Meta<'_>) {
        self.store.delete(b, &meta_key_buf(db, key));
        self.stage_drop_members(b, db, key, m.coll());
        self.account(db, Some(m.expire_ms), None);
    }

    /// Deletes the member records of a collection incarnation. Correctness
    /// does not need it (a new incarnation gets a new version, so old members
    /// are unreachable); it gives the space back without a compaction filter.
    pub fn stage_drop_members(&self, b: &mut Batch, db: u8, key: &[u8], coll: Option<Coll>) {
        if let Some(c) = coll.filter(|c| c.size > 0) {
            let (lo, hi) = keys::sub_range(db, key, c.version);
            self.store.delete_range(b, &lo, &hi);
        }
    }

    /// Stores `raw` as `key`'s meta value in one write.
    pub fn put(&self, db: u8, key: &[u8], raw: &[u8], prior: Prior) -> CmdResult<()> {
        self.put_over(db, key, raw, prior, None)
    }

    /// The shard's meta cache counters (zero when it has none).
    pub fn meta_cache_stats(&self) -> CacheStats {
        self.store.meta_cache_stats().unwrap_or_default()
    }

    /// The shard's member cache counters (zero when it has none).
    pub fn member_cache_stats(&self) -> CacheStats {
        self.store.member_cache_stats().unwrap_or_default()
    }

    /// Records and key and value bytes the shard's write tier holds.
    pub fn write_tier_size(&self) -> crate::storage::TierSize {
        self.store.write_tier_size()
    }

    /// The store's key filter: (bytes, keys entered, keys sized for, reads
    /// it answered absent).
    pub fn key_filter_stats(&self) -> (usize, usize, usize, u64) {
        self.store.key_filter_stats()
    }

    /// Sets the expiry of live key `stored` (`at` in ms, 0: none),
    /// rewriting only its meta record (a collection's members stay).
    pub fn set_expire(&self, db: u8, key: &[u8], stored: &Stored, at: u64) -> CmdResult<()> {
        self.put(db, key, &meta::with_expire(&stored.raw, at), Some(stored.meta().expire_ms))
    }

    /// [`Keyspace::put`] over a key that was collection `old` (SET over a
    /// hash): the old members go in the same batch.
    pub fn put_over(&self, db: u8, key: &[u8], raw: &[u8], prior: Prior, old: Option<Coll>) -> CmdResult<()> {
        let mut b = self.store.batch();
        self.stage_drop_members(&mut b, db, key, old);
        self.stage_put(&mut b, db, key, raw, prior);
        self.store.write(b).map_err(|e| {
            // Undo the counts: nothing was written.
            self.account(db, Some(Meta::decode(raw).map_or(0, |m| m.expire_ms)), prior);
            CmdError::from(e)
        })
    }

    /// Stores a string value.
    pub fn put_string(&self, db: u8, key: &[u8], expire_ms: u64, payload: &[u8], prior: Prior) -> CmdResult<()> {
        self.put(db, key, &meta::encode_buf(KeyType::String, expire_ms, payload), prior)
    }

    /// Deletes a key if it is live; true if it was.
    pub fn delete(&self, db: u8, key: &[u8], now_ms: u64) -> CmdResult<bool> {
        let mut b = self.store.batch();
        let found = self.read(db, key, now_ms, |m| match m {
            Some(m) => {
                self.stage_delete(&mut b, db, key, &m);
                true
            }
            None => false,
        })?;
        if found {
            self.store.write(b)?;
        }
        Ok(found)
    }

    /// Counts a read of `key` for INFO's keyspace_hits / keyspace_misses;
    /// a miss is also a `keymiss` event (class m), held until the command
    /// is known to have run for good ([`Keyspace::end_lookups`]: a probed
    /// pass that found a record on disk only is run again).
    pub fn note_lookup(&self, db: u8, key: &[u8], hit: bool) {
        bump(if hit { &self.stats.hits } else { &self.stats.misses });
        if !hit && self.notifier.get().is_some_and(|n| n.wants(super::notify::class::KEY_MISS)) {
            self.keymisses.borrow_mut().push((db, key.into()));
        }
    }

    /// From now until [`Keyspace::end_lookups`], every [`Keyspace::read`]
    /// is a lookup of a read command (see there).
    #[inline]
    pub fn begin_lookups(&self) {
        self.lookups.set(true);
    }

    /// After a command's lookups: sends their `keymiss` events when `kept`
    /// (the command ran for good), else forgets them.
    #[inline]
    pub fn end_lookups(&self, kept: bool) {
        self.lookups.set(false);
        if self.keymisses.borrow().is_empty() {
            return;
        }
        let misses = std::mem::take(&mut *self.keymisses.borrow_mut());
        if kept {
            for (db, key) in misses {
                self.notify(super::notify::class::KEY_MISS, "keymiss", db, &key);
            }
        }
    }

    /// Drops every key of `db` on this shard.
    pub fn flush_db(&self, db: u8) -> CmdResult<()> {
        let (lo, hi) = keys::db_range(db);
        let mut b = self.store.batch();
        self.store.delete_range(&mut b, &lo, &hi);
        self.store.write(b)?;
        self.adjust(db, -self.count(db));
        self.adjust_expires(db, -self.expires(db));
        if let Some(s) = self.ttl_sums.get(db as usize) {
            s.set(0);
        }
        Ok(())
    }

    /// Visits live meta records of `db` from slot `from_slot` up to (not
    /// including) `to_slot`, whole slots at a time, until `f` returns false
    /// at the end of a slot. Returns the next slot to visit.
    pub fn scan_slots(&self, db: u8, from_slot: u16, to_slot: u16, now_ms: u64, f: impl FnMut(&[u8], Meta<'_>) -> bool) -> CmdResult<u16> {
        self.scan_slots_bounded(db, from_slot, to_slot, now_ms, usize::MAX, f)
            .map(|(next, _)| next)
    }

    /// [`Keyspace::scan_slots`] that also stops at the end of a slot once it
    /// has stepped over `max_records` meta records, live or expired, so a
    /// keyspace of expired keys (or a pattern nothing matches) costs a
    /// bounded step. Only a slot holding more than that many keys (hash
    /// tags) goes over. Returns the next slot and the records stepped over.
    pub fn scan_slots_bounded(
        &self,
        db: u8,
        from_slot: u16,
        to_slot: u16,
        now_ms: u64,
        max_records: usize,
        mut f: impl FnMut(&[u8], Meta<'_>) -> bool,
    ) -> CmdResult<(u16, usize)> {
        let mut records = 0usize;
        let lo = keys::meta_slot_start(db, from_slot);
        let hi = if to_slot >= crate::slot::SLOTS {
            keys::meta_db_range(db).1
        } else {
            keys::meta_slot_start(db, to_slot)
        };
        let mut next = to_slot;
        let mut current: Option<u16> = None;
        let mut stop = false;
        let mut failed = None;
        self.store.scan(&lo, &hi, |k, v| {
            let (Some((_, slot, key)), Some(m)) = (keys::split_meta_key(k), Meta::decode(v)) else {
                return true;
            };
            if current != Some(slot) {
                if stop || records >= max_records {
                    next = slot;
                    return false;
                }
                current = Some(slot);
            }
            records += 1;
            if m.is_expired(now_ms) {
                return true;
            }
            // A hash that may have no live field left is only listed once a
            // read has proved it has one (the read repairs or deletes it);
            // KEYS, SCAN and RANDOMKEY never show a key GET-family reads miss.
            if may_be_empty(&m, now_ms) {
                match self.read(db, key, now_ms, |m| m.is_some()) {
                    Ok(true) => {}
                    Ok(false) => return true,
                    Err(e) => {
                        failed = Some(e);
                        return false;
                    }
                }
            }
            if !f(key, m) {
                stop = true;
            }
            true
        })?;
        if let Some(e) = failed {
            return Err(e);
        }
        Ok((next, records))
    }
}

impl Keyspace {
    /// Tells subscribers that `event` (of `class`) happened to `key`, once
    /// the writes staged so far are written. Call it after the write.
    pub fn notify(&self, class: u32, event: &'static str, db: u8, key: &[u8]) {
        self.queue_event(class, event, db, key, false);
    }

    /// The `new` event (class n) of a key this batch creates: after the
    /// batch is written, before the command's own event (Redis's `dbAdd`).
    fn notify_new(&self, db: u8, key: &[u8]) {
        self.queue_event(super::notify::class::NEW, "new", db, key, true);
    }

    /// Queues an event's publication behind the writes staged so far, or,
    /// with `next`, behind the write being built.
    fn queue_event(&self, class: u32, event: &'static str, db: u8, key: &[u8], next: bool) {
        let Some(n) = self.notifier.get() else { return };
        if !n.wants(class) {
            return;
        }
        let key = bytes::Bytes::copy_from_slice(key);
        let publish = n.publish.clone();
        let f: Box<dyn FnOnce()> = Box::new(move || publish(db, event, &key));
        if next {
            self.store.after_next_write(f);
        } else {
            self.store.after_write(f);
        }
    }
}

/// A one-shard keyspace on a fresh database in `dir`, with garbage
/// collection on, for unit tests of the types layer.
#[cfg(test)]
pub fn for_test(dir: &std::path::Path) -> Keyspace {
    use crate::storage::{Engine, StoreOptions};
    let opts = StoreOptions {
        dir: dir.to_path_buf(),
        shards: 1,
        block_cache_bytes: 1 << 20,
        write_buffer_bytes: 1 << 20,
        manual_wal_flush: false,
        meta_cache_bytes: 1 << 20,
        io_threads: 0,
        memtables_bytes: 0,
        bottommost: Default::default(),
        background: Default::default(),
        write_tier: 0,
        write_tier_bytes: 0,
        split: false,
    };
    let engine: &'static Engine = Box::leak(Box::new(Engine::open(&opts).expect("open engine")));
    engine.enable_gc();
    crate::types::open(engine.shard(0).expect("shard 0"), 1).expect("open keyspace")
}
