//! ACL users: replies compared with redis-server where Redis 7.0 and 7.2
//! agree, Redis 7.2's texts where they differ (rules kept in the order
//! given, `sanitize-payload` among the flags, DRYRUN's `User <name> has
//! no permissions...`); permissions on commands, subcommands, first
//! arguments, keys (read and write), channels (patterns exactly), selectors,
//! in MULTI and in scripts; AUTH, HELLO, requirepass, CLIENT LIST and KILL,
//! DELUSER closing connections, the ACL log, RESP3 shapes.

mod common;

use common::{show, split, Basalt, Raw, RedisServer};

fn q(c: &mut Raw, line: &str) -> String {
    show(&c.cmd(&split(line)))
}

/// Runs `lines` on both servers and compares the replies (GENPASS's and
/// CAT's contents aside: random, and in Redis's hash order).
#[test]
fn replies_match_redis() {
    let redis = RedisServer::start();
    let basalt = Basalt::start(2);
    let (mut r, mut b) = (redis.raw(), basalt.raw());
    let lines = [
        "ACL WHOAMI",
        "ACL USERS",
        "ACL SETUSER alice",
        "ACL USERS",
        "ACL SETUSER alice on >p1 >p2 <p1 ~k:* &ch +get",
        "ACL GETUSER nobody",
        "ACL SETUSER c %X~a",
        "ACL SETUSER c %~a",
        "ACL SETUSER c +client|id|x",
        "ACL SETUSER c +config|get|x",
        "ACL SETUSER c +nosuch",
        "ACL SETUSER c -nosuch",
        "ACL SETUSER c +@nosuch",
        "ACL SETUSER c ~* ~a",
        "ACL SETUSER c &* &a",
        "ACL SETUSER c #abc",
        "ACL SETUSER c !abc",
        "ACL SETUSER c <nope",
        "ACL SETUSER c (+get",
        "ACL SETUSER c heeyyyy",
        "ACL SETUSER c +select|",
        "ACL SETUSER \"a b\" on",
        "ACL USERS",
        "ACL CAT",
        "ACL CAT nosuch",
        "ACL DRYRUN nobody get x",
        "ACL DRYRUN alice nosuch",
        "ACL DRYRUN alice get",
        "ACL DRYRUN alice get k:1",
        "ACL DELUSER default",
        "ACL DELUSER alice nobody",
        "ACL DELUSER alice",
        "ACL GENPASS 0",
        "ACL GENPASS 4097",
        "ACL GENPASS x",
        "ACL LOG x",
        "ACL LOG RESET",
        "ACL LOG",
        "ACL SAVE",
        "ACL LOAD",
        "ACL NOPE",
        "ACL WHOAMI extra",
        "AUTH nobody x",
        "AUTH x",
        "AUTH a b c",
        "ACL SETUSER u1 on nopass +@all ~*",
        "AUTH u1 anything",
        "ACL WHOAMI",
        "AUTH default x",
        "ACL WHOAMI",
    ];
    for line in lines {
        assert_eq!(q(&mut b, line), q(&mut r, line), "{line}");
    }
    // Random passwords of the asked size.
    for (bits, len) in [("", 64), ("1", 1), ("5", 2), ("4096", 1024)] {
        let p = String::from_utf8(b.cmd(&split(&format!("ACL GENPASS {bits}")))).unwrap();
        let hex = p.split("\r\n").nth(1).unwrap();
        assert_eq!(hex.len(), len, "{bits}");
        assert!(hex.bytes().all(|c| c.is_ascii_hexdigit()));
    }
    // The commands of a category, as a set.
    for cat in ["hyperloglog", "keyspace", "pubsub", "transaction", "scripting"] {
        let sorted = |c: &mut Raw| {
            let mut v: Vec<String> = q(c, &format!("ACL CAT {cat}")).split("\\r\\n").map(str::to_string).collect();
            v.sort();
            v
        };
        let (want, got) = (sorted(&mut r), sorted(&mut b));
        // Commands Basalt lacks (replication, modules) are not listed.
        let missing: Vec<&String> = want.iter().filter(|w| !got.contains(w)).collect();
        let extra: Vec<&String> = got.iter().filter(|g| !want.contains(g)).collect();
        assert!(
            extra.iter().all(|e| e.starts_with('*') || e.starts_with('$')),
            "{cat}: extra {extra:?}"
        );
        assert!(
            missing
                .iter()
                .all(|m| m.starts_with('*') || m.starts_with('$') || m.contains("module")),
            "{cat}: missing {missing:?}"
        );
    }
}

/// Redis 7.2's descriptions: the rules in the order given (a later rule of
/// a name replacing an earlier one), `sanitize-payload`, selectors.
#[test]
fn users_read_back_as_redis_72_prints_them() {
    let basalt = Basalt::start(1);
    let mut b = basalt.raw();
    assert_eq!(
        q(&mut b, "ACL LIST"),
        "*1\\r\\n$51\\r\\nuser default on nopass sanitize-payload ~* &* +@all\\r\\n"
    );
    assert_eq!(
        q(
            &mut b,
            "ACL SETUSER bob on >pw ~foo:* %R~bar %W~w &ch +get +@hash -hdel +client|id +select|0 (+set ~x)"
        ),
        "+OK\\r\\n"
    );
    let list = q(&mut b, "ACL LIST");
    assert!(
        list.contains("user bob on sanitize-payload #30c952fab122c3f9759f02a6d95c3758b246b4fee239957b2d4fee46e26170c4 ~foo:* %R~bar %W~w resetchannels &ch -@all +get +@hash -hdel +client|id +select|0 (~x resetchannels -@all +set)"),
        "{list}"
    );
    let bulk = |s: &str| format!("${}\\r\\n{s}\\r\\n", s.len());
    let want = [
        "*12\\r\\n".to_string(),
        bulk("flags"),
        "*2\\r\\n".into(),
        bulk("on"),
        bulk("sanitize-payload"),
        bulk("passwords"),
        "*1\\r\\n".into(),
        bulk("30c952fab122c3f9759f02a6d95c3758b246b4fee239957b2d4fee46e26170c4"),
        bulk("commands"),
        bulk("-@all +get +@hash -hdel +client|id +select|0"),
        bulk("keys"),
        bulk("~foo:* %R~bar %W~w"),
        bulk("channels"),
        bulk("&ch"),
        bulk("selectors"),
        "*1\\r\\n*6\\r\\n".into(),
        bulk("commands"),
        bulk("-@all +set"),
        bulk("keys"),
        bulk("~x"),
        bulk("channels"),
        bulk(""),
    ]
    .concat();
    assert_eq!(q(&mut b, "ACL GETUSER bob"), want);
    // A later rule of the same command replaces the earlier one; a whole
    // command replaces its subcommands' rules; +@all starts over.
    q(&mut b, "ACL SETUSER r +get +set -get +config|get -config");
    assert!(q(&mut b, "ACL LIST").contains("user r off sanitize-payload resetchannels -@all +set -get -config"));
    q(&mut b, "ACL SETUSER r +@all -flushall nopass skip-sanitize-payload");
    assert!(q(&mut b, "ACL LIST").contains("user r off nopass skip-sanitize-payload resetchannels +@all -flushall"));
    q(&mut b, "ACL SETUSER r reset");
    assert!(q(&mut b, "ACL LIST").contains("user r off sanitize-payload resetchannels -@all"));
    // A failed SETUSER changes nothing, and creates no user.
    assert!(q(&mut b, "ACL SETUSER r on +get bogus").starts_with("-ERR Error in ACL SETUSER modifier 'bogus'"));
    assert!(q(&mut b, "ACL LIST").contains("user r off sanitize-payload resetchannels -@all"));
    q(&mut b, "ACL SETUSER ghost on bogus");
    assert_eq!(q(&mut b, "ACL GETUSER ghost"), "$-1\\r\\n");
    // RESP3: maps.
    q(&mut b, "HELLO 3");
    let u = q(&mut b, "ACL GETUSER bob");
    assert!(u.starts_with("%6\\r\\n$5\\r\\nflags\\r\\n~2\\r\\n"), "{u}");
    assert!(u.contains("$9\\r\\nselectors\\r\\n*1\\r\\n%3\\r\\n"), "{u}");
}

#[test]
fn permissions_are_enforced() {
    let basalt = Basalt::start(2);
    let mut admin = basalt.raw();
    let ok = "+OK\\r\\n";
    assert_eq!(
        q(
            &mut admin,
            "ACL SETUSER bob on >pw ~foo:* %R~ro:* %W~wo:* &news.* +@string +@pubsub +multi +exec +eval +acl|whoami +client|id +select|0 -append (+hget ~h:*)"
        ),
        ok
    );
    let mut c = basalt.raw();
    assert_eq!(q(&mut c, "AUTH bob pw"), ok);
    assert_eq!(q(&mut c, "ACL WHOAMI"), "$3\\r\\nbob\\r\\n");
    let no_key = "-NOPERM No permissions to access a key\\r\\n";
    let no_channel = "-NOPERM No permissions to access a channel\\r\\n";
    let no_cmd = |name: &str| format!("-NOPERM User bob has no permissions to run the '{name}' command\\r\\n");
    // Commands, subcommands, first arguments.
    assert_eq!(q(&mut c, "SET foo:1 v"), ok);
    assert_eq!(q(&mut c, "GET foo:1"), "$1\\r\\nv\\r\\n");
    assert_eq!(q(&mut c, "APPEND foo:1 x"), no_cmd("append"));
    assert_eq!(q(&mut c, "DEL foo:1"), no_cmd("del"));
    assert!(q(&mut c, "CLIENT ID").starts_with(':'));
    assert_eq!(q(&mut c, "CLIENT LIST"), no_cmd("client|list"));
    assert_eq!(q(&mut c, "SELECT 0"), ok);
    assert_eq!(q(&mut c, "SELECT 1"), no_cmd("select"));
    assert_eq!(q(&mut c, "PING"), no_cmd("ping"));
    // Keys: read-only and write-only patterns; every key of a command.
    assert_eq!(q(&mut c, "GET ro:1"), "$-1\\r\\n");
    assert_eq!(q(&mut c, "SET ro:1 x"), no_key);
    assert_eq!(q(&mut c, "SET wo:1 x"), ok);
    assert_eq!(q(&mut c, "GET wo:1"), no_key);
    assert_eq!(q(&mut c, "GETSET wo:1 y"), no_key, "reads and writes");
    assert_eq!(q(&mut c, "MSET foo:a 1 bar 2"), no_key);
    assert_eq!(q(&mut c, "MGET foo:a ro:1"), "*2\\r\\n$-1\\r\\n$-1\\r\\n");
    // A selector allows what the root does not, whole.
    assert_eq!(q(&mut c, "HGET h:1 f"), "$-1\\r\\n");
    assert_eq!(q(&mut c, "HGET foo:1 f"), no_key);
    // Channels: names match patterns; a pattern must equal one.
    assert_eq!(q(&mut c, "PUBLISH news.today hi"), ":0\\r\\n");
    assert_eq!(q(&mut c, "PUBLISH sport hi"), no_channel);
    assert_eq!(q(&mut c, "PSUBSCRIBE news.t*"), no_channel);
    let mut sub = basalt.raw();
    q(&mut sub, "AUTH bob pw");
    assert!(q(&mut sub, "PSUBSCRIBE news.*").contains("psubscribe"));
    let mut sub2 = basalt.raw();
    q(&mut sub2, "AUTH bob pw");
    assert_eq!(q(&mut sub2, "SUBSCRIBE news.a sport"), no_channel);
    // In MULTI: the refused command spoils the transaction.
    assert_eq!(q(&mut c, "MULTI"), ok);
    assert_eq!(q(&mut c, "SET foo:m 1"), "+QUEUED\\r\\n");
    assert_eq!(q(&mut c, "GET zz"), no_key);
    assert_eq!(
        q(&mut c, "EXEC"),
        "-EXECABORT Transaction discarded because of previous errors.\\r\\n"
    );
    assert_eq!(q(&mut c, "GET foo:m"), "$-1\\r\\n");
    // In scripts: the same refusals, and redis.acl_check_cmd.
    let raised = q(&mut c, "EVAL \"return redis.call('get','zz')\" 0");
    assert!(raised.starts_with("-NOPERM No permissions to access a key script: "), "{raised}");
    assert_eq!(q(&mut c, "EVAL \"return redis.pcall('del','foo:1')\" 0"), no_cmd("del"));
    assert_eq!(
        q(
            &mut c,
            "EVAL \"return {redis.acl_check_cmd('get','foo:1'), redis.acl_check_cmd('del','foo:1')}\" 0"
        ),
        "*2\\r\\n:1\\r\\n$-1\\r\\n"
    );
    // Changes apply to connections already authenticated.
    assert_eq!(q(&mut admin, "ACL SETUSER bob -get"), ok);
    assert_eq!(q(&mut c, "GET foo:1"), no_cmd("get"));
    // DRYRUN, Redis 7.2's texts.
    let dry = |a: &mut Raw, l: &str| q(a, &format!("ACL DRYRUN bob {l}"));
    assert_eq!(dry(&mut admin, "set foo:1 v"), ok);
    let bulk = |s: &str| format!("${}\\r\\n{s}\\r\\n", s.len());
    assert_eq!(
        dry(&mut admin, "get foo:1"),
        bulk("User bob has no permissions to run the 'get' command")
    );
    assert_eq!(
        dry(&mut admin, "set zz v"),
        bulk("User bob has no permissions to access the 'zz' key")
    );
    assert_eq!(
        dry(&mut admin, "publish x m"),
        bulk("User bob has no permissions to access the 'x' channel")
    );
    assert_eq!(dry(&mut admin, "hget h:2 f"), ok);
    // The log: newest first, alike entries counted together.
    let log = q(&mut admin, "ACL LOG 1");
    assert!(
        log.starts_with("*1\\r\\n*20\\r\\n$5\\r\\ncount\\r\\n:1\\r\\n$6\\r\\nreason\\r\\n$7\\r\\ncommand\\r\\n"),
        "{log}"
    );
    assert!(
        log.contains("$6\\r\\nobject\\r\\n$3\\r\\nget\\r\\n$8\\r\\nusername\\r\\n$3\\r\\nbob\\r\\n"),
        "{log}"
    );
    assert!(log.contains("user=bob"), "{log}");
    q(&mut c, "GET foo:1");
    assert!(q(&mut admin, "ACL LOG 1").contains("$5\\r\\ncount\\r\\n:2\\r\\n"));
    let all = q(&mut admin, "ACL LOG 100");
    for (reason, context, object) in [
        ("key", "multi", "zz"),
        ("key", "lua", "zz"),
        ("command", "lua", "del"),
        ("channel", "toplevel", "sport"),
        ("channel", "toplevel", "news.t*"),
        ("command", "toplevel", "select"),
    ] {
        let want = format!(
            "$6\\r\\nreason\\r\\n${}\\r\\n{reason}\\r\\n$7\\r\\ncontext\\r\\n${}\\r\\n{context}\\r\\n$6\\r\\nobject\\r\\n${}\\r\\n{object}\\r\\n",
            reason.len(),
            context.len(),
            object.len()
        );
        assert!(all.contains(&want), "{reason} {context} {object}: {all}");
    }
    assert_eq!(q(&mut admin, "ACL LOG RESET"), ok);
    assert_eq!(q(&mut admin, "ACL LOG"), "*0\\r\\n");
    q(&mut admin, "CONFIG SET acllog-max-len 2");
    for k in ["a", "b", "c"] {
        q(&mut c, &format!("SET {k} v"));
    }
    assert!(q(&mut admin, "ACL LOG").starts_with("*2\\r\\n"));
}

#[test]
fn authentication_and_connections() {
    let basalt = Basalt::start(2);
    let mut admin = basalt.raw();
    let ok = "+OK\\r\\n";
    let wrongpass = "-WRONGPASS invalid username-password pair or user is disabled.\\r\\n";
    q(&mut admin, "ACL SETUSER alice on >a1 +@all ~*");
    q(&mut admin, "ACL SETUSER off1 off >x +@all ~*");
    q(&mut admin, "ACL SETUSER free on nopass +@all ~*");
    let mut c = basalt.raw();
    assert_eq!(q(&mut c, "AUTH alice bad"), wrongpass);
    assert_eq!(q(&mut c, "AUTH off1 x"), wrongpass, "a disabled user");
    assert_eq!(q(&mut c, "AUTH free whatever"), ok);
    assert_eq!(q(&mut c, "ACL WHOAMI"), "$4\\r\\nfree\\r\\n");
    assert!(q(&mut c, "HELLO 3 AUTH alice a1").contains("proto"));
    assert_eq!(q(&mut c, "ACL WHOAMI"), "$5\\r\\nalice\\r\\n");
    assert!(q(&mut c, "CLIENT INFO").contains(" user=alice "));
    assert_eq!(q(&mut c, "RESET"), "+RESET\\r\\n");
    assert_eq!(q(&mut c, "ACL WHOAMI"), "$7\\r\\ndefault\\r\\n");
    // The auth failures are in the log, named by the user tried.
    let log = q(&mut admin, "ACL LOG");
    assert!(log.contains("$4\\r\\nauth\\r\\n") && log.contains("$4\\r\\noff1\\r\\n"), "{log}");
    // requirepass is the default user's password, both ways.
    assert_eq!(q(&mut admin, "CONFIG SET requirepass s3cret"), ok);
    let mut fresh = basalt.raw();
    assert_eq!(q(&mut fresh, "GET k"), "-NOAUTH Authentication required.\\r\\n");
    assert_eq!(q(&mut fresh, "AUTH s3cret"), ok);
    assert_eq!(q(&mut fresh, "GET k"), "$-1\\r\\n");
    assert!(q(&mut admin, "ACL GETUSER default").contains("$9\\r\\npasswords\\r\\n*1\\r\\n$64\\r\\n"));
    assert_eq!(q(&mut admin, "CONFIG SET requirepass \"\""), ok);
    let mut open = basalt.raw();
    assert_eq!(q(&mut open, "GET k"), "$-1\\r\\n");
    assert_eq!(
        q(&mut open, "AUTH x"),
        "-ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?\\r\\n"
    );
    // The default user's own rules: a password set there needs AUTH too.
    assert_eq!(q(&mut admin, "ACL SETUSER default resetpass >pw2"), ok);
    let mut locked = basalt.raw();
    assert_eq!(q(&mut locked, "PING"), "-NOAUTH Authentication required.\\r\\n");
    assert_eq!(q(&mut locked, "AUTH default pw2"), ok);
    assert_eq!(q(&mut admin, "ACL SETUSER default nopass"), ok);
    // CLIENT LIST and KILL by user; DELUSER closes its connections.
    let mut a1 = basalt.raw();
    let mut a2 = basalt.raw();
    q(&mut a1, "AUTH alice a1");
    q(&mut a2, "AUTH alice a1");
    let list = q(&mut admin, "CLIENT LIST");
    assert_eq!(list.matches(" user=alice ").count(), 2, "{list}");
    assert_eq!(q(&mut admin, "CLIENT KILL USER nobody"), "-ERR No such user 'nobody'\\r\\n");
    assert_eq!(q(&mut admin, "CLIENT KILL USER alice"), ":2\\r\\n");
    assert!(a1.closed() && a2.closed());
    let mut f1 = basalt.raw();
    q(&mut f1, "AUTH free x");
    assert_eq!(q(&mut admin, "ACL DELUSER free off1"), ":2\\r\\n");
    assert!(f1.closed());
    assert_eq!(q(&mut admin, "ACL USERS"), "*2\\r\\n$5\\r\\nalice\\r\\n$7\\r\\ndefault\\r\\n");
    // Deleting one's own user: the reply, then the close.
    let mut me = basalt.raw();
    q(&mut admin, "ACL SETUSER me on nopass +@all");
    q(&mut me, "AUTH me x");
    assert_eq!(q(&mut me, "ACL DELUSER me"), ":1\\r\\n");
    assert!(me.closed());
}

/// `aclfile`: loaded at the start, ACL SAVE and LOAD (whole or not at
/// all, closing the connections of users gone); `user` lines of the
/// config file; not both; INFO's refusal counters.
#[test]
fn acl_files_and_config_users() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("users.acl");
    std::fs::write(&path, "user alice on >pw ~* +@all\nuser default on nopass ~* &* +@all\n").unwrap();
    let file = path.display().to_string();
    let basalt = Basalt::start_with(1, &["--aclfile", &file]);
    let mut admin = basalt.raw();
    let ok = "+OK\\r\\n";
    let mut a = basalt.raw();
    assert_eq!(q(&mut a, "AUTH alice pw"), ok);
    assert_eq!(q(&mut admin, "ACL SETUSER bob on >b +get"), ok);
    assert_eq!(q(&mut admin, "ACL SAVE"), ok);
    let saved = std::fs::read_to_string(&path).unwrap();
    assert!(saved.contains("user bob on sanitize-payload #"), "{saved}");
    assert!(saved.contains("user alice on sanitize-payload #"), "{saved}");
    // A wrong file changes nothing.
    std::fs::write(&path, "user carol on nopass +@all ~*\nnot a user line\n").unwrap();
    let err = q(&mut admin, "ACL LOAD");
    assert_eq!(
        err,
        format!("-ERR {file}:2 should start with user keyword followed by the username. WARNING: ACL errors detected, no change to the previously active ACL rules was performed\\r\\n")
    );
    assert_eq!(
        q(&mut admin, "ACL USERS"),
        "*3\\r\\n$5\\r\\nalice\\r\\n$3\\r\\nbob\\r\\n$7\\r\\ndefault\\r\\n"
    );
    // A right one replaces every user; alice's connection ends.
    std::fs::write(&path, "user carol on nopass +@all ~*\n").unwrap();
    assert_eq!(q(&mut admin, "ACL LOAD"), ok);
    assert!(a.closed());
    assert_eq!(q(&mut admin, "ACL USERS"), "*2\\r\\n$5\\r\\ncarol\\r\\n$7\\r\\ndefault\\r\\n");
    assert_eq!(q(&mut admin, "AUTH carol x"), ok);
    // INFO counts refusals, the log kept or not.
    let mut c = basalt.raw();
    q(&mut c, "AUTH alice nope");
    q(&mut c, "AUTH nobody nope");
    let info = q(&mut admin, "INFO stats");
    assert!(info.contains("acl_access_denied_auth:2\\r\\n"), "{info}");
    assert!(info.contains("acl_access_denied_cmd:0"), "{info}");
    drop(basalt);

    // `user` lines in the config file: the default user off needs AUTH.
    let conf = dir.path().join("basalt.conf");
    std::fs::write(&conf, "user default off\nuser ops on >opspw ~* &* +@all\n").unwrap();
    let basalt = Basalt::start_with_file(1, &conf);
    let mut c = basalt.raw();
    assert_eq!(q(&mut c, "GET k"), "-NOAUTH Authentication required.\\r\\n");
    assert_eq!(
        q(&mut c, "AUTH default x"),
        "-WRONGPASS invalid username-password pair or user is disabled.\\r\\n"
    );
    assert_eq!(q(&mut c, "AUTH ops opspw"), ok);
    assert!(q(&mut c, "ACL LIST").contains("user default off sanitize-payload resetchannels -@all"));
    assert!(q(&mut c, "INFO stats").contains("acl_access_denied_auth:1"));
    drop(basalt);

    // Both: the start is refused, as Redis refuses it.
    std::fs::write(&conf, format!("user ops on nopass\naclfile {file}\n")).unwrap();
    let data = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_basalt"))
        .arg(&conf)
        .args([
            "--port",
            &common::free_port().to_string(),
            "--dir",
            &data.path().display().to_string(),
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let printed = String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert!(
        printed.contains("please define either an ACL file or declare users directly"),
        "{printed}"
    );
}

fn run_redis_py(port: u16) {
    let script = &common::project_file("tests/redis_py_acl.py");
    let out = std::process::Command::new("/usr/bin/python3")
        .args([script, &port.to_string()])
        .output()
        .expect("run /usr/bin/python3 (install python3-redis: bash .ci/install-deps)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.trim() == "ok",
        "redis-py's ACL methods on port {port} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// redis-py's own ACL methods and its parsing of the replies, on
/// redis-server first (the script's expectations are Redis's) and on
/// Basalt.
#[test]
fn redis_py_acl_methods_work() {
    let redis = RedisServer::start();
    run_redis_py(redis.port);
    let basalt = Basalt::start(2);
    run_redis_py(basalt.port);
}

/// The log's client-info names the command refused (or the EXEC, or the
/// script's command); EXEC refuses a queued command the rules no longer
/// allow, with Redis's text, and runs the others.
#[test]
fn rules_changed_under_a_transaction() {
    let basalt = Basalt::start(2);
    let mut admin = basalt.raw();
    let mut c = basalt.raw();
    q(&mut admin, "ACL SETUSER antirez on nopass +incr +get +multi +exec +eval ~object:*");
    q(&mut c, "AUTH antirez x");
    for (line, shown) in [
        ("DEL object:1", "cmd=del "),
        ("EVAL \"return redis.call('del','object:1')\" 0", "cmd=eval "),
    ] {
        q(&mut c, line);
        let entry = q(&mut admin, "ACL LOG 1");
        assert!(entry.contains(shown), "{line}: {entry}");
    }
    assert_eq!(q(&mut c, "MULTI"), "+OK\\r\\n");
    assert_eq!(q(&mut c, "INCR object:1234"), "+QUEUED\\r\\n");
    assert_eq!(q(&mut c, "GET object:1234"), "+QUEUED\\r\\n");
    assert_eq!(q(&mut admin, "ACL SETUSER antirez -incr"), "+OK\\r\\n");
    assert_eq!(
        q(&mut c, "EXEC"),
        "*2\\r\\n-NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: User antirez has no permissions to run the 'incr' command\\r\\n$-1\\r\\n"
    );
    let entry = q(&mut admin, "ACL LOG 1");
    assert!(
        entry.contains("$7\\r\\ncontext\\r\\n$5\\r\\nmulti\\r\\n$6\\r\\nobject\\r\\n$4\\r\\nincr\\r\\n"),
        "{entry}"
    );
    assert!(entry.contains("cmd=exec "), "{entry}");
}

/// A subscriber whose channel permission goes is disconnected (Redis 7);
/// one whose subscriptions are still allowed stays.
#[test]
fn subscribers_go_with_their_channel_permission() {
    let basalt = Basalt::start(2);
    let mut admin = basalt.raw();
    q(
        &mut admin,
        "ACL SETUSER psuser on >pspass +@all ~* resetchannels &foo:1 &bar:* &orders",
    );
    let mut doomed = basalt.raw();
    q(&mut doomed, "AUTH psuser pspass");
    q(&mut doomed, "CLIENT SETNAME deathrow");
    assert!(q(&mut doomed, "PSUBSCRIBE foo:1").contains("psubscribe"));
    let mut kept = basalt.raw();
    q(&mut kept, "AUTH psuser pspass");
    q(&mut kept, "CLIENT SETNAME pardoned");
    assert!(q(&mut kept, "SUBSCRIBE bar:x").contains("subscribe"));
    // bar:* stays, foo:1 goes: the pattern subscription to foo:1 must go.
    assert_eq!(q(&mut admin, "ACL SETUSER psuser resetchannels &bar:*"), "+OK\\r\\n");
    let list = q(&mut admin, "CLIENT LIST");
    assert!(!list.contains("name=deathrow"), "{list}");
    assert!(list.contains("name=pardoned"), "{list}");
    assert!(doomed.closed());
    // All channels: nobody goes.
    assert_eq!(q(&mut admin, "ACL SETUSER psuser allchannels"), "+OK\\r\\n");
    assert!(q(&mut admin, "CLIENT LIST").contains("name=pardoned"));
}

/// SORT's BY (with a pattern) and GET read keys no key spec names: Redis
/// refuses them to a user who may not read every key.
#[test]
fn sort_patterns_need_every_key() {
    let basalt = Basalt::start(1);
    let mut admin = basalt.raw();
    q(&mut admin, "RPUSH foo:l 3 1 2");
    q(&mut admin, "ACL SETUSER part on nopass ~foo:* +sort +sort_ro");
    q(&mut admin, "ACL SETUSER whole on nopass %R~* ~foo:* +sort");
    let mut c = basalt.raw();
    q(&mut c, "AUTH part x");
    assert_eq!(
        q(&mut c, "SORT foo:l BY w_*"),
        "-ERR BY option of SORT denied due to insufficient ACL permissions.\\r\\n"
    );
    assert_eq!(
        q(&mut c, "SORT_RO foo:l GET #"),
        "-ERR GET option of SORT denied due to insufficient ACL permissions.\\r\\n"
    );
    assert_eq!(
        q(&mut c, "SORT foo:l BY nosort"),
        "*3\\r\\n$1\\r\\n3\\r\\n$1\\r\\n1\\r\\n$1\\r\\n2\\r\\n"
    );
    assert_eq!(q(&mut c, "SORT foo:l"), "*3\\r\\n$1\\r\\n1\\r\\n$1\\r\\n2\\r\\n$1\\r\\n3\\r\\n");
    q(&mut c, "AUTH whole x");
    assert_eq!(
        q(&mut c, "SORT foo:l BY w_* GET #"),
        "*3\\r\\n$1\\r\\n1\\r\\n$1\\r\\n2\\r\\n$1\\r\\n3\\r\\n"
    );
}

/// The command rules as Redis 7.2 keeps them, rule by rule: duplicates
/// moved last, opposites replacing, `-@all`/`+@all` starting over, case
/// folded, subcommand rules folded into their command's.
#[test]
fn command_rules_fold_as_redis_72() {
    let basalt = Basalt::start(1);
    let mut b = basalt.raw();
    let commands = |b: &mut Raw| {
        let u = q(b, "ACL GETUSER adv-test");
        let at = u.find("$8\\r\\ncommands\\r\\n").expect("commands");
        let rest = &u[at + "$8\\r\\ncommands\\r\\n".len()..];
        let body = rest.split("\\r\\n").nth(1).unwrap_or_default().to_string();
        body
    };
    q(&mut b, "ACL SETUSER adv-test");
    for (rules, want) in [
        ("+@all -@hash -@slow +hget", "+@all -@hash -@slow +hget"),
        ("-@hash", "+@all -@slow +hget -@hash"),
        ("+@hash", "+@all -@slow +hget +@hash"),
        ("-@all", "-@all"),
        ("-@string -@slow +@all", "+@all"),
        ("-@all +@HASH +@hash +@HaSh", "-@all +@hash"),
        ("-@all +HGET +hget +hGeT", "-@all +hget"),
        ("-@all +@hash +@slow +@set +@set +@slow +@hash", "-@all +@set +@slow +@hash"),
        ("-@all +hget -hset +hset -hget", "-@all +hset -hget"),
        (
            "-@all +client|list +client|list +config|get +config +acl|list -acl",
            "-@all +client|list +config -acl",
        ),
        ("-@all +select|0 +select|0 +debug|segfault +debug", "-@all +select|0 +debug"),
        ("-@all -@dangerous", "-@all -@dangerous"),
        ("-@all +config +config|get -config|set +config", "-@all +config"),
    ] {
        assert_eq!(q(&mut b, &format!("ACL SETUSER adv-test {rules}")), "+OK\\r\\n", "{rules}");
        assert_eq!(commands(&mut b), want, "{rules}");
    }
}

/// Keys of commands whose key specs are incomplete or keyword-based are
/// found as Redis finds them (Redis's "odd commands" cases).
#[test]
fn odd_commands_keys_for_acls() {
    let basalt = Basalt::start(1);
    let mut b = basalt.raw();
    q(&mut b, "ACL SETUSER command-test +@all %R~read* %W~write* %RW~rw*");
    let ok = "+OK\\r\\n";
    let key = |k: &str| format!("User command-test has no permissions to access the '{k}' key");
    let dry = |b: &mut Raw, l: &str| {
        let r = q(b, &format!("ACL DRYRUN command-test {l}"));
        if r == ok {
            r
        } else {
            r.split("\\r\\n").nth(1).unwrap_or_default().to_string()
        }
    };
    for (line, want) in [
        ("MIGRATE whatever whatever rw 0 500", ok.to_string()),
        ("MIGRATE whatever whatever read 0 500", key("read")),
        ("MIGRATE whatever whatever write 0 500", key("write")),
        ("MIGRATE whatever whatever \"\" 0 5000 KEYS rw", ok.to_string()),
        ("MIGRATE whatever whatever \"\" 0 5000 KEYS read", key("read")),
        ("MIGRATE whatever whatever \"\" 0 5000 KEYS write", key("write")),
        ("MIGRATE whatever whatever \"\" 0 5000 AUTH KEYS KEYS rw", ok.to_string()),
        ("MIGRATE whatever whatever \"\" 0 5000 AUTH2 KEYS 123 KEYS rw", ok.to_string()),
        ("SORT read STORE write", ok.to_string()),
        ("SORT read STORE read", key("read")),
        ("SORT write STORE write", key("write")),
        ("EVAL \"\" 1 rw1", ok.to_string()),
        ("EVAL \"\" 1 read", key("read")),
        ("EVAL_RO \"\" 1 rw1", ok.to_string()),
        ("EVAL_RO \"\" 1 read", ok.to_string()),
        ("EVAL \"\" 0 read", ok.to_string()),
        ("GEORADIUS read longitude latitude radius M STOREDIST write", ok.to_string()),
        ("GEORADIUS read longitude latitude radius M", ok.to_string()),
        ("GEORADIUS read longitude latitude radius M STOREDIST read", key("read")),
        ("GEORADIUS write longitude latitude radius M", key("write")),
    ] {
        assert_eq!(dry(&mut b, line), want, "{line}");
    }
    // COMMAND GETKEYS agrees: MIGRATE's KEYS form names the keys after KEYS.
    assert_eq!(
        q(&mut b, "COMMAND GETKEYS MIGRATE h 1 \"\" 0 500 KEYS a b"),
        "*2\\r\\n$1\\r\\na\\r\\n$1\\r\\nb\\r\\n"
    );
}
