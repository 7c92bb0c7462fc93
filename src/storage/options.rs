//! Each shard column family's RocksDB options: tables, filters, memtables,
//! compression. The reasons and their measurements are beside each one.

use rocksdb::{BlockBasedOptions, Cache, DBCompressionType, Options};

use super::{gc, StoreOptions};

pub(super) fn cf_options(cache: &Cache, opts: &StoreOptions, gc: gc::Slot) -> Options {
    let mut o = Options::default();
    // Garbage (members of deleted collections, expired hash fields) goes in
    // compaction; see `gc`.
    o.set_compaction_filter_factory(gc::GcFactory::new(gc));
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
    o.set_memtable_prefix_bloom_ratio(0.1);
    o.set_memtable_whole_key_filtering(true);
    o.set_write_buffer_size(opts.write_buffer_bytes);
    o.set_max_write_buffer_number(4);
    o.set_level_compaction_dynamic_level_bytes(true);
    o.set_compression_type(DBCompressionType::Lz4);
    o.set_bottommost_compression_type(DBCompressionType::Zstd);
    o
}
