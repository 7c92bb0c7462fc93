//! The disk guard: writes stop before the disk is full, and start again by
//! themselves once there is room.
//!
//! RocksDB turns a failed WAL or SST write (ENOSPC) into a background error
//! that stops every later write; an engine that runs the disk to the last
//! byte also cannot flush, compact, or replay its WAL at the next start.
//! So Basalt refuses writes itself while the data directory's file system
//! has less than `min-free-disk` free (checked about once a second, after
//! every half of the remaining headroom written, and at once when a write
//! fails for lack of space), with Redis's `MISCONF` error
//! for a persistence failure. Reads go on. When space is back, a probe write
//! tells whether RocksDB accepts writes again (it resumes from a no-space
//! error on its own, checking every 5 s once a write buffer's worth of
//! space is free); until then writes stay refused
//! and INFO persistence says why.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;

/// Why writes are refused, as INFO persistence shows it.
#[derive(Debug, Default)]
pub struct DiskGuard {
    /// Writes are refused.
    refused: AtomicBool,
    /// Refuse writes below this many free bytes (0: only after a failure).
    min_free: AtomicU64,
    /// Free bytes at the last check.
    free: AtomicU64,
    /// Bytes writes may still add before the next check must happen: half
    /// the headroom above `min_free` at the last check. A second is too long
    /// between checks: a fast writer filled 16 MB of headroom in less.
    budget: AtomicI64,
    /// The last write failure's text, kept until a write succeeds again.
    last_error: Mutex<Option<String>>,
}

/// Free bytes for unprivileged writers on the file system holding `dir`.
pub fn free_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs fills the zeroed struct; the path is NUL-terminated.
    unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(path.as_ptr(), &mut st) != 0 {
            return None;
        }
        Some(st.f_bavail as u64 * st.f_frsize as u64)
    }
}

/// True for a storage error that means the disk is full.
pub fn is_no_space(msg: &str) -> bool {
    msg.contains("No space left on device") || msg.contains("NoSpace")
}

impl DiskGuard {
    pub fn set_min_free(&self, bytes: u64) {
        self.min_free.store(bytes, Ordering::Relaxed);
    }

    /// Hot path: one relaxed load per write command.
    #[inline]
    pub fn refused(&self) -> bool {
        self.refused.load(Ordering::Relaxed)
    }

    pub fn free(&self) -> u64 {
        self.free.load(Ordering::Relaxed)
    }

    /// Writes are refused, or the last check found less than twice
    /// `min-free-disk` free: work that can wait and takes disk space
    /// should (the idle write-back: the records it writes stay in the
    /// tier's log too until the flushes let it be cut).
    pub fn short(&self) -> bool {
        let min = self.min_free.load(Ordering::Relaxed);
        self.refused() || (min > 0 && self.free() < min.saturating_mul(2))
    }

    /// The reason writes fail, if they do.
    pub fn last_error(&self) -> Option<String> {
        self.last_error.lock().ok().and_then(|e| e.clone())
    }

    /// Counts `bytes` written; true when they used up the budget and the
    /// caller must check the disk now (rare: once per half the headroom).
    #[inline]
    pub fn spend(&self, bytes: usize) -> bool {
        self.budget.fetch_sub(bytes as i64, Ordering::Relaxed) <= bytes as i64
    }

    /// A write failed: refuse writes from now on if the disk is full.
    pub fn note_write_error(&self, msg: &str) {
        if is_no_space(msg) {
            self.refused.store(true, Ordering::Relaxed);
        }
        if let Ok(mut e) = self.last_error.lock() {
            *e = Some(msg.to_string());
        }
    }

    /// The periodic check: `free` bytes are free now; `probe` tries a small
    /// write and says whether the engine accepts writes. Refuses writes
    /// under the threshold; lifts the refusal when there is room and the
    /// probe succeeds.
    pub fn check(&self, free: u64, probe: impl FnOnce() -> Result<(), String>) {
        self.free.store(free, Ordering::Relaxed);
        let min = self.min_free.load(Ordering::Relaxed);
        let headroom = free.saturating_sub(min).min(i64::MAX as u64) as i64;
        self.budget.store(headroom / 2, Ordering::Relaxed);
        if free < min {
            if !self.refused.swap(true, Ordering::Relaxed) {
                tracing::warn!(free, min, "disk almost full: refusing writes (min-free-disk)");
            }
            if let Ok(mut e) = self.last_error.lock() {
                e.get_or_insert_with(|| format!("only {free} bytes free on disk, min-free-disk is {min}"));
            }
            return;
        }
        if !self.refused.load(Ordering::Relaxed) {
            // A failure that did not refuse writes is shown for one period.
            if let Ok(mut e) = self.last_error.lock() {
                *e = None;
            }
            return;
        }
        match probe() {
            Ok(()) => {
                tracing::info!(free, "disk has room again: accepting writes");
                if let Ok(mut e) = self.last_error.lock() {
                    *e = None;
                }
                self.refused.store(false, Ordering::Relaxed);
            }
            Err(msg) => {
                if let Ok(mut e) = self.last_error.lock() {
                    *e = Some(msg);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_below_the_threshold_and_resumes_after_a_good_probe() {
        let g = DiskGuard::default();
        g.set_min_free(100);
        g.check(1000, || Ok(()));
        assert!(!g.refused());
        // Half the headroom (900 / 2) may be written before the next check.
        assert!(!g.spend(400));
        assert!(g.spend(100));
        g.check(50, || panic!("no probe while short of space"));
        assert!(g.refused());
        assert!(g.last_error().is_some());
        // Room again, but the engine still fails: stay refused, say why.
        g.check(1000, || Err("IO error: No space left on device".into()));
        assert!(g.refused());
        assert_eq!(g.last_error().as_deref(), Some("IO error: No space left on device"));
        g.check(1000, || Ok(()));
        assert!(!g.refused());
        assert_eq!(g.last_error(), None);
    }

    #[test]
    fn short_of_space_below_twice_the_threshold_or_while_refused() {
        let g = DiskGuard::default();
        g.check(10, || Ok(()));
        assert!(!g.short(), "no threshold, no refusal");
        g.set_min_free(100);
        g.check(250, || Ok(()));
        assert!(!g.short());
        g.check(199, || Ok(()));
        assert!(g.short() && !g.refused(), "under twice the threshold");
        g.check(50, || Ok(()));
        assert!(g.short() && g.refused());
        let failed = DiskGuard::default();
        failed.note_write_error("IO error: No space left on device");
        assert!(failed.short());
    }

    #[test]
    fn a_failed_write_for_lack_of_space_refuses_at_once() {
        let g = DiskGuard::default();
        g.note_write_error("IO error: While appending to file: 000012.log: No space left on device");
        assert!(g.refused());
        let other = DiskGuard::default();
        other.note_write_error("Corruption: bad block");
        assert!(!other.refused());
        assert_eq!(other.last_error().as_deref(), Some("Corruption: bad block"));
        assert_eq!(free_bytes(Path::new("/nonexistent/dir")), None);
        assert!(free_bytes(Path::new("/")).is_some());
    }
}
