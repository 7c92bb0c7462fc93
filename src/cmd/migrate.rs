//! MIGRATE: keys moved (or copied) to another server by DUMP and RESTORE,
//! as Redis's `migrateCommand`: the payloads are Redis's
//! (`types::dump`), so the other server may be a redis-server or another
//! Basalt. Each call opens its own connection (Redis caches one per
//! target for 10 s).

use std::time::Duration;

use bytes::Bytes;
use futures_lite::{AsyncReadExt, AsyncWriteExt};

use super::args::{is, parse_i64, text};
use super::{commands, CommandSpec, Conn};
use crate::coord::{self, Access};
use crate::error::{CmdError, CmdResult, SYNTAX};
use crate::resp::Reply;
use crate::shard::ShardState;
use crate::storage::meta::Meta;
use crate::types::{coll, dump};

#[rustfmt::skip]
pub(super) const COMMANDS: &[CommandSpec] = commands! {
    "migrate" -6 [write movablekeys] 3 3 1 Conn(migrate) generic "2.6.0" "Atomically transfers a key from one Redis instance to another.";
};

const NOT_INT: &str = "ERR value is not an integer or out of range";

/// A key's DUMP payload and the TTL to restore it with (ms, 0: none).
type Dumped = (Bytes, Vec<u8>, u64);

/// What MIGRATE was asked.
struct Ask {
    host: String,
    port: u16,
    db: i64,
    timeout: Duration,
    copy: bool,
    replace: bool,
    auth: Option<(Option<Bytes>, Bytes)>,
    keys: Vec<Bytes>,
}

fn parse(argv: &[Bytes]) -> CmdResult<Ask> {
    let db = parse_i64(&argv[4]).ok_or_else(|| CmdError::new(NOT_INT))?;
    let timeout = parse_i64(&argv[5]).ok_or_else(|| CmdError::new(NOT_INT))?;
    let mut ask = Ask {
        host: text(&argv[1]),
        port: 0,
        db,
        timeout: Duration::from_millis(if timeout <= 0 { 1000 } else { timeout as u64 }),
        copy: false,
        replace: false,
        auth: None,
        keys: Vec::new(),
    };
    let mut j = 6;
    while j < argv.len() {
        let a = &argv[j];
        let more = argv.len() - j - 1;
        if is(a, "copy") {
            ask.copy = true;
        } else if is(a, "replace") {
            ask.replace = true;
        } else if is(a, "auth") {
            if more == 0 {
                return Err(SYNTAX);
            }
            ask.auth = Some((None, argv[j + 1].clone()));
            j += 1;
        } else if is(a, "auth2") {
            if more < 2 {
                return Err(SYNTAX);
            }
            ask.auth = Some((Some(argv[j + 1].clone()), argv[j + 2].clone()));
            j += 2;
        } else if is(a, "keys") {
            if !argv[3].is_empty() {
                return Err(CmdError::new(
                    "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string",
                ));
            }
            ask.keys = argv[j + 1..].to_vec();
            break;
        } else {
            return Err(SYNTAX);
        }
        j += 1;
    }
    if ask.keys.is_empty() && !argv[3].is_empty() {
        ask.keys.push(argv[3].clone());
    }
    // The port is checked when the connection is made (Redis: an I/O error).
    ask.port = parse_i64(&argv[2]).and_then(|p| u16::try_from(p).ok()).unwrap_or(0);
    Ok(ask)
}

/// A command in RESP, appended to `out`.
fn encode(out: &mut Vec<u8>, args: &[&[u8]]) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

/// The payloads of the keys that exist, read on their owners.
async fn dump_keys(c: &Conn<'_>, keys: &[Bytes]) -> CmdResult<Vec<Dumped>> {
    let db = c.db();
    let listed: Vec<(usize, Bytes)> = keys.iter().cloned().enumerate().collect();
    let parts = coord::fan_out(c.shard, db, &listed, Access::Read, move |st: &ShardState, ks: &[Bytes]| {
        let now = crate::clock::now_ms();
        let mut out = Vec::new();
        for k in ks {
            let Some(v) = coll::take(&st.ks, db, k, now)? else { continue };
            let expire = Meta::decode(&v.raw).map_or(0, |m| m.expire_ms);
            let ttl = match expire {
                0 => 0,
                e if e <= now => continue,
                e => e - now,
            };
            out.push((k.clone(), dump::payload(&v, now)?, ttl));
        }
        Ok(out)
    })
    .await;
    // Back in the order the keys were named.
    let mut found: Vec<(usize, Dumped)> = Vec::new();
    for (positions, part) in parts {
        let part = part?;
        let mut it = part.into_iter().peekable();
        for p in positions {
            if it.peek().is_some_and(|d| d.0 == keys[p]) {
                if let Some(d) = it.next() {
                    found.push((p, d));
                }
            }
        }
    }
    found.sort_by_key(|(p, _)| *p);
    Ok(found.into_iter().map(|(_, d)| d).collect())
}

/// Deletes the keys that were moved, each only if it still holds what was
/// sent: Redis runs MIGRATE as one step, here another client's write may
/// land between the DUMP and the delete, and it must not be lost.
async fn delete_unchanged(c: &Conn<'_>, moved: Vec<(Bytes, Vec<u8>)>) -> CmdResult {
    let db = c.db();
    let listed: Vec<(usize, Bytes)> = moved.iter().map(|(k, _)| k.clone()).enumerate().collect();
    let sent: std::sync::Arc<std::collections::HashMap<Bytes, Vec<u8>>> = std::sync::Arc::new(moved.into_iter().collect());
    let parts = coord::fan_out(c.shard, db, &listed, Access::Write, move |st: &ShardState, ks: &[Bytes]| {
        let now = crate::clock::now_ms();
        let mut gone = Vec::new();
        for k in ks {
            let Some(payload) = sent.get(k) else { continue };
            if coll::take(&st.ks, db, k, now)?.is_some_and(|v| dump::payload(&v, now).is_ok_and(|p| p == *payload)) {
                gone.push(k.clone());
            }
        }
        crate::types::multi::del_keys(&st.ks, db, &gone, now)
    })
    .await;
    for (_, part) in parts {
        part?;
    }
    Ok(())
}

/// Reads one reply line (`+OK`, `-ERR ...`) from the target.
async fn line(s: &mut shards::rt::TcpStream, buf: &mut Vec<u8>) -> Option<String> {
    loop {
        if let Some(end) = memchr::memmem::find(buf, b"\r\n") {
            let l = String::from_utf8_lossy(&buf[..end]).to_string();
            buf.drain(..end + 2);
            return Some(l);
        }
        let mut chunk = [0u8; 4096];
        match s.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

pub async fn migrate(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let ask = parse(argv)?;
    let found = dump_keys(&c, &ask.keys).await?;
    if found.is_empty() {
        r.simple("NOKEY");
        return Ok(());
    }
    let io = |what: &str| CmdError::new(format!("IOERR error or timeout {what} target instance"));
    let addr = format!("{}:{}", ask.host, ask.port);
    let resolved = std::net::ToSocketAddrs::to_socket_addrs(&addr).ok().and_then(|mut a| a.next());
    let connected = match resolved {
        Some(a) if ask.port != 0 => shards::rt::TcpStream::connect_timeout(a, ask.timeout).await.ok(),
        _ => None,
    };
    let Some(mut s) = connected else {
        return Err(CmdError::new("IOERR error or timeout connecting to the client"));
    };
    let _ = s.set_read_timeout(Some(ask.timeout));
    let _ = s.set_write_timeout(Some(ask.timeout));
    let mut out = Vec::new();
    match &ask.auth {
        Some((Some(user), pass)) => encode(&mut out, &[b"AUTH", user, pass]),
        Some((None, pass)) => encode(&mut out, &[b"AUTH", pass]),
        None => {}
    }
    encode(&mut out, &[b"SELECT", ask.db.to_string().as_bytes()]);
    // In cluster mode Redis restores with RESTORE-ASKING (the target may be
    // importing the slot).
    let restore: &[u8] = if c.st().global.cluster.enabled {
        b"RESTORE-ASKING"
    } else {
        b"RESTORE"
    };
    for (key, payload, ttl) in &found {
        let ttl = ttl.to_string();
        let mut args: Vec<&[u8]> = vec![restore, key, ttl.as_bytes(), payload];
        if ask.replace {
            args.push(b"REPLACE");
        }
        encode(&mut out, &args);
    }
    if s.write_all(&out).await.is_err() || s.flush().await.is_err() {
        return Err(io("writing to"));
    }
    let mut buf = Vec::new();
    let target_err = |l: &str| CmdError::new(format!("ERR Target instance replied with error: {}", &l[1..]));
    if ask.auth.is_some() {
        let l = line(&mut s, &mut buf).await.ok_or_else(|| io("reading"))?;
        if l.starts_with('-') {
            return Err(target_err(&l));
        }
    }
    let l = line(&mut s, &mut buf).await.ok_or_else(|| io("reading"))?;
    if l.starts_with('-') {
        return Err(target_err(&l));
    }
    let mut first_err = None;
    let mut moved: Vec<(Bytes, Vec<u8>)> = Vec::new();
    for (key, payload, _) in &found {
        let Some(l) = line(&mut s, &mut buf).await else {
            // What was restored so far is deleted, as Redis does.
            first_err.get_or_insert_with(|| io("reading"));
            break;
        };
        if l.starts_with('-') {
            first_err.get_or_insert_with(|| target_err(&l));
        } else {
            moved.push((key.clone(), payload.clone()));
        }
    }
    if !ask.copy && !moved.is_empty() {
        delete_unchanged(&c, moved).await?;
    }
    match first_err {
        Some(e) => Err(e),
        None => {
            r.ok();
            Ok(())
        }
    }
}
