//! State shared by every shard: configuration, the storage engine, the
//! client registry and process-wide counters. Everything here is `Sync`;
//! nothing here is touched per command except through atomics.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::config::Config;
use crate::storage::Engine;

/// What CLIENT LIST / KILL know of a connection.
pub struct ClientInfo {
    pub id: u64,
    pub addr: String,
    pub laddr: String,
    pub fd: i32,
    pub shard: usize,
    pub created: Instant,
    pub name: Mutex<String>,
    pub lib_name: Mutex<String>,
    pub lib_ver: Mutex<String>,
    /// Index in `cmd::TABLE` of the last command, plus one (0: none yet).
    pub last_cmd: AtomicUsize,
    pub last_active_ms: AtomicU64,
    pub db: AtomicU8,
    pub resp: AtomicU8,
    pub killed: AtomicBool,
}

impl ClientInfo {
    /// Closes the socket under the connection: its pending read returns 0.
    pub fn kill(&self) {
        self.killed.store(true, Ordering::SeqCst);
        // SAFETY: `fd` stays open while the client is registered; the
        // connection unregisters (under the registry lock we hold) before
        // its socket is closed, so this never touches a reused descriptor.
        unsafe {
            libc::shutdown(self.fd, libc::SHUT_RDWR);
        }
    }

    pub fn text(m: &Mutex<String>) -> String {
        m.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

pub struct Global {
    pub config: Config,
    pub engine: &'static Engine,
    pub shards: usize,
    pub databases: usize,
    pub started: Instant,
    pub run_id: String,
    pub port: u16,
    pub clients: Mutex<BTreeMap<u64, Arc<ClientInfo>>>,
    pub next_client_id: AtomicU64,
    pub total_connections: AtomicU64,
    pub rejected_connections: AtomicU64,
    pub lastsave: AtomicU64,
    pub bgsave_running: AtomicBool,
    /// Slow-log entry ids, process-wide so SLOWLOG GET can merge shards.
    pub slowlog_next_id: AtomicU64,
    pub latency: crate::monitor::LatencyMonitor,
    /// The shards' listening sockets, stopped first at shutdown.
    pub listeners: Mutex<Vec<i32>>,
    /// The memory budget the caches were sized by (`storage::budget`).
    pub memory: crate::storage::budget::Plan,
}

impl Global {
    pub fn max_string_len(&self) -> usize {
        self.config.proto_max_bulk_len.load(Ordering::Relaxed).max(0) as usize
    }

    pub fn connected(&self) -> usize {
        self.clients.lock().map(|c| c.len()).unwrap_or(0)
    }
}

pub use crate::clock::{now_ms, now_us};
