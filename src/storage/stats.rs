//! RocksDB's statistics as INFO reports them.

use super::{cf_name, Engine};

impl Engine {
    /// A RocksDB integer property summed over every shard's column family.
    pub fn property_sum(&self, shards: usize, name: &str) -> u64 {
        (0..shards)
            .filter_map(|i| self.db.cf_handle(&cf_name(i)))
            .filter_map(|cf| self.db.property_int_value_cf(cf, name).ok().flatten())
            .sum()
    }

    /// Compaction write amplification: RocksDB's "Sum" W-Amp (bytes written
    /// by flushes and compactions per byte flushed), averaged over the
    /// shards that have flushed. 0 before the first flush.
    pub fn write_amp(&self, shards: usize) -> f64 {
        let amps: Vec<f64> = (0..shards)
            .filter_map(|i| self.db.cf_handle(&cf_name(i)))
            .filter_map(|cf| self.db.property_value_cf(cf, "rocksdb.cfstats").ok().flatten())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_amp_comes_from_the_compaction_stats() {
        let dir = tempfile::tempdir().unwrap();
        let e = Engine::open(&super::super::test_opts(dir.path(), 1, 1 << 20)).unwrap();
        assert_eq!(e.write_amp(1), 0.0);
        let cf = e.db.cf_handle(&cf_name(0)).unwrap();
        for round in 0..6u32 {
            for i in 0..20_000u32 {
                e.db.put_cf(cf, format!("k{i:08}").as_bytes(), round.to_be_bytes().repeat(16))
                    .unwrap();
            }
            e.db.flush_cf(cf).unwrap();
        }
        e.db.compact_range_cf(cf, None::<&[u8]>, None::<&[u8]>);
        let text = e.db.property_value_cf(cf, "rocksdb.cfstats").unwrap().unwrap();
        let amp = sum_row_w_amp(&text).unwrap_or_else(|| panic!("{text}"));
        assert!(amp >= 1.0, "{amp}\n{text}");
        let wa = e.write_amp(1);
        assert!((wa - amp).abs() < 0.01, "{wa} vs {amp}");
    }
}
