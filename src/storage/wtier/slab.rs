//! The memory a generation's records live in, owned by the generation, and
//! the handles its tables keep of them ([`Span`]): a key or a value copied
//! once into a chunk, never moved while the generation lives, and named by
//! its address. A value of dirty is written again in place by a write of
//! the same length while no read holds a span of the tier
//! ([`Span::overwrite`], `Gen::put_over`); nothing else is.
//!
//! Until session 59 a record was a `Bytes` slice of a shared chunk: every
//! handle the map, the runs, a collection's list and the turn's undo list
//! took was an atomic count on the chunk, five or six a new record, and
//! each waited for the record's copy into cold memory to reach the cache
//! (the `lock` instruction drains the store buffer: `shared_v_clone` was
//! 8.8% of XADD -P16's shard, 97% of it on that instruction). A span is
//! two words copied: nothing to count, nothing to wait for.
//!
//! What keeps a span valid: the chunks it points into. A generation's
//! chunks are taken from it only once it is applied and its tables are
//! emptied ([`Slab::take`]); a read that hands a span to code that may
//! write (and so finish a drain) holds a [`Pin`], and chunks taken while
//! any pin is held wait in limbo ([`Pins`]) until none is.

use std::alloc::{self, Layout};
use std::borrow::Borrow;
use std::cell::{Cell, RefCell};
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::ptr::NonNull;

/// Bytes in a chunk of a [`Slab`] (or a record's own allocation there):
/// valid while the chunk is, which the tier guarantees (see the module).
/// Not `Send`: it never leaves the shard's thread.
#[derive(Clone, Copy)]
pub(super) struct Span {
    ptr: NonNull<u8>,
    len: usize,
}

impl Span {
    /// A span of `len` bytes at `ptr`.
    ///
    /// # Safety
    /// `ptr..ptr + len` must stay allocated, initialized and unwritten for
    /// as long as the span (or a copy of it) is read.
    unsafe fn new(ptr: NonNull<u8>, len: usize) -> Span {
        Span { ptr, len }
    }

    /// Whether `o` names the same bytes (a value written again in place:
    /// `Gen::put_over`'s undo).
    #[inline]
    pub(super) fn same(&self, o: &Span) -> bool {
        self.len > 0 && self.ptr == o.ptr && self.len == o.len
    }

    /// Writes `v`, as long as the span, over its bytes.
    ///
    /// # Safety
    /// The span must be in a chunk of a [`Slab`] (not [`Span::leaked`]),
    /// of a generation that takes writes (dirty), and nothing may read
    /// its bytes meanwhile or after expecting the old ones: no read holds
    /// a span of the tier ([`Pins::free`]) and no table but the
    /// generation's map and the turn's undo list names it.
    #[inline]
    pub(super) unsafe fn overwrite(&self, v: &[u8]) {
        debug_assert_eq!(v.len(), self.len);
        // SAFETY: inside the span's allocation (at most `len` bytes), which
        // the caller owns for writing; `copy` allows an overlap.
        unsafe { std::ptr::copy(v.as_ptr(), self.ptr.as_ptr(), v.len().min(self.len)) }
    }

    /// The empty span (no memory behind it).
    pub(super) fn empty() -> Span {
        Span {
            ptr: NonNull::dangling(),
            len: 0,
        }
    }

    /// A span of a copy of `v` that lives as long as the process (tests).
    #[cfg(test)]
    pub(super) fn leaked(v: &[u8]) -> Span {
        let b: &'static [u8] = Box::leak(v.to_vec().into_boxed_slice());
        // SAFETY: leaked memory is never freed nor written.
        unsafe { Span::new(NonNull::from(b).cast(), b.len()) }
    }
}

impl Deref for Span {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        // SAFETY: the memory outlives every read of the span (the module's
        // invariant: chunks are freed or reused only once no table, undo
        // list or pinned read holds a span of them).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl AsRef<[u8]> for Span {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl Borrow<[u8]> for Span {
    fn borrow(&self) -> &[u8] {
        self
    }
}

impl Hash for Span {
    /// As `[u8]` hashes (a map keyed by spans is looked up by slices).
    fn hash<H: Hasher>(&self, h: &mut H) {
        (**self).hash(h)
    }
}

impl PartialEq for Span {
    fn eq(&self, o: &Span) -> bool {
        **self == **o
    }
}

impl Eq for Span {}

impl PartialOrd for Span {
    fn partial_cmp(&self, o: &Span) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

impl Ord for Span {
    fn cmp(&self, o: &Span) -> std::cmp::Ordering {
        (**self).cmp(&**o)
    }
}

impl std::fmt::Debug for Span {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", bytes::Bytes::copy_from_slice(self))
    }
}

/// An allocation of `cap` bytes, written from its start (`len`), never
/// moved: spans point into it.
pub(super) struct Chunk {
    ptr: NonNull<u8>,
    cap: usize,
    len: usize,
}

impl Chunk {
    fn new(cap: usize) -> Chunk {
        let cap = cap.max(1);
        let layout = Layout::array::<u8>(cap).unwrap_or(Layout::new::<u8>());
        // SAFETY: `layout` has a non-zero size.
        let p = unsafe { alloc::alloc(layout) };
        let Some(ptr) = NonNull::new(p) else {
            alloc::handle_alloc_error(layout)
        };
        Chunk { ptr, cap, len: 0 }
    }

    fn room(&self) -> usize {
        self.cap - self.len
    }

    /// Copies `v` in after what it holds (it has the room).
    fn put(&mut self, v: &[u8]) -> Span {
        debug_assert!(v.len() <= self.room());
        let n = v.len().min(self.room());
        // SAFETY: `len + n <= cap`: inside the allocation, past every span
        // handed out (each is below `len`), so no span's bytes change.
        unsafe {
            let at = self.ptr.as_ptr().add(self.len);
            std::ptr::copy_nonoverlapping(v.as_ptr(), at, n);
            self.len += n;
            Span::new(NonNull::new_unchecked(at), n)
        }
    }

    /// Empty again, for another generation's records (no span of it is
    /// left: see the module).
    fn clear(&mut self) {
        self.len = 0;
    }
}

impl Drop for Chunk {
    fn drop(&mut self) {
        let layout = Layout::array::<u8>(self.cap).unwrap_or(Layout::new::<u8>());
        // SAFETY: allocated with this layout in `Chunk::new`.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), layout) }
    }
}

/// A generation's memory for records up to `chunk / 8` bytes, in chunks
/// of `chunk` bytes ([`Slab::copy`]): `cur`, the one being filled, `used`,
/// those it filled, `spare`, empty ones handed on by a generation applied
/// before it; a bigger record gets an allocation of its own (`big`). A
/// fresh allocation per record was a fifth of LPUSH -P16's shard:
/// mimalloc's free lists built on fresh pages, and the kernel zeroing
/// them, since a drained generation's pages went back to the system before
/// the next one filled.
pub(super) struct Slab {
    chunk: usize,
    cur: Option<Chunk>,
    used: Vec<Chunk>,
    spare: Vec<Chunk>,
    big: Vec<Chunk>,
}

impl Slab {
    pub(super) fn new(chunk: usize) -> Slab {
        Slab {
            chunk,
            cur: None,
            used: Vec::new(),
            spare: Vec::new(),
            big: Vec::new(),
        }
    }

    /// A copy of `v` in its memory.
    #[inline]
    pub(super) fn copy(&mut self, v: &[u8]) -> Span {
        let n = v.len();
        if n == 0 {
            return Span::empty();
        }
        if n > self.chunk / 8 {
            let mut own = Chunk::new(n);
            let s = own.put(v);
            self.big.push(own);
            return s;
        }
        match &mut self.cur {
            Some(c) if c.room() >= n => c.put(v),
            _ => {
                let next = self.spare.pop().unwrap_or_else(|| Chunk::new(self.chunk));
                if let Some(full) = self.cur.replace(next) {
                    self.used.push(full);
                }
                match &mut self.cur {
                    Some(c) => c.put(v),
                    None => unreachable!("a chunk was just put there"),
                }
            }
        }
    }

    /// Its chunks, the big records' allocations among them: the
    /// generation is applied and no table of it holds a span any more.
    pub(super) fn take(&mut self) -> Vec<Chunk> {
        let mut all = std::mem::take(&mut self.used);
        all.extend(self.cur.take());
        all.append(&mut self.spare);
        all.append(&mut self.big);
        all
    }

    /// Keeps those of `chunks` of its chunk size, emptied, as many as half
    /// of the shard's share of the budget takes (`budget`); the rest are
    /// freed.
    pub(super) fn reuse(&mut self, chunks: Vec<Chunk>, budget: u64) {
        let keep = (budget / 2 / self.chunk as u64).min(1024) as usize + 1;
        for mut c in chunks {
            if self.spare.len() >= keep {
                break;
            }
            if c.cap == self.chunk {
                c.clear();
                self.spare.push(c);
            }
        }
    }

    /// Hands its spare chunks to `next`.
    pub(super) fn pass_spare(&mut self, next: &mut Slab) {
        next.spare.append(&mut self.spare);
    }

    /// Chunks in use, spare chunks (tests).
    #[cfg(test)]
    pub(super) fn counts(&self) -> (usize, usize) {
        (self.used.len() + usize::from(self.cur.is_some()), self.spare.len())
    }
}

/// The reads under way that hold spans of the tier ([`Pin`]), and the
/// chunks taken from an applied generation while one was: they are reused
/// or freed once none is ([`Pins::settle`]).
#[derive(Default)]
pub(super) struct Pins {
    held: Cell<usize>,
    limbo: RefCell<Vec<Chunk>>,
}

impl Pins {
    /// Holds every chunk where it is until the pin is dropped.
    #[inline]
    pub(super) fn pin(&self) -> Pin<'_> {
        self.held.set(self.held.get() + 1);
        Pin(self)
    }

    /// Whether no read holds a span of the tier: a value may be written
    /// again in place ([`Span::overwrite`]).
    #[inline]
    pub(super) fn free(&self) -> bool {
        self.held.get() == 0
    }

    /// `chunks`, taken from an applied generation: to `reuse` now if no
    /// read holds a span (and not `wait`: something else may), else kept
    /// until one [`Pins::settle`] finds none.
    pub(super) fn release(&self, chunks: Vec<Chunk>, wait: bool, reuse: impl FnOnce(Vec<Chunk>)) {
        if wait || self.held.get() > 0 {
            self.limbo.borrow_mut().extend(chunks);
        } else {
            reuse(chunks);
        }
    }

    /// The chunks in limbo, once no read holds a span, to `reuse`.
    pub(super) fn settle(&self, reuse: impl FnOnce(Vec<Chunk>)) {
        if self.held.get() == 0 {
            let waiting = std::mem::take(&mut *self.limbo.borrow_mut());
            if !waiting.is_empty() {
                reuse(waiting);
            }
        }
    }
}

#[cfg(test)]
impl Pins {
    /// Chunks in limbo.
    pub(super) fn waiting(&self) -> usize {
        self.limbo.borrow().len()
    }
}

/// A read's hold on the tier's chunks ([`Pins::pin`]).
pub(super) struct Pin<'a>(&'a Pins);

impl Drop for Pin<'_> {
    #[inline]
    fn drop(&mut self) {
        self.0.held.set(self.0.held.get() - 1);
    }
}

/// A value the tier holds ([`super::WriteTier::get`]; None: deleted
/// there), readable while the pin it carries keeps the tier's chunks.
pub(in crate::storage) struct Found<'a> {
    v: Option<Span>,
    _pin: Pin<'a>,
}

impl<'a> Found<'a> {
    pub(super) fn new(v: Option<Span>, pin: Pin<'a>) -> Found<'a> {
        Found { v, _pin: pin }
    }

    /// The value (None: deleted in the tier).
    #[inline]
    pub(in crate::storage) fn as_deref(&self) -> Option<&[u8]> {
        self.v.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Copies land in chunks and keep their bytes while later copies fill
    /// the chunk and the next; a big one gets its own; every chunk comes
    /// back from `take`, and `reuse` keeps the chunk-sized ones, emptied,
    /// up to its count.
    #[test]
    fn copies_keep_their_bytes_and_chunks_come_back() {
        let mut s = Slab::new(64);
        let spans: Vec<(Vec<u8>, Span)> = (0..40u8)
            .map(|i| {
                let v = vec![i; 1 + (i as usize % 8)];
                let sp = s.copy(&v);
                (v, sp)
            })
            .collect();
        let big = s.copy(&[7; 100]);
        assert_eq!(&*big, &[7; 100][..]);
        assert!(spans.iter().all(|(v, sp)| &**sp == v.as_slice()));
        assert_eq!(s.copy(b"").len(), 0);
        let (used, spare) = s.counts();
        assert!(used > 1 && spare == 0, "{used} chunks");
        let taken = s.take();
        assert_eq!(taken.len(), used + 1, "the big one too");
        let mut next = Slab::new(64);
        next.reuse(taken, 64 * 4);
        assert_eq!(next.counts(), (0, 3), "as many as the budget's half holds, plus one");
        let sp = next.copy(b"again");
        assert_eq!(&*sp, b"again");
        assert_eq!(next.counts(), (1, 2), "a spare chunk taken, not a new one");
    }

    /// Chunks released while a read holds a pin wait until it is dropped.
    #[test]
    fn chunks_wait_for_the_pins() {
        let p = Pins::default();
        let mut s = Slab::new(64);
        s.copy(b"x");
        let pin = p.pin();
        let mut got = 0;
        p.release(s.take(), false, |c| got += c.len());
        assert_eq!(got, 0, "held back while pinned");
        p.settle(|c| got += c.len());
        assert_eq!(got, 0, "still pinned");
        drop(pin);
        p.settle(|c| got += c.len());
        assert_eq!(got, 1);
        let mut s = Slab::new(64);
        s.copy(b"y");
        p.release(s.take(), false, |c| got += c.len());
        assert_eq!(got, 2, "no pin: at once");
        let mut s = Slab::new(64);
        s.copy(b"z");
        p.release(s.take(), true, |c| got += c.len());
        assert_eq!(got, 2, "asked to wait");
        p.settle(|c| got += c.len());
        assert_eq!(got, 3);
    }
}
