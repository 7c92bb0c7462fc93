//! The process's allocator, counting when asked: the system allocator
//! behind a switch that, once on, counts every allocation and its bytes
//! (process-wide, every thread: shards, RocksDB's, the pools').
//!
//! Issue 52 asks for the allocations per GET and per SET, measured, not
//! guessed: `perf/allocs` starts the server with `BASALT_COUNT_ALLOCS=1`,
//! reads `DEBUG ALLOCATIONS` before and after a redis-benchmark run and
//! divides by the requests. Off (the default) it costs one relaxed load
//! and a branch per allocation; on, two relaxed atomic adds.
//!
//! A leaf: names nothing else in the crate.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

static ON: AtomicBool = AtomicBool::new(false);
static ALLOCS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

/// The system allocator, counting while [`enable`]d.
pub struct Counting;

#[inline]
fn count(size: usize) {
    if ON.load(Ordering::Relaxed) {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(size as u64, Ordering::Relaxed);
    }
}

// SAFETY: every call is passed to `System` unchanged; counting touches
// only atomics (it allocates nothing, so it cannot recurse).
unsafe impl GlobalAlloc for Counting {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        unsafe { System.alloc(layout) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    /// A reallocation counts as an allocation of the new size (it may
    /// move, and a growing buffer on the hot path is what we look for).
    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Starts counting (the server calls it at startup when
/// `BASALT_COUNT_ALLOCS=1`).
pub fn enable() {
    ON.store(true, Ordering::Relaxed);
}

/// Whether allocations are counted.
pub fn enabled() -> bool {
    ON.load(Ordering::Relaxed)
}

/// Allocations (reallocations included) and their bytes counted so far.
pub fn counts() -> (u64, u64) {
    (ALLOCS.load(Ordering::Relaxed), BYTES.load(Ordering::Relaxed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_only_when_enabled_and_never_goes_back() {
        // The test binary's allocator is the system one; the counter is
        // driven through `Counting` directly.
        let layout = Layout::from_size_align(64, 8).unwrap();
        let before = counts();
        unsafe {
            let p = Counting.alloc(layout);
            Counting.dealloc(p, layout);
        }
        if !enabled() {
            assert_eq!(counts(), before);
        }
        enable();
        let before = counts();
        unsafe {
            let p = Counting.alloc(layout);
            let q = Counting.realloc(p, layout, 128);
            Counting.dealloc(q, Layout::from_size_align(128, 8).unwrap());
        }
        let after = counts();
        assert!(after.0 >= before.0 + 2, "{before:?} -> {after:?}");
        assert!(after.1 >= before.1 + 192, "{before:?} -> {after:?}");
    }
}
