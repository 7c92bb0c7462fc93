//! Which keys a shard may hold (issue 52): a blocked Bloom filter of its
//! meta records' keys, so a read of a key that does not exist costs one
//! cache line instead of RocksDB's filters. With a million keys, a fifth of
//! them absent, RocksDB's `Get` was 22% of GET -P16's shard (each absent
//! read searched the top-level index and a filter partition of every L0
//! file and level) and 9% of SET's (the read before a new key's write).
//!
//! Exact on one side only: a key it does not hold has no meta record, in
//! the tier or in RocksDB; one it holds may have none. Keys enter it when
//! the shard opens ([`KeyFilter::build`], from the keyspace's count of
//! every meta record, `Keyspace::recount`) and at every write of a meta
//! record ([`ShardStore::put`](super::ShardStore::put), the one door every
//! command's write goes through, WATCH's too); a delete leaves its key in,
//! so a deleted key reads through to RocksDB as before. Only the owner's
//! store turns one on: peers never write, and read RocksDB as before.
//!
//! It is sized at the open for twice the keys found (at least 1M) at 16
//! bits a key, in 64-byte blocks (one block a key, 7 bits in it). Once more
//! distinct keys entered it than it was sized for, it grows a layer twice
//! the size of its newest (a scalable Bloom filter: a key new to every
//! layer enters the newest, a read asks each layer), so a shard started
//! empty keeps it as it fills; past [`MAX_BYTES`] in all it turns itself
//! off until the next start (reads go to RocksDB as before), and so does
//! an open with more keys than [`MAX_BYTES`] holds.

use std::cell::{Cell, RefCell};

/// Bits a key is sized for.
const BITS_PER_KEY: usize = 16;
/// The fewest keys a filter is sized for.
const MIN_KEYS: usize = 1 << 20;
/// The most memory a shard's filter takes, all its layers together (a
/// shard opened with more keys than this holds at [`BITS_PER_KEY`] gets
/// none).
pub const MAX_BYTES: usize = 64 << 20;

type Block = [u64; 8];

/// One layer: its blocks, the keys that set a bit when they entered it
/// (distinct keys, nearly), and the keys it was sized for.
struct Layer {
    blocks: Vec<Block>,
    keys: usize,
    cap: usize,
}

impl Layer {
    fn new(cap: usize) -> Layer {
        Layer {
            blocks: vec![[0u64; 8]; (cap * BITS_PER_KEY / 8).div_ceil(64)],
            keys: 0,
            cap,
        }
    }

    #[inline]
    fn holds(&self, h: u64) -> bool {
        let (b, bits) = place(h, self.blocks.len());
        let block = &self.blocks[b];
        bits.iter().all(|&bit| block[(bit >> 6) as usize] & (1u64 << (bit & 63)) != 0)
    }
}

#[derive(Default)]
pub struct KeyFilter {
    /// Oldest first; empty: off.
    layers: RefCell<Vec<Layer>>,
    /// The most bytes its layers may take together.
    max: Cell<usize>,
    /// Reads it answered "absent" (INFO).
    answered: Cell<u64>,
}

/// The most keys an open may find and still get a filter.
pub const MOST_KEYS: usize = MAX_BYTES * 8 / BITS_PER_KEY / 2;

/// The keys and bytes a filter of `n` keys at the open is sized for.
fn sized_for(n: usize, max: usize) -> Option<(usize, usize)> {
    let cap = (n * 2).max(MIN_KEYS);
    let bytes = cap * BITS_PER_KEY / 8;
    (bytes <= max).then_some((cap, bytes))
}

/// The block a hash names among `blocks`.
#[inline]
fn block_of(h: u64, blocks: usize) -> usize {
    ((h as u128 * blocks as u128) >> 64) as usize
}

/// The block and the seven bits in it a hash names.
#[inline]
fn place(h: u64, blocks: usize) -> (usize, [u16; 7]) {
    let b = block_of(h, blocks);
    let m = h.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (h >> 29);
    let mut bits = [0u16; 7];
    for (i, bit) in bits.iter_mut().enumerate() {
        *bit = ((m >> (i * 9)) & 511) as u16;
    }
    (b, bits)
}

impl KeyFilter {
    #[inline]
    pub fn on(&self) -> bool {
        !self.layers.borrow().is_empty()
    }

    /// Turns it on, holding `hashes` (every key the shard holds now, by
    /// the store's key hasher): sized for twice as many (at least
    /// [`MIN_KEYS`]); off when that is over [`MAX_BYTES`].
    pub fn build(&self, hashes: &[u64]) {
        self.build_within(hashes, MAX_BYTES);
    }

    /// [`KeyFilter::build`] with its layers taking at most `max` bytes.
    fn build_within(&self, hashes: &[u64], max: usize) {
        let Some((cap, _)) = sized_for(hashes.len(), max) else {
            self.off();
            return;
        };
        self.max.set(max);
        *self.layers.borrow_mut() = vec![Layer::new(cap)];
        for &h in hashes {
            self.add(h);
        }
    }

    /// Turns it off (every read goes to RocksDB) and frees it.
    pub fn off(&self) {
        *self.layers.borrow_mut() = Vec::new();
    }

    /// A key (by hash) that may exist from now on: into the newest layer,
    /// unless a layer holds it already. Past the newest layer's size, a
    /// layer twice its size is added (off past [`MAX_BYTES`] in all).
    #[inline]
    pub fn add(&self, h: u64) {
        let grow = {
            let mut layers = self.layers.borrow_mut();
            let Some((newest, older)) = layers.split_last_mut() else {
                return;
            };
            let (b, bits) = place(h, newest.blocks.len());
            let block = &newest.blocks[b];
            if bits.iter().all(|&bit| block[(bit >> 6) as usize] & (1u64 << (bit & 63)) != 0) {
                return;
            }
            // A key an older layer holds (a key written again) stays there.
            if older.iter().any(|l| l.holds(h)) {
                return;
            }
            let block = &mut newest.blocks[b];
            for bit in bits {
                block[(bit >> 6) as usize] |= 1u64 << (bit & 63);
            }
            newest.keys += 1;
            (newest.keys > newest.cap).then_some(newest.cap * 2)
        };
        if let Some(cap) = grow {
            let bytes: usize = self.layers.borrow().iter().map(|l| l.blocks.len() * 64).sum();
            if bytes + cap * BITS_PER_KEY / 8 > self.max.get() {
                self.off();
            } else {
                self.layers.borrow_mut().push(Layer::new(cap));
            }
        }
    }

    /// Whether a key (by hash) may exist: true while off.
    #[inline]
    pub fn may_hold(&self, h: u64) -> bool {
        let layers = self.layers.borrow();
        if layers.is_empty() {
            return true;
        }
        // The newest first: recent keys are the likelier.
        let held = layers.iter().rev().any(|l| l.holds(h));
        if !held {
            self.answered.set(self.answered.get() + 1);
        }
        held
    }

    /// Asks the CPU for the block each layer keeps of a hash (the newest
    /// two; nothing while off): a pipeline's keys the meta cache does not
    /// hold are asked here next, and a layer of a million keys (2 MB) is
    /// past the core's caches (GET -P16 over 1M keys, 22% absent:
    /// [`Layer::holds`] waited on its line, 2.0% of the process, 0.2%
    /// with this prefetch).
    #[inline]
    pub fn prefetch(&self, h: u64) {
        for l in self.layers.borrow().iter().rev().take(2) {
            if let Some(b) = l.blocks.get(block_of(h, l.blocks.len())) {
                super::cache::prefetch(b);
            }
        }
    }

    /// (bytes, keys entered, keys sized for, reads answered absent), its
    /// layers together.
    pub fn stats(&self) -> (usize, usize, usize, u64) {
        let layers = self.layers.borrow();
        (
            layers.iter().map(|l| l.blocks.len() * 64).sum(),
            layers.iter().map(|l| l.keys).sum(),
            layers.iter().map(|l| l.cap).sum(),
            self.answered.get(),
        )
    }

    /// Its layers.
    #[cfg(test)]
    fn layers(&self) -> usize {
        self.layers.borrow().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hashes(from: u64, n: u64) -> Vec<u64> {
        let s = ahash::RandomState::with_seeds(1, 2, 3, 4);
        (from..from + n).map(|i| s.hash_one(format!("key:{i}").as_bytes())).collect()
    }

    #[test]
    fn off_it_holds_everything() {
        let f = KeyFilter::default();
        assert!(!f.on());
        assert!(f.may_hold(42));
        f.add(7);
        assert!(!f.on(), "adding does not turn it on");
        f.prefetch(7);
        assert!(f.may_hold(7), "a prefetch is a hint only");
    }

    #[test]
    fn a_prefetch_is_a_hint_on_every_layer() {
        let f = KeyFilter::default();
        f.build_within(&hashes(0, 10), 16 << 20);
        // Past the first layer's size: a second layer.
        let more = hashes(10, (MIN_KEYS + MIN_KEYS / 10) as u64);
        for &h in &more {
            f.add(h);
        }
        assert_eq!(f.layers(), 2);
        let before = f.stats();
        for &h in hashes(0, 10).iter().chain(&hashes(1 << 40, 1000)) {
            f.prefetch(h);
        }
        assert_eq!(f.stats(), before, "nothing entered, nothing answered");
        assert!(more.iter().take(1000).all(|&h| f.may_hold(h)));
    }

    #[test]
    fn every_key_added_is_held_and_few_others_are() {
        let f = KeyFilter::default();
        let built = hashes(0, 300_000);
        f.build(&built);
        assert!(f.on());
        let later = hashes(300_000, 300_000);
        for &h in &later {
            f.add(h);
        }
        assert!(built.iter().chain(&later).all(|&h| f.may_hold(h)), "no false negative");
        let others = hashes(10_000_000, 200_000);
        let fp = others.iter().filter(|&&h| f.may_hold(h)).count();
        assert!(
            fp < 200_000 / 100,
            "{fp} false positives of 200000 (at {} of {} keys)",
            f.stats().1,
            f.stats().2
        );
        let (bytes, keys, cap, answered) = f.stats();
        assert_eq!(bytes, MIN_KEYS * BITS_PER_KEY / 8);
        assert!(keys > 590_000 && keys <= 600_000, "{keys}");
        assert_eq!(cap, MIN_KEYS);
        assert_eq!(answered as usize, 200_000 - fp);
    }

    #[test]
    fn a_key_added_again_counts_once() {
        let f = KeyFilter::default();
        f.build(&[]);
        let h = hashes(0, 1)[0];
        f.add(h);
        f.add(h);
        assert_eq!(f.stats().1, 1);
    }

    #[test]
    fn past_its_size_it_grows_a_layer_and_past_its_most_bytes_turns_off() {
        let f = KeyFilter::default();
        f.build(&hashes(0, 10));
        // Counted by the bits they set: a few of the last look held already.
        let more = hashes(10, MIN_KEYS as u64 + MIN_KEYS as u64 / 10);
        for &h in &more {
            f.add(h);
        }
        assert!(f.on(), "it grew instead");
        assert_eq!(f.layers(), 2);
        let (bytes, keys, cap, _) = f.stats();
        assert_eq!(bytes, 3 * MIN_KEYS * BITS_PER_KEY / 8);
        assert_eq!(cap, 3 * MIN_KEYS);
        assert!(keys > MIN_KEYS && keys <= MIN_KEYS + MIN_KEYS / 10 + 10, "{keys}");
        assert!(more.iter().all(|&h| f.may_hold(h)), "no false negative across layers");
        let others = hashes(50_000_000, 200_000);
        let fp = others.iter().filter(|&&h| f.may_hold(h)).count();
        assert!(fp < 200_000 / 100, "{fp} false positives of 200000");
        // Keys an older layer holds, written again, stay out of the newest.
        let before = f.stats().1;
        for &h in more.iter().take(1000) {
            f.add(h);
        }
        assert_eq!(f.stats().1, before);
        // Within 6 x MIN_KEYS' worth of bytes: 1M + 2M keys fit, 4M more does not.
        let g = KeyFilter::default();
        g.build_within(&hashes(0, 10), 6 * MIN_KEYS * BITS_PER_KEY / 8);
        for &h in &hashes(10, 3 * MIN_KEYS as u64 + MIN_KEYS as u64 / 5) {
            g.add(h);
        }
        assert!(!g.on(), "over its most bytes it stops answering");
        assert!(g.may_hold(12345));
        assert_eq!(sized_for(MOST_KEYS, MAX_BYTES), Some((MOST_KEYS * 2, MAX_BYTES)));
        assert_eq!(
            sized_for(MOST_KEYS + 1, MAX_BYTES),
            None,
            "an open with more keys than its largest size gets none"
        );
    }
}
