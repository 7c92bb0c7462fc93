//! Pub/sub commands: (P|S)SUBSCRIBE, (P|S)UNSUBSCRIBE, PUBLISH, SPUBLISH
//! and PUBSUB (issue 15).
//!
//! The registry and delivery are `crate::pubsub`; a connection's own
//! subscriptions are `client::Subs`, and its loop (`server::conn`) writes
//! what arrives in its mailbox. RESP2's subscribed mode (only these
//! commands, PING, QUIT and RESET) is enforced by the dispatcher.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;

use super::args::text;
use super::keys::help_reply;
use super::{commands, subcommands, CommandSpec, Conn, SubSpec};
use crate::client::{Client, Subs};
use crate::clock::now_ms;
use crate::error::{CmdError, CmdResult};
use crate::global::Global;
use crate::pubsub::{Class, Subscriber};
use crate::resp::Reply;

/// The pub/sub commands (`cmd::table` has the line format).
#[rustfmt::skip]
pub(super) const COMMANDS: &[CommandSpec] = commands! {
    "subscribe"    -2 [pubsub noscript loading stale]      0 0 0  Conn(subscribe)    pubsub "2.0.0" "Listens for messages published to channels.";
    "unsubscribe"  -1 [pubsub noscript loading stale]      0 0 0  Conn(unsubscribe)  pubsub "2.0.0" "Stops listening to messages posted to channels.";
    "psubscribe"   -2 [pubsub noscript loading stale]      0 0 0  Conn(psubscribe)   pubsub "2.0.0" "Listens for messages published to channels that match one or more patterns.";
    "punsubscribe" -1 [pubsub noscript loading stale]      0 0 0  Conn(punsubscribe) pubsub "2.0.0" "Stops listening to messages published to channels that match one or more patterns.";
    "ssubscribe"   -2 [pubsub noscript loading stale]      1 -1 1 Conn(ssubscribe)   pubsub "7.0.0" "Listens for messages published to shard channels.";
    "sunsubscribe" -1 [pubsub noscript loading stale]      1 -1 1 Conn(sunsubscribe) pubsub "7.0.0" "Stops listening to messages posted to shard channels.";
    "publish"      3  [pubsub loading stale fast]          0 0 0  Conn(publish)      pubsub "2.0.0" "Posts a message to a channel.";
    "spublish"     3  [pubsub loading stale fast]          1 1 1  Conn(spublish)     pubsub "7.0.0" "Post a message to a shard channel";
    "pubsub"       -2 []                                   0 0 0  Conn(pubsub)       pubsub "2.8.0" "A container for Pub/Sub commands." subs PUBSUB_SUBS;
};

/// PUBSUB's subcommands.
#[rustfmt::skip]
const PUBSUB_SUBS: &[SubSpec] = subcommands! {
    "channels"      -2 [pubsub loading stale] "Returns the active channels.";
    "numpat"        2  [pubsub loading stale] "Returns a count of unique pattern subscriptions.";
    "numsub"        -2 [pubsub loading stale] "Returns a count of subscribers to channels.";
    "shardchannels" -2 [pubsub loading stale] "Returns the active shard channels.";
    "shardnumsub"   -2 [pubsub loading stale] "Returns the count of subscribers of shard channels.";
    "help"          2  [loading stale]        "Returns helpful text about the different subcommands.";
};

const PUBSUB_HELP: &[&str] = &[
    "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CHANNELS [<pattern>]",
    "    Return the currently active channels matching a <pattern> (default: '*').",
    "NUMPAT",
    "    Return number of subscriptions to patterns.",
    "NUMSUB [<channel> ...]",
    "    Return the number of subscribers for the specified channels, excluding",
    "    pattern subscriptions(default: no channels).",
    "SHARDCHANNELS [<pattern>]",
    "    Return the currently active shard level channels matching a <pattern> (default: '*').",
    "SHARDNUMSUB [<shardchannel> ...]",
    "    Return the number of subscribers for the specified shard level channel(s)",
    "HELP",
    "    Prints this help.",
];

/// The reply words of each class: subscribed, unsubscribed.
fn words(class: Class) -> (&'static [u8], &'static [u8]) {
    match class {
        Class::Channel => (b"subscribe", b"unsubscribe"),
        Class::Pattern => (b"psubscribe", b"punsubscribe"),
        Class::Shard => (b"ssubscribe", b"sunsubscribe"),
    }
}

/// The connection's subscriptions, made on its first subscribe.
pub(super) fn subs_of<'a>(c: &'a mut Conn<'_>) -> &'a mut Subs {
    let shard = c.shard;
    let id = c.client.info.id;
    c.client.pubsub.get_or_insert_with(|| {
        let (inbox, post) = shard.mailbox();
        Box::new(Subs {
            channels: Default::default(),
            patterns: Default::default(),
            shard: Default::default(),
            me: Arc::new(Subscriber::new(id, post)),
            inbox,
        })
    })
}

/// Mirrors the connection's counts into CLIENT LIST's view of it.
fn show_counts(client: &Client) {
    if let Some(s) = &client.pubsub {
        let counts = [s.channels.len(), s.patterns.len(), s.shard.len()];
        for (slot, n) in client.info.subs.iter().zip(counts) {
            slot.store(n as u32, Ordering::Relaxed);
        }
    }
}

/// Writes what arrived for the connection before this command's replies,
/// so a message published before an unsubscribe is seen before it (as in
/// Redis's output buffer). Not inside EXEC, whose reply is one array.
pub fn drain_into(client: &mut Client, r: &mut Reply) {
    if client.in_exec {
        return;
    }
    if let Some(s) = &client.pubsub {
        s.write(s.inbox.take(), r);
    }
}

/// Redis refuses the subscribe commands to a client that must get one
/// reply per command; EXEC's run counts as one, but for SSUBSCRIBE.
fn deny_blocking(client: &Client, class: Class) -> CmdResult {
    if client.in_exec && class == Class::Shard {
        return Err(CmdError::new("ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client"));
    }
    Ok(())
}

async fn subscribe_class(mut c: Conn<'_>, class: Class, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    deny_blocking(c.client, class)?;
    let g = c.st().global.clone();
    let word = words(class).0;
    for name in &argv[1..] {
        let subs = subs_of(&mut c);
        if subs.of(class).insert(name.clone()) {
            g.pubsub.subscribe(class, name, &subs.me);
        }
        r.push(3);
        r.bulk(word);
        r.bulk(name);
        r.int(subs.count(class) as i64);
    }
    show_counts(c.client);
    Ok(())
}

async fn unsubscribe_class(c: Conn<'_>, class: Class, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let g = c.st().global.clone();
    let client = c.client;
    drain_into(client, r);
    let word = words(class).1;
    let id = client.info.id;
    // Without names: every subscription of the class, or one reply with a
    // null name when there is none.
    let names: Vec<Bytes> = if argv.len() > 1 {
        argv[1..].to_vec()
    } else {
        let mut all: Vec<Bytes> = client
            .pubsub
            .as_mut()
            .map(|s| s.of(class).iter().cloned().collect())
            .unwrap_or_default();
        all.sort();
        if all.is_empty() {
            let n = client.pubsub.as_ref().map_or(0, |s| s.count(class));
            r.push(3);
            r.bulk(word);
            r.null();
            r.int(n as i64);
            return Ok(());
        }
        all
    };
    for name in &names {
        let n = match client.pubsub.as_mut() {
            Some(s) => {
                if s.of(class).remove(name) {
                    g.pubsub.unsubscribe(class, name, id);
                }
                s.count(class)
            }
            None => 0,
        };
        r.push(3);
        r.bulk(word);
        r.bulk(name);
        r.int(n as i64);
    }
    show_counts(client);
    Ok(())
}

/// Drops every subscription of a connection that resets or goes away,
/// and its MONITOR.
pub fn unsubscribe_all(g: &Global, client: &mut Client) {
    let Some(s) = client.pubsub.take() else { return };
    let id = client.info.id;
    if client.info.monitor.swap(false, Ordering::Relaxed) {
        g.pubsub.unmonitor(id);
    }
    for (class, names) in [
        (Class::Channel, &s.channels),
        (Class::Pattern, &s.patterns),
        (Class::Shard, &s.shard),
    ] {
        for n in names {
            g.pubsub.unsubscribe(class, n, id);
        }
    }
    for slot in &client.info.subs {
        slot.store(0, Ordering::Relaxed);
    }
}

pub async fn subscribe(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    subscribe_class(c, Class::Channel, argv, r).await
}

pub async fn psubscribe(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    subscribe_class(c, Class::Pattern, argv, r).await
}

pub async fn ssubscribe(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    subscribe_class(c, Class::Shard, argv, r).await
}

pub async fn unsubscribe(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    unsubscribe_class(c, Class::Channel, argv, r).await
}

pub async fn punsubscribe(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    unsubscribe_class(c, Class::Pattern, argv, r).await
}

pub async fn sunsubscribe(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    unsubscribe_class(c, Class::Shard, argv, r).await
}

/// Publishes and closes the subscribers the message put over their
/// output buffer limit; the number of receivers.
pub fn publish_to(g: &Global, shard: bool, channel: &[u8], data: &[u8]) -> usize {
    let p = g.pubsub.publish(shard, channel, data, g.config.pubsub_limits(), now_ms());
    if !p.cut.is_empty() {
        if let Ok(clients) = g.clients.lock() {
            for id in &p.cut {
                if let Some(info) = clients.get(id) {
                    tracing::warn!(client = id, "closing a subscriber over its client-output-buffer-limit (pubsub)");
                    info.kill();
                }
            }
        }
        g.output_limit_cuts.fetch_add(p.cut.len() as u64, Ordering::Relaxed);
    }
    p.receivers
}

/// Publishes a keyspace notification (`types::notify`'s hook): `event` on
/// `__keyspace@<db>__:<key>` and `key` on `__keyevent@<db>__:<event>`, as
/// `notify-keyspace-events` has K and E on.
pub fn keyspace_event(g: &Global, db: u8, event: &str, key: &[u8]) {
    use crate::config::event::{KEYEVENT, KEYSPACE};
    let flags = g.config.notify_flags.load(Ordering::Relaxed);
    if flags & KEYSPACE != 0 {
        let mut ch = format!("__keyspace@{db}__:").into_bytes();
        ch.extend_from_slice(key);
        publish_to(g, false, &ch, event.as_bytes());
    }
    if flags & KEYEVENT != 0 {
        let ch = format!("__keyevent@{db}__:{event}");
        publish_to(g, false, ch.as_bytes(), key);
    }
}

pub async fn publish(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    r.int(publish_to(&c.st().global, false, &argv[1], &argv[2]) as i64);
    Ok(())
}

pub async fn spublish(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    r.int(publish_to(&c.st().global, true, &argv[1], &argv[2]) as i64);
    Ok(())
}

pub async fn pubsub(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let g = &c.st().global;
    let sub = text(&argv[1]).to_ascii_lowercase();
    let wrong = || {
        CmdError::new(format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try PUBSUB HELP.",
            text(&argv[1])
        ))
    };
    match sub.as_str() {
        "help" => help_reply(r, PUBSUB_HELP),
        "channels" | "shardchannels" => {
            if argv.len() > 3 {
                return Err(wrong());
            }
            let class = if sub == "channels" { Class::Channel } else { Class::Shard };
            let names = g.pubsub.names(class, argv.get(2).map(|p| &p[..]));
            r.array(names.len());
            for n in &names {
                r.bulk(n);
            }
        }
        "numsub" | "shardnumsub" => {
            let class = if sub == "numsub" { Class::Channel } else { Class::Shard };
            r.array(2 * (argv.len() - 2));
            for name in &argv[2..] {
                r.bulk(name);
                r.int(g.pubsub.count(class, name) as i64);
            }
        }
        "numpat" => r.int(g.pubsub.active(Class::Pattern) as i64),
        _ => return Err(wrong()),
    }
    Ok(())
}
