//! Connection commands: PING ECHO QUIT RESET HELLO AUTH SELECT CLIENT.
//! They read and change the connection's own state, so they run in the
//! connection task and never travel to another shard.

use std::sync::atomic::Ordering;

use bytes::Bytes;

use super::args::{db_index, int, is, text, Args};
use super::keys::help_reply;
use super::{commands, subcommands, CommandSpec, Conn, SubSpec};
use crate::blocked::Gone;
use crate::client::ClientInfo;
use crate::client::{Client, ReplyMode};
use crate::error::{CmdError, CmdResult, SYNTAX};
use crate::global::Global;
use crate::resp::Reply;

/// The connection commands (`cmd::table` has the line format).
#[rustfmt::skip]
pub(super) const COMMANDS: &[CommandSpec] = commands! {
    "ping"   -1 [fast]                                           0 0 0 Conn(ping)   connection "1.0.0" "Returns the server's liveliness response.";
    "echo"   2  [loading stale fast]                             0 0 0 Conn(echo)   connection "1.0.0" "Returns the given string.";
    "quit"   -1 [allow_busy noscript loading stale fast no_auth] 0 0 0 Conn(quit)   connection "1.0.0" "Closes the connection.";
    "reset"  1  [noscript loading stale fast no_auth allow_busy] 0 0 0 Conn(reset)  connection "6.2.0" "Resets the connection.";
    "hello"  -1 [noscript loading stale fast no_auth allow_busy] 0 0 0 Conn(hello)  connection "6.0.0" "Handshakes with the Redis server.";
    "auth"   -2 [noscript loading stale fast no_auth allow_busy] 0 0 0 Conn(auth)   connection "1.0.0" "Authenticates the connection.";
    "select" 2  [loading stale fast]                             0 0 0 Conn(select) connection "1.0.0" "Changes the selected database.";
    "client" -2 []                                               0 0 0 Conn(client) connection "2.4.0" "A container for client connection commands." subs CLIENT_SUBS;
};

/// CLIENT's subcommands.
#[rustfmt::skip]
const CLIENT_SUBS: &[SubSpec] = subcommands! {
    "id"       2  [noscript loading stale]       "Returns the unique client ID of the connection.";
    "setname"  3  [noscript loading stale]       "Sets the connection name.";
    "getname"  2  [noscript loading stale]       "Returns the name of the connection.";
    "list"     -2 [admin noscript loading stale] "Lists open connections.";
    "info"     2  [noscript loading stale]       "Returns information about the connection.";
    "kill"     -3 [admin noscript loading stale] "Terminates open connections.";
    "setinfo"  4  [noscript loading stale]       "Sets information specific to the client or connection.";
    "unblock"  -3 [admin noscript loading stale] "Unblocks a client blocked by a blocking command from a different connection.";
    "no-evict" 3  [admin noscript loading stale] "Sets the client eviction mode of the connection.";
    "no-touch" 3  [noscript loading stale]       "Controls whether commands sent by the client affect the LRU/LFU of accessed keys.";
    "reply"    3  [noscript loading stale]       "Instructs the server whether to reply to commands.";
    "caching"  3  [noscript loading stale]       "Instructs the server whether to track the keys in the next request.";
    "getredir" 2  [noscript loading stale]       "Returns the client ID to which the connection's tracking notifications are redirected.";
    "tracking" -3 [noscript loading stale]       "Controls server-assisted client-side caching for the connection.";
    "trackinginfo" 2 [noscript loading stale]    "Returns information about server-assisted client-side caching for the connection.";
    "pause"    -3 [admin noscript loading stale] "Suspends commands processing.";
    "unpause"  2  [admin noscript loading stale] "Resumes processing commands from paused clients.";
    "help"     2  [loading stale]                "Returns helpful text about the different subcommands.";
};

pub const SERVER_VERSION: &str = "7.2.0";

const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";

/// AUTH's and HELLO's check: `user` (the default user when None) opens
/// with `pass`; the client runs as that user from now on. A failure is
/// logged (ACL LOG `auth`), named by the command as typed.
fn authenticate(g: &Global, client: &mut Client, cmd: &[u8], user: Option<&[u8]>, pass: &[u8]) -> CmdResult {
    if user.is_none() && g.acl.default_user().nopass {
        return Err(CmdError::new(
            "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?",
        ));
    }
    let name = user.unwrap_or(b"default");
    match g.acl.authenticate(name, pass) {
        Some(u) => {
            if let Ok(mut n) = client.info.user.lock() {
                *n = String::from_utf8_lossy(&u.name).into_owned();
            }
            client.user = u;
            client.acl_gen = g.acl.generation();
            client.authed = true;
            Ok(())
        }
        None => {
            let now = crate::clock::wall_ms();
            g.acl.log(
                crate::acl::Reason::Auth,
                crate::acl::Context::Toplevel,
                cmd,
                name,
                client_line(&client.info, now, 0),
                now,
            );
            Err(CmdError::new(WRONGPASS))
        }
    }
}

fn valid_name(name: &[u8]) -> bool {
    name.iter().all(|&c| (b'!'..=b'~').contains(&c))
}

fn set_name(client: &Client, name: &[u8]) -> CmdResult {
    if !valid_name(name) {
        return Err(CmdError::new(
            "ERR Client names cannot contain spaces, newlines or special characters.",
        ));
    }
    if let Ok(mut n) = client.info.name.lock() {
        *n = text(name);
    }
    Ok(())
}

pub async fn ping(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    // As Redis: a subscribed RESP2 client gets its pong as a message.
    if c.client.subscribed() && !c.client.resp3 {
        if args.left() > 1 {
            return Err(CmdError::new(super::arity_error("ping")));
        }
        r.array(2);
        r.bulk(b"pong");
        r.bulk(if args.left() == 1 { args.bytes()? } else { b"" });
        return Ok(());
    }
    match args.left() {
        0 => r.simple("PONG"),
        1 => r.bulk(args.bytes()?),
        _ => return Err(CmdError::new(super::arity_error("ping"))),
    }
    Ok(())
}

pub async fn echo(_: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    r.bulk(Args::new(argv).bytes()?);
    Ok(())
}

pub async fn quit(c: Conn<'_>, _: &[Bytes], r: &mut Reply) -> CmdResult {
    r.ok();
    c.client.closing = true;
    // Gone from every channel before the +OK leaves, as Redis frees the
    // client before it reads another's command: a PUBSUB NUMSUB sent after
    // the reply must not count it (it did, now and then, on 4 shards).
    super::pubsub::unsubscribe_all(&c.shard.state().global, c.client);
    Ok(())
}

pub async fn reset(c: Conn<'_>, _: &[Bytes], r: &mut Reply) -> CmdResult {
    let client = c.client;
    client.db = 0;
    client.resp3 = false;
    r.resp3 = false;
    let g = &c.shard.state().global;
    client.authed = g.acl.default_open();
    client.user = g.acl.default_user();
    client.acl_gen = g.acl.generation();
    if let Ok(mut n) = client.info.user.lock() {
        *n = "default".into();
    }
    if let Ok(mut n) = client.info.name.lock() {
        n.clear();
    }
    client.info.db.store(0, Ordering::Relaxed);
    client.info.resp.store(2, Ordering::Relaxed);
    client.end_multi();
    client.reply = ReplyMode::On;
    client.info.no_touch.store(false, Ordering::Relaxed);
    super::pubsub::unsubscribe_all(&c.shard.state().global, client);
    r.simple("RESET");
    Ok(())
}

pub async fn auth(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let (user, pass) = match args.left() {
        1 => (None, args.bytes()?),
        2 => (Some(args.bytes()?), args.bytes()?),
        _ => return Err(SYNTAX),
    };
    authenticate(&c.shard.state().global, c.client, &argv[0], user, pass)?;
    r.ok();
    Ok(())
}

pub async fn select(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let raw = Args::new(argv).bytes()?;
    let id = int(raw)?;
    if id != 0 && c.shard.state().global.cluster.enabled {
        return Err(CmdError::new("ERR SELECT is not allowed in cluster mode"));
    }
    let db = db_index(raw, c.shard.state().global.databases)?;
    c.client.db = db;
    c.client.info.db.store(db, Ordering::Relaxed);
    r.ok();
    Ok(())
}

pub async fn hello(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    hello_with(&c.shard.state().global, c.client, argv, r)
}

pub async fn client(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    client_cmd(&c.shard.state().global, c.client, argv, r)
}

fn hello_with(g: &Global, client: &mut Client, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut proto = if client.resp3 { 3 } else { 2 };
    let mut args = Args::new(argv);
    if !args.is_empty() {
        let v = args
            .int()
            .map_err(|_| CmdError::new("ERR Protocol version is not an integer or out of range"))?;
        if !(2..=3).contains(&v) {
            return Err(CmdError::new("NOPROTO unsupported protocol version"));
        }
        proto = v;
    }
    let mut name = None;
    let mut authed_now = false;
    while let Some(opt) = args.peek() {
        if args.option("auth", 2) {
            let (user, pass) = (args.bytes()?, args.bytes()?);
            authenticate(g, client, &argv[0], Some(user), pass)?;
            authed_now = true;
        } else if args.option("setname", 1) {
            let n = args.arg()?;
            if !valid_name(n) {
                return Err(CmdError::new(
                    "ERR Client names cannot contain spaces, newlines or special characters.",
                ));
            }
            name = Some(n.clone());
        } else {
            return Err(CmdError::new(format!("ERR Syntax error in HELLO option '{}'", text(opt))));
        }
    }
    if authed_now {
        client.authed = true;
    }
    if !g.acl.default_open() && !client.authed {
        return Err(CmdError::new("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"));
    }
    if let Some(n) = name {
        set_name(client, &n)?;
    }
    client.resp3 = proto == 3;
    r.resp3 = client.resp3;
    client.info.resp.store(proto as u8, Ordering::Relaxed);
    r.map(7);
    r.bulk(b"server");
    r.bulk(b"redis");
    r.bulk(b"version");
    r.bulk(SERVER_VERSION.as_bytes());
    r.bulk(b"proto");
    r.int(proto);
    r.bulk(b"id");
    r.int(client.info.id as i64);
    r.bulk(b"mode");
    r.bulk(b"standalone");
    r.bulk(b"role");
    r.bulk(b"master");
    r.bulk(b"modules");
    r.array(0);
    Ok(())
}

/// What a connection costs beyond its buffers (its `Client`, `ClientInfo`
/// and task), for `tot-mem`.
const CLIENT_OVERHEAD: u64 = 1024;

/// One CLIENT LIST / CLIENT INFO line, in Redis 7.2's field order;
/// `argv_mem`: the bytes of the command the client runs now (the caller's
/// own CLIENT command; 0 for the others, which are between commands).
pub(crate) fn client_line(c: &ClientInfo, now_ms: u64, argv_mem: u64) -> String {
    let m = &c.mem;
    let load = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    let (qbuf, qfree, rbs, omem, multi) = (load(&m.qbuf), load(&m.qbuf_free), load(&m.rbs), load(&m.omem), load(&m.multi));
    let tot = qbuf + qfree + rbs + load(&m.obuf) + argv_mem + multi + CLIENT_OVERHEAD;
    let age = c.created.elapsed().as_secs();
    let idle = now_ms.saturating_sub(c.last_active_ms.load(Ordering::Relaxed)) / 1000;
    format!(
        "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={} db={} sub={} psub={} ssub={} multi={} qbuf={qbuf} qbuf-free={qfree} argv-mem={argv_mem} multi-mem={multi} rbs={rbs} rbp={} obl=0 oll=0 omem={omem} tot-mem={tot} events=r cmd={} user={} redir=-1 resp={} lib-name={} lib-ver={}",
        c.id,
        c.addr,
        c.laddr,
        c.fd,
        ClientInfo::text(&c.name),
        age,
        idle,
        client_flags(c),
        c.db.load(Ordering::Relaxed),
        c.subs[0].load(Ordering::Relaxed),
        c.subs[1].load(Ordering::Relaxed),
        c.subs[2].load(Ordering::Relaxed),
        c.multi.load(Ordering::Relaxed),
        load(&m.rbp),
        // Redis's `fullname`: `client|list` for a subcommand.
        ClientInfo::cmd_of(c.last_cmd.load(Ordering::Relaxed))
            .and_then(|(i, sub)| Some(super::TABLE.get(i)?.fullname(sub)))
            .unwrap_or_else(|| "NULL".to_string()),
        ClientInfo::text(&c.user),
        c.resp.load(Ordering::Relaxed),
        ClientInfo::text(&c.lib_name),
        ClientInfo::text(&c.lib_ver),
    )
}

/// CLIENT LIST's `flags`: `x` in MULTI, `b` blocked, `N` neither.
/// CLIENT LIST/KILL's TYPE of a client: no replicas or masters yet.
fn client_type(c: &ClientInfo) -> &'static str {
    if c.is_pubsub() {
        "pubsub"
    } else {
        "normal"
    }
}

fn client_flags(c: &ClientInfo) -> String {
    let mut f = String::new();
    if c.monitor.load(Ordering::Relaxed) {
        f.push('O');
    }
    if c.is_pubsub() {
        f.push('P');
    }
    if c.multi.load(Ordering::Relaxed) >= 0 {
        f.push('x');
    }
    if c.waiter().is_some() {
        f.push('b');
    }
    if f.is_empty() {
        f.push('N');
    }
    f
}

const CLIENT_HELP: &[&str] = &[
    "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GETNAME",
    "    Return the name of the current connection.",
    "ID",
    "    Return the ID of the current connection.",
    "INFO",
    "    Return information about the current client connection.",
    "KILL <ip:port>",
    "    Kill connection made from <ip:port>.",
    "KILL <option> <value> [<option> <value> [...]]",
    "    Kill connections. Options are:",
    "    * ADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made from the specified address",
    "    * LADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made to specified local address",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Kill connections by type.",
    "    * USER <username>",
    "      Kill connections authenticated by <username>.",
    "    * SKIPME (YES|NO)",
    "      Skip killing current connection (default: yes).",
    "    * ID <client-id>",
    "      Kill connections by client id.",
    "    * MAXAGE <maxage>",
    "      Kill connections older than the specified age.",
    "LIST [options ...]",
    "    Return information about client connections. Options:",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Return clients of specified type.",
    "NO-EVICT (ON|OFF)",
    "    Protect current client connection from eviction.",
    "NO-TOUCH (ON|OFF)",
    "    Will not touch LRU/LFU stats when this mode is on.",
    "REPLY (ON|OFF|SKIP)",
    "    Control the replies sent to the current connection.",
    "UNPAUSE",
    "    Stop the current client pause, resuming traffic.",
    "PAUSE <timeout> [WRITE|ALL]",
    "    Suspend all, or just write, clients for <timeout> milliseconds.",
    "CACHING (YES|NO)",
    "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
    "GETREDIR",
    "    Return the client ID we are redirecting to when tracking is enabled.",
    "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
    "         [OPTIN] [OPTOUT] [NOLOOP]",
    "    Control server assisted client side caching.",
    "TRACKINGINFO",
    "    Report tracking status for the current connection.",
    "SETNAME <name>",
    "    Assign the name <name> to the current connection.",
    "UNBLOCK <clientid> [TIMEOUT|ERROR]",
    "    Unblock the specified blocked client.",
    "SETINFO <option> <value>",
    "    Set client meta attr. Options are:",
    "    * LIB-NAME: the client lib name.",
    "    * LIB-VER: the client lib version.",
    "HELP",
    "    Prints this help.",
];

fn client_cmd(g: &Global, client: &mut Client, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut args = Args::new(argv);
    let raw_sub = args.arg()?;
    let sub = text(raw_sub).to_ascii_lowercase();
    let now = crate::clock::now_ms();
    let argv_mem: u64 = argv.iter().map(|a| a.len() as u64).sum();
    match sub.as_str() {
        "id" => r.int(client.info.id as i64),
        "setname" => {
            set_name(client, args.bytes()?)?;
            r.ok();
        }
        "getname" => {
            let n = ClientInfo::text(&client.info.name);
            if n.is_empty() {
                r.null();
            } else {
                r.bulk(n.as_bytes());
            }
        }
        "info" => r.verbatim(&(client_line(&client.info, now, argv_mem) + "\n")),
        "list" => {
            let mut ids: Option<Vec<u64>> = None;
            let mut ty = None;
            while !args.is_empty() {
                if args.option("type", 1) {
                    let raw = args.bytes()?;
                    let t = text(raw).to_ascii_lowercase();
                    if !["normal", "master", "replica", "pubsub", "slave"].contains(&t.as_str()) {
                        return Err(CmdError::new(format!("ERR Unknown client type '{}'", text(raw))));
                    }
                    ty = Some(if t == "slave" { "replica".to_string() } else { t });
                } else if args.option("id", 1) {
                    let mut list = ids.take().unwrap_or_default();
                    for a in args.rest() {
                        match super::args::parse_i64(a) {
                            Some(v) if v > 0 => list.push(v as u64),
                            _ => return Err(CmdError::new("ERR Invalid client ID")),
                        }
                    }
                    ids = Some(list);
                } else {
                    return Err(SYNTAX);
                }
            }
            let clients = g
                .clients
                .lock()
                .map(|c| c.values().cloned().collect::<Vec<_>>())
                .unwrap_or_default();
            let mut out = String::new();
            // A client killed is gone for its peers (Redis frees it at once).
            let wanted = |c: &&std::sync::Arc<ClientInfo>| {
                !c.killed.load(Ordering::Relaxed)
                    && ids.as_ref().is_none_or(|ids| ids.contains(&c.id))
                    && ty.as_ref().is_none_or(|t| t == client_type(c))
            };
            for c in clients.iter().filter(wanted) {
                out.push_str(&client_line(c, now, if c.id == client.info.id { argv_mem } else { 0 }));
                out.push('\n');
            }
            r.verbatim(&out);
        }
        "kill" => client_kill(g, client, argv, r)?,
        "unblock" => client_unblock(g, argv, r)?,
        "setinfo" => {
            let (raw_attr, v) = (args.bytes()?, args.bytes()?);
            let attr = text(raw_attr).to_ascii_lowercase();
            if !valid_name(v) && !v.is_empty() {
                return Err(CmdError::new(format!(
                    "ERR {} cannot contain spaces, newlines or special characters.",
                    attr
                )));
            }
            let slot = match attr.as_str() {
                "lib-name" => &client.info.lib_name,
                "lib-ver" => &client.info.lib_ver,
                _ => return Err(CmdError::new(format!("ERR Unrecognized option '{}'", text(raw_attr)))),
            };
            if let Ok(mut s) = slot.lock() {
                *s = text(v);
            }
            r.ok();
        }
        "no-evict" | "no-touch" => {
            // Nothing is ever evicted from disk: NO-EVICT has nothing to change.
            let Some(w) = args.word(&["on", "off"]) else {
                return Err(SYNTAX);
            };
            if sub == "no-touch" {
                client.info.no_touch.store(w == 0, Ordering::Relaxed);
            }
            r.ok();
        }
        "pause" => {
            let ms = super::args::parse_i64(args.bytes()?).ok_or_else(|| CmdError::new("ERR timeout is not an integer or out of range"))?;
            if ms < 0 {
                return Err(CmdError::new("ERR timeout is negative"));
            }
            let all = match args.left() {
                0 => true,
                1 => match args.word(&["write", "all"]) {
                    Some(w) => w == 1,
                    None => return Err(CmdError::new("ERR CLIENT PAUSE mode must be WRITE or ALL")),
                },
                _ => {
                    return Err(CmdError::new(
                        "ERR unknown subcommand or wrong number of arguments for 'PAUSE'. Try CLIENT HELP.",
                    ))
                }
            };
            crate::pause::pause(now.saturating_add(ms as u64), all, now);
            r.ok();
        }
        "unpause" => {
            crate::pause::unpause();
            r.ok();
        }
        // Server-assisted client-side caching is not built yet: no
        // connection is ever in tracking mode, and TRACKING ON says so.
        "caching" => {
            return Err(CmdError::new(
                "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled",
            ))
        }
        "getredir" => r.int(-1),
        "trackinginfo" => {
            r.map(3);
            r.bulk(b"flags");
            r.set(1);
            r.bulk(b"off");
            r.bulk(b"redirect");
            r.int(-1);
            r.bulk(b"prefixes");
            r.array(0);
        }
        "tracking" => {
            let mode = args.bytes()?;
            if is(mode, "off") {
                r.ok();
            } else if is(mode, "on") {
                return Err(CmdError::new(
                    "ERR CLIENT TRACKING ON is not supported by Basalt yet (no client-side caching)",
                ));
            } else {
                return Err(SYNTAX);
            }
        }
        "reply" => {
            // The connection drops the replies the mode says (`server::conn`).
            let mode = args.bytes()?;
            if is(mode, "on") {
                client.reply = ReplyMode::On;
                r.ok();
            } else if is(mode, "off") {
                client.reply = ReplyMode::Off;
            } else if is(mode, "skip") {
                if client.reply != ReplyMode::Off {
                    client.reply = ReplyMode::SkipNext;
                }
            } else {
                return Err(SYNTAX);
            }
        }
        "help" => help_reply(r, CLIENT_HELP),
        _ => {
            return Err(CmdError::new(format!(
                "ERR unknown subcommand '{}'. Try CLIENT HELP.",
                text(raw_sub)
            )))
        }
    }
    Ok(())
}

/// CLIENT UNBLOCK id [TIMEOUT|ERROR]: 1 when the client was blocked on
/// keys and is now not, else 0.
fn client_unblock(g: &Global, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    if argv.len() > 4 {
        return Err(CmdError::new(
            "ERR unknown subcommand or wrong number of arguments for 'UNBLOCK'. Try CLIENT HELP.",
        ));
    }
    let why = match argv.get(3) {
        None => Gone::Unblocked,
        Some(a) if is(a, "timeout") => Gone::Unblocked,
        Some(a) if is(a, "error") => Gone::UnblockedError,
        Some(_) => return Err(CmdError::new("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")),
    };
    let id = int(&argv[2])?;
    let target = g.clients.lock().ok().and_then(|c| c.values().find(|c| c.id as i64 == id).cloned());
    let done = target.and_then(|c| c.waiter()).is_some_and(|w| w.give_up(why));
    r.int(done as i64);
    Ok(())
}

fn client_kill(g: &Global, client: &mut Client, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let clients = g.clients.lock().map_err(|_| CmdError::new("ERR client registry unavailable"))?;
    let mut args = Args::at(argv, 2);
    if args.left() == 1 {
        // Old form: CLIENT KILL addr:port, reply +OK or an error.
        let addr = text(args.bytes()?);
        let Some(c) = clients.values().find(|c| c.addr == addr) else {
            return Err(CmdError::new("ERR No such client"));
        };
        if c.id == client.info.id {
            client.closing = true;
        } else {
            c.kill();
        }
        r.ok();
        return Ok(());
    }
    if !args.left().is_multiple_of(2) {
        return Err(SYNTAX);
    }
    let (mut id, mut addr, mut laddr, mut skipme, mut maxage, mut user, mut ty) = (None, None, None, true, None, None, None);
    for pair in args.rest().chunks(2) {
        let (opt, val) = (text(&pair[0]).to_ascii_lowercase(), &pair[1]);
        match opt.as_str() {
            "id" => match super::args::parse_i64(val) {
                Some(v) if v > 0 => id = Some(v as u64),
                _ => return Err(CmdError::new("ERR client-id should be greater than 0")),
            },
            "addr" => addr = Some(text(val)),
            "laddr" => laddr = Some(text(val)),
            "user" => {
                if g.acl.get(val).is_none() {
                    return Err(CmdError::new(format!("ERR No such user '{}'", text(val))));
                }
                user = Some(text(val));
            }
            "type" => {
                let t = text(val).to_ascii_lowercase();
                if !["normal", "master", "replica", "pubsub", "slave"].contains(&t.as_str()) {
                    return Err(CmdError::new(format!("ERR Unknown client type '{}'", text(val))));
                }
                ty = Some(t);
            }
            "skipme" => {
                skipme = if is(val, "yes") {
                    true
                } else if is(val, "no") {
                    false
                } else {
                    return Err(SYNTAX);
                }
            }
            "maxage" => maxage = Some(super::args::parse_i64(val).ok_or(SYNTAX)?),
            _ => return Err(SYNTAX),
        }
    }
    let mut killed = 0;
    for c in clients.values() {
        let matches = id.is_none_or(|v| v == c.id)
            && addr.as_ref().is_none_or(|a| *a == c.addr)
            && laddr.as_ref().is_none_or(|a| *a == c.laddr)
            && user.as_ref().is_none_or(|u| *u == ClientInfo::text(&c.user))
            && ty.as_ref().is_none_or(|t| t == client_type(c))
            && maxage.is_none_or(|m| c.created.elapsed().as_secs() as i64 >= m);
        if !matches || (skipme && c.id == client.info.id) {
            continue;
        }
        if c.id == client.info.id {
            client.closing = true;
        } else {
            c.kill();
        }
        killed += 1;
    }
    r.int(killed);
    Ok(())
}
