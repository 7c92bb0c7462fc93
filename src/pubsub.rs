//! Pub/sub: who listens to what, process-wide, and delivery into each
//! subscriber's mailbox (`shards::Mailbox`, drained by its connection).
//!
//! One registry for every shard, behind one mutex: a PUBLISH finds its
//! channel's subscribers and the matching patterns and posts to each while
//! it holds the lock, so two publishes to one channel reach every
//! subscriber in the same order, whichever cores the publishers and the
//! subscribers run on (Redis's order, where one thread does it all). A
//! post is a push on the subscriber's queue and at most one doorbell byte
//! to its shard; the message is encoded by the subscriber's connection,
//! in its own protocol.
//!
//! `client-output-buffer-limit pubsub` counts what a subscriber's queue
//! holds: over the hard limit, or over the soft limit for longer than its
//! seconds, the subscriber is cut (the caller closes the connection, as
//! Redis's `closeClientOnOutputBufferLimitReached`), and nothing more is
//! queued for it.
//!
//! Sits beside `blocked`: it knows no client or command, only subscriber
//! ids; `client` holds a connection's own side (`client::Subs`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use shards::Post;

use crate::glob;
use crate::resp::Reply;

/// What a subscriber receives.
#[derive(Debug, Clone)]
pub enum Push {
    /// `message` (a channel's) or `smessage` (a shard channel's).
    Message { shard: bool, channel: Bytes, data: Bytes },
    /// `pmessage`: a channel matched by a pattern.
    PMessage { pattern: Bytes, channel: Bytes, data: Bytes },
    /// A MONITOR line, sent as a status reply in either protocol.
    Line(Bytes),
}

impl Push {
    /// About what it takes in an output buffer (what the limit counts).
    pub fn size(&self) -> u64 {
        let n = match self {
            Push::Message { channel, data, .. } => channel.len() + data.len() + 32,
            Push::PMessage { pattern, channel, data } => pattern.len() + channel.len() + data.len() + 44,
            Push::Line(line) => line.len() + 3,
        };
        n as u64
    }

    /// Writes the message as Redis does: an array in RESP2, a push in RESP3.
    pub fn write(&self, r: &mut Reply) {
        match self {
            Push::Message { shard, channel, data } => {
                r.push(3);
                r.bulk(if *shard { b"smessage" } else { b"message" });
                r.bulk(channel);
                r.bulk(data);
            }
            Push::PMessage { pattern, channel, data } => {
                r.push(4);
                r.bulk(b"pmessage");
                r.bulk(pattern);
                r.bulk(channel);
                r.bulk(data);
            }
            Push::Line(line) => {
                r.buf.push(b'+');
                r.buf.extend_from_slice(line);
                r.buf.extend_from_slice(b"\r\n");
            }
        }
    }
}

/// The three kinds of subscription, each with its own name space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Channel,
    Pattern,
    Shard,
}

/// `client-output-buffer-limit pubsub`: bytes (0: none) and seconds.
#[derive(Debug, Clone, Copy, Default)]
pub struct Limits {
    pub hard: u64,
    pub soft: u64,
    pub soft_secs: u64,
}

/// One subscribed connection, as publishers see it.
pub struct Subscriber {
    pub client: u64,
    post: Post<Push>,
    /// Bytes posted and not yet taken by the connection.
    queued: AtomicU64,
    /// When the queue went over the soft limit (ms; 0: it is not over).
    soft_since: AtomicU64,
    /// Over a limit: the connection is being closed; nothing more is queued.
    cut: AtomicBool,
}

impl Subscriber {
    pub fn new(client: u64, post: Post<Push>) -> Subscriber {
        Subscriber {
            client,
            post,
            queued: AtomicU64::new(0),
            soft_since: AtomicU64::new(0),
            cut: AtomicBool::new(false),
        }
    }

    /// The connection took `bytes` worth of messages off its queue.
    pub fn taken(&self, bytes: u64) {
        let _ = self
            .queued
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |q| Some(q.saturating_sub(bytes)));
    }

    /// Queues `m`; true when that put the subscriber over a limit (it is
    /// cut then, and the caller closes its connection).
    fn deliver(&self, m: Push, limits: Limits, now_ms: u64) -> bool {
        if self.cut.load(Ordering::Acquire) {
            return false;
        }
        let size = m.size();
        if !self.post.post(m) {
            return false;
        }
        let queued = self.queued.fetch_add(size, Ordering::AcqRel) + size;
        let over = if limits.hard > 0 && queued >= limits.hard {
            true
        } else if limits.soft > 0 && queued >= limits.soft {
            let since = self.soft_since.load(Ordering::Acquire);
            if since == 0 {
                self.soft_since.store(now_ms.max(1), Ordering::Release);
                false
            } else {
                now_ms.saturating_sub(since) / 1000 > limits.soft_secs
            }
        } else {
            self.soft_since.store(0, Ordering::Release);
            false
        };
        over && !self.cut.swap(true, Ordering::AcqRel)
    }
}

type Subscribers = Vec<Arc<Subscriber>>;

#[derive(Default)]
struct Registry {
    channels: HashMap<Bytes, Subscribers>,
    patterns: HashMap<Bytes, Subscribers>,
    shard_channels: HashMap<Bytes, Subscribers>,
}

impl Registry {
    fn of(&mut self, class: Class) -> &mut HashMap<Bytes, Subscribers> {
        match class {
            Class::Channel => &mut self.channels,
            Class::Pattern => &mut self.patterns,
            Class::Shard => &mut self.shard_channels,
        }
    }
}

/// What a publish did: how many received it, and which subscribers it put
/// over their output limit (to be disconnected by the caller).
#[derive(Debug, Default)]
pub struct Published {
    pub receivers: usize,
    pub cut: Vec<u64>,
}

/// Every subscription of the process, and the MONITOR clients.
#[derive(Default)]
pub struct PubSub {
    reg: Mutex<Registry>,
    monitors: Mutex<Vec<Arc<Subscriber>>>,
    /// How many clients MONITOR: every command checks this one word.
    monitoring: AtomicUsize,
}

/// Redis's `stringmatchlen` for channels: a pattern never matches the
/// empty channel unless it is empty too (unlike KEYS' `*` shortcut).
fn channel_matches(pattern: &[u8], channel: &[u8]) -> bool {
    if channel.is_empty() {
        return pattern.is_empty();
    }
    glob::matches(pattern, channel, false)
}

impl PubSub {
    fn lock(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.reg.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds `sub` to `name`'s subscribers (the caller knows it was not there).
    pub fn subscribe(&self, class: Class, name: &Bytes, sub: &Arc<Subscriber>) {
        self.lock().of(class).entry(name.clone()).or_default().push(sub.clone());
    }

    /// What client `client` subscribes to: (class, channel or pattern).
    pub fn subscriptions(&self, client: u64) -> Vec<(Class, Bytes)> {
        let mut reg = self.lock();
        let mut out = Vec::new();
        for class in [Class::Channel, Class::Pattern, Class::Shard] {
            for (name, subs) in reg.of(class).iter() {
                if subs.iter().any(|s| s.client == client) {
                    out.push((class, name.clone()));
                }
            }
        }
        out
    }

    /// Drops subscriber `client` from `name`; the name goes with its last one.
    pub fn unsubscribe(&self, class: Class, name: &[u8], client: u64) {
        let mut reg = self.lock();
        let map = reg.of(class);
        if let Some(subs) = map.get_mut(name) {
            subs.retain(|s| s.client != client);
            if subs.is_empty() {
                map.remove(name);
            }
        }
    }

    /// Delivers `data` on `channel` to its subscribers, then (not for shard
    /// channels) to every pattern that matches it, in that order.
    pub fn publish(&self, shard: bool, channel: &[u8], data: &[u8], limits: Limits, now_ms: u64) -> Published {
        let mut out = Published::default();
        let reg = self.lock();
        let direct = if shard { &reg.shard_channels } else { &reg.channels };
        if direct.is_empty() && (shard || reg.patterns.is_empty()) {
            return out;
        }
        // One copy for every receiver, made at the first: a slice of the
        // request would pin the connection's whole read buffer while a slow
        // subscriber waits; no receiver, no copy.
        let mut copies: Option<(Bytes, Bytes)> = None;
        let mut copy = || {
            copies
                .get_or_insert_with(|| (Bytes::copy_from_slice(channel), Bytes::copy_from_slice(data)))
                .clone()
        };
        let mut send = |s: &Subscriber, m: Push| {
            out.receivers += 1;
            if s.deliver(m, limits, now_ms) {
                out.cut.push(s.client);
            }
        };
        for s in direct.get(channel).into_iter().flatten() {
            let (channel, data) = copy();
            send(s, Push::Message { shard, channel, data });
        }
        if !shard {
            for (pattern, subs) in reg.patterns.iter().filter(|(p, _)| channel_matches(p, channel)) {
                for s in subs {
                    let (channel, data) = copy();
                    send(
                        s,
                        Push::PMessage {
                            pattern: pattern.clone(),
                            channel,
                            data,
                        },
                    );
                }
            }
        }
        out
    }

    /// The active names of `class` matching `pattern` (all without one).
    pub fn names(&self, class: Class, pattern: Option<&[u8]>) -> Vec<Bytes> {
        let mut reg = self.lock();
        reg.of(class)
            .keys()
            .filter(|n| pattern.is_none_or(|p| channel_matches(p, n)))
            .cloned()
            .collect()
    }

    /// How many subscribe to `name` (patterns not counted, as NUMSUB).
    pub fn count(&self, class: Class, name: &[u8]) -> usize {
        self.lock().of(class).get(name).map_or(0, Vec::len)
    }

    /// Makes `sub` a MONITOR client.
    pub fn monitor(&self, sub: &Arc<Subscriber>) {
        let mut m = self.monitors.lock().unwrap_or_else(|e| e.into_inner());
        if !m.iter().any(|s| s.client == sub.client) {
            m.push(sub.clone());
            self.monitoring.store(m.len(), Ordering::Release);
        }
    }

    /// Ends client `client`'s MONITOR, if it had one.
    pub fn unmonitor(&self, client: u64) {
        let mut m = self.monitors.lock().unwrap_or_else(|e| e.into_inner());
        m.retain(|s| s.client != client);
        self.monitoring.store(m.len(), Ordering::Release);
    }

    /// Whether some client MONITORs (checked after every command).
    #[inline]
    pub fn monitored(&self) -> bool {
        self.monitoring.load(Ordering::Relaxed) > 0
    }

    /// Sends a MONITOR line to every monitor, in one order for all.
    pub fn feed(&self, line: Bytes) {
        let m = self.monitors.lock().unwrap_or_else(|e| e.into_inner());
        for s in m.iter() {
            s.deliver(Push::Line(line.clone()), Limits::default(), 0);
        }
    }

    /// How many names of `class` have subscribers (INFO, PUBSUB NUMPAT).
    pub fn active(&self, class: Class) -> usize {
        self.lock().of(class).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_never_match_the_empty_channel_unless_empty() {
        assert!(!channel_matches(b"*", b""));
        assert!(channel_matches(b"", b""));
        assert!(channel_matches(b"*", b"a"));
        assert!(channel_matches(b"news.*", b"news.x"));
        assert!(!channel_matches(b"news.*", b"sport.x"));
    }

    #[test]
    fn sizes_grow_with_the_message() {
        let m = |d: &[u8]| Push::Message {
            shard: false,
            channel: Bytes::from_static(b"c"),
            data: Bytes::copy_from_slice(d),
        };
        assert!(m(b"0123456789").size() > m(b"").size());
    }
}
