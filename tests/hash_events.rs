//! The keyspace events of the Redis 7.4/8 hash field commands, which
//! Debian's redis-server 7.0 lacks, so no differential test can check
//! them: the events Redis 8's `t_hash.c` sends, in order, on 1 and 4
//! shards (docs/pubsub.md).

mod common;

use common::{show, Basalt};

/// Runs each command and returns the events of `__keyevent@0__:*` it
/// caused, ended by a marker published after it.
fn events_of(b: &Basalt, cmds: &[&[&str]]) -> Vec<Vec<String>> {
    let mut sub = b.raw();
    let mut c = b.raw();
    assert_eq!(c.cmd(&["CONFIG", "SET", "notify-keyspace-events", "Egh"]), b"+OK\r\n");
    sub.cmd(&["PSUBSCRIBE", "__keyevent@0__:*", "marker"]);
    // The second subscription's confirmation.
    sub.reply();
    let mut all = Vec::new();
    for cmd in cmds {
        c.cmd(cmd);
        c.cmd(&["PUBLISH", "marker", "."]);
        let mut events = Vec::new();
        loop {
            let msg = show(&sub.reply());
            if msg.contains("$6\\r\\nmarker\\r\\n") {
                break;
            }
            // *4 pmessage pattern channel key: keep the event's name.
            let channel = msg.split("\\r\\n").nth(6).unwrap_or_default().to_string();
            events.push(channel.trim_start_matches("__keyevent@0__:").to_string());
        }
        all.push(events);
    }
    all
}

#[test]
fn hash_field_expiry_commands_send_redis_8s_events() {
    let cmds: &[&[&str]] = &[
        &["HSET", "h", "a", "1", "b", "2", "c", "3"],
        &["HEXPIRE", "h", "100", "FIELDS", "1", "a"],
        &["HEXPIRE", "h", "100", "NX", "FIELDS", "1", "a"],
        &["HPERSIST", "h", "FIELDS", "1", "a"],
        &["HPEXPIREAT", "h", "1", "FIELDS", "1", "a"],
        &["HGETEX", "h", "PX", "100000", "FIELDS", "1", "b"],
        &["HGETEX", "h", "PERSIST", "FIELDS", "1", "b"],
        &["HGETEX", "h", "PXAT", "1", "FIELDS", "1", "b"],
        &["HSETEX", "h", "PX", "100000", "FIELDS", "1", "d", "4"],
        &["HSETEX", "h", "FIELDS", "1", "e", "5"],
        &["HSETEX", "h", "PXAT", "1", "FIELDS", "1", "d", "4"],
        &["HGETDEL", "h", "FIELDS", "1", "e"],
        &["HGETDEL", "h", "FIELDS", "1", "c"],
    ];
    let want: Vec<Vec<&str>> = vec![
        vec!["hset"],
        vec!["hexpire"],
        vec![],
        vec!["hpersist"],
        vec!["hexpired"],
        vec!["hexpire"],
        vec!["hpersist"],
        vec!["hexpired"],
        vec!["hset", "hexpire"],
        vec!["hset"],
        vec!["hexpired"],
        vec!["hdel"],
        vec!["hdel", "del"],
    ];
    for shards in [1, 4] {
        let b = Basalt::start(shards);
        assert_eq!(events_of(&b, cmds), want, "{shards} shards");
    }
}
