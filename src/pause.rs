//! CLIENT PAUSE's state, process-wide: until when clients are paused, and
//! whether all their commands wait or only the writes. A leaf: the
//! dispatcher parks paused commands (`dispatch`), and expiry, active and
//! lazy, holds off while any pause lasts (`expire`, `types::keyspace`),
//! as Redis keeps the dataset still during a pause.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Unix ms the pause ends at (0: none).
static UNTIL_MS: AtomicU64 = AtomicU64::new(0);
/// The pause holds every command, not only writes.
static ALL: AtomicBool = AtomicBool::new(false);

/// CLIENT PAUSE: until `until_ms`, all commands or only writes. A pause
/// already in effect is never shortened nor made less strict (Redis keeps
/// the most restrictive of the two); once it has ended it is replaced.
pub fn pause(until_ms: u64, all: bool, now_ms: u64) {
    if UNTIL_MS.load(Ordering::Acquire) <= now_ms {
        ALL.store(all, Ordering::Release);
    } else if all {
        ALL.store(true, Ordering::Release);
    }
    UNTIL_MS.fetch_max(until_ms, Ordering::AcqRel);
}

/// CLIENT UNPAUSE.
pub fn unpause() {
    UNTIL_MS.store(0, Ordering::Release);
    ALL.store(false, Ordering::Release);
}

/// The pause in effect at `now_ms`: `Some(true)` for ALL, `Some(false)`
/// for WRITE, None when there is none.
#[inline]
pub fn active(now_ms: u64) -> Option<bool> {
    let until = UNTIL_MS.load(Ordering::Acquire);
    if until == 0 || until <= now_ms {
        return None;
    }
    Some(ALL.load(Ordering::Acquire))
}

/// Whether any pause was set and not ended by UNPAUSE (one relaxed load:
/// the dispatcher asks this before working out whether a command writes).
#[inline]
pub fn any() -> bool {
    UNTIL_MS.load(Ordering::Relaxed) != 0
}

/// Whether a command must wait now: any during a pause of ALL, a write
/// (`write`) during a pause of WRITE. One atomic load when no pause was
/// ever set.
#[inline]
pub fn blocks(write: bool) -> bool {
    if UNTIL_MS.load(Ordering::Relaxed) == 0 {
        return false;
    }
    active(crate::clock::wall_ms()).is_some_and(|all| all || write)
}

/// Whether expiry (active and lazy) must hold off now.
#[inline]
pub fn holds_expiry(now_ms: u64) -> bool {
    active(now_ms).is_some()
}

/// What INFO clients shows of it: (reason, actions, ms left).
pub fn info(now_ms: u64) -> (&'static str, &'static str, u64) {
    match active(now_ms) {
        None => ("none", "none", 0),
        Some(all) => (
            "client_pause",
            if all { "all" } else { "write" },
            UNTIL_MS.load(Ordering::Acquire).saturating_sub(now_ms),
        ),
    }
}
