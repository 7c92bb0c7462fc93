//! Lists on the versioned encoding (docs/encoding.md, "Lists").
//!
//! The meta record holds the version, the length and `head`, the index of
//! the first element; element `i` (0-based from the left) is the sub record
//! `... version index(8)` with `index = head + i`. Indexes are big-endian,
//! so the elements sort in list order and a range is one scan. A new list
//! starts at [`MID`], so either end can grow 2^63 times.
//!
//! Pushes and pops at either end, LINDEX and LSET touch one element record
//! and the meta record. The list stays dense (no holes): LINSERT and LREM
//! shift the shorter side of the change, LTRIM deletes what it cuts (one
//! range delete when that is long). Deleting or expiring a list of any
//! length is one record: its elements become garbage by version.

use super::notify::class;
use crate::config::Encodings;
use crate::error::{CmdResult, CORRUPT, WRONGTYPE};
use crate::storage::intent::IntentRef;
use crate::storage::keys;
use crate::storage::meta::{Coll, KeyType, Meta};
use crate::storage::Batch;
use crate::types::keyspace::{Keyspace, Prior};
use crate::types::lchunk::{self, Chunk};

/// The index of a new list's first element.
pub const MID: u64 = 1 << 63;

/// More element records than this cut by one LTRIM go in one range delete.
const RANGE_DELETE_OVER: u64 = 64;

/// Elements a pop reads ahead for the pops after it (`List::get_at_end`).
const AHEAD: u64 = 64;

/// Elements read per step when a list is walked from its right end.
const BACK_STEP: u64 = 128;

/// A list end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    Left,
    Right,
}

impl End {
    pub fn other(self) -> End {
        match self {
            End::Left => End::Right,
            End::Right => End::Left,
        }
    }

    /// The keyspace event of a pop at this end.
    pub fn pop_event(self) -> &'static str {
        match self {
            End::Left => "lpop",
            End::Right => "rpop",
        }
    }

    /// The keyspace event of a push at this end.
    pub fn push_event(self) -> &'static str {
        match self {
            End::Left => "lpush",
            End::Right => "rpush",
        }
    }
}

/// [`List::walk`]'s visit of one record's elements `it` (positions
/// `first .. first + count`) from position `next` up to `hi`: whether the
/// walk goes on. CORRUPT when the record holds other than `count`.
fn visit(
    first: u64,
    count: u64,
    mut it: lchunk::Elems<'_>,
    (head, hi): (u64, u64),
    next: &mut u64,
    f: &mut impl FnMut(u64, &[u8]) -> bool,
) -> CmdResult<bool> {
    if first > *next || first + count <= *next {
        return Err(CORRUPT);
    }
    let skip = *next - first;
    let mut k = 0u64;
    for v in it.by_ref() {
        if k >= skip {
            let p = first + k;
            if k >= count {
                return Err(CORRUPT);
            }
            if p > hi || !f(p - head, v) {
                return Ok(false);
            }
            *next = p + 1;
        }
        k += 1;
    }
    if it.bad || k != count {
        return Err(CORRUPT);
    }
    Ok(*next <= hi)
}

/// A new list's meta body: packed by [`lchunk::SHIFT`].
fn new_coll(ks: &Keyspace) -> Coll {
    let mut c = Coll::new_list(ks.next_version(crate::clock::now_us()), MID);
    c.chunk_shift = lchunk::SHIFT;
    c
}

/// One list, opened for reading and staging changes that [`List::commit`]
/// writes in one batch with the new meta record.
pub struct List<'k> {
    ks: &'k Keyspace,
    db: u8,
    key: &'k [u8],
    pub expire_ms: u64,
    prior: Prior,
    orig: Coll,
    c: Coll,
    head: u64,
    b: Batch,
    dirty: bool,
    /// Positions a record holds, as a power of two (`lchunk`; 0: one
    /// element a record, a list from before packing).
    shift: u8,
    /// The chunks this command read to change, or changed, by number.
    chunks: lchunk::Chunks,
    /// Chunk numbers `[lo, hi)` this command deleted whole in one range
    /// delete: empty, with no record, whatever storage still says.
    cut_spans: Vec<(u64, u64)>,
}

impl<'k> List<'k> {
    /// Opens the list at `key`: WRONGTYPE for another type; a missing key
    /// gives a new empty list when `create`, else None.
    pub fn open(ks: &'k Keyspace, db: u8, key: &'k [u8], now: u64, create: bool) -> CmdResult<Option<List<'k>>> {
        let found = ks.read(db, key, now, |m| match m {
            None => Ok(None),
            Some(m) if m.ty == KeyType::List => m.coll().map(|c| Some((m.expire_ms, c))).ok_or(CORRUPT),
            Some(_) => Err(WRONGTYPE),
        })??;
        let (expire_ms, prior, c) = match found {
            Some((e, c)) => (e, Some(e), c),
            None if create => (0, None, new_coll(ks)),
            None => return Ok(None),
        };
        let head = c.list_head.ok_or(CORRUPT)?;
        if c.chunk_shift > lchunk::MAX_SHIFT {
            return Err(CORRUPT);
        }
        Ok(Some(List {
            ks,
            db,
            key,
            expire_ms,
            prior,
            orig: c.clone(),
            shift: c.chunk_shift,
            c,
            head,
            b: ks.store.batch(),
            dirty: false,
            chunks: lchunk::Chunks::default(),
            cut_spans: Vec::new(),
        }))
    }

    /// A new empty list at `key`, whatever is stored there now: the caller
    /// stages the old key's deletion in the batch it gives with
    /// [`List::with_batch`] (SORT ... STORE replaces any key).
    pub fn fresh(ks: &'k Keyspace, db: u8, key: &'k [u8]) -> List<'k> {
        let c = new_coll(ks);
        List {
            ks,
            db,
            key,
            expire_ms: 0,
            prior: None,
            orig: c.clone(),
            shift: c.chunk_shift,
            c,
            head: MID,
            b: ks.store.batch(),
            dirty: false,
            chunks: lchunk::Chunks::default(),
            cut_spans: Vec::new(),
        }
    }

    /// Starts this list's batch from `b` (writes that must land with this
    /// list's: the other list of a same-shard LMOVE). Call before staging.
    pub fn with_batch(mut self, b: Batch) -> Self {
        self.b = b;
        self
    }

    pub fn len(&self) -> u64 {
        self.c.size
    }

    /// Adds intent part `r` to the batch (see `storage::intent`).
    pub fn stage_intent(&mut self, r: IntentRef, body: &[u8]) {
        self.ks.store.stage_intent(&mut self.b, r, body);
    }

    /// Adds the delete of intent part `r` to the batch: this write applies it.
    pub fn intent_done(&mut self, r: IntentRef) {
        self.ks.store.stage_intent_done(&mut self.b, r);
        self.dirty = true;
    }

    pub fn is_empty(&self) -> bool {
        self.c.size == 0
    }

    /// True when the key existed before this command.
    pub fn existed(&self) -> bool {
        self.prior.is_some()
    }

    /// The sub key of chunk `c`.
    fn record(&self, c: u64) -> keys::SubKeyBuf {
        keys::sub_key_buf(self.db, self.key, self.c.version, &c.to_be_bytes())
    }

    /// The positions `[lo, hi)` chunk `c` held when the list was opened
    /// (empty: it had no record).
    fn held_at_open(&self, c: u64) -> (u64, u64) {
        let lo = (c << self.shift).max(self.orig.list_head.unwrap_or(MID));
        let end = self.orig.list_head.unwrap_or(MID).saturating_add(self.orig.size);
        let hi = c.saturating_add(1).checked_shl(self.shift as u32).unwrap_or(u64::MAX).min(end);
        (lo, hi.max(lo))
    }

    /// Whether chunk `c`'s record is in storage as the list was opened
    /// (it held positions then, and this command did not range-delete it).
    fn stored(&self, c: u64) -> bool {
        let (lo, hi) = self.held_at_open(c);
        lo < hi && !self.was_cut(c)
    }

    fn was_cut(&self, c: u64) -> bool {
        self.cut_spans.iter().any(|&(lo, hi)| (lo..hi).contains(&c))
    }

    /// Chunk `c` as storage holds it (not what this command changed).
    fn read_chunk(&self, c: u64) -> CmdResult<Chunk> {
        if !self.stored(c) {
            return Ok(Chunk::empty());
        }
        let (lo, hi) = self.held_at_open(c);
        let shift = self.shift;
        let v = self
            .ks
            .store
            .get_with(&self.record(c), |v| v.map(|v| Chunk::load(shift, v, lo, hi - lo)))?;
        v.ok_or(CORRUPT)?
    }

    /// Chunk `c` for a change, read once per command. A pop at `end` of a
    /// list of one element a record reads ahead for the pops after it
    /// (`storage::ahead`: a run of pops costs one scan per [`AHEAD`]).
    fn chunk_mut(&mut self, c: u64, end: Option<End>) -> CmdResult<&mut Chunk> {
        if !self.chunks.contains_key(&c) {
            let ch = match end {
                Some(end) if self.shift == 0 && self.stored(c) => {
                    let (lo, hi) = match end {
                        End::Left => (c, c.saturating_add(AHEAD)),
                        End::Right => (c.saturating_sub(AHEAD - 1), c.saturating_add(1)),
                    };
                    let v = self.ks.store.get_ahead(&self.record(c), &self.record(lo), &self.record(hi))?;
                    Chunk::load(0, &v.ok_or(CORRUPT)?, c, 1)?
                }
                _ => self.read_chunk(c)?,
            };
            self.chunks.insert(c, ch);
        }
        self.dirty = true;
        self.chunks.get_mut(&c).ok_or(CORRUPT)
    }

    /// Puts `v` at position `p` (the list's or next to one of its ends).
    fn put_at(&mut self, p: u64, v: &[u8]) -> CmdResult<()> {
        self.chunk_mut(p >> self.shift, None)?.put(p, v)
    }

    /// Takes the element at position `p`, at one end of the list.
    fn take_at(&mut self, p: u64, end: End) -> CmdResult<Vec<u8>> {
        self.chunk_mut(p >> self.shift, Some(end))?.take(p)
    }

    /// Element `i` (0-based from the left), None past the end.
    pub fn get(&self, i: u64) -> CmdResult<Option<Vec<u8>>> {
        if i >= self.c.size {
            return Ok(None);
        }
        let p = self.head.wrapping_add(i);
        let c = p >> self.shift;
        if let Some(ch) = self.chunks.get(&c) {
            return ch.get(p).map(|v| Some(v.to_vec())).ok_or(CORRUPT);
        }
        // Straight from the stored record: only the element is copied.
        let (lo, hi) = self.held_at_open(c);
        if p < lo || p >= hi || self.was_cut(c) {
            return Err(CORRUPT);
        }
        let shift = self.shift;
        let v = self.ks.store.get_with(&self.record(c), |v| {
            v.and_then(|v| lchunk::elems(shift, v).nth((p - lo) as usize).map(<[u8]>::to_vec))
        })?;
        v.ok_or(CORRUPT).map(Some)
    }

    /// Elements `from..=to` (clamped to the list), in order.
    pub fn range(&self, from: u64, to: u64) -> CmdResult<Vec<Vec<u8>>> {
        let mut out = Vec::new();
        if self.c.size == 0 || from >= self.c.size {
            return Ok(out);
        }
        let to = to.min(self.c.size - 1);
        if from > to {
            return Ok(out);
        }
        out.reserve((to - from + 1).min(1 << 16) as usize);
        self.walk(from, to, |_, v| {
            out.push(v.to_vec());
            true
        })?;
        Ok(out)
    }

    /// Visits elements `from..=to` in order with their position until `f`
    /// returns false. A hole in the records is corruption.
    pub fn walk(&self, from: u64, to: u64, mut f: impl FnMut(u64, &[u8]) -> bool) -> CmdResult<()> {
        if self.c.size == 0 || from > to || from >= self.c.size {
            return Ok(());
        }
        let to = to.min(self.c.size - 1);
        let (lo, hi) = (self.head.wrapping_add(from), self.head.wrapping_add(to));
        let (c_lo, c_hi) = (lo >> self.shift, hi >> self.shift);
        let mut next = lo;
        let mut c = c_lo;
        while c <= c_hi {
            if let Some(ch) = self.chunks.get(&c) {
                if !visit(ch.first, ch.count, ch.iter(), (self.head, hi), &mut next, &mut f)? {
                    return Ok(());
                }
                c += 1;
                continue;
            }
            // A run of chunks this command left alone: one scan.
            let mut end = c;
            while end < c_hi && !self.chunks.contains_key(&(end + 1)) {
                end += 1;
            }
            if self.was_cut(c) {
                return Err(CORRUPT);
            }
            let (from_key, to_key) = (self.record(c), self.record(end + 1));
            let prefix = from_key.len() - 8;
            let (mut want, mut err, mut more) = (c, None, true);
            self.ks.store.scan(&from_key, &to_key, |k, v| {
                let at = k.get(prefix..).and_then(|s| <[u8; 8]>::try_from(s).ok()).map(u64::from_be_bytes);
                let (plo, phi) = self.held_at_open(want);
                if at != Some(want) {
                    err = Some(CORRUPT);
                    return false;
                }
                want += 1;
                match visit(plo, phi - plo, lchunk::elems(self.shift, v), (self.head, hi), &mut next, &mut f) {
                    Ok(m) => more = m,
                    Err(e) => err = Some(e),
                }
                more && err.is_none()
            })?;
            if let Some(e) = err {
                return Err(e);
            }
            if !more {
                return Ok(());
            }
            if want != end + 1 {
                return Err(CORRUPT);
            }
            c = end + 1;
        }
        if next <= hi {
            return Err(CORRUPT);
        }
        Ok(())
    }

    /// Visits elements from the right end leftwards, with their position,
    /// until `f` returns false (read in steps of [`BACK_STEP`]).
    pub fn walk_back(&self, mut f: impl FnMut(u64, &[u8]) -> bool) -> CmdResult<()> {
        let mut end = self.c.size;
        while end > 0 {
            let from = end.saturating_sub(BACK_STEP);
            let chunk = self.range(from, end - 1)?;
            if chunk.len() as u64 != end - from {
                return Err(CORRUPT);
            }
            for (j, v) in chunk.iter().enumerate().rev() {
                if !f(from + j as u64, v) {
                    return Ok(());
                }
            }
            end = from;
        }
        Ok(())
    }

    /// Pushes `v` at `end`.
    pub fn push(&mut self, end: End, v: &[u8]) -> CmdResult<()> {
        let p = match end {
            End::Left => self.head.wrapping_sub(1),
            End::Right => self.head.wrapping_add(self.c.size),
        };
        self.put_at(p, v)?;
        if end == End::Left {
            self.head = p;
        }
        self.c.size += 1;
        Ok(())
    }

    /// Pops the element at `end`; None when the list is empty.
    pub fn pop(&mut self, end: End) -> CmdResult<Option<Vec<u8>>> {
        let i = match end {
            _ if self.c.size == 0 => return Ok(None),
            End::Left => 0,
            End::Right => self.c.size - 1,
        };
        let v = self.take_at(self.head.wrapping_add(i), end)?;
        if end == End::Left {
            self.head = self.head.wrapping_add(1);
        }
        self.c.size -= 1;
        Ok(Some(v))
    }

    /// Pops up to `n` elements at `end`, in pop order.
    pub fn pop_many(&mut self, end: End, n: u64) -> CmdResult<Vec<Vec<u8>>> {
        let n = n.min(self.c.size);
        if n == 0 {
            return Ok(Vec::new());
        }
        let (from, to) = match end {
            End::Left => (0, n - 1),
            End::Right => (self.c.size - n, self.c.size - 1),
        };
        let mut got = self.range(from, to)?;
        if got.len() as u64 != n {
            return Err(CORRUPT);
        }
        self.cut(from, n)?;
        if end == End::Right {
            got.reverse();
        }
        Ok(got)
    }

    /// Deletes positions `from .. from + n` (at one end): the chunks at
    /// the cut's two edges lose their part, those between go without a
    /// read (one range delete past [`RANGE_DELETE_OVER`] of them).
    fn cut(&mut self, from: u64, n: u64) -> CmdResult<()> {
        if n == 0 {
            return Ok(());
        }
        let (lo, hi) = (self.head.wrapping_add(from), self.head.wrapping_add(from + n));
        let (c_lo, c_last) = (lo >> self.shift, (hi - 1) >> self.shift);
        self.chunk_mut(c_lo, None)?.cut(lo, hi)?;
        if c_last != c_lo {
            self.chunk_mut(c_last, None)?.cut(lo, hi)?;
        }
        let (inner_lo, inner_hi) = (c_lo + 1, c_last);
        if inner_hi > inner_lo && inner_hi - inner_lo > RANGE_DELETE_OVER {
            let (a, b) = (self.record(inner_lo), self.record(inner_hi));
            self.ks.store.delete_range(&mut self.b, &a, &b);
            self.cut_spans.push((inner_lo, inner_hi));
            for ch in self.chunks.range_mut(inner_lo..inner_hi) {
                *ch = Chunk::empty();
            }
        } else {
            for c in inner_lo..inner_hi {
                let stored = match self.chunks.get(&c) {
                    Some(ch) => ch.stored,
                    None => self.stored(c),
                };
                let mut gone = Chunk::empty();
                gone.stored = stored;
                self.chunks.insert(c, gone);
            }
        }
        self.dirty = true;
        if from == 0 {
            self.head = hi;
        }
        self.c.size -= n;
        Ok(())
    }

    /// LSET: replaces element `i`; false when it is out of range.
    pub fn set(&mut self, i: u64, v: &[u8]) -> CmdResult<bool> {
        if i >= self.c.size {
            return Ok(false);
        }
        self.put_at(self.head.wrapping_add(i), v)?;
        Ok(true)
    }

    /// LTRIM: keeps positions `from..=to` (both within the list, `from <=
    /// to`), or nothing when `keep` is None.
    pub fn trim(&mut self, keep: Option<(u64, u64)>) -> CmdResult<()> {
        let size = self.c.size;
        match keep {
            None => self.cut(0, size),
            Some((from, to)) => {
                self.cut(to + 1, size - to - 1)?;
                self.cut(0, from)
            }
        }
    }

    /// LINSERT: puts `v` at position `at` (0..=len), shifting the shorter
    /// side of the list by one.
    pub fn insert(&mut self, at: u64, v: &[u8]) -> CmdResult<()> {
        let size = self.c.size;
        let at = at.min(size);
        if at <= size - at {
            // Elements 0..at move one index left.
            let moved = if at > 0 { self.range(0, at - 1)? } else { Vec::new() };
            let head = self.head.wrapping_sub(1);
            for (j, m) in moved.iter().enumerate() {
                self.put_at(head.wrapping_add(j as u64), m)?;
            }
            self.head = head;
            self.put_at(head.wrapping_add(at), v)?;
        } else {
            // Elements at..size move one index right, the last first.
            let moved = self.range(at, size - 1)?;
            for (j, m) in moved.iter().enumerate().rev() {
                self.put_at(self.head.wrapping_add(at + 1 + j as u64), m)?;
            }
            self.put_at(self.head.wrapping_add(at), v)?;
        }
        self.c.size += 1;
        Ok(())
    }

    /// LREM: removes the elements at `gone` (ascending positions), closing
    /// the gaps from the cheaper side: the tail after the first removed
    /// element shifts left, or the head before the last one shifts right.
    pub fn remove(&mut self, gone: &[u64]) -> CmdResult<()> {
        let (Some(&first), Some(&last)) = (gone.first(), gone.last()) else {
            return Ok(());
        };
        let size = self.c.size;
        let n = gone.len() as u64;
        if size - first <= last + 1 {
            let seg = self.range(first, size - 1)?;
            let mut w = first;
            let mut g = gone.iter().peekable();
            for (j, v) in seg.iter().enumerate() {
                let pos = first + j as u64;
                if g.peek() == Some(&&pos) {
                    g.next();
                    continue;
                }
                self.put_at(self.head.wrapping_add(w), v)?;
                w += 1;
            }
            for at in ((size - n)..size).rev() {
                self.take_at(self.head.wrapping_add(at), End::Right)?;
            }
        } else {
            let seg = self.range(0, last)?;
            let mut w = last;
            let mut g = gone.iter().rev().peekable();
            for (j, v) in seg.iter().enumerate().rev() {
                let pos = j as u64;
                if g.peek() == Some(&&pos) {
                    g.next();
                    continue;
                }
                self.put_at(self.head.wrapping_add(w), v)?;
                w = w.wrapping_sub(1);
            }
            for at in 0..n {
                self.take_at(self.head.wrapping_add(at), End::Left)?;
            }
            self.head = self.head.wrapping_add(n);
        }
        self.c.size -= n;
        Ok(())
    }

    /// Writes everything staged; a list left empty is deleted. Returns
    /// whether the key exists afterwards.
    pub fn commit(self) -> CmdResult<bool> {
        let ks = self.ks;
        let (exists, b) = self.finish()?;
        ks.store.write(b)?;
        Ok(exists)
    }

    /// [`List::commit`], then the keyspace events: `events` (class l, in
    /// order), and `del` when the list went away (Redis's order).
    pub fn commit_with(self, events: &[&'static str]) -> CmdResult<bool> {
        let (ks, db, key, had) = (self.ks, self.db, self.key, self.existed());
        let exists = self.commit()?;
        for e in events {
            ks.notify(class::LIST, e, db, key);
        }
        if had && !exists {
            ks.notify(class::GENERIC, "del", db, key);
        }
        Ok(exists)
    }

    /// [`List::commit`] without the write: the batch, for the caller to
    /// extend and write, and whether the key exists afterwards.
    pub fn finish(mut self) -> CmdResult<(bool, Batch)> {
        if !self.dirty {
            return Ok((self.existed(), self.b));
        }
        self.c.list_head = Some(self.head);
        if self.c.size == 0 {
            if let Some(e) = self.prior {
                let old = self.orig.encode(KeyType::List, e);
                let m = Meta::decode(&old).ok_or(CORRUPT)?;
                self.ks.stage_delete(&mut self.b, self.db, self.key, &m);
            }
            return Ok((false, self.b));
        }
        let end = self.head.saturating_add(self.c.size);
        for (c, ch) in self.chunks.iter() {
            // What the chunk must hold now: the list's positions in it.
            let lo = (c << self.shift).max(self.head);
            let hi = c.saturating_add(1).checked_shl(self.shift as u32).unwrap_or(u64::MAX).min(end);
            let want = hi.saturating_sub(lo);
            if ch.count != want || (want > 0 && ch.first != lo) {
                return Err(CORRUPT);
            }
            let k = self.record(c);
            match (ch.count, ch.stored) {
                (0, true) => self.ks.store.delete(&mut self.b, &k),
                (0, false) => {}
                (_, true) => self.ks.store.put(&mut self.b, &k, ch.value(self.shift)),
                // Nothing holds a chunk outside the list (every record
                // that left it was deleted): a queue's element popped soon
                // after its push never reaches the families.
                (_, false) => self.ks.store.put_new(&mut self.b, &k, ch.value(self.shift)),
            }
        }
        if !self.existed() || self.c != self.orig {
            let raw = self.c.encode_buf(KeyType::List, self.expire_ms);
            self.ks.stage_put(&mut self.b, self.db, self.key, &raw, self.prior);
        }
        Ok((true, self.b))
    }

    /// OBJECT ENCODING: `listpack` while the list would fit one listpack
    /// under `list-max-listpack-size`, else `quicklist` (Redis 7.2's
    /// `quicklistNodeExceedsLimit`, told from what the list holds now).
    pub fn encoding(&self, enc: Encodings) -> CmdResult<&'static str> {
        let fill = enc.list_size;
        if fill >= 0 && self.c.size > fill as u64 {
            return Ok("quicklist");
        }
        let limit = if fill >= 0 {
            SIZE_SAFETY_LIMIT
        } else {
            4096u64 << (fill.unsigned_abs().clamp(1, 5) - 1)
        };
        // Every entry takes at least two bytes.
        if LISTPACK_OVERHEAD + 2 * self.c.size > limit {
            return Ok("quicklist");
        }
        let mut bytes = LISTPACK_OVERHEAD;
        self.walk(0, self.c.size.saturating_sub(1), |_, v| {
            bytes += super::rdbpack::entry_bytes(v);
            bytes <= limit
        })?;
        Ok(if bytes <= limit { "listpack" } else { "quicklist" })
    }
}

/// LMOVE with both lists on this shard, in one batch: pops at `from` of
/// `src` and pushes at `to` of `dst`. None when `src` is missing;
/// WRONGTYPE (nothing moved) when either key holds another type.
pub fn move_element(ks: &Keyspace, db: u8, src: &[u8], dst: &[u8], (from, to): (End, End), now: u64) -> CmdResult<Option<Vec<u8>>> {
    let Some(mut s) = List::open(ks, db, src, now, false)? else {
        return Ok(None);
    };
    if src == dst {
        let v = s.pop(from)?;
        if let Some(v) = &v {
            s.push(to, v)?;
        }
        // As Redis's LMOVE: the push's event, then the pop's.
        let events = [to.push_event(), from.pop_event()];
        s.commit_with(if v.is_some() { &events } else { &[] })?;
        return Ok(v);
    }
    // Redis checks the destination before it pops.
    List::open(ks, db, dst, now, false)?;
    let Some(v) = s.pop(from)? else { return Ok(None) };
    let (left, b) = s.finish()?;
    let mut d = List::open(ks, db, dst, now, true)?.ok_or(CORRUPT)?.with_batch(b);
    d.push(to, &v)?;
    d.commit()?;
    ks.notify(class::LIST, to.push_event(), db, dst);
    ks.notify(class::LIST, from.pop_event(), db, src);
    if !left {
        ks.notify(class::GENERIC, "del", db, src);
    }
    Ok(Some(v))
}

/// Pushes `v` at `end` of `key` in a batch that also deletes intent part
/// `done` when given (the push completes a cross-shard move). WRONGTYPE
/// (nothing written) when `key` holds another type.
pub fn push_one(ks: &Keyspace, db: u8, key: &[u8], end: End, v: &[u8], now: u64, done: Option<IntentRef>) -> CmdResult {
    let mut l = List::open(ks, db, key, now, true)?.ok_or(CORRUPT)?;
    if let Some(r) = done {
        l.intent_done(r);
    }
    l.push(end, v)?;
    l.commit_with(&[end.push_event()])?;
    Ok(())
}

/// Puts back at `end` of `key` an element a cross-shard move popped and
/// could not push (its destination stopped being a list), in the batch
/// that deletes intent part `done`. No event: to a client the move was
/// refused.
pub fn push_back(ks: &Keyspace, db: u8, key: &[u8], end: End, v: &[u8], now: u64, done: IntentRef) -> CmdResult {
    let mut l = List::open(ks, db, key, now, true)?.ok_or(CORRUPT)?;
    l.intent_done(done);
    l.push(end, v)?;
    l.commit()?;
    Ok(())
}

/// A listpack's header and end byte.
const LISTPACK_OVERHEAD: u64 = 7;

/// Redis's `SIZE_SAFETY_LIMIT`: a count-limited listpack never exceeds 8 KiB.
const SIZE_SAFETY_LIMIT: u64 = 8192;

/// Redis's index rules: a negative index counts from the right end. The
/// position, or None when it falls outside a list of `len` elements.
pub fn position(index: i64, len: u64) -> Option<u64> {
    let i = if index < 0 { len as i128 + index as i128 } else { index as i128 };
    (0..len as i128).contains(&i).then_some(i as u64)
}

/// LRANGE's and LTRIM's clamping of `start` and `stop` to a list of `len`
/// elements: the positions `from..=to`, or None for an empty range.
pub fn span(start: i64, stop: i64, len: u64) -> Option<(u64, u64)> {
    let len = len as i128;
    let from_end = |i: i64| if i < 0 { len + i as i128 } else { i as i128 };
    // A start before the list is its first element; a stop before it
    // leaves nothing (Redis clamps only the start).
    let (from, to) = (from_end(start).max(0), from_end(stop));
    (from <= to && from < len).then_some((from as u64, to.min(len - 1) as u64))
}

#[cfg(test)]
#[path = "list_tests.rs"]
mod tests;
