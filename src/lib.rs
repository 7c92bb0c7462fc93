//! Basalt: a Redis-compatible server that keeps its data on disk in RocksDB,
//! thread-per-core on glommio.
//!
//! Module map (each module says its job at its top):
//! - [`resp`]: RESP request parser and reply writer; depends on nothing else.
//! - [`server`]: startup, accept loop, connection loop (sockets, read,
//!   parse, write, the group WAL write).
//! - [`dispatch`]: a parsed batch's way to the handlers: precheck, routing,
//!   per-shard batching of pipelines, write groups, a command's misses
//!   (`dispatch::probe`), replies left to the connection, stats; where
//!   MULTI, blocking and pub/sub mode plug in.
//! - [`cmd`]: the commands, each declared on one line beside its handler
//!   (argument parsing with `cmd::args::Args`, replies), per family.
//! - [`coord`]: how operations over several shards are split, sent and
//!   merged; names no command.
//! - [`script`]: the Lua interpreter of scripts (one per shard), its
//!   environment and reply conversions; names no command.
//! - [`types`]: data structure logic on the storage layer; no RESP.
//! - [`storage`]: the only module that names `rocksdb`: open, column
//!   families, key and value encoding.
//! - [`shard`]: one shard's state and counters.
//! - [`global`]: what every shard shares: configuration, the engine, the
//!   client registry.
//! - [`blocked`]: clients blocked on keys: each waiter and each shard's
//!   queues of them (the serving is `coord::blocking`).
//! - [`pubsub`]: pub/sub subscriptions, process-wide, and delivery into
//!   each subscriber's mailbox (the commands are `cmd::pubsub`).
//! - [`client`]: a connection's state and what CLIENT LIST reads of it.
//! - [`expire`]: active expiration (and the shard's ~100 ms housekeeping tick).
//! - [`monitor`]: latency histograms, error codes, slow log, latency monitor.
//! - [`config`]: parameters from flags, file and CONFIG.
//! - [`glob`]: Redis's pattern matching.
//! - [`cluster`]: Redis Cluster's view of the process: node ids, served
//!   slots, the topology clients are shown (docs/cluster.md).
//! - [`slot`]: hash slots (CRC16, hash tags) and the shard owning each.
//! - [`clock`]: the wall clock.
//! - [`pause`]: CLIENT PAUSE's process-wide state.
//! - [`error`]: the error type that maps to RESP errors.
//! - [`allocs`]: the process's allocator, counting allocations when asked
//!   (`DEBUG ALLOCATIONS`, `perf/allocs`).

pub mod acl;
pub mod allocs;
pub mod blocked;
pub mod client;
pub mod clock;
pub mod cluster;
pub mod cmd;
pub mod config;
pub mod coord;
pub mod dispatch;
pub mod error;
pub mod expire;
pub mod glob;
pub mod global;
pub mod monitor;
pub mod pause;
pub mod pubsub;
pub mod resp;
pub mod script;
pub mod server;
pub mod shard;
pub mod slot;
pub mod storage;
pub mod types;
