//! When each key was last accessed and how often (OBJECT IDLETIME, OBJECT
//! FREQ, DEBUG OBJECT's `lru_seconds_idle`), one shard's table of the keys
//! its commands touched, by meta key (so SWAPDB, which moves no record,
//! moves nothing here either).
//!
//! A command touches the keys it reads or writes unless it is one of
//! Redis's `LOOKUP_NOTOUCH` readers (TYPE, TTL, EXISTS, OBJECT...) or its
//! client set CLIENT NO-TOUCH; the dispatcher says which
//! ([`Access::begin`]). A key the table does not hold (never touched since
//! the shard started, or its place taken by a key touched later) has been
//! idle since the table's floor, the shard's start. Times are Redis's LRU
//! clock's (whole seconds). Nothing is written to disk: after a restart every key reads as
//! idle since the restart, as after a Redis restart from an RDB without LRU
//! info.
//!
//! What it costs: one hash of the meta key and one probe of one cache line
//! per touched key, on the owning shard, no allocation; a word per key,
//! [`BUCKETS`] x [`WAYS`] of them per shard.

use std::cell::{Cell, RefCell};

/// Buckets of [`WAYS`] words each: a million keys remembered per shard
/// (8 MiB, its pages touched as keys land in them).
const BUCKETS: usize = 1 << 17;
/// Words per bucket: a bucket is one 64-byte cache line (the mapping is
/// page-aligned).
const WAYS: usize = 8;
/// Keys placed before the table moves to huge pages ([`Words::on_huge_pages`]).
/// At 1024 a keyspace of 1000 hot keys (redis-benchmark's `-r 1000`) never
/// moved: ~800 small pages, and `touch_hashed` 7.7% of GET -P16, nearly
/// all of it the bucket's load.
const HUGE_AT: u32 = 256;
/// Redis's LFU_INIT_VAL: a new key's counter.
pub const LFU_INIT: u8 = 5;
/// Redis's LRU clock: Unix seconds, 24 bits (it wraps every 194 days).
const CLOCK_MAX: u64 = (1 << 24) - 1;

/// One key's stamp in a word, as Redis keeps it in an object's header:
/// the key's tag (16 bits of its hash, never 0: a 0 word is an empty
/// slot), the LRU clock of its last touch (24 bits of Unix seconds), its
/// logarithmic counter (8 bits) and the minute of the counter's last
/// decrement (Redis's `ldt`, 16 bits).
#[derive(Clone, Copy, PartialEq, Debug)]
struct Stamp {
    at_s: u64,
    lfu: u8,
    ldt: u64,
}

impl Stamp {
    fn at(now_ms: u64, lfu: u8) -> Stamp {
        Stamp {
            at_s: (now_ms / 1000) & CLOCK_MAX,
            lfu,
            ldt: minutes(now_ms),
        }
    }

    fn pack(self, tag: u64) -> u64 {
        tag << 48 | self.at_s << 24 | (self.lfu as u64) << 16 | self.ldt
    }

    fn unpack(w: u64) -> Stamp {
        Stamp {
            at_s: (w >> 24) & CLOCK_MAX,
            lfu: (w >> 16) as u8,
            ldt: w & 0xFFFF,
        }
    }

    /// Milliseconds since it was taken, by Redis's clock (whole seconds,
    /// wrapping as Redis's `estimateObjectIdleTime`).
    fn idle_ms(self, now_ms: u64) -> u64 {
        ((now_ms / 1000).wrapping_sub(self.at_s) & CLOCK_MAX) * 1000
    }
}

/// Redis's LFU clock: Unix minutes, 16 bits.
fn minutes(now_ms: u64) -> u64 {
    (now_ms / 60_000) & 0xFFFF
}

/// A key's place: its bucket (low bits of its hash) and tag (high bits).
fn place(h: u64) -> (usize, u64) {
    ((h as usize) & (BUCKETS - 1), (h >> 48) | 1)
}

/// The table's words in a private anonymous mapping of their own: zero
/// until written, each 4 KiB page taking memory only once a key lands in
/// it (a `Vec` of them, zeroed by the allocator on huge pages, was 6.5 MB
/// of RSS at a shard's first SET). Past [`HUGE_AT`] keys the table moves
/// to a mapping on huge pages: a thousand hot keys are a thousand 4 KiB
/// pages, and their touches missed the TLB (84% of `touch_hashed`'s
/// samples on the bucket's load, 6.4% of INCR -P16 over 1000 keys; 2.9%
/// on huge pages), while by then ~250 of its 2048 small pages take memory
/// (its 8 MiB on huge pages are then what a shard pays once it holds a few
/// hundred keys).
struct Words {
    at: std::ptr::NonNull<u64>,
    len: usize,
}

// SAFETY: the mapping is owned by its `Words` alone, as a `Box` owns its
// allocation.
unsafe impl Send for Words {}

impl Words {
    /// `len` zero words (on huge pages when `huge` and the system has
    /// them), or None when the system gives no mapping.
    fn map(len: usize, huge: bool) -> Option<Words> {
        let bytes = len * std::mem::size_of::<u64>();
        // SAFETY: a new private anonymous mapping at an address the kernel
        // picks; nothing else refers to it.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return None;
        }
        // SAFETY: advice about the mapping just made (an error leaves it
        // as it is, which is still correct).
        unsafe { libc::madvise(p, bytes, if huge { libc::MADV_HUGEPAGE } else { libc::MADV_NOHUGEPAGE }) };
        Some(Words {
            at: std::ptr::NonNull::new(p.cast())?,
            len,
        })
    }

    fn words(&self) -> &[u64] {
        // SAFETY: `len` words mapped readable and writable, zero-filled by
        // the kernel, alive as long as `self`.
        unsafe { std::slice::from_raw_parts(self.at.as_ptr(), self.len) }
    }

    fn words_mut(&mut self) -> &mut [u64] {
        // SAFETY: as in `words`, and `&mut self` makes this the only view.
        unsafe { std::slice::from_raw_parts_mut(self.at.as_ptr(), self.len) }
    }

    /// The same words in a mapping on huge pages: only the pages that
    /// hold memory are copied (a read of the others would map each).
    fn on_huge_pages(&self) -> Option<Words> {
        let mut to = Words::map(self.len, true)?;
        const PAGE: usize = 4096;
        let per = PAGE / std::mem::size_of::<u64>();
        let pages = (self.len * std::mem::size_of::<u64>()).div_ceil(PAGE);
        let mut resident = vec![0u8; pages];
        // SAFETY: the mapping's own range (page-aligned, as mmap made it)
        // and a vector of one byte per page of it.
        let ok = unsafe {
            libc::mincore(
                self.at.as_ptr().cast(),
                self.len * std::mem::size_of::<u64>(),
                resident.as_mut_ptr(),
            )
        } == 0;
        let (from, dst) = (self.words(), to.words_mut());
        for (i, r) in resident.iter().enumerate() {
            if !ok || r & 1 == 1 {
                let (a, b) = (i * per, ((i + 1) * per).min(self.len));
                dst[a..b].copy_from_slice(&from[a..b]);
            }
        }
        Some(to)
    }
}

impl Drop for Words {
    fn drop(&mut self) {
        // SAFETY: the mapping `map` made, not used after this.
        unsafe { libc::munmap(self.at.as_ptr().cast(), self.len * std::mem::size_of::<u64>()) };
    }
}

/// Where the owner keeps copies of keys' stamps beside their records (the
/// write tier's dirty records, the meta cache's slots:
/// `ShardStore::with_meta_stamp`). The table stays the stamps' record: a
/// copy only spares reading it, and every write of a stamp through a copy
/// goes to the table too.
pub trait Copies {
    /// `f` sees the copy of the stamp of meta key `mk` (hashed `h`; 0:
    /// none yet) and returns the one to keep (None: unchanged); false
    /// when there is no place for one (`f` not called).
    fn with_copy(&self, h: u64, mk: &[u8], f: impl Fn(u64) -> Option<u64>) -> bool;
    /// Sets every copy of `mk`'s stamp to `w`.
    fn set_copies(&self, h: u64, mk: &[u8], w: u64);
}

/// No copies: every touch reads the table.
impl Copies for () {
    fn with_copy(&self, _: u64, _: &[u8], _: impl Fn(u64) -> Option<u64>) -> bool {
        false
    }
    fn set_copies(&self, _: u64, _: &[u8], _: u64) {}
}

impl Copies for crate::storage::ShardStore {
    #[inline]
    fn with_copy(&self, h: u64, mk: &[u8], f: impl Fn(u64) -> Option<u64>) -> bool {
        self.with_meta_stamp(h, mk, false, f)
    }

    fn set_copies(&self, h: u64, mk: &[u8], w: u64) {
        self.with_meta_stamp(h, mk, true, |_| Some(w));
    }
}

pub struct Access {
    /// Stamps by the meta key's 64-bit hash, [`WAYS`] to a bucket; a key
    /// new to a full bucket takes the place of its stalest word (and that
    /// key reads as idle since the floor again). One probe of one cache
    /// line per touch, no growth and no rehash: a hashbrown table of a
    /// million stamps rehashed at once as it grew (11% of INCR -P16 over
    /// new keys) and took 32 bytes a key. Two keys with the same bucket
    /// and tag share a stamp, which only blurs an estimate. Its pages take
    /// memory as keys land in them ([`Words`]); None when the system gave
    /// no mapping (nothing is remembered then).
    slots: RefCell<Option<Words>>,
    /// Keys placed in free words, up to [`HUGE_AT`] (then on huge pages).
    placed: Cell<u32>,
    /// The write tier's (`ShardStore::key_hasher`): a read hashes its key
    /// once for both tables ([`Access::touch_hashed`]).
    hasher: ahash::RandomState,
    /// `lfu-log-factor` and `lfu-decay-time`, refreshed by the shard's
    /// housekeeping tick ([`Access::configure`]).
    log_factor: Cell<u64>,
    decay_min: Cell<u64>,
    /// Keys not in the table have been idle since this (Unix ms).
    floor_ms: u64,
    touching: Cell<bool>,
    now_ms: Cell<u64>,
    rng: Cell<u64>,
}

impl Access {
    pub fn new(now_ms: u64, hasher: ahash::RandomState) -> Access {
        Access {
            slots: RefCell::new(Words::map(BUCKETS * WAYS, false)),
            placed: Cell::new(0),
            hasher,
            log_factor: Cell::new(10),
            decay_min: Cell::new(1),
            floor_ms: now_ms,
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

    /// What a key the table does not hold reads as.
    fn floor(&self) -> Stamp {
        Stamp::at(self.floor_ms, LFU_INIT)
    }

    /// Asks the CPU for the line of the key hashed `h` (a pipeline's
    /// lookups, `Keyspace::prefetch`).
    #[inline]
    pub fn prefetch(&self, h: u64) {
        if let Ok(slots) = self.slots.try_borrow() {
            if let Some(w) = slots.as_ref().and_then(|s| s.words().get(place(h).0 * WAYS)) {
                crate::storage::cache::prefetch(w);
            }
        }
    }

    /// The stamp of the key hashed `h`, if the table holds it.
    fn find(&self, h: u64) -> Option<Stamp> {
        let slots = self.slots.borrow();
        let (b, tag) = place(h);
        let bucket = slots.as_ref()?.words().get(b * WAYS..(b + 1) * WAYS)?;
        bucket.iter().find(|&&w| w >> 48 == tag).map(|&w| Stamp::unpack(w))
    }

    /// Sets the stamp of the key hashed `h` to what `f` makes of its
    /// current one (None: not held).
    fn update(&self, h: u64, now_ms: u64, f: impl FnOnce(Option<Stamp>) -> Stamp) {
        let mut slots = self.slots.borrow_mut();
        let Some(words) = slots.as_mut() else { return };
        let (b, tag) = place(h);
        let Some(bucket) = words.words_mut().get_mut(b * WAYS..(b + 1) * WAYS) else {
            return;
        };
        if let Some(w) = bucket.iter_mut().find(|w| **w >> 48 == tag) {
            *w = f(Some(Stamp::unpack(*w))).pack(tag);
            return;
        }
        // A free word, else the stalest.
        let now_s = now_ms / 1000;
        let age = |w: u64| {
            if w == 0 {
                u64::MAX
            } else {
                now_s.wrapping_sub(Stamp::unpack(w).at_s) & CLOCK_MAX
            }
        };
        let mut pick = 0;
        for i in 1..WAYS {
            if age(bucket[i]) > age(bucket[pick]) {
                pick = i;
            }
        }
        let w = &mut bucket[pick];
        let free = *w == 0;
        *w = f(None).pack(tag);
        if free && self.placed.get() < HUGE_AT {
            self.placed.set(self.placed.get() + 1);
            if self.placed.get() == HUGE_AT {
                if let Some(huge) = words.on_huge_pages() {
                    *words = huge;
                }
            }
        }
    }

    /// Key `mk` was accessed at `now_ms`: its time, and its counter as
    /// Redis's `updateLFU` (decay for the minutes since, then a
    /// logarithmic increment).
    pub fn touch(&self, mk: &[u8], now_ms: u64, copies: &impl Copies) {
        self.touch_hashed(self.hasher.hash_one(mk), mk, now_ms, copies);
    }

    /// [`Access::touch`] of the meta key whose hash by the hasher given to
    /// [`Access::new`] is `h`. A key whose record the write tier or the
    /// meta cache holds keeps a copy of its stamp there ([`Copies`]), which
    /// a read of the key has just loaded: the touch reads the copy, and
    /// writes the table only when the stamp changes (a new second, a
    /// counter raised), not on every read. The bucket's load was ~6-8% of
    /// GET -P16 over 1000 keys, huge pages or not.
    pub fn touch_hashed(&self, h: u64, mk: &[u8], now_ms: u64, copies: &impl Copies) {
        let (log_factor, decay_min) = (self.log_factor.get(), self.decay_min.get());
        let r = self.random();
        // Not remembered: it has been idle since the floor.
        let floor = self.floor();
        let next = |was: Stamp| Stamp::at(now_ms, log_incr(decayed(&was, now_ms, decay_min), log_factor, r));
        let tag = place(h).1;
        let copied = copies.with_copy(h, mk, |w| {
            if w != 0 {
                let new = next(Stamp::unpack(w));
                let packed = new.pack(tag);
                if packed == w {
                    return None;
                }
                self.update(h, now_ms, |_| new);
                return Some(packed);
            }
            let mut packed = 0;
            self.update(h, now_ms, |was| {
                let new = next(was.unwrap_or(floor));
                packed = new.pack(tag);
                new
            });
            // Never 0: a packed word carries its tag, which is odd.
            Some(packed)
        });
        if !copied {
            self.update(h, now_ms, |was| next(was.unwrap_or(floor)));
        }
    }

    /// Sets the stamp of meta key `mk` (hashed `h`) to `new`, in the table
    /// and in its copies.
    fn put(&self, h: u64, mk: &[u8], now_ms: u64, new: Stamp, copies: &impl Copies) {
        self.update(h, now_ms, |_| new);
        copies.set_copies(h, mk, new.pack(place(h).1));
    }

    /// Key `mk` was created: idle 0, Redis's initial counter.
    pub fn created(&self, mk: &[u8], now_ms: u64, copies: &impl Copies) {
        self.put(self.hasher.hash_one(mk), mk, now_ms, Stamp::at(now_ms, LFU_INIT), copies);
    }

    /// RESTORE's IDLETIME and FREQ: sets what the key's next reads report.
    pub fn set(&self, mk: &[u8], now_ms: u64, idle_s: Option<u64>, freq: Option<u8>, copies: &impl Copies) {
        let at_ms = now_ms.saturating_sub(idle_s.unwrap_or(0).saturating_mul(1000));
        let new = Stamp {
            ldt: minutes(now_ms),
            ..Stamp::at(at_ms, freq.unwrap_or(LFU_INIT))
        };
        self.put(self.hasher.hash_one(mk), mk, now_ms, new, copies);
    }

    /// Milliseconds since key `mk` was last accessed, in whole seconds as
    /// Redis's LRU clock counts them.
    pub fn idle_ms(&self, mk: &[u8], now_ms: u64) -> u64 {
        self.find(self.hasher.hash_one(mk)).unwrap_or_else(|| self.floor()).idle_ms(now_ms)
    }

    /// OBJECT FREQ: the counter after Redis's decay (`LFUDecrAndReturn`).
    pub fn freq(&self, mk: &[u8], now_ms: u64) -> u8 {
        let s = self.find(self.hasher.hash_one(mk)).unwrap_or_else(|| self.floor());
        decayed(&s, now_ms, self.decay_min.get())
    }
}

/// Redis's `LFUDecrAndReturn`: one off per `decay_min` minutes since the
/// last decrement.
fn decayed(s: &Stamp, now_ms: u64, decay_min: u64) -> u8 {
    if decay_min == 0 {
        return s.lfu;
    }
    // Redis's `LFUTimeElapsed`: the 16-bit minute clock wraps.
    let periods = (minutes(now_ms).wrapping_sub(s.ldt) & 0xFFFF) / decay_min;
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
        a.created(b"k", 10_000, &());
        assert_eq!(a.freq(b"k", 10_000), LFU_INIT);
        // Redis's clock: whole seconds.
        assert_eq!(a.idle_ms(b"k", 12_500), 2_000);
        // Many touches raise the counter, logarithmically.
        a.configure(10, 0, 10_000);
        for i in 0..10_000 {
            a.touch(b"k", 10_000 + i, &());
        }
        let f = a.freq(b"k", 20_000);
        assert!((10..100).contains(&f), "{f}");
        // Decay: one per minute with lfu-decay-time 1.
        a.configure(10, 1, 20_000);
        assert_eq!(a.freq(b"k", 20_000 + 3 * 60_000), f - 3);
        a.set(b"r", 100_000, Some(50), Some(77), &());
        assert_eq!(a.idle_ms(b"r", 100_000), 50_000);
        assert_eq!(a.freq(b"r", 100_000), 77);
    }

    /// A touch by the hash the caller computed with the hasher it gave
    /// (the write tier's) is a touch of that key, and of no other.
    #[test]
    fn a_touch_by_hash_is_the_touch_of_its_key() {
        let h = ahash::RandomState::new();
        let a = Access::new(1_000, h.clone());
        a.touch_hashed(h.hash_one(&b"\x00Mkey"[..]), b"\x00Mkey", 7_000, &());
        assert_eq!(a.idle_ms(b"\x00Mkey", 9_000), 2_000);
        assert_eq!(a.idle_ms(b"\x00Mother", 9_000), 8_000);
        a.touch(b"\x00Mother", 5_500, &());
        a.touch_hashed(h.hash_one(&b"\x00Mother"[..]), b"\x00Mother", 8_800, &());
        assert_eq!(a.idle_ms(b"\x00Mother", 9_000), 1_000);
    }

    /// Copies as the meta cache keeps them: a slot per cached key.
    struct Slots(RefCell<std::collections::HashMap<u64, u64>>);

    impl Copies for Slots {
        fn with_copy(&self, h: u64, _: &[u8], f: impl Fn(u64) -> Option<u64>) -> bool {
            let mut m = self.0.borrow_mut();
            let Some(w) = m.get_mut(&h) else { return false };
            if let Some(new) = f(*w) {
                *w = new;
            }
            true
        }

        fn set_copies(&self, h: u64, mk: &[u8], w: u64) {
            self.with_copy(h, mk, |_| Some(w));
        }
    }

    /// With a copy beside the cached record, the stamps read what they
    /// read without one: a touch that changes nothing writes nothing, one
    /// that does writes the table too, and a key created again (or given
    /// RESTORE's stamp) starts over in both, not from its old copy.
    #[test]
    fn a_copy_of_the_stamp_reads_as_the_table() {
        let h = ahash::RandomState::new();
        let a = Access::new(1_000, h.clone());
        let plain = Access::new(1_000, h.clone());
        let hk = h.hash_one(&b"\x00Mk"[..]);
        let slots = Slots(RefCell::new([(hk, 0)].into_iter().collect()));
        a.configure(10, 1, 2_000);
        plain.configure(10, 1, 2_000);
        a.created(b"\x00Mk", 2_000, &slots);
        plain.created(b"\x00Mk", 2_000, &());
        assert_ne!(slots.0.borrow()[&hk], 0, "the create left its copy");
        // The same touches, through the copy and without it (the same
        // random draws: both tables started from the same seed).
        for i in 0..20_000u64 {
            let t = 2_000 + i * 7;
            a.touch_hashed(hk, b"\x00Mk", t, &slots);
            plain.touch_hashed(hk, b"\x00Mk", t, &());
        }
        let now = 2_000 + 20_000 * 7;
        assert_eq!(a.idle_ms(b"\x00Mk", now + 3_000), plain.idle_ms(b"\x00Mk", now + 3_000));
        assert_eq!(a.freq(b"\x00Mk", now), plain.freq(b"\x00Mk", now));
        assert!(a.freq(b"\x00Mk", now) > LFU_INIT, "the counter rose");
        let copy = Stamp::unpack(slots.0.borrow()[&hk]);
        assert_eq!(copy, a.find(hk).unwrap_or_else(|| a.floor()), "the copy is the table's stamp");
        // Created again: the counter starts over, and the next touch counts
        // from there, not from the copy it had.
        a.created(b"\x00Mk", now, &slots);
        assert_eq!(a.freq(b"\x00Mk", now), LFU_INIT);
        a.touch_hashed(hk, b"\x00Mk", now + 1_000, &slots);
        assert!(a.freq(b"\x00Mk", now + 1_000) <= LFU_INIT + 1);
        assert_eq!(a.idle_ms(b"\x00Mk", now + 1_000), 0);
        // RESTORE's IDLETIME and FREQ reach the copy too.
        a.set(b"\x00Mk", now + 2_000, Some(100), Some(42), &slots);
        a.touch_hashed(hk, b"\x00Mk", now + 2_000, &slots);
        let f = a.freq(b"\x00Mk", now + 2_000);
        assert!((42..=43).contains(&f), "{f}");
        // A key without a slot is touched in the table alone.
        a.touch(b"\x00Mnone", now + 5_000, &slots);
        assert_eq!(a.idle_ms(b"\x00Mnone", now + 5_000), 0);
        assert_eq!(slots.0.borrow().len(), 1);
    }

    /// A key new to a full bucket takes the stalest key's word, and only
    /// that key reads as idle since the floor again.
    #[test]
    fn a_full_bucket_forgets_its_stalest_key() {
        let a = Access::new(0, ahash::RandomState::new());
        // Keys hashed into bucket 7, with tags 1..=WAYS+1.
        let h = |tag: u64| tag << 49 | 7;
        for i in 0..WAYS as u64 {
            a.update(h(i + 1), 10_000, |_| Stamp::at(10_000 + i * 1000, LFU_INIT));
        }
        a.update(h(WAYS as u64 + 1), 20_000, |_| Stamp::at(20_000, LFU_INIT));
        let idle = |tag: u64| a.find(h(tag)).map(|s| s.idle_ms(30_000));
        assert_eq!(idle(1), None, "the stalest one went");
        for i in 1..WAYS as u64 {
            assert_eq!(idle(i + 1), Some(20_000 - i * 1000));
        }
        assert_eq!(idle(WAYS as u64 + 1), Some(10_000));
    }

    /// Redis's clocks wrap (24 bits of seconds, 16 bits of minutes), and
    /// so do the times read from them.
    #[test]
    fn the_clocks_wrap_as_redis_s() {
        let a = Access::new(0, ahash::RandomState::new());
        let wrap_s = (CLOCK_MAX + 1) * 1000;
        a.created(b"k", wrap_s - 3_000, &());
        assert_eq!(a.idle_ms(b"k", wrap_s + 2_000), 5_000);
        a.configure(10, 1, 0);
        let wrap_min = 0x1_0000 * 60_000;
        a.set(b"f", wrap_min - 60_000, None, Some(50), &());
        assert_eq!(a.freq(b"f", wrap_min + 120_000), 47);
    }

    /// The move to huge pages keeps every stamp.
    #[test]
    fn the_move_to_huge_pages_keeps_the_stamps() {
        let a = Access::new(0, ahash::RandomState::new());
        let n = HUGE_AT + 100;
        for i in 0..n {
            a.created(&i.to_le_bytes(), 5_000 + i as u64 * 1000, &());
        }
        assert_eq!(a.placed.get(), HUGE_AT);
        let kept = (0..n)
            .filter(|&i| a.idle_ms(&i.to_le_bytes(), 5_000 + n as u64 * 1000) == (n - i) as u64 * 1000)
            .count();
        // A full bucket may have let one go (8 ways over 128k buckets:
        // rare); none may read wrong.
        assert!(kept as u32 >= n - 2, "{kept} of {n}");
    }

    /// Half a million keys touched once each are all remembered, and of
    /// a million, nearly all.
    #[test]
    fn a_million_keys_are_mostly_remembered() {
        let a = Access::new(0, ahash::RandomState::new());
        let held = |n: u32| (0..n).filter(|i| a.idle_ms(&i.to_le_bytes(), 6_000) == 1_000).count();
        for i in 0..500_000u32 {
            a.created(&i.to_le_bytes(), 5_000, &());
        }
        let half = held(500_000);
        assert!(half > 490_000, "{half}");
        for i in 500_000..1_000_000u32 {
            a.created(&i.to_le_bytes(), 5_000, &());
        }
        let all = held(1_000_000);
        assert!(all > 850_000, "{all}");
    }
}
