//! A connection's state: [`Client`], what its commands change (database,
//! protocol, authentication), owned by the connection's task; and
//! [`ClientInfo`], what CLIENT LIST and CLIENT KILL read of it from any
//! shard (shared, atomics and locks). Below the commands and the server,
//! which both use them.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::Bytes;

use crate::blocked::{Gone, Waiter};
use crate::pubsub::{Class, Push, Subscriber};

/// Per-connection state that connection commands change.
pub struct Client {
    pub info: Arc<ClientInfo>,
    pub db: u8,
    pub resp3: bool,
    pub authed: bool,
    pub closing: bool,
    /// The transaction being queued, from MULTI to EXEC or DISCARD.
    pub multi: Option<Multi>,
    /// EXEC is running the queue: blocking commands answer at once, as if
    /// their timeout had passed (Redis's `CLIENT_DENY_BLOCKING`).
    pub in_exec: bool,
    /// A gated script of this client is running one of its commands: the
    /// -BUSY its own slowness causes is not for them.
    pub in_script: bool,
    /// The keys WATCHed since the last EXEC, DISCARD or UNWATCH.
    pub watch: Option<Watch>,
    /// Pub/sub subscriptions, from the first (P|S)SUBSCRIBE on.
    pub pubsub: Option<Box<Subs>>,
    /// CLIENT REPLY: which replies the connection sends.
    pub reply: ReplyMode,
    /// The shard whose cluster node port the client came in on
    /// (`cluster-port-per-shard`); None: the main port.
    pub node: Option<usize>,
    /// The ACL user the connection runs as, as the registry held it at
    /// generation `acl_gen` (taken again when the generation moves).
    pub user: Arc<crate::acl::User>,
    pub acl_gen: u64,
}

/// CLIENT REPLY's modes. Pushed messages (pub/sub, MONITOR) are sent in
/// every mode, as Redis 7 sends them.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ReplyMode {
    On,
    /// No reply until CLIENT REPLY ON (whose +OK is sent).
    Off,
    /// CLIENT REPLY SKIP ran: the next command's reply is dropped.
    SkipNext,
    /// The command running now is the one SKIP named.
    Skipping,
}

/// A connection's own side of pub/sub: what it subscribes to (the registry
/// in `pubsub` has the other side) and the mailbox its messages arrive in.
pub struct Subs {
    pub channels: std::collections::HashSet<Bytes>,
    pub patterns: std::collections::HashSet<Bytes>,
    pub shard: std::collections::HashSet<Bytes>,
    pub me: Arc<Subscriber>,
    pub inbox: shards::Mailbox<Push>,
}

impl Subs {
    pub fn of(&mut self, class: Class) -> &mut std::collections::HashSet<Bytes> {
        match class {
            Class::Channel => &mut self.channels,
            Class::Pattern => &mut self.patterns,
            Class::Shard => &mut self.shard,
        }
    }

    /// Redis's count in (un)subscribe replies: channels and patterns
    /// together, shard channels on their own.
    pub fn count(&self, class: Class) -> usize {
        match class {
            Class::Shard => self.shard.len(),
            _ => self.channels.len() + self.patterns.len(),
        }
    }

    pub fn total(&self) -> usize {
        self.channels.len() + self.patterns.len() + self.shard.len()
    }

    /// Writes messages taken from the mailbox into `r`, and tells the
    /// output limit they left the queue.
    pub fn write(&self, items: Vec<Push>, r: &mut crate::resp::Reply) {
        let mut bytes = 0;
        for m in &items {
            bytes += m.size();
            m.write(r);
        }
        self.me.taken(bytes);
    }
}

/// What WATCH registered: the flag the keys' owners set when a write
/// touches one of them (`storage::watch`), and each key's expiry time at
/// WATCH (0: none), since a key that expires meanwhile spoils the watch too
/// (Redis's `isWatchedKeyExpired`).
#[derive(Default)]
pub struct Watch {
    pub flag: Arc<AtomicBool>,
    pub expires: Vec<u64>,
}

impl Watch {
    /// Whether EXEC must refuse the transaction at `now_ms`.
    pub fn spoiled(&self, now_ms: u64) -> bool {
        self.flag.load(Ordering::SeqCst) || self.expires.iter().any(|&e| e > 0 && e <= now_ms)
    }
}

/// A transaction between MULTI and EXEC.
#[derive(Default)]
pub struct Multi {
    /// The commands queued, checked (known, arity) but not run.
    pub queue: Vec<Vec<Bytes>>,
    /// A command was refused while queueing: EXEC answers EXECABORT.
    pub dirty: bool,
}

impl Client {
    /// Subscribed or monitoring: waits for messages, never times out.
    pub fn listening(&self) -> bool {
        self.subscribed() || self.info.monitor.load(Ordering::Relaxed)
    }

    /// In subscribed mode: some subscription is active (Redis's `CLIENT_PUBSUB`).
    pub fn subscribed(&self) -> bool {
        self.pubsub.as_ref().is_some_and(|s| s.total() > 0)
    }

    /// Leaves MULTI (EXEC, DISCARD, RESET) and unwatches: the queue, if any.
    pub fn end_multi(&mut self) -> Option<Multi> {
        self.info.multi.store(-1, Ordering::Relaxed);
        self.info.mem.multi.store(0, Ordering::Relaxed);
        self.watch = None;
        self.multi.take()
    }
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
    /// The last command ([`ClientInfo::cmd_code`]: its index in
    /// `cmd::TABLE` plus one, and its subcommand's plus one; 0: none yet).
    pub last_cmd: AtomicUsize,
    pub last_active_ms: AtomicU64,
    pub db: AtomicU8,
    pub resp: AtomicU8,
    pub killed: AtomicBool,
    /// Commands queued in MULTI; -1 outside MULTI (CLIENT LIST `multi=`).
    pub multi: AtomicI64,
    /// Channels, patterns and shard channels subscribed (CLIENT LIST
    /// `sub=`, `psub=`, `ssub=`).
    pub subs: [std::sync::atomic::AtomicU32; 3],
    /// MONITOR is on (CLIENT LIST `flags=O`).
    pub monitor: AtomicBool,
    /// The wait of a client blocked on keys (BLPOP...): CLIENT UNBLOCK and
    /// KILL end it; CLIENT LIST shows `flags=b` while it is set.
    pub waiter: Mutex<Option<Arc<Waiter>>>,
    /// Parked by CLIENT PAUSE (counted in INFO's `blocked_clients`).
    pub paused: AtomicBool,
    /// CLIENT NO-TOUCH: its commands leave access times alone (but TOUCH).
    pub no_touch: AtomicBool,
    /// The ACL user's name (CLIENT LIST `user=`, CLIENT KILL USER).
    pub user: Mutex<String>,
    /// Buffer figures for CLIENT LIST, stored by the connection after
    /// each batch (one relaxed store each).
    pub mem: ClientMem,
}

/// A connection's buffers, as CLIENT LIST shows them.
#[derive(Default)]
pub struct ClientMem {
    /// Bytes read and not parsed yet (`qbuf`), and the room left after them
    /// in the query buffer's allocation (`qbuf-free`).
    pub qbuf: AtomicU64,
    pub qbuf_free: AtomicU64,
    /// The read chunk's size (`rbs`) and the most one read filled (`rbp`).
    pub rbs: AtomicU64,
    pub rbp: AtomicU64,
    /// Replies not written yet (`omem`), and the reply buffer's allocation.
    pub omem: AtomicU64,
    pub obuf: AtomicU64,
    /// Bytes of the commands queued in MULTI (`multi-mem`).
    pub multi: AtomicU64,
}

impl ClientInfo {
    /// Closes the socket under the connection: its pending read returns 0.
    pub fn kill(&self) {
        self.killed.store(true, Ordering::SeqCst);
        // The socket goes first: a blocked client woken below (on its own
        // shard, maybe at once) must find nothing to answer on. Woken
        // first, it could write its null reply before the shutdown.
        // SAFETY: `fd` stays open while the client is registered; the
        // connection unregisters (under the registry lock we hold) before
        // its socket is closed, so this never touches a reused descriptor.
        unsafe {
            libc::shutdown(self.fd, libc::SHUT_RDWR);
        }
        if let Some(w) = self.waiter() {
            w.give_up(Gone::Closed);
        }
    }

    /// `last_cmd`'s value for command `idx` of `cmd::TABLE` and its
    /// subcommand `sub` (an index in its list), if any.
    pub fn cmd_code(idx: usize, sub: Option<usize>) -> usize {
        (idx + 1) | (sub.map_or(0, |s| s + 1) << 16)
    }

    /// [`ClientInfo::cmd_code`] back: the command's index, its subcommand's.
    pub fn cmd_of(code: usize) -> Option<(usize, Option<usize>)> {
        let idx = (code & 0xFFFF).checked_sub(1)?;
        Some((idx, (code >> 16).checked_sub(1)))
    }

    /// Subscribed to something (CLIENT LIST `flags=P`, TYPE pubsub).
    pub fn is_pubsub(&self) -> bool {
        self.subs.iter().any(|n| n.load(Ordering::Relaxed) > 0)
    }

    /// The client's wait, while it is blocked.
    pub fn waiter(&self) -> Option<Arc<Waiter>> {
        self.waiter.lock().ok().and_then(|w| w.clone())
    }

    pub fn set_waiter(&self, w: Option<Arc<Waiter>>) {
        if let Ok(mut slot) = self.waiter.lock() {
            *slot = w;
        }
    }

    /// Whether the connection is gone: killed, or its peer closed (a peek
    /// at the socket reads end of file or an error). A blocked client's
    /// task checks this while it waits, since it reads nothing meanwhile.
    pub fn peer_closed(&self) -> bool {
        if self.killed.load(Ordering::SeqCst) {
            return true;
        }
        let mut b = [0u8; 1];
        // SAFETY: `fd` stays open while the client is registered (see
        // `kill`); a non-blocking peek neither consumes nor waits.
        let n = unsafe { libc::recv(self.fd, b.as_mut_ptr().cast(), 1, libc::MSG_PEEK | libc::MSG_DONTWAIT) };
        if n == 0 {
            return true;
        }
        n < 0
            && !matches!(
                std::io::Error::last_os_error().raw_os_error(),
                Some(libc::EAGAIN) | Some(libc::EINTR)
            )
    }

    pub fn text(m: &Mutex<String>) -> String {
        m.lock().map(|s| s.clone()).unwrap_or_default()
    }
}
