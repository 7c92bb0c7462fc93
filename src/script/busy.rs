//! Which scripts run where, process-wide: what SCRIPT KILL and FUNCTION
//! KILL act on from any connection, and what makes every core answer
//! `-BUSY` while a script runs past `busy-reply-threshold`.
//!
//! One slot per shard: a shard runs one script at a time (its interpreter
//! is taken for the run).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// One shard's running script.
#[derive(Default)]
struct Slot {
    running: AtomicBool,
    /// An FCALL (else an EVAL).
    function: AtomicBool,
    /// It ran a write command: SCRIPT KILL may not stop it.
    wrote: AtomicBool,
    /// Past `busy-reply-threshold`.
    busy: AtomicBool,
    /// SCRIPT KILL or FUNCTION KILL asked it to stop.
    kill: AtomicBool,
}

/// Every shard's slot, and how many scripts are busy.
pub struct Board {
    slots: Vec<Slot>,
    busy: AtomicUsize,
}

/// `-BUSY` while an EVAL is busy.
pub const BUSY_EVAL: &str = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
/// `-BUSY` while a function is busy.
pub const BUSY_FUNCTION: &str = "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";

impl Board {
    pub fn new(shards: usize) -> Board {
        Board {
            slots: (0..shards.max(1)).map(|_| Slot::default()).collect(),
            busy: AtomicUsize::new(0),
        }
    }

    fn slot(&self, shard: usize) -> Option<&Slot> {
        self.slots.get(shard)
    }

    /// A script starts on `shard`.
    pub fn start(&self, shard: usize, function: bool) {
        if let Some(s) = self.slot(shard) {
            s.function.store(function, Ordering::Relaxed);
            s.wrote.store(false, Ordering::Relaxed);
            s.kill.store(false, Ordering::Relaxed);
            s.busy.store(false, Ordering::Relaxed);
            s.running.store(true, Ordering::SeqCst);
        }
    }

    /// The script on `shard` ran a write.
    pub fn wrote(&self, shard: usize) {
        if let Some(s) = self.slot(shard) {
            s.wrote.store(true, Ordering::SeqCst);
        }
    }

    /// The script on `shard` went past the threshold; true the first time.
    pub fn set_busy(&self, shard: usize) -> bool {
        let Some(s) = self.slot(shard) else { return false };
        let first = !s.busy.swap(true, Ordering::SeqCst);
        if first {
            self.busy.fetch_add(1, Ordering::SeqCst);
        }
        first
    }

    /// The script on `shard` ended.
    pub fn end(&self, shard: usize) {
        if let Some(s) = self.slot(shard) {
            s.running.store(false, Ordering::SeqCst);
            if s.busy.swap(false, Ordering::SeqCst) {
                self.busy.fetch_sub(1, Ordering::SeqCst);
            }
        }
    }

    /// The `-BUSY` error commands get, while a script is busy.
    #[inline]
    pub fn busy_error(&self) -> Option<&'static str> {
        if self.busy.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let function = self
            .slots
            .iter()
            .any(|s| s.busy.load(Ordering::Relaxed) && s.function.load(Ordering::Relaxed));
        Some(if function { BUSY_FUNCTION } else { BUSY_EVAL })
    }

    /// Whether the script on `shard` was asked to stop.
    pub fn killed(&self, shard: usize) -> bool {
        self.slot(shard).is_some_and(|s| s.kill.load(Ordering::SeqCst))
    }

    /// SCRIPT KILL (`function`: false) or FUNCTION KILL: asks the running
    /// script to stop (the busy one first), with Redis's refusals.
    pub fn kill(&self, function: bool) -> Result<(), &'static str> {
        // A script already asked to stop is as good as gone.
        let running = |s: &&Slot| s.running.load(Ordering::SeqCst) && !s.kill.load(Ordering::SeqCst);
        let target = self
            .slots
            .iter()
            .filter(running)
            .find(|s| s.busy.load(Ordering::SeqCst))
            .or_else(|| self.slots.iter().find(running));
        let Some(s) = target else {
            return Err("NOTBUSY No scripts in execution right now.");
        };
        if s.wrote.load(Ordering::SeqCst) {
            return Err("UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.");
        }
        match (function, s.function.load(Ordering::SeqCst)) {
            (false, true) => return Err(BUSY_FUNCTION),
            (true, false) => return Err(BUSY_EVAL),
            _ => {}
        }
        s.kill.store(true, Ordering::SeqCst);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kill_as_redis_answers_it() {
        let b = Board::new(2);
        assert_eq!(b.kill(false), Err("NOTBUSY No scripts in execution right now."));
        b.start(1, false);
        assert_eq!(b.busy_error(), None);
        assert!(b.set_busy(1));
        assert!(!b.set_busy(1));
        assert_eq!(b.busy_error(), Some(BUSY_EVAL));
        assert_eq!(b.kill(true), Err(BUSY_EVAL));
        assert_eq!(b.kill(false), Ok(()));
        assert!(b.killed(1) && !b.killed(0));
        b.end(1);
        assert_eq!(b.busy_error(), None);
        b.start(0, true);
        b.wrote(0);
        assert!(b.kill(true).unwrap_err().starts_with("UNKILLABLE"));
    }
}
