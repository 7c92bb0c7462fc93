//! Keyspace events against Debian's redis-server, on 1 and 4 shards:
//! `keymiss` (class m), sent when a read command looks up a missing key
//! (GET, MGET, a GET of another shard's key, HGET, LRANGE, EXISTS, TYPE,
//! TTL... and GETDEL, GETEX), not for writes or OBJECT, not with the `A`
//! alias alone (it leaves m out); and the events of list moves whose keys
//! are on two shards, in Redis's order.

mod common;

use common::{run_clients, Basalt};

const KEYMISS: &str = r#"
    B: CONFIG SET notify-keyspace-events Km
    A> PSUBSCRIBE __key*__:*
    A<
    B: GET nosuch
    A<
    B: SET here v
    B: GET here
    B: MGET here miss1 here miss2
    A<< 2
    B: INCR fresh
    B: GET fresh
    B: PUBLISH __keyspace@0__:done end
    A<
    B: CONFIG SET notify-keyspace-events Em
    B: GET nosuch2
    A<
    B: MGET nosuch3
    A<
    B: CONFIG SET notify-keyspace-events KEA
    B: GET nosuch4
    B: PUBLISH __keyspace@0__:done end
    A<
"#;

/// Read commands of every type on missing keys, one event each (EXISTS:
/// one per key), and none for a key that is there, a write, or OBJECT.
const KEYMISS_READS: &str = r#"
    B: CONFIG SET notify-keyspace-events Km
    A> PSUBSCRIBE __key*__:*
    A<
    B: HGET nh f
    A<
    B: HGETALL nh
    A<
    B: HMGET nh a b
    A<
    B: LRANGE nl 0 -1
    A<
    B: LLEN nl
    A<
    B: LINDEX nl 0
    A<
    B: SMEMBERS ns
    A<
    B: SISMEMBER ns m
    A<
    B: SCARD ns
    A<
    B: STRLEN nstr
    A<
    B: GETRANGE nstr 0 1
    A<
    B: TYPE nt
    A<
    B: TTL nt
    A<
    B: PTTL nt
    A<
    B: EXISTS e1 e2
    A<< 2
    B: SADD sa m
    B: SINTER sa nsb
    A<
    B: SUNIONSTORE dst nsc sa
    A<
    B: GETDEL gd
    A<
    B: GETEX ge
    A<
    B: OBJECT ENCODING oe
    B: SET x v
    B: INCR cnt
    B: HSET h f v
    B: HGET h nofield
    B: TYPE x
    B: DEL gone
    B: PUBLISH __keyspace@0__:done end
    A<
"#;

#[test]
fn keymiss_for_every_read_matches_redis() {
    for shards in [1, 4] {
        run_clients("keymiss-reads", KEYMISS_READS, shards, false);
    }
}

#[test]
fn keymiss_matches_redis() {
    for shards in [1, 4] {
        run_clients("keymiss", KEYMISS, shards, false);
    }
    run_clients("keymiss-resp3", KEYMISS, 4, true);
}

/// LMOVE, RPOPLPUSH and a served BLMOVE between keys of two shards (with
/// 4): the push, then the pop, then `del` of an emptied source, as Redis
/// sends them; a move refused for a wrong-type destination sends nothing.
const MOVES: &str = r#"
    B: CONFIG SET notify-keyspace-events KEA
    A> PSUBSCRIBE __keyevent@0__:*
    A<
    B: RPUSH src a b
    A<
    B: LMOVE src dst LEFT RIGHT
    A<
    A<
    B: RPOPLPUSH src dst
    A<
    A<
    A<
    B: SET notalist x
    A<
    B: LMOVE dst notalist LEFT LEFT
    C> BLMOVE bsrc bdst LEFT LEFT 0
    SLEEP 100
    B: RPUSH bsrc x
    C<
    A<
    A<
    A<
    A<
    B: PUBLISH __keyevent@0__:done end
    A<
"#;

#[test]
fn cross_shard_moves_notify_like_redis() {
    let spread = |a: &str, b: &str| basalt::slot::owner(a.as_bytes(), 4) != basalt::slot::owner(b.as_bytes(), 4);
    assert!(spread("src", "dst") && spread("bsrc", "bdst"), "the moves span shards");
    for shards in [1, 4] {
        run_clients("moves", MOVES, shards, false);
    }
}

/// SADD of members the set holds already (answered without a writer): no
/// event, a WATCH on the set stands (OBJECT IDLETIME reads as touched:
/// `sadd_of_held_members_touches_the_set`, with a clock that moves);
/// SADD with one new member among held ones, a member twice in one SADD,
/// a wrong type and an expired set are writes as before.
const SADD_HELD: &str = r#"
    B: CONFIG SET notify-keyspace-events KEA
    A> PSUBSCRIBE __keyevent@0__:*
    A<
    B: SADD s a b c
    A<
    B: SADD s a
    B: SADD s a b c
    B: SADD s c c
    B: SADD s a d
    A<
    B: SADD s e e
    A<
    B: SADD s f g f b
    A<
    B: SCARD s
    B: SMISMEMBER s a b c d e f g z
    B: SET str x
    A<
    B: SADD str a
    B: SADD gone a
    A<
    B: PEXPIRE gone 1
    A<
    SLEEP 20
    B: SADD gone a
    A<
    A<
    B: SCARD gone
    B: PUBLISH __keyevent@0__:done end
    A<
    C: WATCH s
    B: SADD s a b
    C: MULTI
    C: SCARD s
    C: EXEC
    C: WATCH s
    B: SADD s a z
    C: MULTI
    C: SCARD s
    C: EXEC
"#;

/// SADD of members the set holds already touches it, as Redis's lookup
/// does. (Compared with redis-server's reply right after the SADD, a
/// whole-second clock that ticked in between read 1 on one server and 0
/// on the other: a CI run failed so.)
#[test]
fn sadd_of_held_members_touches_the_set() {
    let servers = [Basalt::start(1), Basalt::start(4)];
    let mut cs: Vec<_> = servers.iter().map(|b| b.raw()).collect();
    for c in &mut cs {
        c.cmd(&["SADD", "s", "a", "b"]);
        c.cmd(&["SADD", "t", "a"]);
    }
    std::thread::sleep(std::time::Duration::from_millis(2100));
    for (c, shards) in cs.iter_mut().zip([1, 4]) {
        assert_eq!(c.cmd(&["SADD", "s", "a", "b"]), b":0\r\n");
        let idle = |c: &mut common::Raw, k: &str| {
            let r = c.cmd(&["OBJECT", "IDLETIME", k]);
            String::from_utf8_lossy(&r)
                .trim_start_matches(':')
                .trim()
                .parse::<i64>()
                .unwrap_or(-1)
        };
        // Redis's LRU clock counts whole seconds: just now reads 0 or 1.
        assert!((0..=1).contains(&idle(c, "s")), "{shards} shards: SADD of held members touches");
        assert!(idle(c, "t") >= 2, "{shards} shards: the other set was left alone");
    }
}

#[test]
fn sadd_of_held_members_matches_redis() {
    for shards in [1, 4] {
        run_clients("sadd-held", SADD_HELD, shards, false);
    }
    run_clients("sadd-held-resp3", SADD_HELD, 1, true);
}
