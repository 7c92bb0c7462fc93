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

/// The system clock in ns since the Unix epoch, from the CPU's time stamp
/// counter between reads of the real clock (see [`tsc`]).
#[inline]
fn wall_ns() -> u64 {
    tsc::wall_ns().unwrap_or_else(system_ns)
}

#[inline]
fn system_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// The wall clock from the time stamp counter, as Redis times commands
/// with `getMonotonicUs()` (rdtsc) rather than a clock call: a
/// `clock_gettime` costs 44 ns on this machine's VM, an `rdtsc` 13, and
/// every command read the clock twice (its time and its duration: 8.6% of
/// PING_MBULK -P16 was `__vdso_clock_gettime`, issue 52).
///
/// Each thread keeps an anchor, a pair (system time, counter) read
/// together; a reading is the anchor's time plus the counter's ticks since,
/// at a rate measured against the system clock over the whole life of the
/// process. A thread reads the real clock again (a new anchor) once its
/// anchor is [`REANCHOR_NS`] old, so the two never drift apart by more
/// than the rate's error over that time (microseconds), and an NTP step
/// shows within it. Until the rate is known (the first [`CALIBRATE_NS`]),
/// on other CPUs, or if the counter goes back, it is the system clock.
/// Readings never go back on a thread.
mod tsc {
    use std::cell::Cell;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::OnceLock;

    /// How old an anchor gets before the real clock is read again.
    pub(super) const REANCHOR_NS: u64 = 50_000_000;
    /// How long the rate is measured before it is used.
    const CALIBRATE_NS: u64 = 20_000_000;

    /// ns per tick in 32.32 fixed point (0: not measured yet).
    static RATE: AtomicU64 = AtomicU64::new(0);
    /// The process's first (system time, counter) pair: the rate's base.
    static BASE: OnceLock<(u64, u64)> = OnceLock::new();

    thread_local! {
        /// (system time, counter) read together, and the last reading.
        static ANCHOR: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
        static LAST: Cell<u64> = const { Cell::new(0) };
    }

    #[cfg(target_arch = "x86_64")]
    #[inline]
    fn ticks() -> Option<u64> {
        // SAFETY: rdtsc has no preconditions on x86_64; it only reads the
        // counter.
        Some(unsafe { core::arch::x86_64::_rdtsc() })
    }

    #[cfg(not(target_arch = "x86_64"))]
    #[inline]
    fn ticks() -> Option<u64> {
        None
    }

    /// The wall clock in ns, None when only the system clock can say.
    #[inline]
    pub(super) fn wall_ns() -> Option<u64> {
        let now = ticks()?;
        let rate = RATE.load(Ordering::Relaxed);
        let (at, tick) = ANCHOR.with(Cell::get);
        let since = now.checked_sub(tick).map(|d| ((d as u128 * rate as u128) >> 32) as u64);
        let ns = match since {
            Some(s) if rate != 0 && at != 0 && s < REANCHOR_NS => at + s,
            _ => anchor(now),
        };
        // Never back on this thread (a new anchor may land a little before
        // what the old one extrapolated).
        Some(LAST.with(|l| {
            let v = ns.max(l.get());
            l.set(v);
            v
        }))
    }

    /// Reads the system clock, makes it this thread's anchor with `now`'s
    /// ticks, and refines the rate.
    #[cold]
    fn anchor(now: u64) -> u64 {
        let ns = super::system_ns();
        ANCHOR.with(|a| a.set((ns, now)));
        let &(ns0, t0) = BASE.get_or_init(|| (ns, now));
        if let (Some(dn), Some(dt)) = (ns.checked_sub(ns0), now.checked_sub(t0)) {
            if dn >= CALIBRATE_NS && dt > 0 {
                RATE.store(
                    ((dn as u128) << 32).checked_div(dt as u128).map_or(0, |r| r as u64),
                    Ordering::Relaxed,
                );
            }
        }
        ns
    }
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
    wall_ns() / 1000
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
    fn the_counter_clock_keeps_to_the_system_clock_and_never_goes_back() {
        let mut last = 0;
        let start = std::time::Instant::now();
        // Past the calibration and several anchors.
        while start.elapsed() < std::time::Duration::from_millis(3 * tsc::REANCHOR_NS / 1_000_000) {
            let (before, t, after) = (system_ns(), wall_ns(), system_ns());
            assert!(t >= last, "went back: {t} after {last}");
            // Within 1 ms of the system clock's reading around it.
            assert!(t + 1_000_000 >= before && t <= after + 1_000_000, "{before} {t} {after}");
            last = t;
        }
        assert!(now_us() >= last / 1000);
    }

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
