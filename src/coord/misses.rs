//! Keys whose records are on disk only wait for the I/O pool, not the
//! shard (`storage::tier` has the mechanism; docs/larger-than-memory.md the
//! design and its measurements). This half works on keys: holds, waits,
//! and the probed jobs of multi-key commands' shares; `dispatch::probe`
//! applies it to a command by its declaration.
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

use crate::shard::ShardState;
use crate::storage::keys::{meta_key, meta_key_buf};

/// Probe-and-fetch rounds before a command reads the disk itself: a chain
/// of reads (a hash's meta, then its field) takes two; more means blocks
/// were evicted between the fetch and the run again.
pub const ROUNDS: usize = 4;

/// [`cold_keys`] of a list of keys.
pub fn cold_of<'k>(st: &ShardState, db: u8, keys: impl Iterator<Item = &'k [u8]>) -> Vec<Vec<u8>> {
    // Built on the stack: the cold ones are rare, the check is per write.
    keys.map(|key| meta_key_buf(db, key))
        .filter(|k| matches!(st.ks.store.needs_io_before_write(k), Ok(true)))
        .map(|k| k.to_vec())
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

pub fn held_of<'k>(st: &ShardState, db: u8, mut keys: impl Iterator<Item = &'k [u8]>) -> bool {
    st.ks.store.any_held() && keys.any(|k| st.ks.store.is_held(&meta_key_buf(db, k)))
}

pub async fn after_reads_of<'k>(st: &ShardState, db: u8, keys: impl Iterator<Item = &'k [u8]>) {
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
        let r = job(st, &keys);
        st.ks.end_lookups(true);
        return Then::Now(r);
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
        let r = job(&st, &keys);
        st.ks.end_lookups(true);
        r
    }))
}

/// One probed run of `job`: None (and its hit/miss counts undone) when a
/// record was on disk only; the wanted keys are left in the store.
fn probe_once<R>(st: &ShardState, keys: &[Bytes], job: &impl Fn(&ShardState, &[Bytes]) -> R) -> Option<R> {
    let lookups = (st.ks.stats.hits.get(), st.ks.stats.misses.get());
    st.ks.store.set_probe(true);
    let r = job(st, keys);
    st.ks.store.set_probe(false);
    let kept = !st.ks.store.missed();
    st.ks.end_lookups(kept);
    if kept {
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
