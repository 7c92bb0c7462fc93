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
//! landed) or when they hold more than [`MAX_HEADS`] heads.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
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

/// Heads all the layouts of a shard may hold (about 60 bytes each, so
/// ~64 MB): past it the shard forgets them and reloads what it needs.
pub const MAX_HEADS: usize = 1 << 20;

#[derive(Default, Clone, Debug)]
struct Group {
    /// (head position, count), in position order.
    heads: Vec<(Vec<u8>, u64)>,
    sum: u64,
}

/// Where a block is in a layout: group and index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Loc {
    g: usize,
    i: usize,
}

/// The blocks of one sorted set, in order. The first head is the empty
/// position (it covers everything below the second).
#[derive(Default, Clone, Debug)]
pub struct Layout {
    groups: Vec<Group>,
}

impl Layout {
    /// A layout from its heads in order (the first must be empty).
    pub fn from_heads(heads: Vec<(Vec<u8>, u64)>) -> Layout {
        let mut groups = Vec::with_capacity(heads.len() / GROUP + 1);
        let mut it = heads.into_iter().peekable();
        while it.peek().is_some() {
            let heads: Vec<_> = it.by_ref().take(GROUP).collect();
            let sum = heads.iter().map(|h| h.1).sum();
            groups.push(Group { heads, sum });
        }
        Layout { groups }
    }

    /// How many blocks.
    pub fn len(&self) -> usize {
        self.groups.iter().map(|g| g.heads.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// Members in all blocks.
    pub fn total(&self) -> u64 {
        self.groups.iter().map(|g| g.sum).sum()
    }

    /// The block whose range holds position `pos`: the last head at or
    /// before it. None only for an empty layout.
    pub fn find(&self, pos: &[u8]) -> Option<Loc> {
        let g = self.groups.partition_point(|g| g.heads[0].0.as_slice() <= pos);
        let g = g.checked_sub(1)?;
        let i = self.groups[g].heads.partition_point(|h| h.0.as_slice() <= pos) - 1;
        Some(Loc { g, i })
    }

    /// The first block.
    pub fn first(&self) -> Option<Loc> {
        (!self.is_empty()).then_some(Loc { g: 0, i: 0 })
    }

    /// Members in the blocks before `l`.
    pub fn before(&self, l: Loc) -> u64 {
        let groups: u64 = self.groups[..l.g].iter().map(|g| g.sum).sum();
        groups + self.groups[l.g].heads[..l.i].iter().map(|h| h.1).sum::<u64>()
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
            for (i, h) in group.heads.iter().enumerate() {
                if left < h.1 {
                    return Some((Loc { g, i }, left));
                }
                left -= h.1;
            }
        }
        None
    }

    pub fn head(&self, l: Loc) -> &[u8] {
        &self.groups[l.g].heads[l.i].0
    }

    pub fn count(&self, l: Loc) -> u64 {
        self.groups[l.g].heads[l.i].1
    }

    /// The block after `l`.
    pub fn next(&self, l: Loc) -> Option<Loc> {
        if l.i + 1 < self.groups[l.g].heads.len() {
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
                i: self.groups[g].heads.len() - 1,
            })
        }
    }

    /// Sets block `l`'s count.
    pub fn set(&mut self, l: Loc, count: u64) {
        let g = &mut self.groups[l.g];
        g.sum = g.sum - g.heads[l.i].1 + count;
        g.heads[l.i].1 = count;
    }

    /// Adds a block with head `head` right after block `l`.
    pub fn insert_after(&mut self, l: Loc, head: Vec<u8>, count: u64) {
        let g = &mut self.groups[l.g];
        g.heads.insert(l.i + 1, (head, count));
        g.sum += count;
        if g.heads.len() > 2 * GROUP {
            let tail = g.heads.split_off(GROUP);
            let sum = tail.iter().map(|h| h.1).sum();
            g.sum -= sum;
            self.groups.insert(l.g + 1, Group { heads: tail, sum });
        }
    }

    /// Drops block `l` (its members belong to the block before it now).
    pub fn remove(&mut self, l: Loc) {
        let g = &mut self.groups[l.g];
        let (_, count) = g.heads.remove(l.i);
        g.sum -= count;
        if g.heads.is_empty() {
            self.groups.remove(l.g);
        }
    }

    /// Every (head, count), in order (tests and checks).
    pub fn heads(&self) -> impl Iterator<Item = (&[u8], u64)> {
        self.groups.iter().flat_map(|g| g.heads.iter().map(|(h, c)| (h.as_slice(), *c)))
    }
}

/// The layouts one shard loaded, by version.
#[derive(Default)]
pub struct Layouts {
    map: RefCell<HashMap<u64, Layout>>,
    heads: Cell<usize>,
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
        if self.failures.get() != failures {
            self.forget_all();
            self.failures.set(failures);
        }
        if !self.map.borrow().contains_key(&version) {
            let l = load()?;
            if self.heads.get() + l.len() > MAX_HEADS {
                self.forget_all();
            }
            self.heads.set(self.heads.get() + l.len());
            self.map.borrow_mut().insert(version, l);
        }
        let mut map = self.map.borrow_mut();
        let Some(l) = map.get_mut(&version) else {
            unreachable!("inserted above")
        };
        let before = l.len();
        let r = f(l);
        let after = l.len();
        self.heads.set((self.heads.get() + after).saturating_sub(before));
        Ok(r)
    }

    /// Keeps `layout` as the layout of `version` (a set that just got its
    /// blocks).
    pub fn keep(&self, version: u64, layout: Layout) {
        if self.heads.get() + layout.len() > MAX_HEADS {
            self.forget_all();
        }
        self.heads.set(self.heads.get() + layout.len());
        if let Some(old) = self.map.borrow_mut().insert(version, layout) {
            self.heads.set(self.heads.get().saturating_sub(old.len()));
        }
    }

    /// Forgets the layout of `version` (its blocks were rewritten behind it).
    pub fn forget(&self, version: u64) {
        if let Some(old) = self.map.borrow_mut().remove(&version) {
            self.heads.set(self.heads.get().saturating_sub(old.len()));
        }
    }

    pub fn forget_all(&self) {
        self.map.borrow_mut().clear();
        self.heads.set(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pos(n: u8) -> Vec<u8> {
        vec![n]
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
