//! A count block's kept positions (`types::zlayout`): in order, each
//! position's first 8 bytes (its score's sort key) as a number beside it,
//! so a search compares numbers in one array and reads a position's bytes
//! only on a tie. A `Vec<Vec<u8>>` searched by `memcmp` chased a pointer
//! per step: ZADD -P16 over 1000 members spent 9% of its CPU in `memcmp`
//! under the blocks' binary searches, most of it loads that missed.

use std::cmp::Ordering;

/// A position's first 8 bytes, big-endian, zero-padded: comparing these,
/// then the bytes on a tie, orders positions as their bytes do.
#[inline]
pub fn lead(p: &[u8]) -> u64 {
    if let Some(b) = p.first_chunk::<8>() {
        // Every stored position (a score's 8 bytes, then the member).
        return u64::from_be_bytes(*b);
    }
    let mut b = [0u8; 8];
    b[..p.len()].copy_from_slice(p);
    u64::from_be_bytes(b)
}

/// `p` (with lead `k`) against `q` (with lead `kq`).
#[inline]
pub fn cmp_led(kq: u64, q: &[u8], k: u64, p: &[u8]) -> Ordering {
    kq.cmp(&k).then_with(|| q.cmp(p))
}

/// Positions in order, each once.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Positions {
    leads: Vec<u64>,
    all: Vec<Vec<u8>>,
}

impl Positions {
    /// Positions already sorted and distinct.
    pub fn from_sorted(all: Vec<Vec<u8>>) -> Positions {
        debug_assert!(all.windows(2).all(|w| w[0] < w[1]));
        Positions {
            leads: all.iter().map(|p| lead(p)).collect(),
            all,
        }
    }

    pub fn len(&self) -> usize {
        self.all.len()
    }

    pub fn is_empty(&self) -> bool {
        self.all.is_empty()
    }

    pub fn get(&self, i: usize) -> Option<&[u8]> {
        self.all.get(i).map(Vec::as_slice)
    }

    /// Positions `a..b` (clamped), in order.
    pub fn range(&self, a: usize, b: usize) -> impl DoubleEndedIterator<Item = &[u8]> {
        let b = b.min(self.all.len());
        self.all[a.min(b)..b].iter().map(Vec::as_slice)
    }

    /// A copy of positions `a..b` (clamped).
    pub fn slice(&self, a: usize, b: usize) -> Positions {
        let b = b.min(self.all.len());
        let a = a.min(b);
        Positions {
            leads: self.leads[a..b].to_vec(),
            all: self.all[a..b].to_vec(),
        }
    }

    /// Where `p` is (Ok) or would go (Err): the first position whose lead
    /// is not below `p`'s (std's branchless search: a search that branched
    /// on each compare mispredicted about half of them, 3.9% of ZADD -P16
    /// over 1000 members), then those with `p`'s lead by their bytes.
    pub fn search(&self, p: &[u8]) -> Result<usize, usize> {
        let k = lead(p);
        let mut i = self.leads.partition_point(|&x| x < k);
        while self.leads.get(i) == Some(&k) {
            match self.all[i].as_slice().cmp(p) {
                Ordering::Less => i += 1,
                Ordering::Equal => return Ok(i),
                Ordering::Greater => return Err(i),
            }
        }
        Err(i)
    }

    /// How many positions sort before `p`.
    pub fn below(&self, p: &[u8]) -> usize {
        match self.search(p) {
            Ok(i) | Err(i) => i,
        }
    }

    /// Adds `p` unless there.
    pub fn add(&mut self, p: &[u8]) {
        self.add_in(p, None);
    }

    /// [`Positions::add`], copying `p` into `buf` when given (one
    /// [`Positions::remove`] handed back) rather than a new allocation.
    pub fn add_in(&mut self, p: &[u8], buf: Option<Vec<u8>>) {
        if let Err(i) = self.search(p) {
            let mut v = buf.unwrap_or_default();
            v.clear();
            v.extend_from_slice(p);
            self.leads.insert(i, lead(p));
            self.all.insert(i, v);
        }
    }

    /// Removes `p` if there, handing its buffer back.
    pub fn remove(&mut self, p: &[u8]) -> Option<Vec<u8>> {
        let i = self.search(p).ok()?;
        self.leads.remove(i);
        Some(self.all.remove(i))
    }

    /// Appends `other`, whose positions all sort after these.
    pub fn extend(&mut self, other: Positions) {
        debug_assert!(match (self.all.last(), other.all.first()) {
            (Some(a), Some(b)) => a < b,
            _ => true,
        });
        self.leads.extend(other.leads);
        self.all.extend(other.all);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Leads then bytes order positions as their bytes do, short ones and
    /// ties included.
    #[test]
    fn orders_as_bytes() {
        let ps: Vec<Vec<u8>> = vec![
            vec![],
            vec![0],
            vec![0, 0],
            vec![1],
            vec![1, 2, 3, 4, 5, 6, 7, 8],
            vec![1, 2, 3, 4, 5, 6, 7, 8, 0],
            vec![1, 2, 3, 4, 5, 6, 7, 8, 9],
            vec![1, 2, 3, 4, 5, 6, 7, 9],
            vec![255; 3],
            vec![255; 9],
        ];
        for a in &ps {
            for b in &ps {
                assert_eq!(cmp_led(lead(a), a, lead(b), b), a.cmp(b), "{a:?} {b:?}");
            }
        }
        let set = Positions::from_sorted(ps.clone());
        for (i, p) in ps.iter().enumerate() {
            assert_eq!(set.search(p), Ok(i));
            assert_eq!(set.below(p), i);
        }
        assert_eq!(set.search(&[1, 2, 3, 4, 5, 6, 7, 8, 5]), Err(6));
        assert_eq!(set.below(&[2]), 8);
    }

    /// Searches agree with a search of the bytes, over runs of equal
    /// leads (equal scores) and short positions.
    #[test]
    fn search_agrees_with_the_bytes() {
        let mut all: Vec<Vec<u8>> = Vec::new();
        for score in [0u64, 1, 1 << 40, u64::MAX] {
            for m in 0..20u8 {
                let mut p = score.to_be_bytes().to_vec();
                p.extend(std::iter::repeat_n(m, (m % 4) as usize));
                all.push(p);
            }
        }
        all.extend([vec![], vec![0], vec![0, 0, 0]]);
        all.sort();
        all.dedup();
        let set = Positions::from_sorted(all.clone());
        let mut probes = all.clone();
        for p in &all {
            let mut q = p.clone();
            q.push(0);
            probes.push(q);
            if let Some(l) = p.last() {
                let mut q = p.clone();
                *q.last_mut().unwrap() = l.wrapping_add(1);
                probes.push(q);
            }
        }
        for p in &probes {
            assert_eq!(set.search(p), all.binary_search(p), "{p:?}");
        }
    }

    #[test]
    fn adds_removes_slices_and_extends() {
        let mut s = Positions::default();
        for p in [b"m".as_slice(), b"c", b"x", b"c", b"a"] {
            s.add(p);
        }
        assert_eq!(s.range(0, 9).collect::<Vec<_>>(), vec![&b"a"[..], b"c", b"m", b"x"]);
        assert_eq!(s.remove(b"c"), Some(b"c".to_vec()), "the removed position's buffer comes back");
        assert_eq!(s.remove(b"zz"), None);
        assert_eq!(s.len(), 3);
        assert_eq!(s.get(1), Some(&b"m"[..]));
        let tail = s.slice(1, 3);
        let mut head = s.slice(0, 1);
        assert_eq!(head.range(0, 1).next(), Some(&b"a"[..]));
        head.extend(tail);
        assert_eq!(head, s);
        assert_eq!(s.range(2, 1).count(), 0, "an empty range when reversed");
        assert!(s.slice(5, 9).is_empty());
    }

    /// A put into a deleted position's buffer reads as a put of its own:
    /// the buffer's old bytes are gone, the order kept.
    #[test]
    fn a_put_reuses_a_removed_buffer() {
        let mut s = Positions::default();
        for p in [b"b".as_slice(), b"d", b"f"] {
            s.add(p);
        }
        let buf = s.remove(b"f");
        assert!(buf.is_some());
        s.add_in(b"a-longer-position", buf);
        s.add_in(b"e", None);
        s.add_in(b"d", Some(b"junk".to_vec()));
        assert_eq!(s.range(0, 9).collect::<Vec<_>>(), vec![&b"a-longer-position"[..], b"b", b"d", b"e"]);
        for (i, p) in s.range(0, 9).enumerate() {
            assert_eq!(s.search(p), Ok(i));
        }
    }
}
