//! Stream behaviour redis-server 7.0 (the differential oracle) does not
//! have: Redis 8.2's XDELEX, XACKDEL and the KEEPREF/DELREF/ACKED options
//! of XADD and XTRIM, Redis 8's ENTRIESREAD cap, and 7.2's `inactive` in
//! XINFO CONSUMERS. Expectations follow the Redis documentation and Redis's
//! own tests of these commands, on 1 and 4 shards.

mod common;

use common::{show, Basalt, Raw};

fn run(c: &mut Raw, args: &[&str]) -> String {
    show(&c.cmd(args))
}

fn ints(v: &[i64]) -> String {
    let mut s = format!("*{}\\r\\n", v.len());
    for n in v {
        s.push_str(&format!(":{n}\\r\\n"));
    }
    s
}

const EMPTY_PENDING: &str = "*4\\r\\n:0\\r\\n$-1\\r\\n$-1\\r\\n*-1\\r\\n";

fn two_groups_read_both(c: &mut Raw) {
    run(c, &["DEL", "s"]);
    run(c, &["XADD", "s", "1-0", "f", "v"]);
    run(c, &["XADD", "s", "2-0", "f", "v"]);
    run(c, &["XGROUP", "CREATE", "s", "g1", "0"]);
    run(c, &["XGROUP", "CREATE", "s", "g2", "0"]);
    run(c, &["XREADGROUP", "GROUP", "g1", "c1", "STREAMS", "s", ">"]);
    run(c, &["XREADGROUP", "GROUP", "g2", "c2", "STREAMS", "s", ">"]);
}

fn xackdel_cases(shards: usize) {
    let b = Basalt::start(shards);
    let mut c = b.raw();
    // Argument checks.
    assert!(run(&mut c, &["XACKDEL", "s", "g"]).contains("wrong number of arguments for 'xackdel'"));
    assert_eq!(
        run(&mut c, &["XACKDEL", "s", "g", "IDS", "2", "1-1", "2-2"]),
        ints(&[-1, -1]),
        "no key"
    );
    run(&mut c, &["XADD", "s", "1-0", "f", "v"]);
    assert_eq!(
        run(&mut c, &["XACKDEL", "s", "g", "IDS", "2", "1-1", "2-2"]),
        ints(&[-1, -1]),
        "no group"
    );
    run(&mut c, &["XGROUP", "CREATE", "s", "g", "0"]);
    for n in ["abc", "0", "-5"] {
        assert!(run(&mut c, &["XACKDEL", "s", "g", "IDS", n, "1-1"]).contains("Number of IDs must be a positive integer"));
    }
    assert!(
        run(&mut c, &["XACKDEL", "s", "g", "IDS", "3", "1-1", "2-2"]).contains("The `numids` parameter must match the number of arguments")
    );
    assert!(run(&mut c, &["XACKDEL", "s", "g", "IDS", "1", "1-1", "2-2"]).contains("syntax error"));
    for (a, b2) in [("KEEPREF", "DELREF"), ("KEEPREF", "ACKED"), ("DELREF", "ACKED")] {
        assert!(run(&mut c, &["XACKDEL", "s", "g", a, b2, "IDS", "1", "1-1"]).contains("syntax error"));
    }
    assert!(run(&mut c, &["XACKDEL", "s", "g", "IDS", "1", "x"]).contains("Invalid stream ID"));
    assert!(run(&mut c, &["XACKDEL", "s", "g", "KEEPREF"]).contains("wrong number of arguments"));
    // DELREF: acknowledged, deleted, and gone from every group's PEL.
    two_groups_read_both(&mut c);
    assert_eq!(
        run(&mut c, &["XACKDEL", "s", "g1", "DELREF", "IDS", "2", "1-0", "2-0"]),
        ints(&[1, 1])
    );
    assert_eq!(run(&mut c, &["XLEN", "s"]), ":0\\r\\n");
    assert_eq!(run(&mut c, &["XPENDING", "s", "g1"]), EMPTY_PENDING);
    assert_eq!(run(&mut c, &["XPENDING", "s", "g2"]), EMPTY_PENDING);
    assert_eq!(
        run(&mut c, &["XACKDEL", "s", "g2", "DELREF", "IDS", "2", "1-0", "2-0"]),
        ints(&[-1, -1])
    );
    // ACKED: deleted only once every group is done with the entries.
    two_groups_read_both(&mut c);
    assert_eq!(
        run(&mut c, &["XACKDEL", "s", "g1", "ACKED", "IDS", "2", "1-0", "2-0"]),
        ints(&[2, 2])
    );
    assert_eq!(run(&mut c, &["XLEN", "s"]), ":2\\r\\n");
    assert_eq!(run(&mut c, &["XPENDING", "s", "g1"]), EMPTY_PENDING);
    assert_eq!(
        run(&mut c, &["XPENDING", "s", "g2"]),
        "*4\\r\\n:2\\r\\n$3\\r\\n1-0\\r\\n$3\\r\\n2-0\\r\\n*1\\r\\n*2\\r\\n$2\\r\\nc2\\r\\n$1\\r\\n2\\r\\n"
    );
    assert_eq!(
        run(&mut c, &["XACKDEL", "s", "g2", "ACKED", "IDS", "2", "1-0", "2-0"]),
        ints(&[1, 1])
    );
    assert_eq!(run(&mut c, &["XLEN", "s"]), ":0\\r\\n");
    // KEEPREF (the default): deleted from the stream, other PELs kept.
    two_groups_read_both(&mut c);
    assert_eq!(
        run(&mut c, &["XACKDEL", "s", "g1", "KEEPREF", "IDS", "2", "1-0", "2-0"]),
        ints(&[1, 1])
    );
    assert_eq!(run(&mut c, &["XLEN", "s"]), ":0\\r\\n");
    assert_eq!(run(&mut c, &["XPENDING", "s", "g2"]).split("\\r\\n").nth(1), Some(":2"));
    assert_eq!(run(&mut c, &["XACKDEL", "s", "g2", "IDS", "2", "1-0", "2-0"]), ints(&[1, 1]));
    assert_eq!(run(&mut c, &["XPENDING", "s", "g2"]), EMPTY_PENDING);
    // Many IDs at once.
    let ids: Vec<String> = (0..50).map(|i| format!("{i}-1")).collect();
    let mut args = vec!["XACKDEL", "s", "g1", "IDS", "50"];
    args.extend(ids.iter().map(String::as_str));
    assert_eq!(run(&mut c, &args), ints(&[-1; 50]));
}

#[test]
fn xackdel_acknowledges_and_deletes_as_redis_8_2() {
    xackdel_cases(1);
    xackdel_cases(4);
}

#[test]
fn xdelex_and_trims_follow_the_reference_policy() {
    for shards in [1, 4] {
        let b = Basalt::start(shards);
        let mut c = b.raw();
        assert_eq!(run(&mut c, &["XDELEX", "nokey", "IDS", "2", "1-0", "2-0"]), ints(&[-1, -1]));
        two_groups_read_both(&mut c);
        // ACKED: pending in both groups.
        assert_eq!(run(&mut c, &["XDELEX", "s", "ACKED", "IDS", "1", "1-0"]), ints(&[2]));
        run(&mut c, &["XACK", "s", "g1", "1-0"]);
        run(&mut c, &["XACK", "s", "g2", "1-0"]);
        assert_eq!(run(&mut c, &["XDELEX", "s", "ACKED", "IDS", "1", "1-0"]), ints(&[1]));
        // DELREF: the entry and every reference to it.
        assert_eq!(run(&mut c, &["XDELEX", "s", "DELREF", "IDS", "2", "2-0", "3-0"]), ints(&[1, -1]));
        assert_eq!(run(&mut c, &["XPENDING", "s", "g1"]), EMPTY_PENDING);
        assert_eq!(run(&mut c, &["XPENDING", "s", "g2"]), EMPTY_PENDING);
        // KEEPREF: the entry only.
        run(&mut c, &["XADD", "s", "5-0", "f", "v"]);
        run(&mut c, &["XREADGROUP", "GROUP", "g1", "c1", "STREAMS", "s", ">"]);
        assert_eq!(run(&mut c, &["XDELEX", "s", "IDS", "1", "5-0"]), ints(&[1]));
        assert_eq!(run(&mut c, &["XPENDING", "s", "g1"]).split("\\r\\n").nth(1), Some(":1"));
        assert!(run(&mut c, &["XDELEX", "s", "FOO", "IDS", "1", "1-1"]).contains("syntax error"));
        assert!(run(&mut c, &["XDELEX", "s", "IDS", "3", "1-1"]).contains("numids"));
        // Trims: ACKED keeps what a group still needs, DELREF drops references.
        run(&mut c, &["DEL", "t"]);
        for id in ["1-0", "2-0", "3-0"] {
            run(&mut c, &["XADD", "t", id, "f", "v"]);
        }
        run(&mut c, &["XGROUP", "CREATE", "t", "g", "0"]);
        run(&mut c, &["XREADGROUP", "GROUP", "g", "c", "COUNT", "2", "STREAMS", "t", ">"]);
        assert_eq!(run(&mut c, &["XTRIM", "t", "MAXLEN", "0", "ACKED"]), ":0\\r\\n", "1-0 is pending");
        run(&mut c, &["XACK", "t", "g", "1-0"]);
        assert_eq!(
            run(&mut c, &["XTRIM", "t", "MAXLEN", "0", "ACKED"]),
            ":1\\r\\n",
            "only 1-0 is done with"
        );
        assert_eq!(run(&mut c, &["XTRIM", "t", "MAXLEN", "1", "DELREF"]), ":1\\r\\n");
        assert_eq!(run(&mut c, &["XPENDING", "t", "g"]), EMPTY_PENDING, "2-0's reference went with it");
        assert_eq!(run(&mut c, &["XLEN", "t"]), ":1\\r\\n");
        assert!(run(&mut c, &["XADD", "t", "MAXLEN", "0", "ACKED", "DELREF", "9-0", "f", "v"]).contains("syntax error"));
        assert_eq!(
            run(&mut c, &["XADD", "t", "MAXLEN", "1", "KEEPREF", "9-0", "f", "v"]),
            "$3\\r\\n9-0\\r\\n"
        );
        assert_eq!(run(&mut c, &["XLEN", "t"]), ":1\\r\\n");
    }
}

#[test]
fn entriesread_is_capped_and_consumers_report_inactivity() {
    let b = Basalt::start(1);
    let mut c = b.raw();
    run(&mut c, &["XADD", "s", "*", "field", "value"]);
    run(&mut c, &["XGROUP", "CREATE", "s", "g", "$", "ENTRIESREAD", "9999"]);
    let full = run(&mut c, &["XINFO", "GROUPS", "s"]);
    assert!(full.contains("entries-read\\r\\n:1\\r\\n$3\\r\\nlag\\r\\n:0"), "{full}");
    run(&mut c, &["XGROUP", "SETID", "s", "g", "$", "ENTRIESREAD", "9999"]);
    let full = run(&mut c, &["XINFO", "GROUPS", "s"]);
    assert!(full.contains("entries-read\\r\\n:1\\r\\n$3\\r\\nlag\\r\\n:0"), "{full}");
    run(&mut c, &["XGROUP", "CREATECONSUMER", "s", "g", "idle"]);
    run(&mut c, &["XGROUP", "SETID", "s", "g", "0"]);
    run(&mut c, &["XREADGROUP", "GROUP", "g", "busy", "STREAMS", "s", ">"]);
    let consumers = run(&mut c, &["XINFO", "CONSUMERS", "s", "g"]);
    // Never active: -1; active just now: a small number.
    assert!(
        consumers.contains("$4\\r\\nbusy\\r\\n$7\\r\\npending\\r\\n:1\\r\\n$4\\r\\nidle\\r\\n:"),
        "{consumers}"
    );
    assert!(consumers.contains("$4\\r\\nidle\\r\\n$7\\r\\npending\\r\\n:0\\r\\n"), "{consumers}");
    assert!(consumers.ends_with("inactive\\r\\n:-1\\r\\n"), "{consumers}");
}

/// XREAD's `+` (Redis 7.4): the last entry, whatever COUNT says; with an
/// empty or missing stream, as `$`; XREADGROUP refuses it as an ID.
#[test]
fn xread_plus_reads_the_last_entry() {
    let b = Basalt::start(2);
    let mut c = b.raw();
    run(&mut c, &["XADD", "s", "1-0", "a", "1"]);
    run(&mut c, &["XADD", "s", "2-0", "b", "2"]);
    assert_eq!(
        run(&mut c, &["XREAD", "COUNT", "5", "STREAMS", "s", "+"]),
        "*1\\r\\n*2\\r\\n$1\\r\\ns\\r\\n*1\\r\\n*2\\r\\n$3\\r\\n2-0\\r\\n*2\\r\\n$1\\r\\nb\\r\\n$1\\r\\n2\\r\\n"
    );
    run(&mut c, &["XDEL", "s", "2-0"]);
    assert!(run(&mut c, &["XREAD", "STREAMS", "s", "+"]).contains("1-0"), "the last live entry");
    assert_eq!(run(&mut c, &["XREAD", "STREAMS", "nokey", "+"]), "*-1\\r\\n");
    assert!(run(&mut c, &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "+"]).contains("ERR"));
}
