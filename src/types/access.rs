//! When each key was last accessed and how often (OBJECT IDLETIME, OBJECT
//! FREQ, DEBUG OBJECT's `lru_seconds_idle`), one shard's table of the keys
//! its commands touched, by meta key (so SWAPDB, which moves no record,
//! moves nothing here either).
//!
//! A command touches the keys it reads or writes unless it is one of
//! Redis's `LOOKUP_NOTOUCH` readers (TYPE, TTL, EXISTS, OBJECT...) or its
//! client set CLIENT NO-TOUCH; the dispatcher says which
//! ([`Access::begin`]). A key the table does not hold (never touched since
//! the shard started, or dropped when the table was full) has been idle
//! since the table's floor: the shard's start or the last time it was
//! emptied. Nothing is written to disk: after a restart every key reads as
//! idle since the restart, as after a Redis restart from an RDB without LRU
//! info.
//!
//! What it costs: one hash of the meta key and one table update per
//! touched key, on the owning shard, no allocation; at most [`CAP`]
//! entries (about 40 bytes each) per shard.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

/// Keys remembered per shard; past it the table starts over.
const CAP: usize = 1 << 20;
/// Redis's LFU_INIT_VAL: a new key's counter.
pub const LFU_INIT: u8 = 5;

#[derive(Clone, Copy)]
struct Stamp {
    /// Unix ms of the last touch.
    at_ms: u64,
    /// Redis's logarithmic access counter.
    lfu: u8,
    /// Unix minutes of the counter's last decrement (Redis's `ldt`).
    lfu_min: u64,
}

/// A table keyed by a hash already: the key is its own hash.
#[derive(Default, Clone, Copy)]
struct Hashed(u64);

impl std::hash::Hasher for Hashed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only u64 keys come here; anything else still spreads.
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x100_0000_01b3);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

type ByHash = HashMap<u64, Stamp, std::hash::BuildHasherDefault<Hashed>>;

pub struct Access {
    /// By the meta key's 64-bit hash: no allocation per key (two keys
    /// sharing a hash share a time, which only blurs an estimate).
    map: RefCell<ByHash>,
    /// The write tier's (`ShardStore::key_hasher`): a read hashes its key
    /// once for both tables ([`Access::touch_hashed`]).
    hasher: ahash::RandomState,
    /// `lfu-log-factor` and `lfu-decay-time`, refreshed by the shard's
    /// housekeeping tick ([`Access::configure`]).
    log_factor: Cell<u64>,
    decay_min: Cell<u64>,
    /// Keys not in the map have been idle since this (Unix ms).
    floor_ms: Cell<u64>,
    touching: Cell<bool>,
    now_ms: Cell<u64>,
    rng: Cell<u64>,
}

impl Access {
    pub fn new(now_ms: u64, hasher: ahash::RandomState) -> Access {
        Access {
            map: RefCell::new(HashMap::default()),
            hasher,
            log_factor: Cell::new(10),
            decay_min: Cell::new(1),
            floor_ms: Cell::new(now_ms),
            touching: Cell::new(false),
            now_ms: Cell::new(now_ms),
            rng: Cell::new(now_ms | 1),
        }
    }

    /// Takes `lfu-log-factor` and `lfu-decay-time`.
    pub fn configure(&self, log_factor: u64, decay_min: u64, now_ms: u64) {
        self.log_factor.set(log_factor);
        self.decay_min.set(decay_min);
        self.now_ms.set(now_ms);
    }

    /// A command starts: whether its key reads touch (see the module doc).
    #[inline]
    pub fn begin(&self, touch: bool, now_ms: u64) {
        self.touching.set(touch);
        self.now_ms.set(now_ms);
    }

    /// The time the last command on this shard started (or the last
    /// housekeeping tick): what a key created without a clock at hand is
    /// stamped with, without reading the clock again.
    #[inline]
    pub fn now(&self) -> u64 {
        self.now_ms.get()
    }

    /// The command ended.
    #[inline]
    pub fn end(&self) {
        self.touching.set(false);
    }

    #[inline]
    pub fn touching(&self) -> bool {
        self.touching.get()
    }

    fn random(&self) -> f64 {
        let mut x = self.rng.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng.set(x);
        (x >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Key `mk` was accessed at `now_ms`: its time, and its counter as
    /// Redis's `updateLFU` (decay for the minutes since, then a
    /// logarithmic increment).
    pub fn touch(&self, mk: &[u8], now_ms: u64) {
        self.touch_hashed(self.hasher.hash_one(mk), now_ms);
    }

    /// [`Access::touch`] of the meta key whose hash by the hasher given to
    /// [`Access::new`] is `h`.
    pub fn touch_hashed(&self, h: u64, now_ms: u64) {
        let (log_factor, decay_min) = (self.log_factor.get(), self.decay_min.get());
        let r = self.random();
        let mut map = self.map.borrow_mut();
        if let Some(s) = map.get_mut(&h) {
            s.lfu = log_incr(decayed(s, now_ms, decay_min), log_factor, r);
            s.lfu_min = now_ms / 60_000;
            s.at_ms = now_ms;
            return;
        }
        // Not remembered: it has been idle since the floor.
        let floor = self.floor_ms.get();
        let was = Stamp {
            at_ms: floor,
            lfu: LFU_INIT,
            lfu_min: floor / 60_000,
        };
        let stamp = Stamp {
            at_ms: now_ms,
            lfu: log_incr(decayed(&was, now_ms, decay_min), log_factor, r),
            lfu_min: now_ms / 60_000,
        };
        self.insert_hashed(&mut map, h, stamp);
    }

    /// Key `mk` was created: idle 0, Redis's initial counter.
    pub fn created(&self, mk: &[u8], now_ms: u64) {
        self.insert(
            mk,
            Stamp {
                at_ms: now_ms,
                lfu: LFU_INIT,
                lfu_min: now_ms / 60_000,
            },
        );
    }

    fn insert(&self, mk: &[u8], stamp: Stamp) {
        let h = self.hasher.hash_one(mk);
        self.insert_hashed(&mut self.map.borrow_mut(), h, stamp);
    }

    /// One hash per key: `h` is the meta key's, computed by the caller.
    fn insert_hashed(&self, map: &mut ByHash, h: u64, stamp: Stamp) {
        if map.len() >= CAP {
            map.clear();
            self.floor_ms.set(stamp.at_ms);
        }
        map.insert(h, stamp);
    }

    /// RESTORE's IDLETIME and FREQ: sets what the key's next reads report.
    pub fn set(&self, mk: &[u8], now_ms: u64, idle_s: Option<u64>, freq: Option<u8>) {
        let at_ms = now_ms.saturating_sub(idle_s.unwrap_or(0).saturating_mul(1000));
        self.insert(
            mk,
            Stamp {
                at_ms,
                lfu: freq.unwrap_or(LFU_INIT),
                lfu_min: now_ms / 60_000,
            },
        );
    }

    /// Milliseconds since key `mk` was last accessed.
    pub fn idle_ms(&self, mk: &[u8], now_ms: u64) -> u64 {
        let at = self
            .map
            .borrow()
            .get(&self.hasher.hash_one(mk))
            .map_or(self.floor_ms.get(), |s| s.at_ms);
        now_ms.saturating_sub(at)
    }

    /// OBJECT FREQ: the counter after Redis's decay (`LFUDecrAndReturn`).
    pub fn freq(&self, mk: &[u8], now_ms: u64) -> u8 {
        let floor = Stamp {
            at_ms: self.floor_ms.get(),
            lfu: LFU_INIT,
            lfu_min: self.floor_ms.get() / 60_000,
        };
        let map = self.map.borrow();
        decayed(map.get(&self.hasher.hash_one(mk)).unwrap_or(&floor), now_ms, self.decay_min.get())
    }
}

/// Redis's `LFUDecrAndReturn`: one off per `decay_min` minutes since the
/// last decrement.
fn decayed(s: &Stamp, now_ms: u64, decay_min: u64) -> u8 {
    if decay_min == 0 {
        return s.lfu;
    }
    let periods = (now_ms / 60_000).saturating_sub(s.lfu_min) / decay_min;
    s.lfu.saturating_sub(periods.min(255) as u8)
}

/// Redis's `LFULogIncr`: the higher the counter, the less likely a touch
/// raises it.
fn log_incr(counter: u8, log_factor: u64, r: f64) -> u8 {
    if counter == 255 {
        return 255;
    }
    let base = counter.saturating_sub(LFU_INIT) as f64;
    let p = 1.0 / (base * log_factor as f64 + 1.0);
    if r < p {
        counter + 1
    } else {
        counter
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_time_and_counter() {
        let a = Access::new(1_000, ahash::RandomState::new());
        assert_eq!(a.idle_ms(b"k", 5_000), 4_000, "never touched: idle since the floor");
        a.created(b"k", 10_000);
        assert_eq!(a.freq(b"k", 10_000), LFU_INIT);
        assert_eq!(a.idle_ms(b"k", 12_500), 2_500);
        // Many touches raise the counter, logarithmically.
        a.configure(10, 0, 10_000);
        for i in 0..10_000 {
            a.touch(b"k", 10_000 + i);
        }
        let f = a.freq(b"k", 20_000);
        assert!((10..100).contains(&f), "{f}");
        // Decay: one per minute with lfu-decay-time 1.
        a.configure(10, 1, 20_000);
        assert_eq!(a.freq(b"k", 20_000 + 3 * 60_000), f - 3);
        a.set(b"r", 100_000, Some(50), Some(77));
        assert_eq!(a.idle_ms(b"r", 100_000), 50_000);
        assert_eq!(a.freq(b"r", 100_000), 77);
    }

    /// A touch by the hash the caller computed with the hasher it gave
    /// (the write tier's) is a touch of that key, and of no other.
    #[test]
    fn a_touch_by_hash_is_the_touch_of_its_key() {
        let h = ahash::RandomState::new();
        let a = Access::new(1_000, h.clone());
        a.touch_hashed(h.hash_one(&b"\x00Mkey"[..]), 7_000);
        assert_eq!(a.idle_ms(b"\x00Mkey", 9_000), 2_000);
        assert_eq!(a.idle_ms(b"\x00Mother", 9_000), 8_000);
        a.touch(b"\x00Mother", 8_500);
        a.touch_hashed(h.hash_one(&b"\x00Mother"[..]), 8_800);
        assert_eq!(a.idle_ms(b"\x00Mother", 9_000), 200);
    }
}
