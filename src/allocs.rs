//! The process's allocator, counting when asked: mimalloc behind a switch
//! that, once on, counts every allocation and its bytes (process-wide,
//! every thread's Rust allocations: shards', the pools'; RocksDB's C++
//! allocates through glibc's malloc and is not counted).
//!
//! mimalloc, not glibc's malloc: shards free what other shards allocated
//! (cross-shard messages, replies, records), and glibc's free of a block
//! from another thread's arena takes that arena's lock once the freeing
//! thread's small cache is full: with two shards under SET -P16, 10% of
//! their time went to futex waits on those locks (tuning.md, session 36).
//! mimalloc puts such a block on its page's lock-free list.
//!
//! Issue 52 asks for the allocations per GET and per SET, measured, not
//! guessed: `perf/allocs` starts the server with `BASALT_COUNT_ALLOCS=1`,
//! reads `DEBUG ALLOCATIONS` before and after a redis-benchmark run and
//! divides by the requests. Off (the default) it costs one relaxed load
//! and a branch per allocation; on, two relaxed atomic adds.
//!
//! [`heap_bytes`] and [`collect`] are mimalloc's counters and collection
//! for INFO and MEMORY.
//!
//! A leaf: names nothing else in the crate.

use std::alloc::{GlobalAlloc, Layout};

use mimalloc::MiMalloc as System;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

static ON: AtomicBool = AtomicBool::new(false);
static ALLOCS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

/// mimalloc, counting while [`enable`]d.
pub struct Counting;

#[inline]
fn count(size: usize) {
    if ON.load(Ordering::Relaxed) {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(size as u64, Ordering::Relaxed);
    }
}

// SAFETY: every call is passed to mimalloc unchanged; counting touches
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

/// The memory mimalloc holds from the system (its committed pages: what
/// it handed out and what it keeps for reuse), for INFO's `used_memory`.
/// mimalloc's process-wide count can be negative for a moment (a thread's
/// frees counted before its allocations are merged in: the lib tests read
/// -1 GB once, wrapped to 18 EB in the `size_t` it is read through); then
/// it counts as none.
pub fn heap_bytes() -> u64 {
    let (mut elapsed, mut user, mut sys, mut rss, mut peak_rss, mut commit, mut peak_commit, mut faults) = (0, 0, 0, 0, 0, 0, 0, 0);
    // SAFETY: mi_process_info only writes the eight counters we pass.
    unsafe {
        libmimalloc_sys::mi_process_info(
            &mut elapsed,
            &mut user,
            &mut sys,
            &mut rss,
            &mut peak_rss,
            &mut commit,
            &mut peak_commit,
            &mut faults,
        );
    }
    (commit as isize).max(0) as u64
}

/// mimalloc.h's `mi_option_purge_delay` in the bundled v3 sources (the
/// binding names no constant for it; a unit test checks its default).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// The purge delay [`configure`] sets (see there).
const PURGE_DELAY_MS: std::ffi::c_long = 10;

/// At startup: free pages go back to the system 10 ms after they empty
/// (mimalloc v2's default), not a second later (the bundled v3's), so RSS
/// stays inside the memory budget: under 10 minutes of SET -P16 of new
/// keys with `maxmemory 1gb` the 1 s default peaked at 1032 MB, 35-40 MB
/// above glibc's run at the same key counts. At once (0) held RSS at
/// glibc's level too, but cost GET -P16 on two shards 15-25% (a page
/// purged and faulted back in for every burst of replies); 10 ms did not
/// (tuning.md, session 36). `MIMALLOC_PURGE_DELAY` in the environment
/// (mimalloc reads it itself) is left as given.
pub fn configure() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return;
    }
    // SAFETY: mi_option_set only stores the option's value.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS) }
}

/// Returns mimalloc's free pages to the system (MEMORY PURGE).
pub fn collect() {
    // SAFETY: mi_collect only frees memory no allocation holds.
    unsafe { libmimalloc_sys::mi_collect(true) }
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

    /// The option's number is mimalloc's purge delay: its default is 1000
    /// ms (v3's options.c), and `configure` sets it to 10.
    #[test]
    fn configure_sets_the_purge_delay() {
        // SAFETY: mi_option_get only reads the option.
        let get = || unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) };
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            assert_eq!(get(), 1000);
        }
        configure();
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            assert_eq!(get(), PURGE_DELAY_MS);
        }
    }

    /// `heap_bytes` counts what mimalloc committed: 8 MiB taken from it
    /// (the tests' global allocator is the system's) show up in it. Other
    /// tests' threads free memory meanwhile, and their counts merge in at
    /// any moment: a few tries, one of which must see the 8 MiB.
    #[test]
    fn heap_bytes_counts_mimallocs_pages() {
        let layout = Layout::from_size_align(8 << 20, 64).unwrap();
        let mut seen = Vec::new();
        for _ in 0..5 {
            let before = heap_bytes();
            assert!(before < 1 << 50, "{before}");
            // SAFETY: a non-zero layout; the block is written, then freed with it.
            let after = unsafe {
                let p = System.alloc(layout);
                assert!(!p.is_null());
                p.write_bytes(1, layout.size());
                let after = heap_bytes();
                System.dealloc(p, layout);
                after
            };
            collect();
            if after >= before + (8 << 20) - (1 << 20) {
                return;
            }
            seen.push((before, after));
        }
        panic!("8 MiB never showed: {seen:?}");
    }
}
