//! Clients blocked on keys (BLPOP and friends): what each waits to do, and
//! which waiters each shard holds per key, in arrival order.
//!
//! A blocked client is one [`Waiter`], shared by the shards that own its
//! keys. Whoever takes it first ([`Waiter::claim`]: a shard serving it
//! data, its timeout, CLIENT UNBLOCK, its connection going away) is the
//! only one that acts on it, so it is served exactly once and never after
//! it gave up. The serving itself (popping, moving across shards) is in
//! `coord::blocking`; this module is only the shared record and the
//! per-shard queues.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use shards::Sender;

use crate::error::CmdResult;
use crate::storage::intent::IntentRef;
use crate::types::list::End;
use crate::types::stream::Id;
use crate::types::KeyType;

/// What a blocked client does once one of its keys has data.
#[derive(Debug, Clone)]
pub enum Wait {
    /// BLPOP, BRPOP (`count` None: one element), BLMPOP (`count` Some).
    Pop { end: End, count: Option<u64> },
    /// BLMOVE, BRPOPLPUSH: pop at `from`, push at `to` of `dst`.
    Move { dst: Bytes, from: End, to: End },
    /// BZPOPMIN, BZPOPMAX (`count` None: one member), BZMPOP (`count` Some):
    /// pops from the low end of a sorted set, the high end with `max`.
    ZPop { max: bool, count: Option<u64> },
    /// XREAD (entries after each key's ID), XREADGROUP with `>` (entries
    /// new to the group, delivered to `consumer`).
    XRead(Arc<XWait>),
}

/// What a client blocked in XREAD or XREADGROUP reads.
#[derive(Debug)]
pub struct XWait {
    /// Each key and the ID its entries must follow (`$` resolved when the
    /// command ran); unused for a group.
    pub after: Vec<(Bytes, Id)>,
    /// At most this many entries (0: no limit).
    pub count: u64,
    /// (group, consumer, NOACK) for XREADGROUP.
    pub group: Option<(Bytes, Bytes, bool)>,
}

impl XWait {
    /// The ID `key`'s entries must follow.
    pub fn after(&self, key: &[u8]) -> Id {
        self.after.iter().find(|(k, _)| k[..] == *key).map_or(Id::MAX, |(_, id)| *id)
    }
}

impl Wait {
    /// The type of key this wait is served from: a key of another type
    /// leaves the waiter waiting, as Redis's blocked clients of another
    /// type are skipped.
    pub fn key_type(&self) -> KeyType {
        match self {
            Wait::Pop { .. } | Wait::Move { .. } => KeyType::List,
            Wait::ZPop { .. } => KeyType::ZSet,
            Wait::XRead(_) => KeyType::Stream,
        }
    }
}

/// What a served waiter receives: the key served and the elements popped
/// (sorted-set members with their `scores`).
/// A move whose destination lives on another shard also carries the intent
/// part that holds the element until the destination's owner pushes it.
#[derive(Debug)]
pub struct Served {
    pub key: Bytes,
    pub elements: Vec<Vec<u8>>,
    pub scores: Vec<f64>,
    /// A stream read's entries (XREAD, XREADGROUP).
    pub entries: Vec<(Id, Option<Vec<Vec<u8>>>)>,
    /// A cross-shard move's push still to do (its intent part), and
    /// whether the pop emptied the source (its events go after the push).
    pub pending: Option<(IntentRef, bool)>,
}

/// Why a waiter stopped waiting without data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gone {
    Timeout,
    /// CLIENT UNBLOCK ... TIMEOUT: replies as a timeout would.
    Unblocked,
    /// CLIENT UNBLOCK ... ERROR.
    UnblockedError,
    /// The connection closed or was killed: nobody to reply to.
    Closed,
}

/// The outcome a blocked client's connection receives.
pub type Outcome = Result<CmdResult<Served>, Gone>;

const WAITING: u8 = 0;
const TAKEN: u8 = 1;

/// One blocked client.
pub struct Waiter {
    state: AtomicU8,
    pub client: u64,
    pub db: u8,
    pub wait: Wait,
    tx: Sender<Outcome>,
}

impl Waiter {
    pub fn new(client: u64, db: u8, wait: Wait, tx: Sender<Outcome>) -> Waiter {
        Waiter {
            state: AtomicU8::new(WAITING),
            client,
            db,
            wait,
            tx,
        }
    }

    /// Takes the waiter: true for exactly one caller, ever.
    pub fn claim(&self) -> bool {
        self.state
            .compare_exchange(WAITING, TAKEN, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    pub fn is_waiting(&self) -> bool {
        self.state.load(Ordering::Acquire) == WAITING
    }

    /// Delivers the outcome (only the claimer calls it).
    pub fn deliver(&self, o: Outcome) {
        self.tx.send(o);
    }

    /// Claims and ends the wait without data; false when it was already
    /// taken (data is on its way).
    pub fn give_up(&self, why: Gone) -> bool {
        if !self.claim() {
            return false;
        }
        self.deliver(Err(why));
        true
    }
}

/// The waiters queued on one key (db, name), in arrival order.
type Queues = HashMap<(u8, Bytes), VecDeque<Arc<Waiter>>>;

/// One shard's blocked clients, by key, in arrival order.
#[derive(Default)]
pub struct Blocked {
    by_key: RefCell<Queues>,
    /// Keys that got data while serving was held back (inside a run that
    /// must complete first), served when it ends.
    ready: RefCell<Vec<(u8, Bytes)>>,
    held: Cell<u32>,
}

impl Blocked {
    /// Queues `w` on `key`.
    pub fn add(&self, db: u8, key: Bytes, w: Arc<Waiter>) {
        self.by_key.borrow_mut().entry((db, key)).or_default().push_back(w);
    }

    /// Whether anyone waits on `key` (a push checks this first: one hash
    /// lookup when nobody is blocked).
    #[inline]
    pub fn has_waiters(&self, db: u8, key: &[u8]) -> bool {
        let map = self.by_key.borrow();
        !map.is_empty() && map.contains_key(&(db, Bytes::copy_from_slice(key)))
    }

    /// The waiters of `key` still waiting, in arrival order (a copy: serving
    /// one changes the queue).
    pub fn waiting(&self, db: u8, key: &[u8]) -> Vec<Arc<Waiter>> {
        let map = self.by_key.borrow();
        match map.get(&(db, Bytes::copy_from_slice(key))) {
            Some(q) => q.iter().filter(|w| w.is_waiting()).cloned().collect(),
            None => Vec::new(),
        }
    }

    /// Drops waiter `w` from `key`'s queue (it was served or gave up).
    pub fn remove(&self, db: u8, key: &[u8], w: &Arc<Waiter>) {
        let mut map = self.by_key.borrow_mut();
        let k = (db, Bytes::copy_from_slice(key));
        if let Some(q) = map.get_mut(&k) {
            q.retain(|x| !Arc::ptr_eq(x, w));
            if q.is_empty() {
                map.remove(&k);
            }
        }
    }

    /// Holds serving back until [`Blocked::release`] (a run of commands
    /// that must complete before waiters see its pushes).
    pub fn hold(&self) {
        self.held.set(self.held.get() + 1);
    }

    /// Ends a [`Blocked::hold`]; the keys that got data meanwhile.
    pub fn release(&self) -> Vec<(u8, Bytes)> {
        self.held.set(self.held.get().saturating_sub(1));
        if self.held.get() == 0 {
            std::mem::take(&mut *self.ready.borrow_mut())
        } else {
            Vec::new()
        }
    }

    /// Whether serving is held back; if so, `key` is remembered for later.
    pub fn defer(&self, db: u8, key: &[u8]) -> bool {
        if self.held.get() == 0 {
            return false;
        }
        let mut ready = self.ready.borrow_mut();
        if !ready.iter().any(|(d, k)| *d == db && k == key) {
            ready.push((db, Bytes::copy_from_slice(key)));
        }
        true
    }

    /// The keys of dbs `a` and `b` someone waits on (SWAPDB serves those
    /// the swapped-in db has data for).
    pub fn keys_in(&self, a: u8, b: u8) -> Vec<(u8, Bytes)> {
        self.by_key.borrow().keys().filter(|(d, _)| *d == a || *d == b).cloned().collect()
    }

    /// Waiters queued on this shard (counting one per key it waits on).
    pub fn len(&self) -> usize {
        self.by_key.borrow().values().map(VecDeque::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.by_key.borrow().is_empty()
    }
}
