//! COMMAND's key introspection (issue 30) against Debian's redis-server:
//! the key specs COMMAND INFO returns for every command both servers have
//! (cluster clients route by them), COMMAND GETKEYS and GETKEYSANDFLAGS
//! (movable keys, subcommands, SET's GET, every error), COMMAND INFO of
//! subcommands by fullname, COMMAND LIST FILTERBY, and that every
//! subcommand redis-server lists under CLIENT, MEMORY, OBJECT, COMMAND and
//! LATENCY HELP is known to Basalt.

mod common;

use common::{run_scripts, show, Basalt, Raw, RedisServer};

/// A parsed RESP2 reply.
#[derive(Debug, PartialEq, Clone)]
enum Val {
    Str(Vec<u8>),
    Int(i64),
    Arr(Vec<Val>),
    Nil,
}

fn parse(b: &[u8], at: &mut usize) -> Val {
    let end = b[*at..].windows(2).position(|w| w == b"\r\n").expect("line") + *at;
    let (tag, line) = (b[*at], String::from_utf8_lossy(&b[*at + 1..end]).to_string());
    *at = end + 2;
    match tag {
        b'+' | b'-' => Val::Str(line.into_bytes()),
        b':' => Val::Int(line.parse().expect("int")),
        b'$' => {
            let n: i64 = line.parse().expect("len");
            if n < 0 {
                return Val::Nil;
            }
            let v = b[*at..*at + n as usize].to_vec();
            *at += n as usize + 2;
            Val::Str(v)
        }
        b'*' => {
            let n: i64 = line.parse().expect("len");
            if n < 0 {
                return Val::Nil;
            }
            Val::Arr((0..n).map(|_| parse(b, at)).collect())
        }
        t => panic!("unexpected tag {}", t as char),
    }
}

fn info_of(c: &mut Raw, name: &str) -> Val {
    let reply = c.cmd(&["COMMAND", "INFO", name]);
    match parse(&reply, &mut 0) {
        Val::Arr(mut v) => v.remove(0),
        other => panic!("COMMAND INFO {name}: {other:?}"),
    }
}

fn names(c: &mut Raw) -> Vec<String> {
    match parse(&c.cmd(&["COMMAND", "LIST"]), &mut 0) {
        Val::Arr(v) => v
            .into_iter()
            .map(|x| match x {
                Val::Str(s) => String::from_utf8_lossy(&s).to_string(),
                other => panic!("{other:?}"),
            })
            .collect(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn key_specs_are_redis_s() {
    let redis = RedisServer::start();
    let basalt = Basalt::start(1);
    let (mut r, mut b) = (redis.raw(), basalt.raw());
    let theirs = names(&mut r);
    let mut compared = 0;
    for name in names(&mut b).into_iter().filter(|n| theirs.contains(n)) {
        let (want, got) = (info_of(&mut r, &name), info_of(&mut b, &name));
        let (Val::Arr(want), Val::Arr(got)) = (want, got) else {
            panic!("{name}: not an array");
        };
        assert_eq!(got[8], want[8], "{name}: key specs");
        assert_eq!(got[6], want[6], "{name}: ACL categories");
        // Flags: 7.2 dropped `noscript` from the blocking list commands and
        // added `protected` to DEBUG; Basalt follows 7.2 there.
        let flags = |v: &Val| match v {
            Val::Arr(f) => {
                let mut f: Vec<Val> = f
                    .iter()
                    .filter(|x| !matches!(x, Val::Str(s) if s == b"noscript" || s == b"protected"))
                    .cloned()
                    .collect();
                f.sort_by_key(|x| format!("{x:?}"));
                f
            }
            _ => Vec::new(),
        };
        assert_eq!(flags(&got[2]), flags(&want[2]), "{name}: flags");
        assert_eq!(&got[3..6], &want[3..6], "{name}: first, last, step");
        // The subcommands' key specs, matched by fullname.
        if let (Val::Arr(ws), Val::Arr(gs)) = (&want[9], &got[9]) {
            for w in ws {
                let Val::Arr(w) = w else { continue };
                if let Some(Val::Arr(g)) = gs.iter().find(|g| matches!(g, Val::Arr(g) if g[0] == w[0])) {
                    assert_eq!(g[8], w[8], "{name}: {:?} key specs", w[0]);
                    compared += 1;
                }
            }
        }
        compared += 1;
    }
    assert!(compared > 150, "only {compared} commands compared");
}

const SCRIPTS: &[(&str, &str)] = &[(
    "getkeys",
    r#"
    COMMAND GETKEYS get k
    COMMAND GETKEYS mset a 1 b 2
    COMMAND GETKEYS mget a b c
    COMMAND GETKEYS sintercard 2 a b
    COMMAND GETKEYS sintercard 2 a b LIMIT 1
    COMMAND GETKEYS sintercard 5 a b
    COMMAND GETKEYS sintercard x a
    COMMAND GETKEYS sintercard -1 a
    COMMAND GETKEYS lmpop 2 a b left count 1
    COMMAND GETKEYS blmpop 0 2 a b left
    COMMAND GETKEYS blpop a b c 0
    COMMAND GETKEYS object encoding k
    COMMAND GETKEYS object help
    COMMAND GETKEYS object encoding
    COMMAND GETKEYS memory usage k
    COMMAND GETKEYS lmove a b left right
    COMMAND GETKEYS smove a b m
    COMMAND GETKEYS ping x
    COMMAND GETKEYS foo x
    COMMAND GETKEYS set k
    COMMAND GETKEYS get k v
    COMMAND GETKEYSANDFLAGS set k v
    COMMAND GETKEYSANDFLAGS set k v get
    COMMAND GETKEYSANDFLAGS set k v EX 10 GET
    COMMAND GETKEYSANDFLAGS lmove a b left right
    COMMAND GETKEYSANDFLAGS del a b
    COMMAND GETKEYSANDFLAGS mset a 1 b 2
    COMMAND GETKEYSANDFLAGS rename a b
    COMMAND GETKEYSANDFLAGS sunionstore d a b
    COMMAND GETKEYSANDFLAGS sintercard 0 a
    COMMAND GETKEYSANDFLAGS hset h f v
    COMMAND GETKEYSANDFLAGS getdel k
    COMMAND GETKEYSANDFLAGS copy a b
    COMMAND GETKEYSANDFLAGS georadius k 1 2 3 m STOREDIST d
    COMMAND GETKEYSANDFLAGS georadius k 1 2 3 m STORE s STOREDIST d
    COMMAND GETKEYSANDFLAGS georadiusbymember k m 3 km STOREDIST d
    COMMAND GETKEYSANDFLAGS migrate h 1 k 0 500
    COMMAND GETKEYSANDFLAGS migrate h 1 "" 0 500 KEYS a b
    COMMAND GETKEYSANDFLAGS migrate h 1 "" 0 500 AUTH2 KEYS x KEYS a
    COMMAND GETKEYS migrate h 1 k 0 500 KEYS a
    COMMAND GETKEYSANDFLAGS bitfield k GET u8 0
    COMMAND GETKEYSANDFLAGS bitfield k SET u8 0 1
    COMMAND GETKEYSANDFLAGS sort k BY w STORE d
    COMMAND GETKEYS xread COUNT 1
    COMMAND INFO get|key
    COMMAND INFO nope
    COMMAND DOCS nope
    COMMAND LIST FILTERBY PATTERN xyz*
    ~COMMAND LIST FILTERBY ACLCAT string
    ~COMMAND LIST FILTERBY PATTERN s*store
    ~COMMAND LIST FILTERBY PATTERN object*
    COMMAND LIST FILTERBY MODULE foo
    COMMAND LIST FILTERBY FOO x
    COMMAND LIST FILTERBY
    "#,
)];

#[test]
fn getkeys_match_redis() {
    run_scripts(SCRIPTS, 1);
}

/// The subcommand words of a HELP reply: each line that is not indented.
fn help_words(reply: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(reply)
        .lines()
        .filter_map(|l| l.strip_prefix('+'))
        .skip(1)
        .filter(|l| !l.starts_with(' ') && !l.starts_with('('))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

#[test]
fn every_subcommand_redis_lists_in_help_is_known() {
    let redis = RedisServer::start();
    let b = Basalt::start(2);
    let (mut r, mut c) = (redis.raw(), b.raw());
    for container in ["CLIENT", "MEMORY", "OBJECT", "COMMAND", "LATENCY"] {
        let words = help_words(&r.cmd(&[container, "HELP"]));
        assert!(words.len() >= 3, "{container} HELP: {words:?}");
        for w in words {
            let got = c.cmd(&[container, &w]);
            let text = show(&got);
            assert!(!text.contains("unknown subcommand"), "{container} {w}: {text}");
        }
    }
}

#[test]
fn command_docs_of_a_subcommand() {
    let b = Basalt::start(1);
    let mut c = b.raw();
    let docs = show(&c.cmd(&["COMMAND", "DOCS", "client|list", "nope"]));
    assert!(
        docs.starts_with("*2\\r\\n$11\\r\\nclient|list\\r\\n*6\\r\\n$7\\r\\nsummary"),
        "{docs}"
    );
    let all = show(&c.cmd(&["COMMAND", "LIST"]));
    assert!(all.contains("$11\\r\\nclient|list\\r\\n"), "COMMAND LIST names subcommands too");
}
