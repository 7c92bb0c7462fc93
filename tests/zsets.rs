//! Sorted sets through the real server, for what Debian's redis-server 7.0
//! cannot be compared with (Redis 7.2's ZRANK WITHSCORE and arity, its
//! double formatting), and for what the differential scripts do not reach:
//! OBJECT ENCODING under CONFIG's thresholds, the generic key commands on a
//! sorted set, keyspace events, and a restart.

mod common;

use common::{show, Basalt};

fn bulk(s: &str) -> String {
    show(format!("${}\r\n{s}\r\n", s.len()).as_bytes())
}

#[test]
fn zrank_withscore_and_redis_7_2_formats() {
    let b = Basalt::start(1);
    let mut c = b.raw();
    assert_eq!(
        show(&c.cmd(&["ZADD", "z", "1.1", "a", "2", "b", "1e-7", "c", "100000000", "d"])),
        show(b":4\r\n")
    );
    assert_eq!(show(&c.cmd(&["ZRANK", "z", "a", "WITHSCORE"])), show(b"*2\r\n:1\r\n$3\r\n1.1\r\n"));
    assert_eq!(
        show(&c.cmd(&["ZREVRANK", "z", "a", "withscore"])),
        show(b"*2\r\n:2\r\n$3\r\n1.1\r\n")
    );
    assert_eq!(show(&c.cmd(&["ZRANK", "z", "nope", "WITHSCORE"])), show(b"$-1\r\n"));
    assert_eq!(show(&c.cmd(&["ZRANK", "z", "a", "extra"])), show(b"-ERR syntax error\r\n"));
    assert_eq!(show(&c.cmd(&["ZRANK", "z", "a", "WITHSCORE", "x"])), show(b"-ERR syntax error\r\n"));
    assert_eq!(show(&c.cmd(&["ZSCORE", "z", "c"])), bulk("1e-7"));
    assert_eq!(show(&c.cmd(&["ZSCORE", "z", "d"])), bulk("100000000"));
    assert_eq!(show(&c.cmd(&["ZINCRBY", "z", "0.1", "a"])), bulk("1.2000000000000002"));
    c.cmd(&["HELLO", "3"]);
    assert_eq!(show(&c.cmd(&["ZRANK", "z", "b", "WITHSCORE"])), show(b"*2\r\n:2\r\n,2\r\n"));
    assert_eq!(show(&c.cmd(&["ZSCORE", "z", "c"])), show(b",1e-7\r\n"));
    assert_eq!(
        show(&c.cmd(&["ZRANGE", "z", "0", "1", "WITHSCORES"])),
        show(b"*2\r\n*2\r\n$1\r\nc\r\n,1e-7\r\n*2\r\n$1\r\na\r\n,1.2000000000000002\r\n")
    );
    assert_eq!(show(&c.cmd(&["ZMSCORE", "z", "b", "nope"])), show(b"*2\r\n,2\r\n_\r\n"));
}

#[test]
fn sorted_sets_are_keys_like_the_others() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let b = Basalt::start_in(dir.path(), 2, &[]);
        let mut c = b.raw();
        c.cmd(&["ZADD", "z", "1", "a", "2", "b"]);
        assert_eq!(show(&c.cmd(&["TYPE", "z"])), show(b"+zset\r\n"));
        assert_eq!(show(&c.cmd(&["OBJECT", "ENCODING", "z"])), bulk("listpack"));
        c.cmd(&["CONFIG", "SET", "zset-max-listpack-entries", "1"]);
        assert_eq!(show(&c.cmd(&["OBJECT", "ENCODING", "z"])), bulk("skiplist"));
        c.cmd(&["CONFIG", "SET", "zset-max-listpack-entries", "128"]);
        c.cmd(&["CONFIG", "SET", "zset-max-listpack-value", "0"]);
        assert_eq!(show(&c.cmd(&["OBJECT", "ENCODING", "z"])), bulk("skiplist"));
        c.cmd(&["CONFIG", "SET", "zset-max-listpack-value", "64"]);
        // RENAME across shards, COPY, EXPIRE, SCAN TYPE, DEL.
        assert_eq!(show(&c.cmd(&["RENAME", "z", "z{other}"])), show(b"+OK\r\n"));
        assert_eq!(
            show(&c.cmd(&["ZRANGE", "z{other}", "0", "-1", "WITHSCORES"])),
            show(b"*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n")
        );
        assert_eq!(show(&c.cmd(&["COPY", "z{other}", "copy"])), show(b":1\r\n"));
        assert_eq!(show(&c.cmd(&["ZSCORE", "copy", "b"])), bulk("2"));
        assert_eq!(show(&c.cmd(&["ZADD", "copy", "3", "c"])), show(b":1\r\n"));
        assert_eq!(show(&c.cmd(&["ZCARD", "z{other}"])), show(b":2\r\n"));
        assert!(show(&c.cmd(&["SCAN", "0", "TYPE", "zset", "COUNT", "100"])).contains("$4\\r\\ncopy"));
        // DUMP and RESTORE, under another name and over a key of another type.
        let dump = c.cmd(&["DUMP", "copy"]);
        let payload = &dump[dump.iter().position(|&b| b == b'\n').expect("bulk header") + 1..dump.len() - 2];
        c.cmd(&["SET", "restored", "x"]);
        assert_eq!(c.cmd(&[&b"RESTORE"[..], b"restored", b"0", payload, b"REPLACE"]), b"+OK\r\n");
        assert_eq!(
            show(&c.cmd(&["ZRANGE", "restored", "0", "-1", "WITHSCORES"])),
            show(&c.cmd(&["ZRANGE", "copy", "0", "-1", "WITHSCORES"]))
        );
        assert_eq!(show(&c.cmd(&["ZRANK", "restored", "c"])), show(b":2\r\n"));
        c.cmd(&["DEL", "restored"]);
        assert_eq!(show(&c.cmd(&["EXPIRE", "copy", "100"])), show(b":1\r\n"));
        assert_eq!(show(&c.cmd(&["DEL", "z{other}"])), show(b":1\r\n"));
        assert_eq!(show(&c.cmd(&["ZCARD", "z{other}"])), show(b":0\r\n"));
        assert_eq!(show(&c.cmd(&["DBSIZE"])), show(b":1\r\n"));
    }
    // Everything is on disk: a restart reads it back.
    let b = Basalt::start_in(dir.path(), 2, &[]);
    let mut c = b.raw();
    assert_eq!(
        show(&c.cmd(&["ZRANGE", "copy", "0", "-1", "WITHSCORES"])),
        show(b"*6\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\nc\r\n$1\r\n3\r\n")
    );
    assert_eq!(show(&c.cmd(&["ZRANK", "copy", "c"])), show(b":2\r\n"));
}

#[test]
fn sorted_set_writes_send_redis_events() {
    let b = Basalt::start(1);
    let mut c = b.raw();
    c.cmd(&["CONFIG", "SET", "notify-keyspace-events", "KEA"]);
    let mut sub = b.raw();
    sub.cmd(&["PSUBSCRIBE", "__keyevent@0__:*"]);
    for cmd in [
        &["ZADD", "z", "1", "a"][..],
        &["ZADD", "z", "1", "a"],
        &["ZADD", "z", "INCR", "1", "a"],
        &["ZINCRBY", "z", "1", "a"],
        &["ZREM", "z", "nope"],
        &["ZREM", "z", "a"],
        &["ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d"],
        &["ZPOPMIN", "z"],
        &["ZPOPMAX", "z", "0"],
        &["ZREMRANGEBYRANK", "z", "0", "0"],
        &["ZREMRANGEBYLEX", "z", "[x", "[y"],
        &["ZREMRANGEBYSCORE", "z", "-inf", "+inf"],
    ] {
        c.cmd(cmd);
    }
    let mut events = Vec::new();
    for _ in 0..10 {
        let msg = show(&sub.reply());
        events.push(msg.rsplit("\\r\\n").nth(3).unwrap_or_default().to_string());
    }
    let want = [
        "zadd",
        "zincr",
        "zincr",
        "zrem",
        "del",
        "zadd",
        "zpopmin",
        "zrembyrank",
        "zrembyscore",
        "del",
    ];
    assert_eq!(events, want.map(|e| format!("__keyevent@0__:{e}")));
}

/// A sorted set past the listpack size: ZSCAN walks it with a cursor and
/// returns every member once with its score; ZRANDMEMBER samples it by
/// seeks with Redis's count rules.
#[test]
fn big_sorted_sets_scan_and_sample() {
    let b = Basalt::start(2);
    let mut c = b.client();
    let mut pipe = redis::pipe();
    for chunk in (0..3000).collect::<Vec<i64>>().chunks(500) {
        let mut zadd = redis::cmd("ZADD");
        zadd.arg("big");
        for i in chunk {
            zadd.arg(i * 2).arg(format!("m{i}"));
        }
        pipe.add_command(zadd).ignore();
    }
    let _: () = pipe.query(&mut c).expect("ZADD");
    let score_of = |m: &str| m[1..].parse::<i64>().expect("member number") * 2;
    let mut seen = std::collections::BTreeMap::new();
    let mut cursor = 0u64;
    let mut calls = 0;
    loop {
        let (next, items): (u64, Vec<String>) = redis::cmd("ZSCAN")
            .arg("big")
            .arg(cursor)
            .arg("COUNT")
            .arg(100)
            .query(&mut c)
            .expect("ZSCAN");
        for p in items.chunks(2) {
            assert!(seen.insert(p[0].clone(), p[1].clone()).is_none(), "{} twice", p[0]);
        }
        calls += 1;
        cursor = next;
        if cursor == 0 {
            break;
        }
    }
    assert!(calls > 10, "a cursor walk, not one reply: {calls}");
    assert_eq!(seen.len(), 3000);
    assert!(seen.iter().all(|(m, s)| s.parse::<i64>().ok() == Some(score_of(m))));
    let matched: (u64, Vec<String>) = redis::cmd("ZSCAN")
        .arg("big")
        .arg(0)
        .arg("MATCH")
        .arg("m1?")
        .arg("COUNT")
        .arg(5000)
        .query(&mut c)
        .expect("ZSCAN MATCH");
    assert_eq!(matched.1.len(), 20, "m10..m19 with their scores");
    let some: Vec<String> = redis::cmd("ZRANDMEMBER").arg("big").arg(100).query(&mut c).expect("ZRANDMEMBER");
    assert_eq!(some.iter().collect::<std::collections::BTreeSet<_>>().len(), 100, "distinct");
    let rep: Vec<String> = redis::cmd("ZRANDMEMBER")
        .arg("big")
        .arg(-50)
        .query(&mut c)
        .expect("ZRANDMEMBER -50");
    assert_eq!(rep.len(), 50);
    assert!(rep.iter().all(|m| seen.contains_key(m)));
    let all: Vec<String> = redis::cmd("ZRANDMEMBER")
        .arg("big")
        .arg(5000)
        .query(&mut c)
        .expect("ZRANDMEMBER 5000");
    assert_eq!(all.len(), 3000);
    let pairs: Vec<String> = redis::cmd("ZRANDMEMBER")
        .arg("big")
        .arg(-7)
        .arg("WITHSCORES")
        .query(&mut c)
        .expect("WITHSCORES");
    assert_eq!(pairs.len(), 14);
    assert!(pairs.chunks(2).all(|p| p[1].parse::<i64>().ok() == Some(score_of(&p[0]))));
    let one: String = redis::cmd("ZRANDMEMBER").arg("big").query(&mut c).expect("ZRANDMEMBER");
    assert!(seen.contains_key(&one));
}
