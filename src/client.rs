//! A connection's state: [`Client`], what its commands change (database,
//! protocol, authentication), owned by the connection's task; and
//! [`ClientInfo`], what CLIENT LIST and CLIENT KILL read of it from any
//! shard (shared, atomics and locks). Below the commands and the server,
//! which both use them.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Per-connection state that connection commands change.
pub struct Client {
    pub info: Arc<ClientInfo>,
    pub db: u8,
    pub resp3: bool,
    pub authed: bool,
    pub closing: bool,
}

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
