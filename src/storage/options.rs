//! Each shard column family's RocksDB options: tables, filters, memtables,
//! compression. The reasons and their measurements are beside each one.

use rocksdb::{BlockBasedOptions, Cache, DBCompressionType, Options};

use super::{gc, StoreOptions};

/// `gc`: the compaction filter's slot and which family it filters.
pub(super) fn cf_options(cache: &Cache, opts: &StoreOptions, gc: Option<(gc::Slot, gc::Family)>) -> Options {
    let mut o = Options::default();
    // Garbage (members of deleted or long-expired collections, expired hash
    // fields, stale index entries) goes in compaction; see `gc`.
    if let Some((slot, family)) = gc {
        o.set_compaction_filter_factory(gc::GcFactory::new(slot, family));
    }
    let mut table = BlockBasedOptions::default();
    table.set_block_cache(cache);
    // Point lookups dominate (GET, meta reads before writes): a bloom filter
    // turns most misses into no disk read at all.
    table.set_bloom_filter(10.0, false);
    table.set_cache_index_and_filter_blocks(true);
    table.set_cache_index_and_filter_blocks_with_high_priority(true);
    table.set_pin_l0_filter_and_index_blocks_in_cache(true);
    // Partitioned filters and a two-level index: once the data outgrows the
    // block cache, a whole-file filter (hundreds of KiB) was evicted and
    // re-read and re-checksummed on every lookup (perf/bigdata loaded at
    // ~4k SET/s, 84% of the CPU in ReadFilterBlock). Partitions are 4 KiB;
    // the small top levels stay pinned.
    table.set_index_type(rocksdb::BlockBasedIndexType::TwoLevelIndexSearch);
    table.set_partition_filters(true);
    table.set_metadata_block_size(4096);
    table.set_pin_top_level_index_and_filter(true);
    // 4 KiB blocks: a point lookup decompresses and checksums a quarter of
    // what 16 KiB blocks cost; perf/bigdata's larger-than-cache GET went from
    // 17.9k to 27.4k ops/s (tuning.md).
    table.set_block_size(4 * 1024);
    o.set_block_based_table_factory(&table);
    // Most writes read the key's meta first (to keep key counts exact) and
    // most of those keys are not in the memtable: a whole-key bloom filter
    // in the memtable skips the skiplist search that dominated SET's profile.
    // The filter is a share of the write buffer, zeroed when a memtable
    // is made, on the writing shard's thread: 0.1 of 64 MiB was a 6.4 MiB
    // memset and its page faults, a 3-8 ms pause at every memtable switch
    // (86% of the switch). 0.02 is ~16 bits a key for 100-byte records,
    // the switch 0.5-1.4 ms, SET -P16 unchanged (tuning.md, "Memtable
    // switches").
    o.set_memtable_prefix_bloom_ratio(0.02);
    o.set_memtable_whole_key_filtering(true);
    o.set_write_buffer_size(opts.write_buffer_bytes);
    o.set_max_write_buffer_number(4);
    o.set_level_compaction_dynamic_level_bytes(true);
    o.set_compression_type(DBCompressionType::Lz4);
    // The last level holds most of the data. zstd keeps it smallest; lz4
    // costs less CPU per block read when the data does not fit in memory:
    // 10M keys capped at 512 MB, 1 shard, one run each, GET -P1 13.4k ->
    // 15.5k, -P16 25.5-25.8k -> 27.4-28.5k, for 1.4 GB -> 2.4 GB on disk
    // (tuning.md, "Bottommost compression").
    o.set_bottommost_compression_type(match opts.bottommost {
        super::Compression::Zstd => DBCompressionType::Zstd,
        super::Compression::Lz4 => DBCompressionType::Lz4,
        super::Compression::None => DBCompressionType::None,
    });
    o
}

#[cfg(test)]
mod tests {
    use super::super::{keys, test_opts, Compression, Engine};

    /// The SST bytes of 4000 values compacted to the last level under
    /// `c`, after checking that every value reads back.
    fn compacted_size(c: Compression) -> usize {
        let dir = tempfile::tempdir().unwrap();
        let mut o = test_opts(dir.path(), 1, 0);
        o.bottommost = c;
        let e: &'static Engine = Box::leak(Box::new(Engine::open(&o).unwrap()));
        let s = e.shard(0).unwrap();
        // Hex from a small pool: repeats within a block (lz4 finds them),
        // 4 bits of entropy per byte (zstd codes them).
        let mut x: u64 = 42;
        let pool: Vec<String> = (0..50)
            .map(|_| {
                (0..13)
                    .map(|_| {
                        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                        format!("{:08x}", x >> 32)
                    })
                    .collect()
            })
            .collect();
        let value = |i: usize| pool[i % pool.len()].as_bytes();
        // Members: their family has the compaction filter, so a manual
        // compaction rewrites the last level (without one, RocksDB moves an
        // L0 file down as it is, in its L0 compression).
        let member = |i: usize| keys::sub_key(0, b"h", 1, format!("k{i}").as_bytes());
        let mut b = s.batch();
        for i in 0..4000 {
            s.put(&mut b, &member(i), value(i));
        }
        s.write(b).unwrap();
        s.compact_all();
        for i in 0..4000 {
            let got = s.get_with(&member(i), |v| v.map(|v| v.to_vec())).unwrap();
            assert_eq!(got.as_deref(), Some(value(i)));
        }
        e.main().live_files().unwrap().iter().map(|f| f.size).sum()
    }

    #[test]
    fn the_bottommost_compression_is_the_configured_one() {
        let (zstd, lz4, none) = (
            compacted_size(Compression::Zstd),
            compacted_size(Compression::Lz4),
            compacted_size(Compression::None),
        );
        assert!(zstd < lz4 && lz4 < none, "zstd {zstd}, lz4 {lz4}, none {none}");
        assert_eq!(Compression::named("lz4"), Compression::Lz4);
        assert_eq!(Compression::named("none"), Compression::None);
        assert_eq!(Compression::named("zstd"), Compression::Zstd);
    }
}
