//! The in-memory view of a big sorted set's count blocks (`types::zblock`
//! keeps them on disk): each block's head and count, in order, grouped so
//! that the members before a block, or the block holding a rank, are found
//! in O(√blocks) additions over a few hundred groups instead of a walk.
//!
//! A layout is derived: the `'r'` records on disk are the truth, written
//! in the batch of every change, and a layout is loaded from them when a
//! command first needs it. The shard keeps the layouts it loaded
//! ([`Layouts`]), by version (a version names one incarnation of one set),
//! and drops them all when a write fails (the batch may or may not have
//! landed) or when they weigh more than [`MAX_WEIGHT`]. A layout also keeps
//! the positions of the blocks commands read (a hot set's, or a small set's
//! whole order), so reads of them step over no tombstones.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};

/// Members a block holds after a split (the `zset-rank-block` setting).
static BLOCK: AtomicU64 = AtomicU64::new(64);

/// Members a block holds after a split; a block over twice this splits.
pub fn block() -> u64 {
    BLOCK.load(Ordering::Relaxed)
}

/// Sets [`block`] (`zset-rank-block`, read at startup; at least 2).
pub fn set_block(n: u64) {
    BLOCK.store(n.max(2), Ordering::Relaxed);
}

/// Heads per group of a layout; a group over twice this splits in two.
const GROUP: usize = 128;

/// Heads and kept positions all the layouts of a shard may hold (about 60
/// bytes each, so ~64 MB): past it the shard forgets them and reloads what
/// it needs.
pub const MAX_WEIGHT: usize = 1 << 20;

/// Reads that make a block hot: kept even when the layout must make room.
pub const HOT_READS: u8 = 8;

/// Positions of one block, kept once a command read them: the block's
/// records without a walk over the tombstones among them.
pub use crate::types::zpos::Positions;
use crate::types::zpos::{cmp_led, lead};

#[derive(Clone, Debug)]
struct Block {
    head: Vec<u8>,
    /// The head's [`lead`]: a search compares it first.
    lead: u64,
    count: u64,
    kept: Option<Positions>,
    /// Reads of the block's positions that did not keep them (halved each
    /// time the clock hand passes).
    reads: u8,
    /// Its kept positions were read since the clock hand last passed.
    used: bool,
}

#[derive(Default, Clone, Debug)]
struct Group {
    blocks: Vec<Block>,
    sum: u64,
}

/// Where a block is in a layout: group and index.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Loc {
    g: usize,
    i: usize,
}

/// The blocks of one sorted set, in order. The first head is the empty
/// position (it covers everything below the second). A set without count
/// blocks on disk has one block here, its whole self.
#[derive(Default, Clone, Debug)]
pub struct Layout {
    groups: Vec<Group>,
    /// Heads and kept positions: what the layout weighs in [`Layouts`].
    weight: usize,
    /// Where the clock that frees room for hot blocks stands.
    hand: Loc,
}

impl Layout {
    /// A layout from its heads in order (the first must be empty).
    pub fn from_heads(heads: Vec<(Vec<u8>, u64)>) -> Layout {
        let weight = heads.len();
        let mut groups = Vec::with_capacity(heads.len() / GROUP + 1);
        let mut it = heads
            .into_iter()
            .map(|(head, count)| Block {
                lead: lead(&head),
                head,
                count,
                kept: None,
                reads: 0,
                used: false,
            })
            .peekable();
        while it.peek().is_some() {
            let blocks: Vec<_> = it.by_ref().take(GROUP).collect();
            let sum = blocks.iter().map(|b| b.count).sum();
            groups.push(Group { blocks, sum });
        }
        Layout {
            groups,
            weight,
            hand: Loc::default(),
        }
    }

    /// How many blocks.
    pub fn len(&self) -> usize {
        self.groups.iter().map(|g| g.blocks.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// Whether there is one block (a set without count blocks on disk).
    pub fn is_single(&self) -> bool {
        self.groups.len() == 1 && self.groups[0].blocks.len() == 1
    }

    /// Heads plus kept positions.
    pub fn weight(&self) -> usize {
        self.weight
    }

    /// Members in all blocks.
    pub fn total(&self) -> u64 {
        self.groups.iter().map(|g| g.sum).sum()
    }

    fn block(&self, l: Loc) -> &Block {
        &self.groups[l.g].blocks[l.i]
    }

    /// The block whose range holds position `pos`: the last head at or
    /// before it. None only for an empty layout.
    pub fn find(&self, pos: &[u8]) -> Option<Loc> {
        let k = lead(pos);
        let at_or_before = |b: &Block| cmp_led(b.lead, &b.head, k, pos).is_le();
        let g = self.groups.partition_point(|g| at_or_before(&g.blocks[0]));
        let g = g.checked_sub(1)?;
        let i = self.groups[g].blocks.partition_point(at_or_before) - 1;
        Some(Loc { g, i })
    }

    /// The first block.
    pub fn first(&self) -> Option<Loc> {
        (!self.is_empty()).then_some(Loc { g: 0, i: 0 })
    }

    /// The last block.
    pub fn last(&self) -> Option<Loc> {
        let g = self.groups.len().checked_sub(1)?;
        Some(Loc {
            g,
            i: self.groups[g].blocks.len() - 1,
        })
    }

    /// Members in the blocks before `l`.
    pub fn before(&self, l: Loc) -> u64 {
        let groups: u64 = self.groups[..l.g].iter().map(|g| g.sum).sum();
        groups + self.groups[l.g].blocks[..l.i].iter().map(|b| b.count).sum::<u64>()
    }

    /// The block holding the member of rank `rank` (0-based), and the
    /// rank's offset inside it; None past the last member.
    pub fn locate(&self, rank: u64) -> Option<(Loc, u64)> {
        let mut left = rank;
        for (g, group) in self.groups.iter().enumerate() {
            if left >= group.sum {
                left -= group.sum;
                continue;
            }
            for (i, b) in group.blocks.iter().enumerate() {
                if left < b.count {
                    return Some((Loc { g, i }, left));
                }
                left -= b.count;
            }
        }
        None
    }

    pub fn head(&self, l: Loc) -> &[u8] {
        &self.block(l).head
    }

    pub fn count(&self, l: Loc) -> u64 {
        self.block(l).count
    }

    /// The block's positions, if kept.
    pub fn kept(&self, l: Loc) -> Option<&Positions> {
        self.block(l).kept.as_ref()
    }

    /// Changes the block's kept positions in place (nothing when none are
    /// kept); `f` may add or remove some.
    pub fn edit_kept(&mut self, l: Loc, f: impl FnOnce(&mut Positions)) {
        let b = &mut self.groups[l.g].blocks[l.i];
        if let Some(k) = b.kept.as_mut() {
            let before = k.len();
            f(k);
            self.weight = self.weight + k.len() - before;
        }
    }

    /// Marks block `l` read; whether it was read before.
    /// Whether keeping the block's positions leaves the layout within
    /// half the budget.
    pub fn has_room(&self, l: Loc) -> bool {
        self.weight + self.block(l).count as usize <= MAX_WEIGHT / 2
    }

    /// A command is about to read block `l`, which is not kept: whether
    /// to keep its positions. A block is kept from its second read while
    /// the layout has room; past that only a hot one (read [`HOT_READS`]
    /// times, the count halved each time the clock passes), for which a
    /// clock frees room among the kept blocks not read since it last
    /// passed. A big set's blocks read at random are then counted, never
    /// kept (keeping them only to have all dropped at the next trim, and
    /// read whole again, was most of a random ZRANK's time on a 10M-member
    /// set), while its first and last blocks stay kept.
    pub fn should_keep(&mut self, l: Loc) -> bool {
        let b = &mut self.groups[l.g].blocks[l.i];
        b.reads = b.reads.saturating_add(1);
        let reads = b.reads;
        if self.is_single() {
            return true;
        }
        if reads < 2 {
            return false;
        }
        if self.has_room(l) {
            return true;
        }
        if reads < HOT_READS {
            return false;
        }
        self.make_room(l);
        self.has_room(l)
    }

    /// The kept positions of `l` were read.
    pub fn touch(&mut self, l: Loc) {
        self.groups[l.g].blocks[l.i].used = true;
    }

    /// Moves the clock hand (at most twice round) until block `spare`
    /// fits: a kept block read since the hand last passed gets another
    /// round, one not read loses its positions (and its read count); an
    /// unkept block's read count is halved.
    fn make_room(&mut self, spare: Loc) {
        // Twice round, plus a step past each group's end.
        let steps = 2 * (self.len() + self.groups.len());
        for _ in 0..steps {
            if self.has_room(spare) {
                return;
            }
            let h = self.hand;
            let Some(b) = self.groups.get_mut(h.g).and_then(|g| g.blocks.get_mut(h.i)) else {
                // Past a group's end (or the layout's, round to the start).
                let g = if h.g + 1 < self.groups.len() { h.g + 1 } else { 0 };
                self.hand = Loc { g, i: 0 };
                continue;
            };
            // `spare` is never kept here (only an unkept block asks for room).
            match b.kept.as_ref() {
                Some(_) if b.used => b.used = false,
                Some(k) => {
                    self.weight -= k.len();
                    b.kept = None;
                    // Dropped: it must prove hot again.
                    b.reads = 0;
                }
                None => b.reads /= 2,
            }
            self.hand = Loc { g: h.g, i: h.i + 1 };
        }
    }

    /// Drops every kept position (the layout's heads stay).
    pub fn drop_kept(&mut self) {
        for g in &mut self.groups {
            for b in &mut g.blocks {
                b.kept = None;
            }
        }
        self.weight = self.len();
    }

    /// Keeps (or with None forgets) the block's positions.
    /// Takes the block's kept positions out (it keeps none after).
    pub fn take_kept(&mut self, l: Loc) -> Option<Positions> {
        let b = &mut self.groups[l.g].blocks[l.i];
        let ps = b.kept.take();
        self.weight -= ps.as_ref().map_or(0, Positions::len);
        ps
    }

    pub fn keep(&mut self, l: Loc, ps: Option<Positions>) {
        let b = &mut self.groups[l.g].blocks[l.i];
        self.weight -= b.kept.as_ref().map_or(0, Positions::len);
        self.weight += ps.as_ref().map_or(0, Positions::len);
        b.kept = ps;
    }

    /// The block after `l`.
    pub fn next(&self, l: Loc) -> Option<Loc> {
        if l.i + 1 < self.groups[l.g].blocks.len() {
            Some(Loc { g: l.g, i: l.i + 1 })
        } else {
            (l.g + 1 < self.groups.len()).then_some(Loc { g: l.g + 1, i: 0 })
        }
    }

    /// The block before `l`.
    pub fn prev(&self, l: Loc) -> Option<Loc> {
        if l.i > 0 {
            Some(Loc { g: l.g, i: l.i - 1 })
        } else {
            let g = l.g.checked_sub(1)?;
            Some(Loc {
                g,
                i: self.groups[g].blocks.len() - 1,
            })
        }
    }

    /// Sets block `l`'s count.
    pub fn set(&mut self, l: Loc, count: u64) {
        let g = &mut self.groups[l.g];
        g.sum = g.sum - g.blocks[l.i].count + count;
        g.blocks[l.i].count = count;
    }

    /// Adds a block with head `head` right after block `l`.
    pub fn insert_after(&mut self, l: Loc, head: Vec<u8>, count: u64) {
        let g = &mut self.groups[l.g];
        g.blocks.insert(
            l.i + 1,
            Block {
                lead: lead(&head),
                head,
                count,
                kept: None,
                reads: 0,
                used: false,
            },
        );
        g.sum += count;
        self.weight += 1;
        if g.blocks.len() > 2 * GROUP {
            let tail = g.blocks.split_off(GROUP);
            let sum = tail.iter().map(|b| b.count).sum();
            g.sum -= sum;
            self.groups.insert(l.g + 1, Group { blocks: tail, sum });
        }
    }

    /// Drops block `l` (its members belong to the block before it now).
    pub fn remove(&mut self, l: Loc) {
        let g = &mut self.groups[l.g];
        let b = g.blocks.remove(l.i);
        g.sum -= b.count;
        self.weight -= 1 + b.kept.map_or(0, |k| k.len());
        if g.blocks.is_empty() {
            self.groups.remove(l.g);
        }
    }

    /// Every (head, count), in order (tests and checks).
    pub fn heads(&self) -> impl Iterator<Item = (&[u8], u64)> {
        self.groups
            .iter()
            .flat_map(|g| g.blocks.iter().map(|b| (b.head.as_slice(), b.count)))
    }
}

/// The layouts one shard loaded, by version.
#[derive(Default)]
pub struct Layouts {
    /// ahash: std's SipHash was 300 instructions of each ZADD (two lookups).
    map: RefCell<ahash::AHashMap<u64, Layout>>,
    /// What they weigh together ([`Layout::weight`]).
    weight: Cell<usize>,
    /// The store's failed-write count when the layouts were last known
    /// good: a failed write may or may not have landed, so they are
    /// forgotten when it moves.
    failures: Cell<u64>,
}

impl Layouts {
    /// Runs `f` on the layout of `version`, loading it with `load` when
    /// not kept (or when a write failed since). `failures` is the store's
    /// failed-write count now.
    pub fn with<R, E>(
        &self,
        version: u64,
        failures: u64,
        load: impl FnOnce() -> Result<Layout, E>,
        f: impl FnOnce(&mut Layout) -> R,
    ) -> Result<R, E> {
        self.check(failures);
        if !self.map.borrow().contains_key(&version) {
            let mut fresh = load()?;
            if fresh.weight() > MAX_WEIGHT / 2 {
                // Too big to keep: it serves this command only.
                return Ok(f(&mut fresh));
            }
            self.keep(version, fresh);
        }
        let (r, before, after) = {
            let mut map = self.map.borrow_mut();
            match map.get_mut(&version) {
                Some(l) => {
                    let before = l.weight();
                    let r = f(l);
                    (r, before, l.weight())
                }
                // `keep` spares the layout it keeps: not reached.
                None => (f(&mut Layout::default()), 0, 0),
            }
        };
        self.weight.set((self.weight.get() + after).saturating_sub(before));
        self.trim(version);
        Ok(r)
    }

    /// Runs `f` on the layout of `version` if it is kept.
    pub fn update(&self, version: u64, failures: u64, f: impl FnOnce(&mut Layout)) {
        self.check(failures);
        if self.map.borrow().contains_key(&version) {
            let _ = self.with(version, failures, || Err::<Layout, ()>(()), f);
        }
    }

    fn check(&self, failures: u64) {
        if self.failures.get() != failures {
            self.forget_all();
            self.failures.set(failures);
        }
    }

    /// Keeps `layout` as the layout of `version`.
    pub fn keep(&self, version: u64, layout: Layout) {
        self.weight.set(self.weight.get() + layout.weight());
        if let Some(old) = self.map.borrow_mut().insert(version, layout) {
            self.weight.set(self.weight.get().saturating_sub(old.weight()));
        }
        self.trim(version);
    }

    /// Past [`MAX_WEIGHT`]: drops the kept positions first (a block's are
    /// one walk to read again), then, if the heads alone are too many,
    /// every layout but `spare`'s (the one in use).
    fn trim(&self, spare: u64) {
        if self.weight.get() <= MAX_WEIGHT {
            return;
        }
        let mut map = self.map.borrow_mut();
        let mut weight = 0;
        for l in map.values_mut() {
            l.drop_kept();
            weight += l.weight();
        }
        if weight > MAX_WEIGHT / 2 {
            map.retain(|v, _| *v == spare);
            weight = map.values().map(Layout::weight).sum();
        }
        drop(map);
        self.weight.set(weight);
    }

    /// Forgets the layout of `version`.
    pub fn forget(&self, version: u64) {
        if let Some(old) = self.map.borrow_mut().remove(&version) {
            self.weight.set(self.weight.get().saturating_sub(old.weight()));
        }
    }

    pub fn forget_all(&self) {
        self.map.borrow_mut().clear();
        self.weight.set(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pos(n: u8) -> Vec<u8> {
        vec![n]
    }

    #[test]
    fn blocks_are_kept_only_within_half_the_budget() {
        let big = MAX_WEIGHT as u64 / 2;
        let l = Layout::from_heads(vec![(Vec::new(), 10), (pos(1), big)]);
        assert!(l.has_room(l.find(b"").unwrap()));
        assert!(!l.has_room(l.find(&pos(1)).unwrap()), "2 heads and {big} positions are past half");
    }

    /// Four blocks of a fifth of the budget each: two fit in half. A cold block
    /// is then never kept; a hot one is, in place of a kept block not read
    /// since the clock passed (a block read since gets another round).
    #[test]
    fn a_hot_block_takes_the_room_of_one_not_read() {
        let q = MAX_WEIGHT as u64 / 5;
        let mut l = Layout::from_heads((0..4u8).map(|n| (if n == 0 { Vec::new() } else { pos(n) }, q)).collect());
        let at = |l: &Layout, n: u8| l.find(&pos(n)).unwrap();
        let fill = |n: u8| Positions::from_sorted((0..q as u32).map(|i| [&[n][..], &i.to_be_bytes()].concat()).collect());
        for n in 0..2 {
            let b = at(&l, n);
            assert!(!l.should_keep(b), "the first read counts only");
            assert!(l.should_keep(b), "the second keeps, with room");
            l.keep(b, Some(fill(n)));
        }
        let (cold, hot) = (at(&l, 2), at(&l, 3));
        for _ in 0..HOT_READS - 1 {
            assert!(!l.should_keep(cold));
            assert!(!l.should_keep(hot));
        }
        l.touch(at(&l, 0));
        assert!(l.should_keep(hot), "hot: room made");
        l.keep(hot, Some(fill(3)));
        assert!(l.kept(at(&l, 0)).is_some(), "read since the hand passed: spared");
        assert!(l.kept(at(&l, 1)).is_none(), "not read: dropped");
        assert!(!l.should_keep(at(&l, 1)), "dropped: its read count starts again");
        assert!(l.weight() <= MAX_WEIGHT / 2);
    }

    #[test]
    fn finds_counts_and_locates() {
        let mut heads = vec![(Vec::new(), 3)];
        heads.extend((1..=600u16).map(|n| ((n as u32 * 100).to_be_bytes().to_vec(), 2)));
        let l = Layout::from_heads(heads);
        assert_eq!(l.len(), 601);
        assert_eq!(l.total(), 3 + 1200);
        let first = l.find(b"").unwrap();
        assert_eq!((l.before(first), l.head(first)), (0, &b""[..]));
        let at = l.find(&250u32.to_be_bytes()).unwrap();
        assert_eq!(l.head(at), &200u32.to_be_bytes()[..]);
        assert_eq!(l.before(at), 3 + 2);
        // The 300th block sits in the third group.
        let deep = l.find(&30_050u32.to_be_bytes()).unwrap();
        assert_eq!(l.before(deep), 3 + 299 * 2);
        assert_eq!(l.locate(0), Some((first, 0)));
        assert_eq!(l.locate(2), Some((first, 2)));
        assert_eq!(l.locate(3), Some((l.find(&100u32.to_be_bytes()).unwrap(), 0)));
        assert_eq!(l.locate(3 + 299 * 2 + 1), Some((deep, 1)));
        assert_eq!(l.locate(1203), None);
        assert_eq!(l.next(l.prev(deep).unwrap()), Some(deep));
    }

    #[test]
    fn inserts_and_removes_keep_sums() {
        let mut l = Layout::from_heads(vec![(Vec::new(), 5)]);
        let mut at = l.first().unwrap();
        for n in 1..=255u8 {
            l.insert_after(at, pos(n), 1);
            at = l.find(&pos(n)).unwrap();
        }
        assert_eq!((l.len(), l.total()), (256, 260));
        assert_eq!(l.groups.len(), 1);
        assert_eq!(l.weight(), 256);
        l.insert_after(at, vec![255, 1], 4);
        assert_eq!(l.groups.len(), 2, "a group over twice GROUP splits");
        assert_eq!(l.total(), 264);
        let x = l.find(&pos(200)).unwrap();
        assert_eq!(l.before(x), 5 + 199);
        l.set(x, 10);
        assert_eq!(l.total(), 273);
        l.remove(x);
        assert_eq!((l.len(), l.total()), (256, 263));
        assert_eq!(l.head(l.find(&pos(200)).unwrap()), &pos(199)[..]);
        let heads: Vec<_> = l.heads().map(|(h, _)| h.to_vec()).collect();
        let mut sorted = heads.clone();
        sorted.sort();
        assert_eq!(heads, sorted);
    }

    #[test]
    fn the_budget_drops_positions_then_layouts_but_never_the_one_in_use() {
        let cache = Layouts::default();
        let heads = |n: usize| {
            (0..n)
                .map(|i| (if i == 0 { Vec::new() } else { (i as u32).to_be_bytes().to_vec() }, 1))
                .collect()
        };
        // Too big to keep: serves the command, is not kept.
        let huge = || Ok::<_, ()>(Layout::from_heads(heads(MAX_WEIGHT / 2 + 1)));
        assert_eq!(cache.with(1, 0, huge, |l| l.total()), Ok((MAX_WEIGHT / 2 + 1) as u64));
        assert!(cache.map.borrow().is_empty());
        // Past the budget with heads alone: only the layout in use stays.
        let big = || Ok::<_, ()>(Layout::from_heads(heads(MAX_WEIGHT * 2 / 5)));
        for v in 2..=4 {
            cache.with(v, 0, big, |_| ()).unwrap();
        }
        assert_eq!(cache.map.borrow().keys().copied().collect::<Vec<_>>(), vec![4]);
        assert_eq!(cache.weight.get(), MAX_WEIGHT * 2 / 5);
        // Past it with kept positions: they go, the heads stay.
        let small = || Ok::<_, ()>(Layout::from_heads(heads(MAX_WEIGHT / 5)));
        cache.forget_all();
        cache.with(5, 0, small, |_| ()).unwrap();
        cache.with(6, 0, small, |_| ()).unwrap();
        let many = Positions::from_sorted((0..(MAX_WEIGHT * 7 / 10) as u32).map(|i| i.to_be_bytes().to_vec()).collect());
        cache.with(6, 0, small, |l| l.keep(l.first().unwrap(), Some(many))).unwrap();
        assert_eq!(cache.map.borrow().len(), 2, "both layouts stay");
        assert_eq!(cache.weight.get(), 2 * (MAX_WEIGHT / 5));
    }

    #[test]
    fn the_cache_forgets_after_a_failed_write() {
        let cache = Layouts::default();
        let load = || Ok::<_, ()>(Layout::from_heads(vec![(Vec::new(), 1)]));
        assert_eq!(cache.with(7, 0, load, |l| l.total()), Ok(1));
        cache.with(7, 0, load, |l| l.set(l.first().unwrap(), 9)).unwrap();
        assert_eq!(cache.with(7, 0, load, |l| l.total()), Ok(9), "kept");
        assert_eq!(cache.with(7, 1, load, |l| l.total()), Ok(1), "reloaded after a failure");
        cache.forget(7);
        assert_eq!(cache.with(7, 1, || Err(()), |l| l.total()), Err(()));
    }
}
