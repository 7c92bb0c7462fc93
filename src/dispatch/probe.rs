//! A command's misses (the command-aware half of `coord::misses`): which
//! records it names by its declaration's key positions, whether it probes,
//! what the pool reads ahead for the pipelined commands after it, and the
//! cross-shard GET's probe loop. Above `cmd`, since it reads the command
//! table; `coord::misses` below does the work on keys.

use bytes::Bytes;

use crate::clock::now_ms;
use crate::cmd::{self, Exec};
use crate::coord::misses::{after_reads_of, cold_of, held_of, Hold, ROUNDS};
use crate::error::CmdResult;
use crate::resp::Reply;
use crate::shard::ShardState;
use crate::slot::owner;
use crate::storage::keys::meta_key_buf;
use crate::storage::{PeerStore, ShardStore};
use crate::types::bigstr;

/// How many pipelined commands after a miss have their key records
/// fetched with it.
const AHEAD: usize = 64;

/// A GET of another shard's key, read from that shard's column family here
/// (`types::bigstr::peek`), probed as local reads are: a record on disk only
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
        let found = bigstr::peek(store, db, key, now_ms(), |v| cmd::strings::reply_value(out, v));
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
            let k = meta_key_buf(db, key);
            if !store.meta_cached(&k) {
                keys.push(k.to_vec());
            }
        }
    }
}

/// The keys a command names, by its key positions.
fn named<'k>(spec: &cmd::CommandSpec, argv: &'k [Bytes]) -> impl Iterator<Item = &'k [u8]> + 'k {
    spec.key_positions(argv.len()).filter_map(move |p| argv.get(p)).map(|k| k.as_ref())
}

/// The key records of a (writing) command that are on disk only: it
/// fetches them before it runs, so its own reads of them do not stop the
/// shard. The meta cache answers for most keys at the cost of a hash
/// lookup; the others are probed (a RocksDB read from memory, whose answer
/// the meta cache then keeps for the command's own read).
pub fn cold_keys(st: &ShardState, spec: &cmd::CommandSpec, argv: &[Bytes], db: u8) -> Vec<Vec<u8>> {
    cold_of(st, db, named(spec, argv))
}

/// Whether a command waiting for the pool holds a key this command names.
pub fn held(st: &ShardState, spec: &cmd::CommandSpec, argv: &[Bytes], db: u8) -> bool {
    // Checked first: naming the keys allocates, and this runs per write.
    st.ks.store.any_held() && held_of(st, db, named(spec, argv))
}

/// Waits until no read in flight holds a key this (writing) command names.
pub async fn after_reads(st: &ShardState, spec: &cmd::CommandSpec, argv: &[Bytes], db: u8) {
    after_reads_of(st, db, named(spec, argv)).await
}

/// Holds the records of the keys `argv` names (see [`Hold`]).
pub fn hold<'a>(st: &'a ShardState, spec: &cmd::CommandSpec, argv: &[Bytes], db: u8) -> Hold<'a> {
    Hold::of(st, db, named(spec, argv))
}
