//! A shard's tier limits, from the store's options (`write-tier-memory`,
//! `BASALT_TIER`); dirty's room within them is set as each generation
//! starts draining (`ShardStore::tier_set_room`).

/// A shard's tier limits: dirty starts draining at either.
#[derive(Clone, Copy, Debug)]
pub(in crate::storage) struct Limits {
    /// Records per generation (`BASALT_TIER`).
    pub(in crate::storage) records: usize,
    /// The shard's share of `write-tier-memory`: dirty and the draining
    /// generation together stay near it (each drains at half).
    pub(in crate::storage) bytes: u64,
    /// Log bytes after which dirty starts draining even below the other
    /// two: a hot key written again with the same value takes no room, and
    /// the log is only cut below a drain (it grew without end).
    pub(in crate::storage) log: u64,
}

/// The least and the most log between two drains ([`Limits::log`]).
const LOG_DRAIN_MIN: u64 = 64 << 10;
const LOG_DRAIN_MAX: u64 = 64 << 20;
/// The most log between two drains of a generation that borrowed the meta
/// cache's room (`ShardStore::tier_set_room`): a restart replays up to
/// two generations' log (the draining one's and dirty's).
pub(super) const LOG_BORROWED_MAX: u64 = 128 << 20;

impl crate::storage::StoreOptions {
    /// Whether the write tier is on (`write_tier` or `write_tier_bytes`).
    pub(in crate::storage) fn tier_on(&self) -> bool {
        self.write_tier > 0 || self.write_tier_bytes > 0
    }

    /// Each shard's limits.
    pub(in crate::storage) fn tier_limits(&self) -> Limits {
        let bytes = match self.write_tier_bytes {
            0 => u64::MAX,
            b => b / self.shards.max(1) as u64,
        };
        Limits {
            records: if self.write_tier > 0 { self.write_tier } else { usize::MAX },
            bytes,
            log: bytes.clamp(LOG_DRAIN_MIN, LOG_DRAIN_MAX),
        }
    }
}
