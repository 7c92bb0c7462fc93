//! The wall clock, for every layer (expiry times, key versions). Depends on
//! nothing else in the crate.
//!
//! A transaction sees one time: while EXEC runs its queue, [`now_ms`]
//! answers the time EXEC started, as Redis holds its command time for the
//! whole of it (a key that expires meanwhile is live for every command of
//! the transaction, or for none). A transaction on one shard freezes the
//! clock of that shard's thread for its synchronous step
//! ([`freeze_here`]); one behind the transaction gate freezes it for every
//! thread ([`freeze_all`]): nothing else runs then. `now_us` (key
//! versions, logs) is never frozen.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

/// The time every thread reads while a gated EXEC runs (0: none).
static FROZEN: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The time this thread reads while a one-shard EXEC runs (0: none).
    static FROZEN_HERE: Cell<u64> = const { Cell::new(0) };
}

/// Wall clock in ms since the Unix epoch, or the frozen time of the
/// transaction running.
#[inline]
pub fn now_ms() -> u64 {
    frozen().unwrap_or_else(wall_ms)
}

/// The time a running transaction froze, if any: this thread's first.
#[inline]
fn frozen() -> Option<u64> {
    let here = FROZEN_HERE.with(Cell::get);
    if here != 0 {
        return Some(here);
    }
    let all = FROZEN.load(Ordering::Relaxed);
    (all != 0).then_some(all)
}

/// A command's start, from one read of the clock: the time the command
/// sees ([`now_ms`] at that moment) and the start of its duration, as
/// Redis's `call()` takes one `ustime()` for both. A GET read the clock
/// three times for them (7.5% of GET -P16 on hot keys was
/// `clock_gettime`, issue 52).
#[derive(Clone, Copy, Debug)]
pub struct Started {
    wall_ns: u64,
    /// What [`now_ms`] answered when the command started.
    pub now_ms: u64,
}

/// Starts a command's clock (see [`Started`]).
#[inline]
pub fn start() -> Started {
    let wall_ns = wall_ns();
    let now_ms = frozen().unwrap_or_else(|| wall_ms_at(wall_ns));
    Started { wall_ns, now_ms }
}

impl Started {
    /// Nanoseconds since the start (0 if the system clock went back).
    #[inline]
    pub fn elapsed_ns(&self) -> u64 {
        wall_ns().saturating_sub(self.wall_ns)
    }
}

#[inline]
fn wall_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// How far ahead of the system clock [`wall_ms`] runs (ms): 0 but in tests
/// that move the clock (`DEBUG SET-CLOCK-OFFSET`, Basalt's own).
static OFFSET_MS: AtomicU64 = AtomicU64::new(0);

/// Wall clock in ms since the Unix epoch, never frozen.
pub fn wall_ms() -> u64 {
    wall_ms_at(wall_ns())
}

/// [`wall_ms`] at the system time `wall_ns` (ns since the Unix epoch).
#[inline]
fn wall_ms_at(wall_ns: u64) -> u64 {
    wall_ns / 1_000_000 + OFFSET_MS.load(Ordering::Relaxed)
}

/// Moves [`wall_ms`] (and so every expiry decision) `ms` ahead of the
/// system clock. Only forward of where it is: a clock going back would
/// revive expired keys.
pub fn set_offset_ms(ms: u64) -> bool {
    OFFSET_MS.fetch_max(ms, Ordering::Relaxed) <= ms
}

/// Wall clock in µs since the Unix epoch.
pub fn now_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// A frozen clock; dropped, it runs again.
pub struct Frozen {
    all: bool,
}

/// Freezes [`now_ms`] at `ms` on this thread.
pub fn freeze_here(ms: u64) -> Frozen {
    FROZEN_HERE.with(|c| c.set(ms.max(1)));
    Frozen { all: false }
}

/// Freezes [`now_ms`] at `ms` on every thread.
pub fn freeze_all(ms: u64) -> Frozen {
    FROZEN.store(ms.max(1), Ordering::Relaxed);
    Frozen { all: true }
}

impl Drop for Frozen {
    fn drop(&mut self) {
        if self.all {
            FROZEN.store(0, Ordering::Relaxed);
        } else {
            FROZEN_HERE.with(|c| c.set(0));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frozen_clock_holds_until_its_guard_drops() {
        let t = now_ms();
        {
            let _f = freeze_here(t - 5000);
            assert_eq!(now_ms(), t - 5000);
            // Another thread still reads the wall clock.
            assert!(std::thread::spawn(now_ms).join().unwrap() >= t);
        }
        assert!(now_ms() >= t);
    }
}
