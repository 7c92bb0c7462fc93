//! RocksDB's statistics as INFO reports them.

use super::Engine;

impl Engine {
    /// A RocksDB integer property summed over every shard column family.
    pub fn property_sum(&self, shards: usize, name: &str) -> u64 {
        self.shard_families(shards)
            .filter_map(|(db, cf)| db.property_int_value_cf(cf, name).ok().flatten())
            .sum()
    }

    /// Compaction write amplification: RocksDB's "Sum" W-Amp (bytes written
    /// by flushes and compactions per byte flushed), averaged over the column families
    /// that have flushed. 0 before the first flush.
    pub fn write_amp(&self, shards: usize) -> f64 {
        let amps: Vec<f64> = self
            .shard_families(shards)
            .filter_map(|(db, cf)| db.property_value_cf(cf, "rocksdb.cfstats").ok().flatten())
            .filter_map(|text| sum_row_w_amp(&text))
            .filter(|a| *a > 0.0)
            .collect();
        if amps.is_empty() {
            0.0
        } else {
            amps.iter().sum::<f64>() / amps.len() as f64
        }
    }
}

impl Engine {
    /// Bytes compactions have written since the start, over every shard
    /// column family (RocksDB's "Cumulative compaction: N GB write" line,
    /// so to 10 MB).
    pub fn compaction_written(&self, shards: usize) -> u64 {
        self.shard_families(shards)
            .filter_map(|(db, cf)| db.property_value_cf(cf, "rocksdb.cfstats").ok().flatten())
            .filter_map(|text| cumulative_compaction_gb(&text))
            .map(|gb| (gb * 1e9) as u64)
            .sum()
    }
}

/// The GB of "Cumulative compaction: 1.23 GB write, ..." in cfstats.
fn cumulative_compaction_gb(cfstats: &str) -> Option<f64> {
    let line = cfstats.lines().find(|l| l.starts_with("Cumulative compaction:"))?;
    line.strip_prefix("Cumulative compaction:")?.split_whitespace().next()?.parse().ok()
}

/// From RocksDB's compaction stats table, the "Sum" row's W-Amp.
fn sum_row_w_amp(cfstats: &str) -> Option<f64> {
    let mut header: Option<Vec<&str>> = None;
    for line in cfstats.lines() {
        let cols: Vec<&str> = line.split_whitespace().collect();
        if cols.first() == Some(&"Level") && header.is_none() {
            header = Some(cols);
        } else if cols.first() == Some(&"Sum") {
            let h = header.as_ref()?;
            // Size is "61.76 KB": two words under one heading.
            let shift = cols.len().saturating_sub(h.len());
            let at = h.iter().position(|c| *c == "W-Amp")?;
            return cols.get(at + shift).and_then(|v| v.parse::<f64>().ok());
        }
    }
    None
}

/// The memory RocksDB holds, as INFO memory reports it (bytes).
#[derive(Debug, Default, Clone, Copy)]
pub struct RocksMemory {
    pub block_cache_capacity: u64,
    pub block_cache_usage: u64,
    /// In use right now (pinned top-level index and filter partitions,
    /// blocks being read): not evictable.
    pub block_cache_pinned: u64,
    /// The cache's index and filter blocks (partitions included).
    pub index_filter_in_cache: u64,
    pub memtables: u64,
    /// The memory budget's cap on memtables (0: none).
    pub memtables_cap: u64,
    /// Table readers outside the cache (the top-level index and filter
    /// when pinned, properties).
    pub table_readers: u64,
}

impl Engine {
    pub fn memory(&self, shards: usize) -> RocksMemory {
        let stats = self
            .shard_families(shards)
            .find_map(|(db, cf)| db.property_value_cf(cf, "rocksdb.block-cache-entry-stats").ok().flatten())
            .unwrap_or_default();
        RocksMemory {
            block_cache_capacity: self.block_cache_bytes,
            block_cache_usage: self.block_cache.get_usage() as u64,
            block_cache_pinned: self.block_cache.get_pinned_usage() as u64,
            index_filter_in_cache: ["FilterBlock", "FilterMetaBlock", "IndexBlock"]
                .iter()
                .map(|r| role_bytes(&stats, r))
                .sum(),
            memtables: self.property_sum(shards, "rocksdb.cur-size-all-mem-tables"),
            memtables_cap: self.memtables.as_ref().map_or(0, |m| m.get_buffer_size() as u64),
            table_readers: self.property_sum(shards, "rocksdb.estimate-table-readers-mem"),
        }
    }
}

/// The bytes of one block role in RocksDB's block-cache-entry-stats text:
/// "... IndexBlock(12,1.50 MB,2.3%) ..." (0 when absent).
fn role_bytes(stats: &str, role: &str) -> u64 {
    let Some(at) = stats.find(&format!(" {role}(")) else {
        return 0;
    };
    let rest = &stats[at + role.len() + 2..];
    let Some(size) = rest.split(',').nth(1) else {
        return 0;
    };
    let mut words = size.split_whitespace();
    let (Some(n), unit) = (words.next().and_then(|n| n.parse::<f64>().ok()), words.next().unwrap_or("")) else {
        return 0;
    };
    let scale = match unit {
        "KB" => 1u64 << 10,
        "MB" => 1 << 20,
        "GB" => 1 << 30,
        "TB" => 1 << 40,
        _ => 1,
    };
    (n * scale as f64) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::families::cf_name;

    #[test]
    fn compaction_bytes_come_from_the_cumulative_line() {
        let text = "** Compaction Stats [shard-0] **\nCumulative compaction: 1.25 GB write, 3.10 MB/s write, 1.00 GB read, 2.00 MB/s read, 4.1 seconds\n";
        assert_eq!(cumulative_compaction_gb(text), Some(1.25));
        assert_eq!(cumulative_compaction_gb("nothing"), None);
    }

    #[test]
    fn write_amp_comes_from_the_compaction_stats() {
        let dir = tempfile::tempdir().unwrap();
        let e = Engine::open(&super::super::test_opts(dir.path(), 1, 1 << 20)).unwrap();
        assert_eq!(e.write_amp(1), 0.0);
        let cf = e.main().cf_handle(&cf_name(0)).unwrap();
        for round in 0..6u32 {
            for i in 0..20_000u32 {
                e.main()
                    .put_cf(cf, format!("k{i:08}").as_bytes(), round.to_be_bytes().repeat(16))
                    .unwrap();
            }
            e.main().flush_cf(cf).unwrap();
        }
        e.main().compact_range_cf(cf, None::<&[u8]>, None::<&[u8]>);
        let text = e.main().property_value_cf(cf, "rocksdb.cfstats").unwrap().unwrap();
        let amp = sum_row_w_amp(&text).unwrap_or_else(|| panic!("{text}"));
        assert!(amp >= 1.0, "{amp}\n{text}");
        let wa = e.write_amp(1);
        assert!((wa - amp).abs() < 0.01, "{wa} vs {amp}");
    }

    #[test]
    fn reads_block_cache_entry_stats() {
        let s = "Block cache entry stats(count,size,portion): DataBlock(907,3.59 MB,44.9%) FilterBlock(13,40.25 KB,0.49%) IndexBlock(20,1.50 MB,18.7%) Misc(1,0.00 KB,0%)\n";
        assert_eq!(role_bytes(s, "DataBlock"), (3.59 * 1048576.0) as u64);
        assert_eq!(role_bytes(s, "FilterBlock"), (40.25 * 1024.0) as u64);
        assert_eq!(role_bytes(s, "IndexBlock"), 1572864);
        assert_eq!(role_bytes(s, "FilterMetaBlock"), 0);
    }
}
