//! The memory budget (issue 12; docs/larger-than-memory.md "Memory").
//!
//! `maxmemory`, or the memory cgroup's limit when that is lower, is the
//! server's whole budget. It sizes the parts that grow with the data
//! together: the block cache, the memtables (RocksDB's write buffer
//! manager caps their sum), the shards' meta caches and their write tiers
//! (the records written but not yet in RocksDB, `wtier`). The rest is left
//! for what the budget cannot size directly: connections, RocksDB's table
//! readers and compaction buffers, and the kernel's page cache of the SST
//! files, which a memory cgroup charges to the server too. Data never has
//! to fit: what the budget does not hold stays on disk.

use std::path::Path;

/// Shares of the budget, in percent.
const BLOCK_CACHE_PCT: u64 = 25;
const MEMTABLES_PCT: u64 = 10;
const META_CACHE_PCT: u64 = 20;
const WRITE_TIER_PCT: u64 = 10;

/// The smallest write buffer a budget gives a column family.
const MIN_WRITE_BUFFER: u64 = 4 << 20;

/// Where the budget came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    None,
    Maxmemory,
    Cgroup,
}

impl Source {
    pub fn name(self) -> &'static str {
        match self {
            Source::None => "none",
            Source::Maxmemory => "maxmemory",
            Source::Cgroup => "cgroup",
        }
    }
}

/// The sizes a budget gives (bytes). `total` 0: no budget, the configured
/// sizes stand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    pub total: u64,
    pub source: Source,
    pub block_cache: u64,
    pub meta_cache: u64,
    /// The cap on all memtables together (0: none).
    pub memtables: u64,
    pub write_buffer: u64,
    /// The write tiers' memory, all shards together (0: off).
    pub write_tier: u64,
}

/// What the operator configured. `None`: left at its default, so the
/// budget sizes it.
#[derive(Debug, Clone, Copy)]
pub struct Asked {
    pub maxmemory: u64,
    pub block_cache: Option<u64>,
    pub meta_cache: Option<u64>,
    pub write_buffer: u64,
    pub write_tier: Option<u64>,
    pub shards: u64,
}

/// The defaults without a budget.
pub const DEFAULT_BLOCK_CACHE: u64 = 256 << 20;
/// 512 MB of meta caches: 1M string keys of 100 bytes and 1M counters
/// weigh ~330 MB there, and with 256 MB INCR -P16 over them read evicted
/// counters from RocksDB and its I/O pool (tuning.md, "Session 54").
pub const DEFAULT_META_CACHE: u64 = 512 << 20;
pub const DEFAULT_WRITE_TIER: u64 = 256 << 20;

/// Sizes the parts from `asked` and the cgroup limit (`cgroup`, if any).
pub fn plan(asked: Asked, cgroup: Option<u64>) -> Plan {
    let (total, source) = match (asked.maxmemory, cgroup) {
        (0, None) => (0, Source::None),
        (0, Some(c)) => (c, Source::Cgroup),
        (m, Some(c)) if c < m => (c, Source::Cgroup),
        (m, _) => (m, Source::Maxmemory),
    };
    if total == 0 {
        return Plan {
            total,
            source,
            block_cache: asked.block_cache.unwrap_or(DEFAULT_BLOCK_CACHE),
            meta_cache: asked.meta_cache.unwrap_or(DEFAULT_META_CACHE),
            memtables: 0,
            write_buffer: asked.write_buffer,
            write_tier: asked.write_tier.unwrap_or(DEFAULT_WRITE_TIER),
        };
    }
    let share = |pct: u64| total / 100 * pct;
    let memtables = share(MEMTABLES_PCT);
    // Each shard has two column families (meta records, members); each
    // may hold its active memtable and one being flushed within the cap.
    let per_cf = (memtables / (4 * asked.shards.max(1))).max(MIN_WRITE_BUFFER);
    Plan {
        total,
        source,
        block_cache: asked.block_cache.unwrap_or(share(BLOCK_CACHE_PCT)).max(1 << 20),
        meta_cache: asked.meta_cache.unwrap_or(share(META_CACHE_PCT)),
        memtables,
        write_buffer: asked.write_buffer.min(per_cf),
        write_tier: asked.write_tier.unwrap_or(share(WRITE_TIER_PCT)),
    }
}

/// The memory limit of this process's cgroup (v2 `memory.max`, else v1
/// `memory.limit_in_bytes`), when there is one.
pub fn cgroup_limit() -> Option<u64> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    limit_from(&own, Path::new("/sys/fs/cgroup"))
}

fn limit_from(own: &str, root: &Path) -> Option<u64> {
    let mut limit: Option<u64> = None;
    for line in own.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let rel = path.trim_start_matches('/');
        // v2 ("0::/path"; under "unified" on a hybrid v1/v2 host), or v1's
        // memory controller.
        let files = if controllers.is_empty() {
            vec![root.join(rel).join("memory.max"), root.join("unified").join(rel).join("memory.max")]
        } else if controllers.split(',').any(|c| c == "memory") {
            vec![root.join("memory").join(rel).join("memory.limit_in_bytes")]
        } else {
            continue;
        };
        for f in files {
            // "max" (v2) or a page-rounded i64::MAX (v1): no limit.
            let v = std::fs::read_to_string(f)
                .ok()
                .and_then(|t| t.trim().parse::<u64>().ok())
                .filter(|&v| v < 1 << 60);
            if let Some(v) = v {
                limit = Some(limit.map_or(v, |l| l.min(v)));
            }
        }
    }
    limit
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked(maxmemory: u64) -> Asked {
        Asked {
            maxmemory,
            block_cache: None,
            meta_cache: None,
            write_buffer: 64 << 20,
            write_tier: None,
            shards: 2,
        }
    }

    #[test]
    fn no_budget_keeps_the_configured_sizes() {
        let p = plan(asked(0), None);
        assert_eq!((p.total, p.source), (0, Source::None));
        assert_eq!(
            (p.block_cache, p.meta_cache, p.memtables, p.write_buffer, p.write_tier),
            (256 << 20, 512 << 20, 0, 64 << 20, 256 << 20)
        );
    }

    #[test]
    fn the_lower_of_maxmemory_and_the_cgroup_limit_is_split() {
        let gib = 1u64 << 30;
        let p = plan(asked(4 * gib), Some(gib));
        assert_eq!((p.total, p.source), (gib, Source::Cgroup));
        assert_eq!(p.block_cache, gib / 100 * BLOCK_CACHE_PCT);
        assert_eq!(p.meta_cache, gib / 100 * META_CACHE_PCT);
        assert_eq!(p.memtables, gib / 100 * MEMTABLES_PCT);
        assert_eq!(p.write_tier, gib / 100 * WRITE_TIER_PCT);
        // Two shards of two column families, two memtables each within the cap.
        assert_eq!(p.write_buffer, gib / 100 * MEMTABLES_PCT / 8);
        assert!(p.block_cache + p.meta_cache + p.memtables + p.write_tier < p.total * 7 / 10);
        let p = plan(asked(gib), Some(4 * gib));
        assert_eq!((p.total, p.source), (gib, Source::Maxmemory));
        let p = plan(asked(0), Some(gib));
        assert_eq!(p.source, Source::Cgroup);
    }

    #[test]
    fn sizes_the_operator_gave_stand_and_small_budgets_keep_a_minimum() {
        let mut a = asked(512 << 20);
        a.block_cache = Some(32 << 20);
        a.meta_cache = Some(0);
        a.write_tier = Some(0);
        let p = plan(a, None);
        assert_eq!((p.block_cache, p.meta_cache, p.write_tier), (32 << 20, 0, 0));
        let p = plan(asked(2 << 20), None);
        assert_eq!(p.write_buffer, MIN_WRITE_BUFFER);
        assert_eq!(p.block_cache, 1 << 20);
    }

    #[test]
    fn reads_v1_and_v2_limits() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("memory/box")).unwrap();
        std::fs::write(root.join("memory/box/memory.limit_in_bytes"), "536870912\n").unwrap();
        assert_eq!(limit_from("9:name=systemd:/\n4:memory:/box\n", root), Some(512 << 20));
        std::fs::write(root.join("memory/box/memory.limit_in_bytes"), "9223372036854771712\n").unwrap();
        assert_eq!(limit_from("4:memory:/box\n", root), None);
        std::fs::create_dir_all(root.join("svc")).unwrap();
        std::fs::write(root.join("svc/memory.max"), "max\n").unwrap();
        assert_eq!(limit_from("0::/svc\n", root), None);
        std::fs::write(root.join("svc/memory.max"), "1073741824\n").unwrap();
        assert_eq!(limit_from("0::/svc\n", root), Some(1 << 30));
        assert_eq!(limit_from("3:cpu:/x\n", root), None);
        // A hybrid host: the v2 line points at an unlimited group, v1's
        // memory controller at a limited one.
        std::fs::write(root.join("memory/box/memory.limit_in_bytes"), "536870912\n").unwrap();
        assert_eq!(limit_from("0::/\n4:memory:/box\n", root), Some(512 << 20));
    }
}
