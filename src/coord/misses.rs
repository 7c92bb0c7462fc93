//! Commands whose records are on disk only wait for the I/O pool, not the
//! shard (`storage::tier` has the mechanism; docs/larger-than-memory.md the
//! design and its measurements).
//!
//! A read-only command runs in probe mode: every point read answers from
//! memory or fails with the key it wants. Then its reply is dropped, the
//! wanted records (and the key records of the pipelined commands after it,
//! which would likely miss too) are read by the pool in one `MultiGet`,
//! and the command runs again once they are in memory. The connection
//! waits; the shard serves its other clients meanwhile. Replies leave in
//! each connection's order, because the connection runs its commands one
//! after another as before.

use std::rc::Rc;

use bytes::Bytes;
use shards::Then;

use crate::clock::now_ms;
use crate::cmd::{self, Exec};
use crate::error::CmdResult;
use crate::resp::Reply;
use crate::shard::ShardState;
use crate::storage::keys::meta_key;
use crate::storage::{owner, PeerStore, ShardStore};

/// Probe-and-fetch rounds before a command reads the disk itself: a chain
/// of reads (a hash's meta, then its field) takes two; more means blocks
/// were evicted between the fetch and the run again.
pub const ROUNDS: usize = 4;

/// How many pipelined commands after a miss have their key records
/// fetched with it.
const AHEAD: usize = 64;

/// A GET of another shard's key, read from that shard's column family here
/// (`strings::get_from`), probed as local reads are: a record on disk only
/// is fetched by the pool while this shard goes on, with the records of
/// that shard's keys in the commands of `next` (a pipeline of GETs over
/// two shards would otherwise go to the pool one GET at a time). None when
/// only the owner can answer.
pub async fn peer_get<'a>(
    store: &PeerStore,
    db: u8,
    key: &[u8],
    next: impl Iterator<Item = &'a [Bytes]>,
    shards: usize,
    out: &mut Reply,
) -> Option<CmdResult<bool>> {
    let s = store.store();
    let mut next = Some(next);
    let probe = s.tiered();
    let mut round = 0;
    loop {
        let at = out.buf.len();
        s.set_probe(probe && round < ROUNDS);
        let found = cmd::strings::get_from(store, db, key, now_ms(), out);
        s.set_probe(false);
        if !s.missed() {
            return found;
        }
        out.buf.truncate(at);
        round += 1;
        let mut keys = s.take_wanted();
        if let Some(next) = next.take() {
            ahead_of(s, owner(key, shards), shards, next, db, &mut keys);
        }
        s.fetch(keys).await;
    }
}

/// Reads `keys` on the pool together with the key records of the commands
/// in `next` ([`ahead`]), and lets the meta cache keep what it read.
pub async fn fetch<'a>(st: &ShardState, mut keys: Vec<Vec<u8>>, next: impl Iterator<Item = &'a [Bytes]>, db: u8) {
    ahead(st, next, db, &mut keys);
    st.ks.store.fetch_into_cache(keys).await;
}

/// Whether a command runs in probe mode on this shard.
#[inline]
pub fn probes(st: &ShardState, spec: &cmd::CommandSpec) -> bool {
    spec.is_readonly() && st.ks.store.tiered()
}

/// Adds to `keys` the key records not in the meta cache of the commands in
/// `next` whose keys live here, up to a connection command without keys.
pub fn ahead<'a>(st: &ShardState, next: impl Iterator<Item = &'a [Bytes]>, db: u8, keys: &mut Vec<Vec<u8>>) {
    ahead_of(&st.ks.store, st.id, st.global.shards, next, db, keys);
}

/// [`ahead`] for the keys of shard `target` (whose store is `store`).
/// Keys of other shards are passed over: in a pipeline of random keys
/// every other command may be another shard's, and stopping there read
/// ahead one command in two shards' pipelines. A record read ahead only
/// warms the caches; the command reads it again when it runs.
fn ahead_of<'a>(
    store: &ShardStore,
    target: usize,
    shards: usize,
    next: impl Iterator<Item = &'a [Bytes]>,
    db: u8,
    keys: &mut Vec<Vec<u8>>,
) {
    for argv in next.take(AHEAD) {
        let Some((_, spec)) = argv.first().and_then(|name| cmd::lookup(name)) else {
            return;
        };
        // A connection command without keys may change what the next
        // ones mean (SELECT); one with keys reads them here or elsewhere.
        if !matches!(spec.exec, Exec::Shard(_)) && spec.first_key <= 0 {
            return;
        }
        for p in spec.key_positions(argv.len()) {
            let Some(key) = argv.get(p) else { continue };
            if owner(key, shards) != target {
                continue;
            }
            // Only the meta cache is asked: a full probe costs as much as
            // the read it would save when the record is in memory.
            let k = meta_key(db, key);
            if !store.meta_cached(&k) {
                keys.push(k);
            }
        }
    }
}

/// The keys a command names, by its key positions.
fn named<'k>(spec: &cmd::CommandSpec, argv: &'k [Bytes]) -> impl Iterator<Item = &'k [u8]> + 'k {
    spec.key_positions(argv.len())
        .into_iter()
        .filter_map(move |p| argv.get(p))
        .map(|k| k.as_ref())
}

/// The key records of a (writing) command that are on disk only: it
/// fetches them before it runs, so its own reads of them do not stop the
/// shard. The meta cache answers for most keys at the cost of a hash
/// lookup; the others are probed (a RocksDB read from memory, whose answer
/// the meta cache then keeps for the command's own read).
pub fn cold_keys(st: &ShardState, spec: &cmd::CommandSpec, argv: &[Bytes], db: u8) -> Vec<Vec<u8>> {
    cold_of(st, db, named(spec, argv))
}

/// [`cold_keys`] of a list of keys.
fn cold_of<'k>(st: &ShardState, db: u8, keys: impl Iterator<Item = &'k [u8]>) -> Vec<Vec<u8>> {
    keys.map(|key| meta_key(db, key))
        .filter(|k| matches!(st.ks.store.needs_io_before_write(k), Ok(true)))
        .collect()
}

/// The key records of a command that waits for the pool, held until it
/// has run (released on drop, also when its connection goes away): a
/// write to one of them from another client waits, so a write that
/// arrives while a read is in flight is ordered after the read, as its
/// arrival order says.
pub struct Hold<'a> {
    st: &'a ShardState,
    keys: Vec<Vec<u8>>,
}

impl<'a> Hold<'a> {
    pub fn new(st: &'a ShardState, spec: &cmd::CommandSpec, argv: &[Bytes], db: u8) -> Hold<'a> {
        Hold::of(st, db, named(spec, argv))
    }

    /// Holds the records of `keys`.
    pub fn of<'k>(st: &'a ShardState, db: u8, keys: impl Iterator<Item = &'k [u8]>) -> Hold<'a> {
        let keys: Vec<Vec<u8>> = keys.map(|k| meta_key(db, k)).collect();
        for k in &keys {
            st.ks.store.hold(k);
        }
        Hold { st, keys }
    }
}

impl Drop for Hold<'_> {
    fn drop(&mut self) {
        for k in &self.keys {
            self.st.ks.store.release(k);
        }
    }
}

/// Whether a command waiting for the pool holds a key this command names.
pub fn held(st: &ShardState, spec: &cmd::CommandSpec, argv: &[Bytes], db: u8) -> bool {
    // Checked first: naming the keys allocates, and this runs per write.
    st.ks.store.any_held() && held_of(st, db, named(spec, argv))
}

fn held_of<'k>(st: &ShardState, db: u8, mut keys: impl Iterator<Item = &'k [u8]>) -> bool {
    st.ks.store.any_held() && keys.any(|k| st.ks.store.is_held(&meta_key(db, k)))
}

/// Waits until no read in flight holds a key this (writing) command names.
pub async fn after_reads(st: &ShardState, spec: &cmd::CommandSpec, argv: &[Bytes], db: u8) {
    after_reads_of(st, db, named(spec, argv)).await
}

async fn after_reads_of<'k>(st: &ShardState, db: u8, keys: impl Iterator<Item = &'k [u8]>) {
    for key in keys {
        let k = meta_key(db, key);
        st.ks.store.unheld(&k).await;
    }
}

/// Runs a read-only job over `keys` (a multi-key command's share on their
/// owner: MGET, EXISTS) for `Shard::invoke_on_then`. It probes; the
/// records it finds on disk only, all of them, are read by the pool in one
/// `MultiGet` while the owner serves its other clients, and it runs again
/// (after [`ROUNDS`] it reads the disk itself).
pub fn read_job<R: 'static>(st: &Rc<ShardState>, db: u8, keys: Vec<Bytes>, job: impl Fn(&ShardState, &[Bytes]) -> R + 'static) -> Then<R> {
    if !st.ks.store.tiered() {
        return Then::Now(job(st, &keys));
    }
    if let Some(r) = probe_once(st, &keys, &job) {
        return Then::Now(r);
    }
    // Taken now: the store's wanted list is the next probe's once this
    // job lets the shard go on.
    let mut wanted = st.ks.store.take_wanted();
    let st = st.clone();
    Then::Later(Box::pin(async move {
        let _hold = Hold::of(&st, db, keys.iter().map(|k| k.as_ref()));
        for _ in 0..ROUNDS {
            st.ks.store.fetch_into_cache(wanted).await;
            if let Some(r) = probe_once(&st, &keys, &job) {
                return r;
            }
            wanted = st.ks.store.take_wanted();
        }
        job(&st, &keys)
    }))
}

/// One probed run of `job`: None (and its hit/miss counts undone) when a
/// record was on disk only; the wanted keys are left in the store.
fn probe_once<R>(st: &ShardState, keys: &[Bytes], job: &impl Fn(&ShardState, &[Bytes]) -> R) -> Option<R> {
    let lookups = (st.ks.stats.hits.get(), st.ks.stats.misses.get());
    st.ks.store.set_probe(true);
    let r = job(st, keys);
    st.ks.store.set_probe(false);
    if !st.ks.store.missed() {
        return Some(r);
    }
    st.ks.stats.hits.set(lookups.0);
    st.ks.stats.misses.set(lookups.1);
    None
}

/// Runs a writing job over `keys` (DEL's share on their owner) for
/// `Shard::invoke_on_then`, as a local write runs: after the reads in
/// flight on its keys, and with its key records fetched first when they
/// are on disk only.
pub fn write_job<R: 'static>(st: &Rc<ShardState>, db: u8, keys: Vec<Bytes>, job: impl Fn(&ShardState, &[Bytes]) -> R + 'static) -> Then<R> {
    let store = &st.ks.store;
    if !store.tiered() {
        return Then::Now(job(st, &keys));
    }
    let held = held_of(st, db, keys.iter().map(|k| k.as_ref()));
    let cold = if store.check_writes() {
        cold_of(st, db, keys.iter().map(|k| k.as_ref()))
    } else {
        Vec::new()
    };
    if !held && cold.is_empty() {
        return Then::Now(job(st, &keys));
    }
    let st = st.clone();
    Then::Later(Box::pin(async move {
        if held {
            after_reads_of(&st, db, keys.iter().map(|k| k.as_ref())).await;
        }
        let _hold = (!cold.is_empty()).then(|| Hold::of(&st, db, keys.iter().map(|k| k.as_ref())));
        if !cold.is_empty() {
            st.ks.store.fetch_into_cache(cold).await;
        }
        job(&st, &keys)
    }))
}
