//! One shard's state: its keyspace and the counters it owns. Lives on the
//! shard's own thread (plain `Cell`s, no atomics); other shards reach it only
//! through `invoke_on`.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use hdrhistogram::Histogram;

use crate::global::Global;
use crate::monitor::{self, SlowEntry};
use crate::storage::PeerStore;
use crate::types::keyspace::Keyspace;

/// Per-command counters, as INFO commandstats prints them.
#[derive(Debug, Default, Clone, Copy)]
pub struct CmdStat {
    pub calls: u64,
    pub usec: u64,
    pub failed: u64,
    pub rejected: u64,
}

/// Samples for INFO's instantaneous_* rates, taken every ~100 ms as Redis does.
#[derive(Default)]
pub struct RateSamples {
    last: Option<(std::time::Instant, u64, u64, u64)>,
    /// (ops/s, input B/s, output B/s), newest last, at most [`RATE_SAMPLES`].
    samples: VecDeque<(f64, f64, f64)>,
}

/// Redis averages its instantaneous metrics over 16 samples.
const RATE_SAMPLES: usize = 16;

impl RateSamples {
    /// Adds a sample from cumulative (commands, bytes in, bytes out).
    pub fn sample(&mut self, now: std::time::Instant, ops: u64, input: u64, output: u64) {
        if let Some((t, o, i, w)) = self.last {
            let secs = now.duration_since(t).as_secs_f64();
            if secs > 0.0 {
                let rate = |a: u64, b: u64| a.saturating_sub(b) as f64 / secs;
                self.samples.push_back((rate(ops, o), rate(input, i), rate(output, w)));
                if self.samples.len() > RATE_SAMPLES {
                    self.samples.pop_front();
                }
            }
        }
        self.last = Some((now, ops, input, output));
    }

    /// Mean (ops/s, input B/s, output B/s) over the samples.
    pub fn mean(&self) -> (f64, f64, f64) {
        let n = self.samples.len().max(1) as f64;
        let s = self.samples.iter().fold((0.0, 0.0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1, a.2 + b.2));
        (s.0 / n, s.1 / n, s.2 / n)
    }
}

pub struct ShardState {
    pub id: usize,
    pub ks: Keyspace,
    /// Every shard's column family, for reads a non-owner may make
    /// (`types::bigstr::peek`). Writes go through the owner only.
    pub peers: Vec<PeerStore>,
    pub global: Arc<Global>,
    /// Indexed like `cmd::TABLE`.
    pub cmd_stats: RefCell<Vec<CmdStat>>,
    /// Latency of each command in ns, indexed like `cmd::TABLE`; allocated
    /// on a command's first call.
    pub latency: RefCell<Vec<Option<Box<Histogram<u64>>>>>,
    /// Error replies by code (INFO errorstats).
    pub errors: RefCell<HashMap<String, u64>>,
    /// Bytes read from and written to this shard's clients.
    pub net: RefCell<(u64, u64)>,
    /// This shard's slow-log entries, newest first.
    pub slowlog: RefCell<VecDeque<SlowEntry>>,
    pub rates: RefCell<RateSamples>,
    /// Client connections open on this shard.
    pub connections: Cell<u64>,
    /// HSCAN/SSCAN cursors handed out: (db, key, version, cursor) -> the
    /// last member returned, so the next call seeks instead of skipping.
    pub scan_cursors: RefCell<HashMap<ScanCursor, Vec<u8>>>,
    /// Clients blocked on this shard's keys (`coord::blocking`).
    pub blocked: crate::blocked::Blocked,
    /// The transaction gate's side on this shard (`coord::gate`).
    pub gate: Gate,
    /// Keys of other shards that GETs read from here (the cross-shard
    /// direct read), by owner: their access times are sent to the owners
    /// once per housekeeping tick (`expire`), not once per GET; at most
    /// [`PEER_TOUCHES`] a tick (past it, a key's time is a tick or more
    /// old, at a 1-second resolution).
    pub peer_touches: RefCell<Vec<(usize, u8, bytes::Bytes)>>,
    /// This shard's Lua interpreter, made on the first script, with the
    /// script store's epoch it compiled for (`dispatch::script`).
    pub lua: RefCell<Option<(crate::script::Vm, u64)>>,
    /// A busy script of this shard lets it serve others between slices
    /// (`dispatch::scriptco`); meanwhile no other command touches its data.
    pub script_paused: Cell<bool>,
    /// Emptied reply-span vectors of write groups (`dispatch::group`), for
    /// the next group: a 16-command pipeline grew a fresh one 4 -> 8 -> 16
    /// every batch.
    pub spans: RefCell<Vec<Vec<(usize, u64)>>>,
}

/// Cross-shard GETs whose access time one tick sends at most.
pub const PEER_TOUCHES: usize = 4096;

/// One shard's side of the transaction gate (`coord::gate` runs it).
#[derive(Default)]
pub struct Gate {
    /// Client commands running on this shard now.
    running: Cell<usize>,
    /// The client whose EXEC holds the gate; 0: open.
    owner: Cell<u64>,
    /// Tasks of this shard waiting for the gate to open or for the
    /// running commands to finish; woken when either happens.
    waiters: RefCell<Vec<std::task::Waker>>,
}

impl Gate {
    #[inline]
    pub fn enter(&self) {
        self.running.set(self.running.get() + 1);
    }

    #[inline]
    pub fn leave(&self) {
        let n = self.running.get().saturating_sub(1);
        self.running.set(n);
        if n == 0 && self.owner.get() != 0 {
            self.wake();
        }
    }

    /// Registers the current task to be woken at the gate's next change.
    pub fn wait(&self, w: &std::task::Waker) {
        let mut ws = self.waiters.borrow_mut();
        if !ws.iter().any(|x| x.will_wake(w)) {
            ws.push(w.clone());
        }
    }

    /// Wakes every task waiting at the gate (they look again).
    pub fn wake(&self) {
        let ws = std::mem::take(&mut *self.waiters.borrow_mut());
        for w in ws {
            w.wake();
        }
    }

    /// Client commands running on this shard now.
    pub fn running(&self) -> usize {
        self.running.get()
    }

    pub fn set_owner(&self, client: u64) {
        self.owner.set(client);
        self.wake();
    }

    /// Whether a multi-shard EXEC holds the gate now.
    #[inline]
    pub fn is_closed(&self) -> bool {
        self.owner.get() != 0
    }

    /// Whether client `client` must wait before its next command.
    #[inline]
    pub fn closed_to(&self, client: u64) -> bool {
        let o = self.owner.get();
        o != 0 && o != client
    }
}

/// Names one collection cursor: (db, key, incarnation, cursor value).
pub type ScanCursor = (u8, Vec<u8>, u64, u64);

/// Another shard never sees writes this shard's connections staged for
/// the loop iteration's one write and could still lose
/// (`storage::group`, "Turns"): they are written before it is answered.
impl shards::Receives for ShardState {
    fn before_answer(&self) {
        self.ks.end_turn();
    }
}

impl ShardState {
    /// `commands`: how many commands the table has (the stats' length).
    pub fn new(id: usize, ks: Keyspace, peers: Vec<PeerStore>, global: Arc<Global>, commands: usize) -> ShardState {
        ShardState {
            id,
            ks,
            peers,
            global,
            cmd_stats: RefCell::new(vec![CmdStat::default(); commands]),
            latency: RefCell::new((0..commands).map(|_| None).collect()),
            errors: RefCell::new(HashMap::new()),
            net: RefCell::new((0, 0)),
            slowlog: RefCell::new(VecDeque::new()),
            rates: RefCell::new(RateSamples::default()),
            connections: Cell::new(0),
            scan_cursors: RefCell::new(HashMap::new()),
            blocked: Default::default(),
            gate: Default::default(),
            peer_touches: Default::default(),
            lua: Default::default(),
            script_paused: Cell::new(false),
            spans: RefCell::new(Vec::new()),
        }
    }

    /// Records one call of command `idx` that took `ns`.
    #[inline]
    pub fn record(&self, idx: usize, ns: u64, failed: bool) {
        if let Some(s) = self.cmd_stats.borrow_mut().get_mut(idx) {
            s.calls += 1;
            s.usec += ns / 1000;
            s.failed += failed as u64;
        }
        if self.global.config.latency_tracking.load(std::sync::atomic::Ordering::Relaxed) {
            if let Some(slot) = self.latency.borrow_mut().get_mut(idx) {
                if slot.is_none() {
                    *slot = monitor::new_histogram();
                }
                if let Some(h) = slot {
                    monitor::record_ns(h, ns);
                }
            }
        }
    }

    /// Records a command refused before it ran (arity, auth...).
    pub fn record_rejected(&self, idx: usize) {
        if let Some(s) = self.cmd_stats.borrow_mut().get_mut(idx) {
            s.rejected += 1;
        }
    }

    /// Counts an error reply under its code.
    pub fn record_error(&self, msg: &str) {
        let code = monitor::error_code(msg);
        let mut errors = self.errors.borrow_mut();
        match errors.get_mut(code) {
            Some(n) => *n += 1,
            None => {
                // Bounded like Redis's table (128 codes): a client cannot grow
                // it without limit by inventing error codes; later new codes
                // are not counted.
                if errors.len() < 128 {
                    errors.insert(code.to_string(), 1);
                }
            }
        }
    }

    /// Total commands this shard ran.
    pub fn total_calls(&self) -> u64 {
        self.cmd_stats.borrow().iter().map(|s| s.calls).sum()
    }

    /// CONFIG RESETSTAT for this shard.
    pub fn reset_stats(&self) {
        self.cmd_stats.borrow_mut().iter_mut().for_each(|s| *s = CmdStat::default());
        self.latency.borrow_mut().iter_mut().for_each(|h| *h = None);
        self.errors.borrow_mut().clear();
        *self.net.borrow_mut() = (0, 0);
        self.ks.stats.reset();
    }
}
