//! A list's element records, packed (docs/encoding.md, "Lists"): a list
//! whose meta says `shift` S > 0 keeps positions `c * 2^S .. (c + 1) * 2^S`
//! in one record, sub key `c` (8 bytes, big-endian), its value the
//! elements it holds in order, each as `len(4, LE) bytes`. A list written
//! before packing (S = 0) keeps one element a record, the value the element
//! itself. Records exist exactly for the chunks that hold an element, and
//! the elements a chunk holds are contiguous (the list has no holes), so
//! the meta's `head` and `size` say which positions each record holds.
//!
//! An element a record was one map insert in the write tier, one memtable
//! insert, flush and compaction step each: LPUSH -P16 spent half of its
//! shard in them. A push now rewrites the end chunk, a record the tier
//! already holds.

use crate::error::{CmdResult, CORRUPT};
use crate::storage::meta::Coll;

/// Positions a new list keeps in one record, as a power of two.
pub const SHIFT: u8 = 3;

/// The most positions a record may hold (as a power of two) in a meta
/// record this build reads.
pub const MAX_SHIFT: u8 = 8;

/// The elements of record value `v` of a list packed by `shift`, in order;
/// `bad` is set when the value does not decode.
pub struct Elems<'a> {
    rest: Option<&'a [u8]>,
    raw: bool,
    pub bad: bool,
}

/// [`Elems`] of `v`.
pub fn elems(shift: u8, v: &[u8]) -> Elems<'_> {
    Elems {
        rest: Some(v),
        raw: shift == 0,
        bad: false,
    }
}

impl<'a> Iterator for Elems<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let rest = self.rest?;
        if self.raw {
            self.rest = None;
            return Some(rest);
        }
        if rest.is_empty() {
            self.rest = None;
            return None;
        }
        let Some((e, after)) = split_frame(rest) else {
            self.bad = true;
            self.rest = None;
            return None;
        };
        self.rest = Some(after);
        Some(e)
    }
}

/// The first framed element of `b` and what follows it.
fn split_frame(b: &[u8]) -> Option<(&[u8], &[u8])> {
    let n = u32::from_le_bytes(b.get(..4)?.try_into().ok()?) as usize;
    let e = b.get(4..4 + n)?;
    Some((e, &b[4 + n..]))
}

/// Bytes a loaded chunk has room for beyond its record: a push of a
/// redis-benchmark-sized element (100 bytes and its frame) reallocates
/// nothing.
const HEADROOM: usize = 128;

fn frame_into(out: &mut Vec<u8>, v: &[u8]) {
    out.extend_from_slice(&(v.len() as u32).to_le_bytes());
    out.extend_from_slice(v);
}

/// The chunks a command read to change, or changed, by number, in order:
/// a push or a pop changes one, so they are kept inline, sorted (a
/// `BTreeMap` allocated a node for every LPUSH).
#[derive(Default)]
pub struct Chunks(smallvec::SmallVec<[(u64, Chunk); 2]>);

impl Chunks {
    fn at(&self, c: u64) -> Result<usize, usize> {
        self.0.binary_search_by_key(&c, |(k, _)| *k)
    }

    pub fn contains_key(&self, c: &u64) -> bool {
        self.at(*c).is_ok()
    }

    pub fn get(&self, c: &u64) -> Option<&Chunk> {
        self.at(*c).ok().map(|i| &self.0[i].1)
    }

    pub fn get_mut(&mut self, c: &u64) -> Option<&mut Chunk> {
        self.at(*c).ok().map(|i| &mut self.0[i].1)
    }

    /// Sets chunk `c` (replacing what it held).
    pub fn insert(&mut self, c: u64, ch: Chunk) {
        match self.at(c) {
            Ok(i) => self.0[i].1 = ch,
            Err(i) => self.0.insert(i, (c, ch)),
        }
    }

    /// The chunks numbered in `range`, in order.
    pub fn range_mut(&mut self, range: std::ops::Range<u64>) -> impl Iterator<Item = &mut Chunk> {
        let from = self.at(range.start).unwrap_or_else(|i| i);
        self.0[from..].iter_mut().take_while(move |(k, _)| *k < range.end).map(|(_, ch)| ch)
    }

    /// Every chunk with its number, in order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &Chunk)> {
        self.0.iter().map(|(k, ch)| (*k, ch))
    }
}

/// A chunk a command reads or changes: the elements it holds (framed, in
/// order, whatever the list's shift), from position `first`.
#[derive(Debug, Clone, Default)]
pub struct Chunk {
    pub first: u64,
    pub count: u64,
    data: Vec<u8>,
    /// Its record is in storage (a put replaces it; an emptied one is
    /// deleted). False: a put makes it (`put_new`: nothing below holds it).
    pub stored: bool,
}

impl Chunk {
    /// An empty chunk whose record does not exist.
    pub fn empty() -> Chunk {
        Chunk::default()
    }

    /// The chunk record value `v` of a list packed by `shift`, its first
    /// element at `first`; CORRUPT unless it holds exactly `count`.
    pub fn load(shift: u8, v: &[u8], first: u64, count: u64) -> CmdResult<Chunk> {
        // Room for a push at either end without a second allocation.
        let mut data = Vec::with_capacity(4 + v.len() + HEADROOM);
        if shift == 0 {
            frame_into(&mut data, v);
        } else {
            data.extend_from_slice(v);
        }
        let mut it = elems(shift, v);
        let n = it.by_ref().count() as u64;
        if it.bad || n != count {
            return Err(CORRUPT);
        }
        Ok(Chunk {
            first,
            count,
            data,
            stored: true,
        })
    }

    /// Its elements in order.
    pub fn iter(&self) -> Elems<'_> {
        elems(1, &self.data)
    }

    /// The element at position `p`, if it holds it.
    pub fn get(&self, p: u64) -> Option<&[u8]> {
        let k = p.checked_sub(self.first).filter(|&k| k < self.count)?;
        self.iter().nth(k as usize)
    }

    /// Its record value for a list packed by `shift`.
    pub fn value(&self, shift: u8) -> &[u8] {
        if shift == 0 {
            return self.iter().next().unwrap_or_default();
        }
        &self.data
    }

    /// The byte offset of its `k`th element's frame (`k` up to `count`).
    fn offset(&self, k: u64) -> usize {
        let mut at = 0;
        for _ in 0..k {
            match split_frame(&self.data[at..]) {
                Some((e, _)) => at += 4 + e.len(),
                None => break,
            }
        }
        at
    }

    /// Puts `v` at position `p`: replacing the element there, or next to
    /// either end (the first of an empty chunk anywhere). CORRUPT past that.
    pub fn put(&mut self, p: u64, v: &[u8]) -> CmdResult<()> {
        if self.count == 0 {
            self.first = p;
            self.count = 1;
            self.data.clear();
            frame_into(&mut self.data, v);
            return Ok(());
        }
        if Some(p) == self.first.checked_sub(1) {
            // In place: the bytes move up by the new frame (no new
            // allocation when the load left room, [`HEADROOM`]).
            let (n, len) = (4 + v.len(), self.data.len());
            self.data.resize(len + n, 0);
            self.data.copy_within(..len, n);
            self.data[..4].copy_from_slice(&(v.len() as u32).to_le_bytes());
            self.data[4..n].copy_from_slice(v);
            self.first = p;
            self.count += 1;
            return Ok(());
        }
        if p == self.first + self.count {
            frame_into(&mut self.data, v);
            self.count += 1;
            return Ok(());
        }
        if p < self.first || p > self.first + self.count {
            return Err(CORRUPT);
        }
        let k = p - self.first;
        let (a, b) = (self.offset(k), self.offset(k + 1));
        let mut f = Vec::with_capacity(4 + v.len());
        frame_into(&mut f, v);
        self.data.splice(a..b, f);
        Ok(())
    }

    /// Takes the element at position `p`, its first or its last: CORRUPT
    /// for any other (the list keeps no holes).
    pub fn take(&mut self, p: u64) -> CmdResult<Vec<u8>> {
        if self.count == 0 || (p != self.first && p != self.first + self.count - 1) {
            return Err(CORRUPT);
        }
        let k = p - self.first;
        let (a, b) = (self.offset(k), self.offset(k + 1));
        let v = self.data.get(a + 4..b).ok_or(CORRUPT)?.to_vec();
        self.data.drain(a..b);
        self.count -= 1;
        if k == 0 {
            self.first += 1;
        }
        Ok(v)
    }

    /// Drops the elements at positions `[lo, hi)` it holds, which reach
    /// one of its ends (a cut at one end of the list).
    pub fn cut(&mut self, lo: u64, hi: u64) -> CmdResult<()> {
        let end = self.first + self.count;
        let (lo, hi) = (lo.max(self.first), hi.min(end));
        if lo >= hi {
            return Ok(());
        }
        if lo != self.first && hi != end {
            return Err(CORRUPT);
        }
        let (a, b) = (self.offset(lo - self.first), self.offset(hi - self.first));
        self.data.drain(a..b);
        self.count -= hi - lo;
        if lo == self.first {
            self.first = hi;
        }
        Ok(())
    }
}

/// The elements of a packed list's records (`members`: sub key, value, in
/// key order) whose meta says `head`, `size` and `shift`; None unless the
/// records hold exactly the list's positions (DUMP, RESTORE's check).
pub fn elements_of(head: u64, size: u64, shift: u8, members: &[&(Vec<u8>, Vec<u8>)]) -> Option<Vec<Vec<u8>>> {
    if shift > MAX_SHIFT {
        return None;
    }
    let end = head.checked_add(size)?;
    let mut out = Vec::with_capacity(size.min(1 << 20) as usize);
    let mut next = head;
    for (sub, v) in members {
        let c = u64::from_be_bytes(<[u8; 8]>::try_from(&sub[..]).ok()?);
        let lo = (c << shift).max(head);
        let hi = c.checked_add(1).map_or(u64::MAX, |n| n << shift).min(end);
        if c != next >> shift || lo != next || lo >= hi || c << shift >> shift != c {
            return None;
        }
        let mut it = elems(shift, v);
        let before = out.len();
        out.extend(it.by_ref().map(<[u8]>::to_vec));
        if it.bad || (out.len() - before) as u64 != hi - lo {
            return None;
        }
        next = hi;
    }
    (next == end).then_some(out)
}

/// Checks DUMP/RESTORE members of a list (in key order): records
/// holding exactly its positions `head .. head + size`.
pub fn members_fit(c: &Coll, members: &[(Vec<u8>, Vec<u8>)]) -> bool {
    elements(c, &members.iter().collect::<Vec<_>>()).is_some()
}

/// The elements of the list whose meta body is `c`, from its records (sub
/// key, value) in key order; None unless they hold exactly its positions.
pub fn elements(c: &Coll, members: &[&(Vec<u8>, Vec<u8>)]) -> Option<Vec<Vec<u8>>> {
    elements_of(c.list_head?, c.size, c.chunk_shift, members)
}

/// A new list of `items` packed by `shift` from position `head`: its
/// records (sub key, value), in key order.
pub fn records_of(head: u64, shift: u8, items: Vec<Vec<u8>>) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    for (i, it) in items.into_iter().enumerate() {
        let c = (head + i as u64) >> shift;
        let sub = c.to_be_bytes().to_vec();
        if shift == 0 {
            out.push((sub, it));
            continue;
        }
        match out.last_mut() {
            Some((s, v)) if *s == sub => frame_into(v, &it),
            _ => {
                let mut v = Vec::with_capacity(4 + it.len());
                frame_into(&mut v, &it);
                out.push((sub, v));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_grows_and_shrinks_at_both_ends() {
        let mut c = Chunk::empty();
        c.put(10, b"b").unwrap();
        c.put(9, b"a").unwrap();
        c.put(11, b"").unwrap();
        c.put(12, b"dd").unwrap();
        assert_eq!(c.iter().collect::<Vec<_>>(), [&b"a"[..], b"b", b"", b"dd"]);
        assert_eq!((c.first, c.count), (9, 4));
        assert_eq!(c.put(14, b"x"), Err(CORRUPT), "a hole");
        c.put(10, b"BB").unwrap();
        assert_eq!(c.get(10), Some(&b"BB"[..]));
        assert_eq!(c.get(13), None);
        assert_eq!(c.take(10), Err(CORRUPT), "not an end");
        assert_eq!(c.take(12).unwrap(), b"dd");
        assert_eq!(c.take(9).unwrap(), b"a");
        assert_eq!((c.first, c.count), (10, 2));
        let packed = Chunk::load(3, c.value(3), 10, 2).unwrap();
        assert_eq!(packed.iter().collect::<Vec<_>>(), [&b"BB"[..], b""]);
        assert!(Chunk::load(3, c.value(3), 10, 3).is_err(), "a wrong count");
        assert!(Chunk::load(3, &c.value(3)[..5], 10, 2).is_err(), "cut short");
        c.cut(0, 11).unwrap();
        assert_eq!((c.first, c.count, c.iter().collect::<Vec<_>>()), (11, 1, vec![&b""[..]]));
        // One element a record, raw: the value is the element.
        let raw = Chunk::load(0, b"elem", 7, 1).unwrap();
        assert_eq!(raw.value(0), b"elem");
        assert_eq!(raw.get(7), Some(&b"elem"[..]));
    }

    #[test]
    fn records_and_elements_agree() {
        let items: Vec<Vec<u8>> = (0..21).map(|i| format!("e{i}").into_bytes()).collect();
        for shift in [0u8, 1, 3, 4] {
            let head = (1u64 << 63) - 5;
            let recs = records_of(head, shift, items.clone());
            let refs: Vec<_> = recs.iter().collect();
            assert_eq!(elements_of(head, 21, shift, &refs).as_deref(), Some(&items[..]), "shift {shift}");
            assert_eq!(elements_of(head, 22, shift, &refs), None, "one missing");
            assert_eq!(elements_of(head + 1, 21, shift, &refs), None, "shifted");
            assert_eq!(elements_of(head, 21, shift, &refs[1..]), None, "a record missing");
        }
    }

    /// A loaded chunk takes pushes at its front in place, past its
    /// headroom too, and keeps every element.
    #[test]
    fn pushes_at_the_front_of_a_loaded_chunk() {
        let mut c = Chunk::empty();
        c.put(100, b"z").unwrap();
        let mut c = Chunk::load(3, c.value(3), 100, 1).unwrap();
        let big = vec![7u8; 300];
        for p in (90..100).rev() {
            let v = if p == 95 { big.clone() } else { format!("e{p}").into_bytes() };
            c.put(p, &v).unwrap();
        }
        assert_eq!((c.first, c.count), (90, 11));
        let got: Vec<Vec<u8>> = c.iter().map(<[u8]>::to_vec).collect();
        let mut want: Vec<Vec<u8>> = (90..100)
            .map(|p| if p == 95 { big.clone() } else { format!("e{p}").into_bytes() })
            .collect();
        want.push(b"z".to_vec());
        assert_eq!(got, want);
    }

    /// The command's chunks by number: sorted whatever the order they
    /// came in, replaced in place, ranges by number.
    #[test]
    fn chunks_by_number() {
        let mut m = Chunks::default();
        let ch = |first: u64| Chunk { first, ..Chunk::default() };
        for c in [5u64, 1, 9, 3, 7] {
            m.insert(c, ch(c));
        }
        assert!(m.contains_key(&3) && !m.contains_key(&4));
        m.insert(3, ch(33));
        assert_eq!(m.get(&3).map(|c| c.first), Some(33));
        assert_eq!(m.iter().map(|(k, _)| k).collect::<Vec<_>>(), [1, 3, 5, 7, 9]);
        for c in m.range_mut(4..9) {
            c.count = 1;
        }
        assert_eq!(m.iter().filter(|(_, c)| c.count == 1).map(|(k, _)| k).collect::<Vec<_>>(), [5, 7]);
        assert_eq!(m.range_mut(10..20).count(), 0);
        assert_eq!(m.range_mut(0..2).count(), 1);
        if let Some(c) = m.get_mut(&9) {
            c.first = 99;
        }
        assert_eq!(m.get(&9).map(|c| c.first), Some(99));
        assert!(m.get(&2).is_none());
    }
}
