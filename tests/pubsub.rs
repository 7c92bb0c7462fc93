//! Pub/sub (issue 15) against Debian's redis-server: multi-client scripts
//! compared byte for byte on 1 and 4 shards and in RESP3 (subscribers and
//! publishers land on different shards' cores), then what only Basalt can
//! be asked: one order per channel for every subscriber with publishers on
//! several cores, CLIENT LIST's view, and the output buffer limit cutting
//! a subscriber that does not read (checked on redis-server too).

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{run_clients, Basalt, Raw, RedisServer};

const SCRIPTS: &[(&str, &str)] = &[
    (
        "subscribe-publish-unsubscribe",
        r#"
        A> SUBSCRIBE news sport
        A<
        A<
        B: PUBLISH news hello
        A<
        B: PUBLISH sport "two words"
        A<
        B: PUBLISH weather rain
        B: PUBSUB NUMSUB news sport weather
        ~B: PUBSUB CHANNELS
        ~B: PUBSUB CHANNELS s*
        B: PUBSUB CHANNELS nomatch*
        A: UNSUBSCRIBE news
        B: PUBLISH news unheard
        B: PUBLISH sport heard
        A<
        A: UNSUBSCRIBE news
        A: UNSUBSCRIBE
        A: UNSUBSCRIBE
        B: PUBSUB NUMSUB sport
        B: PUBSUB CHANNELS
        A: SET k v
        A: GET k
        "#,
    ),
    (
        "same-channel-twice-and-many-subscribers",
        r#"
        A> SUBSCRIBE c c
        A<
        A<
        C> SUBSCRIBE c
        C<
        D> SUBSCRIBE other c
        D<
        D<
        B: PUBLISH c m1
        A<
        C<
        D<
        B: PUBSUB NUMSUB c other
        A> UNSUBSCRIBE
        A<
        D> UNSUBSCRIBE
        D<< 2
        B: PUBLISH c m2
        C<
        B: PUBSUB NUMSUB c other
        "#,
    ),
    (
        "patterns",
        r#"
        A> PSUBSCRIBE news.* h?llo [ab]x
        A<
        A<
        A<
        B: PUBSUB NUMPAT
        B: PUBLISH news.tech t1
        A<
        B: PUBLISH hello h1
        A<
        B: PUBLISH bx b1
        A<
        B: PUBLISH cx none
        A> SUBSCRIBE news.tech
        A<
        B: PUBLISH news.tech both
        A<
        A<
        A: PUNSUBSCRIBE h?llo
        B: PUBSUB NUMPAT
        A> PUNSUBSCRIBE
        A<< 2
        A: PUNSUBSCRIBE
        B: PUBSUB NUMPAT
        A: UNSUBSCRIBE news.tech
        C> PSUBSCRIBE *
        C<
        B: PUBLISH "" empty-channel
        B: PUBLISH x star
        C<
        C: PUNSUBSCRIBE *
        "#,
    ),
    (
        "subscribed-mode-refuses-other-commands",
        r#"
        A> SUBSCRIBE c
        A<
        A: GET k
        A: SET k v
        A: CONFIG GET maxclients
        A: CLIENT ID
        A: MULTI
        A: PING
        A: PING hi
        A: PING a b
        A: NOSUCHCOMMAND
        A: SUBSCRIBE
        A> PSUBSCRIBE p*
        A<
        A: UNSUBSCRIBE c
        A: GET k
        A: PUNSUBSCRIBE
        A: GET k
        A: PING
        A> SUBSCRIBE c
        A<
        A: QUIT
        B: PUBSUB NUMSUB c
        "#,
    ),
    (
        "reset-leaves-subscribed-mode",
        r#"
        A> SUBSCRIBE c
        A<
        A> PSUBSCRIBE p*
        A<
        A> SSUBSCRIBE s
        A<
        A: RESET
        A: GET k
        B: PUBLISH c m
        B: PUBLISH px m
        B: SPUBLISH s m
        B: PUBSUB NUMSUB c
        B: PUBSUB NUMPAT
        B: PUBSUB SHARDNUMSUB s
        "#,
    ),
    (
        "shard-channels",
        r#"
        A> SSUBSCRIBE orders{1} orders{2}
        A<
        A<
        A> SUBSCRIBE plain
        A<
        B: SPUBLISH orders{1} o1
        A<
        B: PUBLISH orders{1} not-for-shard-subscribers
        B: SPUBLISH plain not-for-channel-subscribers
        B: PUBSUB SHARDNUMSUB orders{1} orders{2} none
        ~B: PUBSUB SHARDCHANNELS
        B: PUBSUB SHARDCHANNELS orders{2}
        B: PUBSUB CHANNELS
        A: SUNSUBSCRIBE orders{1}
        A> SUNSUBSCRIBE
        A<
        A: SUNSUBSCRIBE
        A: UNSUBSCRIBE
        "#,
    ),
    (
        "transactions-and-errors",
        r#"
        A: MULTI
        A: SUBSCRIBE t
        A: EXEC
        A: PING
        A: UNSUBSCRIBE
        A: MULTI
        A: SSUBSCRIBE st
        A: EXEC
        A: MULTI
        A: PUBLISH t m
        A: EXEC
        B: SUBSCRIBE
        B: PSUBSCRIBE
        B: SSUBSCRIBE
        B: PUBLISH only-channel
        B: SPUBLISH only-channel
        B: PUBSUB
        B: PUBSUB NOSUCH
        B: PUBSUB CHANNELS a b
        B: PUBSUB SHARDCHANNELS a b
        B: PUBSUB NUMPAT extra
        B: PUBSUB NUMSUB
        B: PUBSUB SHARDNUMSUB
        B: UNSUBSCRIBE never
        B: PUNSUBSCRIBE never*
        B: SUNSUBSCRIBE never
        B: GET never
        "#,
    ),
];

#[test]
fn pubsub_matches_redis_on_one_shard() {
    for (name, script) in SCRIPTS {
        run_clients(name, script, 1, false);
    }
}

#[test]
fn pubsub_matches_redis_on_four_shards() {
    for (name, script) in SCRIPTS {
        run_clients(name, script, 4, false);
    }
}

/// RESP3: messages are pushes, and a subscribed client runs any command.
#[test]
fn pubsub_matches_redis_in_resp3() {
    for (name, script) in SCRIPTS.iter().filter(|(n, _)| *n != "subscribed-mode-refuses-other-commands") {
        run_clients(name, script, 4, true);
    }
    run_clients(
        "resp3-subscribed-clients-run-anything",
        r#"
        A> SUBSCRIBE c
        A<
        A: SET k v
        A: GET k
        A: PING
        B: PUBLISH c m
        A<
        A: GET k
        A: UNSUBSCRIBE
        "#,
        4,
        true,
    );
}

/// The payload of a message reply (its last bulk string).
fn payload(reply: &[u8]) -> String {
    let text = String::from_utf8_lossy(reply);
    let mut lines: Vec<&str> = text.split("\r\n").collect();
    lines.pop();
    lines.last().map(|s| s.to_string()).unwrap_or_default()
}

/// Three publishers on their own connections (so, on 4 shards, mostly on
/// other cores than the subscribers) publish numbered messages to one
/// channel; four subscribers, two by name and two by pattern, each get
/// all of them, each publisher's in its order, and all four the same
/// interleaving: one order per channel, as one Redis thread gives.
#[test]
fn every_subscriber_sees_one_order_per_channel() {
    const PER: usize = 3000;
    const BATCH: usize = 50;
    let basalt = Basalt::start(4);
    let mut subs: Vec<Raw> = (0..4).map(|_| basalt.raw()).collect();
    for (i, s) in subs.iter_mut().enumerate() {
        let (cmd, what) = if i < 2 { ("SUBSCRIBE", "orders") } else { ("PSUBSCRIBE", "ord*") };
        let reply = s.cmd(&[cmd, what]);
        assert!(reply.ends_with(b":1\r\n"), "{}", common::show(&reply));
    }
    let port = basalt.port;
    let publishers: Vec<_> = (0..3)
        .map(|p| {
            std::thread::spawn(move || {
                let mut c = Raw::connect(port);
                for start in (0..PER).step_by(BATCH) {
                    let mut bytes = Vec::new();
                    for i in start..start + BATCH {
                        bytes.extend(Raw::encode(&["PUBLISH", "orders", &format!("p{p}:{i}")]));
                    }
                    c.send_bytes(&bytes);
                    for _ in 0..BATCH {
                        assert_eq!(c.reply(), b":4\r\n", "every subscriber receives");
                    }
                }
            })
        })
        .collect();
    // Read while they publish, so no queue grows without bound.
    let readers: Vec<_> = subs
        .into_iter()
        .map(|mut s| std::thread::spawn(move || (0..3 * PER).map(|_| payload(&s.reply())).collect::<Vec<_>>()))
        .collect();
    for p in publishers {
        p.join().expect("publisher");
    }
    let seen: Vec<Vec<String>> = readers.into_iter().map(|r| r.join().expect("subscriber")).collect();
    for (i, got) in seen.iter().enumerate() {
        let mut next = [0usize; 3];
        for m in got {
            let (p, n) = m.trim_start_matches('p').split_once(':').expect("p:i");
            let (p, n): (usize, usize) = (p.parse().expect("p"), n.parse().expect("i"));
            assert_eq!(n, next[p], "subscriber {i}: publisher {p}'s messages out of order");
            next[p] += 1;
        }
        assert_eq!(next, [PER; 3], "subscriber {i} missed messages");
        assert_eq!(got, &seen[0], "subscriber {i} saw another interleaving than subscriber 0");
    }
}

/// CLIENT LIST shows subscriptions (flags=P, sub/psub/ssub) and TYPE
/// pubsub picks subscribers; INFO counts channels, patterns and clients.
#[test]
fn client_list_and_info_show_subscribers() {
    let basalt = Basalt::start(2);
    let mut sub = basalt.raw();
    sub.cmd(&["SUBSCRIBE", "a"]);
    sub.send_bytes(&Raw::encode(&["SUBSCRIBE", "b"]));
    sub.reply();
    sub.cmd(&["PSUBSCRIBE", "p*"]);
    sub.cmd(&["SSUBSCRIBE", "s"]);
    let mut c = basalt.raw();
    let text = |r: Vec<u8>| String::from_utf8_lossy(&r).to_string();
    let list = text(c.cmd(&["CLIENT", "LIST", "TYPE", "pubsub"]));
    assert_eq!(list.matches("id=").count(), 1, "{list}");
    assert!(list.contains(" flags=P ") && list.contains(" sub=2 psub=1 ssub=1 "), "{list}");
    let normal = text(c.cmd(&["CLIENT", "LIST", "TYPE", "normal"]));
    assert!(
        normal.contains(" flags=N ") && normal.contains(" sub=0 psub=0 ssub=0 ") && !normal.contains("flags=P"),
        "{normal}"
    );
    // The last command by Redis's fullname, as 7.x shows it.
    assert!(
        normal.contains(" cmd=client|list ") && list.contains(" cmd=ssubscribe "),
        "{normal}{list}"
    );
    let info = text(c.cmd(&["INFO"]));
    for want in [
        "pubsub_channels:2\r\n",
        "pubsub_patterns:1\r\n",
        "pubsubshard_channels:1\r\n",
        "pubsub_clients:1\r\n",
    ] {
        assert!(info.contains(want), "INFO lacks {want:?}");
    }
    sub.cmd(&["RESET"]);
    let list = text(c.cmd(&["CLIENT", "LIST", "TYPE", "pubsub"]));
    assert!(!list.contains("id="), "{list}");
    assert!(text(c.cmd(&["INFO", "stats"])).contains("pubsub_channels:0\r\n"));
}

/// Publishes 1 KiB messages to `ch`, 100 at a time with `pause` between,
/// until nobody subscribes any more (the subscriber was cut) or `max` were
/// sent or `deadline` passed; how many were sent.
fn publish_until_cut(port: u16, ch: &str, max: usize, pause: Duration, deadline: Duration) -> Option<usize> {
    let mut c = Raw::connect(port);
    let data = "x".repeat(1024);
    let started = Instant::now();
    let mut sent = 0;
    while sent < max && started.elapsed() < deadline {
        let mut bytes = Vec::new();
        for _ in 0..100 {
            bytes.extend(Raw::encode(&["PUBLISH", ch, &data]));
        }
        c.send_bytes(&bytes);
        let receivers: Vec<Vec<u8>> = (0..100).map(|_| c.reply()).collect();
        sent += 100;
        if receivers.last().is_some_and(|r| r == b":0\r\n") {
            return Some(sent);
        }
        std::thread::sleep(pause);
    }
    None
}

/// A subscriber that stops reading is disconnected once what waits for it
/// passes `client-output-buffer-limit pubsub`: at once over the hard
/// limit, after the soft limit's seconds over the soft one. Both cases run
/// on redis-server too, so the test asks what Redis does.
#[test]
fn output_buffer_limit_cuts_a_subscriber_that_does_not_read() {
    let redis = RedisServer::start();
    let basalt = Basalt::start(2);
    for (server, port) in [("redis", redis.port), ("basalt", basalt.port)] {
        // Hard: cut at once. Soft: cut once over it for more than a second
        // (Redis counts whole seconds), so publish slowly for a while.
        for (limit, pause) in [("pubsub 1mb 0 0", 0), ("pubsub 0 512kb 1", 10)] {
            let mut admin = Raw::connect(port);
            assert_eq!(admin.cmd(&["CONFIG", "SET", "client-output-buffer-limit", limit]), b"+OK\r\n");
            let mut sub = TcpStream::connect(("127.0.0.1", port)).expect("connect");
            sub.write_all(&Raw::encode(&["SUBSCRIBE", "flood"])).expect("subscribe");
            let mut head = [0u8; 64];
            let n = sub.read(&mut head).expect("subscribed");
            assert!(head[..n].ends_with(b":1\r\n"), "{server}: {}", common::show(&head[..n]));
            // The subscriber reads nothing more. Sockets buffer some
            // megabytes; 200 MiB is far past any of them.
            let pause = Duration::from_millis(pause);
            let sent = publish_until_cut(port, "flood", 200_000, pause, Duration::from_secs(30));
            assert!(sent.is_some(), "{server} [{limit}]: the subscriber was never cut");
            sub.set_read_timeout(Some(Duration::from_secs(10))).ok();
            let mut sink = vec![0u8; 1 << 20];
            let closed = loop {
                match sub.read(&mut sink) {
                    Ok(0) | Err(_) => break true,
                    Ok(_) => continue,
                }
            };
            assert!(closed, "{server} [{limit}]: the subscriber's connection stays open");
            let info = String::from_utf8_lossy(&admin.cmd(&["INFO", "clients"])).to_string();
            assert!(info.contains("connected_clients:1\r\n"), "{server}: {info}");
        }
    }
    let mut admin = basalt.raw();
    let stats = String::from_utf8_lossy(&admin.cmd(&["INFO", "stats"])).to_string();
    assert!(stats.contains("client_output_buffer_limit_disconnections:2\r\n"), "{stats}");
}

/// MONITOR: the lines every client's commands produce, compared with
/// redis-server's without their time and client port.
const MONITOR_SCRIPT: &str = r#"
    M: MONITOR
    A: SET k "a b\"c"
    M<
    A: GET k
    M<
    A: SELECT 2
    M<
    A: SET x 1
    M<
    A: CONFIG GET maxclients
    !A: CLIENT LIST
    A: NOSUCHCOMMAND
    A: GET
    !A: CLIENT ID
    M<
    A: AUTH wrong
    M<
    A: AUTH someone wrong
    M<
    A: ECHO "tab	and\x01"
    M<
    A: MULTI
    M<
    A: SET y 1
    A: INCR y
    A: EXEC
    M<
    M<
    M<
    B: LPUSH l a b
    M<
    B: RPOP l
    M<
    M: PING
    M<
    M: GET k
    M: SET k v
    # A second MONITOR is ignored without a reply.
    M> MONITOR
    M: PING
    M<
    M: RESET
    A: SET z 1
    M: PING
"#;

/// The script with the monitor as client C.
fn on_c(script: &str) -> String {
    script.replace("M:", "C:").replace("M<", "C<").replace("M>", "C>")
}

#[test]
fn monitor_matches_redis() {
    for shards in [1, 4] {
        run_clients("monitor", &on_c(MONITOR_SCRIPT), shards, false);
    }
    run_clients("monitor-resp3", &on_c(MONITOR_SCRIPT), 4, true);
}

/// Commands that run on four shards all reach the monitor, in the order
/// one client sent them (each awaited its reply), with that client's
/// address; a pipelined burst arrives whole.
#[test]
fn monitor_sees_every_shard_with_the_clients_address() {
    let basalt = Basalt::start(4);
    let mut m = basalt.raw();
    assert_eq!(m.cmd(&["MONITOR"]), b"+OK\r\n");
    let mut a = basalt.raw();
    let info = String::from_utf8_lossy(&a.cmd(&["CLIENT", "INFO"])).to_string();
    let addr = info.split(' ').find_map(|f| f.strip_prefix("addr=")).expect("addr").to_string();
    let shown = String::from_utf8_lossy(&m.reply()).to_string();
    assert!(shown.ends_with("\"CLIENT\" \"INFO\"\r\n"), "{shown}");
    for i in 0..100 {
        assert_eq!(a.cmd(&["SET", &format!("key:{i}"), "v"]), b"+OK\r\n");
    }
    let mut burst = Vec::new();
    for i in 0..100 {
        burst.extend(Raw::encode(&["GET", &format!("key:{i}")]));
    }
    a.send_bytes(&burst);
    (0..100).for_each(|_| {
        a.reply();
    });
    let lines: Vec<String> = (0..200).map(|_| String::from_utf8_lossy(&m.reply()).to_string()).collect();
    for (i, l) in lines[..100].iter().enumerate() {
        let want = format!(" [0 {addr}] \"SET\" \"key:{i}\" \"v\"\r\n");
        assert!(l.starts_with('+') && l.ends_with(&want), "line {i}: {l:?}, want …{want:?}");
    }
    let mut gets: Vec<&String> = lines[100..].iter().collect();
    gets.sort();
    gets.dedup_by(|x, y| x.split_once(' ').map(|p| p.1) == y.split_once(' ').map(|p| p.1));
    assert_eq!(gets.len(), 100, "every GET of the burst shown once");
    let flags = String::from_utf8_lossy(&a.cmd(&["CLIENT", "LIST"])).to_string();
    assert!(flags.contains(" flags=O "), "{flags}");
}

/// Keyspace notifications (`notify-keyspace-events`): what subscriber A
/// receives on `__keyspace@*` and `__keyevent@*` while B runs string and
/// generic key commands; every event's two messages are compared.
const NOTIFY_SCRIPT: &str = r#"
    B: CONFIG SET notify-keyspace-events KEA
    A> PSUBSCRIBE __key*__:*
    A<
    B: SET s v
    A<
    A<
    B: SET s v EX 100
    A<
    A<
    A<
    A<
    B: SET s w KEEPTTL
    A<
    A<
    B: SETNX s x
    B: SETNX n x
    A<
    A<
    B: INCR counter
    A<
    A<
    B: INCRBYFLOAT counter 1.5
    A<
    A<
    B: APPEND s tail
    A<
    A<
    B: SETRANGE s 1 XY
    A<
    A<
    B: SETRANGE s 1 ""
    B: GETSET s g
    A<
    A<
    B: EXPIRE s 100
    A<
    A<
    B: PERSIST s
    A<
    A<
    B: PERSIST s
    B: GETEX s PX 5000
    A<
    A<
    B: GETEX s PERSIST
    A<
    A<
    B: GETDEL s
    A<
    A<
    B: MSET {t}a 1 {t}b 2
    A<
    A<
    A<
    A<
    B: DEL {t}a {t}b nosuch
    A<
    A<
    A<
    A<
    B: SET r 1
    A<
    A<
    B: RENAME r r2
    A<
    A<
    A<
    A<
    B: COPY r2 r3
    A<
    A<
    B: MOVE r3 1
    A<
    A<
    A<
    A<
    B: EXPIRE r2 0
    A<
    A<
    B: SET gone 1 PX 1
    A<
    A<
    A<
    A<
    SLEEP 20
    B: GET gone
    A<
    A<
    # Active expiry: nobody reads the key.
    B: SET active 1 PX 50
    A<
    A<
    A<
    A<
    SLEEP 600
    A<
    A<
    B: CONFIG SET notify-keyspace-events E$
    B: SET only-event 1
    A<
    B: DEL only-event
    B: CONFIG SET notify-keyspace-events Kg
    B: SET quiet 1
    B: DEL quiet
    A<
    B: CONFIG SET notify-keyspace-events ""
    B: SET silent 1
    B: DEL silent
    B: PUBLISH __keyspace@0__:done end
    A<
"#;

#[test]
fn keyspace_notifications_match_redis() {
    for shards in [1, 4] {
        run_clients("notify", NOTIFY_SCRIPT, shards, false);
    }
    run_clients("notify-resp3", NOTIFY_SCRIPT, 4, true);
}

/// Hash, set and list events, what BLPOP and LMOVE send, `del` when a
/// collection empties, and a subscriber to one key's channel only.
const NOTIFY_COLLECTIONS: &str = r#"
    B: CONFIG SET notify-keyspace-events KEA
    A> PSUBSCRIBE __keyevent@0__:*
    A<
    C> SUBSCRIBE __keyspace@0__:{c}l
    C<
    B: HSET h a 1 b 2
    A<
    B: HSETNX h a 9
    B: HSETNX h c 3
    A<
    B: HINCRBY h a 5
    A<
    B: HINCRBYFLOAT h a 0.5
    A<
    B: HDEL h nosuch
    B: HDEL h a b c
    A<
    A<
    B: SADD s x y
    A<
    B: SADD s x
    B: SREM s nosuch
    B: SREM s x
    A<
    B: SPOP s
    A<
    A<
    B: SADD {c}s1 a b
    A<
    B: SADD {c}s2 b c
    A<
    B: SINTERSTORE {c}dst {c}s1 {c}s2
    A<
    B: SUNIONSTORE {c}dst {c}s1 {c}s2
    A<
    B: SDIFFSTORE {c}dst {c}s1 {c}s1
    A<
    B: SMOVE {c}s1 {c}s2 a
    A<
    A<
    B: SMOVE {c}s1 {c}s2 b
    A<
    A<
    B: RPUSH {c}l a b c d e
    A<
    C<
    B: LPUSH {c}l z
    A<
    C<
    B: LPUSHX nolist x
    B: LINSERT {c}l BEFORE c X
    A<
    C<
    B: LINSERT {c}l BEFORE nosuch X
    B: LSET {c}l 0 zz
    A<
    C<
    B: LREM {c}l 0 nosuch
    B: LREM {c}l 0 X
    A<
    C<
    B: LTRIM {c}l 0 -1
    A<
    C<
    B: LTRIM {c}l 0 3
    A<
    C<
    B: LPOP {c}l
    A<
    C<
    B: RPOP {c}l 2
    A<
    C<
    B: LMOVE {c}l {c}l2 LEFT RIGHT
    A<
    A<
    A<
    C<
    C<
    B: RPUSH {c}l2 q
    A<
    B: RPOPLPUSH {c}l2 {c}l2
    A<
    A<
    B: LMPOP 2 nosuch {c}l2 LEFT COUNT 10
    A<
    A<
    D> BLPOP {c}bl 0
    SLEEP 100
    B: RPUSH {c}bl v
    D<
    A<
    A<
    A<
"#;

#[test]
fn collection_notifications_match_redis() {
    for shards in [1, 4] {
        run_clients("notify-collections", NOTIFY_COLLECTIONS, shards, false);
    }
}

/// The `new` event (class n): before the command's own event, only when
/// the key did not exist (or had expired).
const NOTIFY_NEW: &str = r#"
    B: CONFIG SET notify-keyspace-events En$gh
    A> PSUBSCRIBE __keyevent@0__:*
    A<
    B: SET k v
    A<
    A<
    B: SET k v2
    A<
    B: HSET h f v
    A<
    A<
    B: HSET h f2 v
    A<
    B: INCR counter
    A<
    A<
    B: SET {r}a 1
    A<
    A<
    B: RENAME {r}a {r}b
    A<
    A<
    A<
    B: DEL k
    A<
    B: SET k v PX 1
    A<
    A<
    A<
    SLEEP 20
    B: SET k again
    A<
    A<
"#;

#[test]
fn new_key_notifications_match_redis() {
    for shards in [1, 4] {
        run_clients("notify-new", NOTIFY_NEW, shards, false);
    }
}
