//! Active expiration: each shard walks its TTL index `hz` times a second and
//! deletes keys that are due, a bounded slice at a time, so a burst of
//! expiring keys never stalls the core for more than about a millisecond:
//! while slices come back full it goes on in 0.5 ms bursts with a yield to
//! the clients between them, up to a quarter of the tick (Redis's slow
//! cycle; `active-expire-effort` adds 2% a step).
//! Then, in the rest of that millisecond, it repairs hashes whose field
//! expiration index says a field is due (`Keyspace::expire_fields_due`).
//! Lazy expiration (on every read) lives in `types::keyspace`. The same tick
//! samples INFO's instantaneous rates and watches for RocksDB write stalls.

use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use shards::Shard;

use crate::clock::now_ms;
use crate::shard::ShardState;

/// TTL index entries visited per slice.
const SLICE: usize = 128;
/// Hashes repaired per slice of active field expiration.
const FIELD_SLICE: usize = 32;
/// Work per wake-up before yielding to clients.
const BUDGET: Duration = Duration::from_micros(500);
/// A yield that comes back sooner than this found no other task to run.
const IDLE_YIELD: Duration = Duration::from_micros(60);

pub async fn active_expire_loop(shard: Rc<Shard<ShardState>>) {
    let st = shard.state().clone();
    let mut stall_since: Option<Instant> = None;
    // Whether the last cycle stopped at its cap with keys still due.
    let mut behind = false;
    let mut tick_start = Instant::now();
    loop {
        let hz = st.global.config.hz.load(Ordering::Relaxed).max(1);
        let tick = Duration::from_millis(1000 / hz);
        // Ticks keep their rate however long the last cycle took.
        shards::rt::sleep(tick.saturating_sub(tick_start.elapsed())).await;
        tick_start = Instant::now();
        housekeeping(&st, &mut stall_since);
        send_peer_touches(&shard).await;
        // A multi-shard EXEC holds the gate: no key expires under it (as
        // Redis's EXEC runs with the clock held); the next tick catches up.
        if st.gate.is_closed()
            || st.script_paused.get()
            || !st.global.active_expire.load(Ordering::Relaxed)
            || crate::pause::holds_expiry(now_ms())
        {
            // Writes pay no expiry debt either (DEBUG SET-ACTIVE-EXPIRE 0
            // leaves expired keys for reads to find, as Redis does).
            st.ks.expiry_behind.set(false);
            continue;
        }
        // Redis's slow cycle: up to 25% of the core (2% more a step of
        // `active-expire-effort`), in bursts of at most BUDGET with a yield
        // to the clients between them, while full slices say more keys are
        // due. The share counts the expiry's own time, not the clients'
        // between its bursts. While the last cycle was capped with keys
        // still due (writes outpace it), it may take twice that, up to 75%.
        let effort = st.global.config.get_int("active-expire-effort").clamp(1, 10) as u32;
        let share = (25 + 2 * (effort - 1)) * if behind { 2 } else { 1 };
        let cap = tick * share.min(75) / 100;
        let start = Instant::now();
        let expired_before = st.ks.stats.expired_keys.get();
        let with_expiry: i64 = (0..st.ks.databases()).map(|d| st.ks.expires(d as u8)).sum();
        let mut capped = false;
        let mut busy = Duration::ZERO;
        // The part of `busy` that took time from clients (see below).
        let mut charged = Duration::ZERO;
        loop {
            let burst = Instant::now();
            // Keys, then hashes whose fields are due (each entry one repair
            // of a small hash, most often the delete of one whose last
            // field expired).
            let more = loop {
                let keys = st.ks.expire_due(now_ms(), SLICE);
                let fields = st.ks.expire_fields_due(now_ms(), FIELD_SLICE);
                match keys.and_then(|k| fields.map(|f| (k, f))) {
                    Ok((k, f)) if (k == SLICE || f == FIELD_SLICE) && burst.elapsed() < BUDGET => continue,
                    Ok((k, f)) => break k == SLICE || f == FIELD_SLICE,
                    Err(e) => {
                        tracing::error!(shard = st.id, error = %e.0, "active expiration failed");
                        break false;
                    }
                }
            };
            let spent = burst.elapsed();
            busy += spent;
            charged += spent;
            if !more {
                break;
            }
            if charged >= cap || start.elapsed() >= tick {
                capped = true;
                break;
            }
            let away = Instant::now();
            // A timer, not a plain yield: the executor then goes through its
            // reactor and reaps the clients' socket completions (a yield
            // alone let a PING wait for the cycle's end: p99 5.9 ms).
            shards::rt::sleep(Duration::from_micros(1)).await;
            // Nothing else ran in between (the yield came straight back): the
            // burst took nothing from the clients, so it does not count
            // toward the cap. An idle shard expires at full speed, still
            // yielding every BUDGET for a client that comes.
            if away.elapsed() < IDLE_YIELD {
                charged = charged.saturating_sub(spent);
            }
            if st.gate.is_closed() || st.script_paused.get() || crate::pause::holds_expiry(now_ms()) {
                break;
            }
        }
        // Keys the compaction filter found long expired (the index missed
        // them): a slice a tick.
        if let Err(e) = st.ks.expire_found(now_ms(), SLICE) {
            tracing::error!(shard = st.id, error = %e.0, "expiring keys compaction found failed");
        }
        let expired = st.ks.stats.expired_keys.get() - expired_before;
        behind = capped;
        st.ks.expiry_behind.set(capped);
        // The share of the keys with an expiry when it began that were due.
        st.ks
            .stats
            .end_cycle(expired, with_expiry.max(0) as u64, capped, busy.as_micros() as u64);
    }
}

/// Sends the owners the access times of the keys GETs read from here
/// (`ShardState::peer_touches`), one message per owner. Also before an
/// OBJECT or DEBUG runs, so a client reads back its own GETs' touches.
pub async fn send_peer_touches(shard: &Rc<Shard<ShardState>>) {
    let mut touches = std::mem::take(&mut *shard.state().peer_touches.borrow_mut());
    if touches.is_empty() {
        return;
    }
    let now = crate::clock::wall_ms();
    touches.sort_unstable_by_key(|t| t.0);
    for run in touches.chunk_by(|a, b| a.0 == b.0) {
        let owner = run[0].0;
        let keys: Vec<(u8, bytes::Bytes)> = run.iter().map(|t| (t.1, t.2.clone())).collect();
        shard
            .invoke_on(owner, move |st: &ShardState| {
                for (db, key) in &keys {
                    st.ks.touch(*db, key, now);
                }
            })
            .await;
    }
}

/// The shard's periodic bookkeeping: samples for INFO's instantaneous rates,
/// the LFU parameters, and, on shard 0, RocksDB write stalls for the
/// latency monitor.
fn housekeeping(st: &ShardState, stall_since: &mut Option<Instant>) {
    let now = Instant::now();
    let (input, output) = *st.net.borrow();
    st.rates.borrow_mut().sample(now, st.total_calls(), input, output);
    let lfu = |name: &str| st.global.config.get_int(name).max(0) as u64;
    st.ks
        .access
        .configure(lfu("lfu-log-factor"), lfu("lfu-decay-time"), crate::clock::wall_ms());
    if st.id != 0 {
        return;
    }
    let g = &st.global;
    let threshold = g.config.latency_monitor_threshold.load(Ordering::Relaxed);
    if threshold == 0 {
        *stall_since = None;
        return;
    }
    let stalled = g.engine.property_sum(g.shards, "rocksdb.is-write-stopped") > 0
        || g.engine.property_sum(g.shards, "rocksdb.actual-delayed-write-rate") > 0;
    match (stalled, *stall_since) {
        (true, None) => *stall_since = Some(now),
        (false, Some(since)) => {
            let ms = now.duration_since(since).as_millis() as u64;
            if ms >= threshold {
                g.latency.add("write-stall", now_ms() / 1000, ms);
            }
            *stall_since = None;
        }
        _ => {}
    }
}
