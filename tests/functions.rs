//! Functions (issue 33) against redis-server: FUNCTION LOAD (REPLACE),
//! DELETE, FLUSH, LIST (LIBRARYNAME, WITHCODE), STATS, KILL, the library
//! loading environment and its errors, FCALL and FCALL_RO, on 1 and 4
//! shards and in RESP3 (the format is `common::run_lua_script`'s); their
//! persistence across restarts with another shard count; DUMP and RESTORE
//! both ways between the two servers; and busy scripts: BUSY from every
//! core, SCRIPT KILL and FUNCTION KILL from any connection, UNKILLABLE,
//! SHUTDOWN NOSAVE.

mod common;

use std::time::{Duration, Instant};

use common::{run_lua_script, Basalt, Raw, RedisServer};

/// FUNCTION LIST answers in Redis's dictionary order: the lines that list
/// several libraries name one with LIBRARYNAME.
const FUNCTIONS: &str = r##"
function flush
function load "return 1"
function load "#!lua\nreturn 1"
function load "#!js name=x\nreturn 1"
function load "#!lua name=a-b\nreturn 1"
function load "#!lua foo=bar\nreturn 1"
function load "#!lua name=mylib\nreturn 1"
function load "#!lua name=mylib\nredis.register_function('f1', function(keys, args) return keys[1] end)"
function load "#!lua name=mylib\nredis.register_function('f1', function(keys, args) return keys[1] end)"
function load "#!lua name=other\nredis.register_function('f1', function(keys, args) return 1 end)"
function load replace "#!lua name=mylib\nredis.register_function('f1', function(keys, args) return {keys[1], args[1]} end)\nredis.register_function{function_name='f2', callback=function() return redis.call('set','x','1') end, flags={'no-writes'}, description='desc'}"
fcall f1 1 k a
fcall f2 0
fcall_ro f1 1 k a
fcall_ro f2 0
fcall nosuch 0
fcall f1 -1
fcall f1 5 a
function load "#!lua name=bad\nredis.register_function('f 1', function() end)"
function load "#!lua name=bad\nredis.register_function('f1')"
function load "#!lua name=bad\nredis.register_function()"
function load "#!lua name=b1\nredis.register_function('x', 1)"
function load "#!lua name=b2\nredis.register_function{function_name='x', callback=function() end, flags={'bad'}}"
function load "#!lua name=b3\nredis.register_function{function_name='x', callback=function() end, foo=1}"
function load "#!lua name=b4\nredis.register_function{function_name='x'}"
function load "#!lua name=b5\nredis.call('set','x','1')"
function load "#!lua name=b6\nerror('oops')"
function load "#!lua name=b7\nreturn +"
function load "#!lua name=b8\nredis.register_function('x', function() end)\nredis.register_function('x', function() end)"
function load "#!lua name=b9\nredis.register_function{function_name='x', callback=function() end, flags='no-writes'}"
function load "#!lua name=b12\nredis.register_function{callback=function() end}"
function load "#!lua name=b13\nredis.register_function('x', function() end, 3)"
function load "#!lua name=b16\nx = 5"
function load "#!lua name=b19\nlocal t = redis.setresp; redis.register_function('u', function() return 1 end)"
function load "#!lua name=b2x\nredis.register_function('g2', function() return redis.call('nosuch') end)"
fcall g2 0
function load "#!lua name=b3x\nredis.register_function('g3', function() return x end)"
fcall g3 0
function load "#!lua name=b4x\nredis.register_function('g4', function() return KEYS end)"
fcall g4 0
function delete b2x
function delete b3x
function delete b4x
function load "#!lua name=b17\nredis.register_function('w', function() return redis.register_function end)"
fcall w 0
function load "#!lua name=b23\nredis.register_function('FOO', function() return 'foo' end)"
fcall foo 0
fcall FOO 0
function list libraryname b2*
function list withcode libraryname b23
function list libraryname
function list foo
function stats
function delete nosuch
function delete b23
function flush foo
function kill
function load "#!lua name=b15\nlocal x = redis.log(redis.LOG_NOTICE, 'loading'); redis.register_function('z', function() return redis.REDIS_VERSION end)"
FUNCTION LOAD "#!lua name=lib9\nredis.register_function('incr2', function(k, a) return redis.call('incrby', k[1], 2) end)\nredis.register_function{function_name='get2', callback=function(k) return redis.call('get', k[1]) end, flags={'no-writes'}}"
FCALL incr2 1 {k}c
FCALL INCR2 1 {k}c
FCALL_RO get2 1 {k}c
FCALL_RO incr2 1 {k}c
FCALL get2 1 {k}c
FCALL incr2 1 plain-key
~FUNCTION LIST LIBRARYNAME lib9
~FUNCTION LIST WITHCODE LIBRARYNAME lib9
FUNCTION LIST WITHCODE WITHCODE
FUNCTION STATS
FUNCTION DELETE lib9
FCALL incr2 1 {k}c
FUNCTION FLUSH SYNC
FUNCTION STATS
FUNCTION LIST
FUNCTION DUMP
FUNCTION RESTORE bad
FUNCTION RESTORE bad BOGUS
FUNCTION FOO
FUNCTION HELP
FUNCTION LOAD
FUNCTION LOAD REPLACE
FUNCTION LOAD a b c
MULTI
FUNCTION LOAD "#!lua name=inmulti\nredis.register_function('im', function() return 'im' end)"
FCALL im 0
EXEC
"##;

#[test]
fn functions_reply_like_redis() {
    run_lua_script("functions", FUNCTIONS, 1, false);
    run_lua_script("functions", FUNCTIONS, 4, false);
    run_lua_script("functions-resp3", FUNCTIONS, 4, true);
}

/// Libraries survive a restart, with another shard count, and a SAVE
/// checkpoint is reopened with them.
#[test]
fn functions_persist() {
    let dir = tempfile::tempdir().unwrap();
    let lib = "#!lua name=keep\nredis.register_function('kept', function(k, a) return 'kept ' .. a[1] end)";
    {
        let mut b = Basalt::start_in(dir.path(), 2, &[]);
        let mut c = b.raw();
        assert_eq!(c.cmd(&["FUNCTION", "LOAD", lib]), b"$4\r\nkeep\r\n");
        assert_eq!(c.cmd(&["FCALL", "kept", "0", "x"]), b"$6\r\nkept x\r\n");
        b.signal_and_wait("-TERM");
    }
    let mut b = Basalt::start_in(dir.path(), 3, &[]);
    let mut c = b.raw();
    assert_eq!(c.cmd(&["FCALL", "kept", "0", "y"]), b"$6\r\nkept y\r\n");
    assert_eq!(
        c.cmd(&["FCALL_RO", "kept", "0", "y"]),
        b"-ERR Can not execute a script with write flag using *_ro command.\r\n".to_vec()
    );
    // A library deleted stays deleted.
    assert_eq!(c.cmd(&["FUNCTION", "DELETE", "keep"]), b"+OK\r\n");
    b.signal_and_wait("-TERM");
    let b = Basalt::start_in(dir.path(), 1, &[]);
    let mut c = b.raw();
    assert_eq!(c.cmd(&["FCALL", "kept", "0", "y"]), b"-ERR Function not found\r\n");
}

/// FUNCTION DUMP of either server restores into the other, and the
/// functions answer the same.
#[test]
fn dump_and_restore_between_redis_and_basalt() {
    let redis = RedisServer::start();
    let basalt = Basalt::start(2);
    let (mut r, mut b) = (redis.raw(), basalt.raw());
    // Long enough for redis-server to compress it (LZF).
    let long = format!(
        "#!lua name=long\nredis.register_function('lf', function(k, a) return 'long' end)\n-- {}\n",
        "padding ".repeat(40)
    );
    r.cmd(&["FUNCTION", "LOAD", &long]);
    let payload = bulk(&r.cmd(&["FUNCTION", "DUMP"]));
    assert_eq!(b.cmd(&[b"FUNCTION".as_slice(), b"RESTORE", &payload]), b"+OK\r\n");
    assert_eq!(b.cmd(&["FCALL", "lf", "0"]), b"$4\r\nlong\r\n");
    assert_eq!(
        b.cmd(&[b"FUNCTION".as_slice(), b"RESTORE", &payload]),
        b"-ERR Library 'long' already exists\r\n".to_vec()
    );
    assert_eq!(b.cmd(&[b"FUNCTION".as_slice(), b"RESTORE", &payload, b"REPLACE"]), b"+OK\r\n");
    b.cmd(&[
        "FUNCTION",
        "LOAD",
        "#!lua name=second\nredis.register_function('sf', function() return 2 end)",
    ]);
    let mine = bulk(&b.cmd(&["FUNCTION", "DUMP"]));
    assert_eq!(r.cmd(&[b"FUNCTION".as_slice(), b"RESTORE", &mine, b"FLUSH"]), b"+OK\r\n");
    assert_eq!(r.cmd(&["FCALL", "sf", "0"]), b":2\r\n");
    assert_eq!(r.cmd(&["FCALL", "lf", "0"]), b"$4\r\nlong\r\n");
    let mut broken = mine.clone();
    broken[5] ^= 0x20;
    for c in [&mut r, &mut b] {
        assert_eq!(
            c.cmd(&[b"FUNCTION".as_slice(), b"RESTORE", &broken]),
            b"-ERR DUMP payload version or checksum are wrong\r\n".to_vec()
        );
    }
}

/// A bulk reply's body.
fn bulk(reply: &[u8]) -> Vec<u8> {
    let at = reply.iter().position(|&c| c == b'\n').unwrap() + 1;
    reply[at..reply.len() - 2].to_vec()
}

const BUSY_EVAL: &[u8] = b"-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n";
const BUSY_FUNCTION: &[u8] = b"-BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.\r\n";

/// Waits until `c` gets -BUSY for a PING.
fn until_busy(c: &mut Raw) -> Vec<u8> {
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        let r = c.cmd(&["PING"]);
        if r.starts_with(b"-BUSY") || Instant::now() > end {
            return r;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A script that loops forever: other clients, on every shard, get -BUSY;
/// SCRIPT KILL from any of them ends it (FUNCTION KILL is the wrong kind);
/// the script's client gets Redis's error; every key is still there. The
/// same for a function and FUNCTION KILL, for a script that runs behind
/// the gate (its keys on two shards), and for one that swallows errors
/// with pcall. Same answers from redis-server.
#[test]
fn busy_scripts_are_killed() {
    let redis = RedisServer::start();
    let basalt = Basalt::start(2);
    for (server, port) in [("redis", redis.port), ("basalt", basalt.port)] {
        let mut admin = Raw::connect(port);
        admin.cmd(&["CONFIG", "SET", "busy-reply-threshold", "100"]);
        admin.cmd(&["MSET", "{k}a", "1", "b", "2"]);
        admin.cmd(&[
            "FUNCTION",
            "LOAD",
            "REPLACE",
            "#!lua name=spin\nredis.register_function('spin', function() while true do end end)",
        ]);
        let cases: &[(&[&str], bool)] = &[
            (&["EVAL", "while true do end", "1", "{k}a"], false),
            (&["EVAL", "redis.call('get', KEYS[2]); while true do end", "2", "{k}a", "b"], false),
            (&["EVAL", "while true do pcall(function() while true do end end) end", "0"], false),
            (&["FCALL", "spin", "1", "{k}a"], true),
        ];
        for (cmd, function) in cases {
            let mut runner = Raw::connect(port);
            runner.send_bytes(&Raw::encode(cmd));
            let mut other = Raw::connect(port);
            let busy = if *function { BUSY_FUNCTION } else { BUSY_EVAL };
            assert_eq!(until_busy(&mut other), busy, "[{server}] {cmd:?}");
            assert_eq!(other.cmd(&["GET", "b"]), busy, "[{server}] {cmd:?}");
            let (right, wrong) = if *function {
                ("FUNCTION", "SCRIPT")
            } else {
                ("SCRIPT", "FUNCTION")
            };
            let wrong_answer = if *function { BUSY_FUNCTION } else { BUSY_EVAL };
            assert_eq!(other.cmd(&[wrong, "KILL"]), wrong_answer, "[{server}] {cmd:?}");
            assert_eq!(other.cmd(&[right, "KILL"]), b"+OK\r\n", "[{server}] {cmd:?}");
            let got = String::from_utf8_lossy(&runner.reply()).to_string();
            assert!(
                got.starts_with("-ERR Script killed by user with SCRIPT KILL..."),
                "[{server}] {cmd:?}: {got}"
            );
            assert_eq!(
                other.cmd(&["MGET", "{k}a", "b"]),
                b"*2\r\n$1\r\n1\r\n$1\r\n2\r\n",
                "[{server}] {cmd:?}"
            );
            assert_eq!(other.cmd(&["SCRIPT", "KILL"]), b"-NOTBUSY No scripts in execution right now.\r\n");
        }
        // A script that wrote cannot be killed; it ends by itself.
        let mut runner = Raw::connect(port);
        let slow =
            "redis.call('set', KEYS[1], 'x'); local t = redis.call('time')[1]; while redis.call('time')[1] - t < 2 do end return 'done'";
        runner.send_bytes(&Raw::encode(&["EVAL", slow, "1", "{k}a"]));
        let mut other = Raw::connect(port);
        assert_eq!(until_busy(&mut other), BUSY_EVAL, "[{server}]");
        let unkillable = other.cmd(&["SCRIPT", "KILL"]);
        assert!(
            unkillable.starts_with(b"-UNKILLABLE Sorry the script already executed write commands"),
            "[{server}]"
        );
        assert_eq!(runner.reply(), b"$4\r\ndone\r\n", "[{server}]");
        assert_eq!(other.cmd(&["GET", "{k}a"]), b"$1\r\nx\r\n", "[{server}]");
    }
}

/// SHUTDOWN NOSAVE stops a server whose script loops forever, on one shard
/// (the busy core itself answers it) and on two.
#[test]
fn shutdown_nosave_stops_a_busy_server() {
    for shards in [1, 2] {
        let mut b = Basalt::start_with(shards, &["--busy-reply-threshold", "100"]);
        let mut runner = b.raw();
        runner.send_bytes(&Raw::encode(&["EVAL", "while true do end", "0"]));
        let mut other = b.raw();
        assert_eq!(until_busy(&mut other), BUSY_EVAL);
        other.send_bytes(&Raw::encode(&["SHUTDOWN", "NOSAVE"]));
        let status = b.wait_exit();
        assert!(status.success(), "{shards} shards: {status:?}");
    }
}
