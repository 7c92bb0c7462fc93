//! State shared by every shard: configuration, the storage engine, the
//! client registry and process-wide counters. Everything here is `Sync`;
//! nothing here is touched per command except through atomics. It sits
//! below the commands and the server (both read it) and names neither.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::client::ClientInfo;

use crate::config::Config;
use crate::storage::Engine;

pub struct Global {
    pub config: Config,
    pub engine: &'static Engine,
    pub shards: usize,
    pub databases: usize,
    pub started: Instant,
    /// Bytes the allocator held when the server was ready (MEMORY STATS).
    pub startup_allocated: u64,
    pub run_id: String,
    pub port: u16,
    pub clients: Mutex<BTreeMap<u64, Arc<ClientInfo>>>,
    pub next_client_id: AtomicU64,
    pub total_connections: AtomicU64,
    pub rejected_connections: AtomicU64,
    pub lastsave: AtomicU64,
    pub bgsave_running: AtomicBool,
    /// A BGREWRITEAOF (a flush of the memtables) is running.
    pub aof_rewriting: AtomicBool,
    /// Slow-log entry ids, process-wide so SLOWLOG GET can merge shards.
    pub slowlog_next_id: AtomicU64,
    pub latency: crate::monitor::LatencyMonitor,
    /// The shards' listening sockets, stopped first at shutdown.
    pub listeners: Mutex<Vec<i32>>,
    /// The memory budget the caches were sized by (`storage::budget`).
    pub memory: crate::storage::budget::Plan,
    /// Every pub/sub subscription.
    pub pubsub: crate::pubsub::PubSub,
    /// Clients closed for going over `client-output-buffer-limit`.
    pub output_limit_cuts: AtomicU64,
    /// Whether keys expire in the background (`DEBUG SET-ACTIVE-EXPIRE`).
    pub active_expire: AtomicBool,
    /// Who holds the transaction gate and who waits for it (`coord::gate`).
    pub tx_queue: Mutex<TxQueue>,
    /// The scripts EVAL and SCRIPT LOAD have seen (`script::store`).
    pub scripts: crate::script::store::Scripts,
    /// The scripts running on each shard (`script::busy`).
    pub script_board: crate::script::busy::Board,
    /// FUNCTION libraries (`script::functions`; on disk:
    /// `storage::functions`).
    pub functions: crate::script::functions::Functions,
    /// Redis Cluster's view of this process (`cluster-enabled`).
    pub cluster: crate::cluster::Cluster,
    /// ACL users and the ACL log.
    pub acl: crate::acl::Registry,
}

/// The process-wide transaction gate: whether an EXEC holds it, and the
/// EXECs waiting for it in arrival order, each handed the gate in turn
/// (`coord::gate`).
#[derive(Default)]
pub struct TxQueue {
    pub held: bool,
    /// Waiting EXECs: client id, and where to tell it the gate is its.
    pub waiting: std::collections::VecDeque<(u64, shards::Post<bool>)>,
    /// Times the gate went from one EXEC to the next without opening.
    pub handovers: u32,
}

impl Global {
    pub fn max_string_len(&self) -> usize {
        self.config.proto_max_bulk_len.load(Ordering::Relaxed).max(0) as usize
    }

    pub fn connected(&self) -> usize {
        self.clients.lock().map(|c| c.len()).unwrap_or(0)
    }
}
