//! Basalt: a Redis-compatible server that keeps its data on disk in RocksDB,
//! thread-per-core on glommio.
//!
//! Module map (each module says its job at its top):
//! - [`resp`]: RESP request parser and reply writer; depends on nothing else.
//! - [`server`]: startup, accept loop, connection loop, client registry.
//! - [`cmd`]: the command table (declared once) and argument parsing + replies
//!   per command family.
//! - [`coord`]: multi-key fan-out across shards and whole-keyspace commands.
//! - [`types`]: data structure logic on the storage layer; no RESP.
//! - [`storage`]: the only module that names `rocksdb`: open, column
//!   families, key and value encoding.
//! - [`shard`]: one shard's state and counters.
//! - [`global`]: what every shard shares: configuration, the engine, the
//!   client registry.
//! - [`client`]: a connection's state and what CLIENT LIST reads of it.
//! - [`expire`]: active expiration (and the shard's ~100 ms housekeeping tick).
//! - [`monitor`]: latency histograms, error codes, slow log, latency monitor.
//! - [`config`]: parameters from flags, file and CONFIG.
//! - [`glob`]: Redis's pattern matching.
//! - [`clock`]: the wall clock.
//! - [`error`]: the error type that maps to RESP errors.

pub mod client;
pub mod clock;
pub mod cmd;
pub mod config;
pub mod coord;
pub mod error;
pub mod expire;
pub mod glob;
pub mod global;
pub mod monitor;
pub mod resp;
pub mod server;
pub mod shard;
pub mod storage;
pub mod types;
