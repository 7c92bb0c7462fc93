//! Keyspace notifications (`notify-keyspace-events`): what a shard's
//! commands, lazy and active expiry tell subscribers of
//! `__keyspace@<db>__:<key>` and `__keyevent@<db>__:<event>`.
//!
//! The types and the commands say what happened (`Keyspace::notify`, in
//! `keyspace`,
//! with Redis's event names); the publishing itself is a hook the server
//! installs (`Notifier::publish`), since pub/sub sits above the types. An
//! event leaves once the writes staged before it are in RocksDB
//! (`ShardStore::after_write`): a subscriber that reads the key it was
//! told of sees the change.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// The event classes, as `config::kinds::event` numbers them (Redis's).
pub use crate::config::event as class;

/// Publishes one event: (db, event, key).
pub type Publish = Arc<dyn Fn(u8, &'static str, &[u8]) + Send + Sync>;

/// A shard's way to publish keyspace events.
#[derive(Clone)]
pub struct Notifier {
    /// The classes `notify-keyspace-events` enables now.
    pub flags: Arc<AtomicU32>,
    pub publish: Publish,
}

impl Notifier {
    /// Whether an event of `class` is published at all: its class and at
    /// least one of the two channel kinds (K, E) are on.
    #[inline]
    pub fn wants(&self, class: u32) -> bool {
        let f = self.flags.load(Ordering::Relaxed);
        f & class != 0 && f & (class::KEYSPACE | class::KEYEVENT) != 0
    }
}
