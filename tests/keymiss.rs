//! `keymiss` events (class m of `notify-keyspace-events`), against
//! Debian's redis-server, on 1 and 4 shards: sent for the lookups Basalt
//! counts in keyspace_misses (GET, MGET, a GET of another shard's key), not
//! for writes, not with the `A` alias alone (it leaves m out).

mod common;

use common::run_clients;

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

#[test]
fn keymiss_matches_redis() {
    for shards in [1, 4] {
        run_clients("keymiss", KEYMISS, shards, false);
    }
    run_clients("keymiss-resp3", KEYMISS, 4, true);
}
