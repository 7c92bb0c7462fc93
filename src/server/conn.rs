//! The connection loop: read, parse, route, reply.
//!
// Hot path: everything here runs per request. No allocation per argument
// (arguments are slices of one frozen read chunk), no logging per command,
// one write per batch of pipelined replies, one cross-shard message per run
// of consecutive commands for the same remote shard.
//
//! A batch is every complete request in the read buffer. Requests run in
//! order; a run of consecutive shard-local commands owned by one remote shard
//! travels as one `invoke_on` and comes back as one reply buffer.

use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use futures_lite::{AsyncReadExt, AsyncWriteExt, FutureExt};
use shards::rt::TcpStream;
use shards::{Shard, Then};

use crate::client::{Client, ClientInfo};
use crate::clock::now_ms;
use crate::cmd::{self, CommandSpec, Exec};
use crate::global::Global;
use crate::resp::{parse_request, Deferred, Limits, Reply};
use crate::server::group::Grouped;
use crate::server::run::{self, close_group, finish_cmd, internal_error, run_here, share_job, Share, ShareOut};
use crate::shard::ShardState;
use crate::storage::owner;

const READ_CHUNK: usize = 16 * 1024;
/// A client whose reads fill the chunk (a long pipeline, a mass insert)
/// gets a chunk this large: each batch then carries 4x the commands, so a
/// pipeline spread over shards pays a quarter of the hops and each shard
/// writes a quarter as often. 1M SETs by `redis-cli --pipe`, 2 shards:
/// 5.97 s with 16 KiB, 4.97 s with 64 KiB (perf/pipe's workload).
const BIG_READ_CHUNK: usize = 64 * 1024;

/// Where a shard command runs: the owner of its routing key, or here.
fn target_of(spec: &CommandSpec, argv: &[Bytes], here: usize, shards: usize) -> usize {
    if spec.first_key > 0 && (spec.first_key as usize) < argv.len() {
        owner(&argv[spec.first_key as usize], shards)
    } else {
        here
    }
}

/// Produces one reply a shard handler left to the connection.
async fn run_deferred(shard: &Rc<Shard<ShardState>>, st: &ShardState, client: &Client, d: Deferred, out: &mut Reply) {
    let start = Instant::now();
    let res = std::panic::AssertUnwindSafe(crate::cmd::whole::stream(shard, client.db, &d.argv, out))
        .catch_unwind()
        .await
        .unwrap_or_else(|_| Err(internal_error(&d.argv)));
    if let Err(e) = &res {
        out.error(&e.0);
    }
    finish_cmd(st, d.idx, &d.argv, start, res.err().as_ref(), &client.info);
}

/// Appends a remote shard's reply bytes, splicing in the replies its
/// handlers left to the connection at their places.
async fn splice_deferred(
    shard: &Rc<Shard<ShardState>>,
    st: &ShardState,
    client: &Client,
    bytes: &[u8],
    deferred: Vec<Deferred>,
    out: &mut Reply,
) {
    let mut at = 0;
    for d in deferred {
        let to = d.at.min(bytes.len()).max(at);
        out.buf.extend_from_slice(&bytes[at..to]);
        at = to;
        run_deferred(shard, st, client, d, out).await;
    }
    out.buf.extend_from_slice(&bytes[at..]);
}

/// Redis's refusal of writes after a failed AOF write; Basalt's WAL is its AOF.
const MISCONF: &str = "MISCONF Errors writing to the AOF file: No space left on device";

/// What a batch's commands are checked against.
#[derive(Clone, Copy)]
struct Gate {
    requirepass: bool,
    /// The disk guard refuses writes (`storage::disk`).
    writes_refused: bool,
}

/// Checks done before a command runs: unknown, auth, arity, subcommand,
/// and writes while the disk is full (Redis's `MISCONF` after a failed AOF
/// write, which refuses PING too, so health checks notice).
fn precheck(client: &Client, argv: &[Bytes], gate: Gate) -> Result<(usize, &'static CommandSpec), (Option<usize>, String)> {
    let requirepass = gate.requirepass;
    let Some((idx, spec)) = cmd::lookup(&argv[0]) else {
        return Err((None, cmd::unknown_command_error(argv)));
    };
    if requirepass && !client.authed && !spec.no_auth() {
        return Err((Some(idx), "NOAUTH Authentication required.".into()));
    }
    if !CommandSpec::arity_ok(spec.arity, argv.len()) {
        return Err((Some(idx), cmd::arity_error(spec.name)));
    }
    cmd::check_subcommand(spec, argv).map_err(|e| (Some(idx), e))?;
    if gate.writes_refused && (spec.is_write() || spec.name == "ping") {
        return Err((Some(idx), MISCONF.into()));
    }
    Ok((idx, spec))
}

/// Redis's refusal of a non-loopback client in protected mode.
const DENIED: &[u8] = b"-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Set up an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n";

/// Protected mode (Redis 7's rule): with `protected-mode yes` and no
/// password, a client not on the loopback interface is refused. An address
/// that cannot be read counts as not local.
fn refused_by_protected_mode(g: &Global, peer: Option<std::net::SocketAddr>) -> bool {
    if !g.config.protected_mode.load(Ordering::Relaxed) || g.config.requirepass_set.load(Ordering::Relaxed) {
        return false;
    }
    !peer.is_some_and(|a| a.ip().to_canonical().is_loopback())
}

/// Serves one client until it quits, is killed, errs or times out.
pub async fn serve(shard: Rc<Shard<ShardState>>, mut stream: TcpStream) {
    let st = shard.state().clone();
    let g = st.global.clone();
    if refused_by_protected_mode(&g, stream.peer_addr().ok()) {
        let _ = stream.write_all(DENIED).await;
        return;
    }
    let _ = stream.set_nodelay(true);
    let id = g.next_client_id.fetch_add(1, Ordering::Relaxed);
    let info = Arc::new(ClientInfo {
        id,
        addr: stream.peer_addr().map(|a| a.to_string()).unwrap_or_default(),
        laddr: stream.local_addr().map(|a| a.to_string()).unwrap_or_default(),
        fd: std::os::fd::AsRawFd::as_raw_fd(&stream),
        shard: shard.id(),
        created: Instant::now(),
        name: Default::default(),
        lib_name: Default::default(),
        lib_ver: Default::default(),
        last_cmd: Default::default(),
        last_active_ms: now_ms().into(),
        db: 0.into(),
        resp: 2.into(),
        killed: false.into(),
    });
    {
        let admitted = match g.clients.lock() {
            Ok(mut clients) if (clients.len() as u64) < g.config.maxclients.load(Ordering::Relaxed) => {
                clients.insert(id, info.clone());
                true
            }
            _ => false,
        };
        if !admitted {
            g.rejected_connections.fetch_add(1, Ordering::Relaxed);
            let _ = stream.write_all(b"-ERR max number of clients reached\r\n").await;
            return;
        }
    }
    g.total_connections.fetch_add(1, Ordering::Relaxed);
    st.connections.set(st.connections.get() + 1);
    // As Redis: a client that connects while no password is set is authenticated.
    let authed = !g.config.requirepass_set.load(Ordering::Relaxed);
    let mut client = Client {
        info: info.clone(),
        db: 0,
        resp3: false,
        authed,
        closing: false,
    };
    // `rbuf` holds only what the parser has not consumed yet; it grows on
    // demand, so a connection costs one read chunk, not two.
    let mut rbuf = BytesMut::new();
    let mut scratch = vec![0u8; READ_CHUNK];
    let mut out = Reply::new(false);
    loop {
        let timeout = g.config.timeout_secs.load(Ordering::Relaxed);
        let _ = stream.set_read_timeout(if timeout > 0 { Some(Duration::from_secs(timeout)) } else { None });
        // Read into a scratch buffer zeroed once, then append: a small
        // request costs a copy of its own size, not a 16 KiB memset.
        let n = match stream.read(&mut scratch[..]).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        rbuf.extend_from_slice(&scratch[..n]);
        if n == scratch.len() && n < BIG_READ_CHUNK {
            scratch.resize(BIG_READ_CHUNK, 0);
        }
        st.net.borrow_mut().0 += n as u64;
        if rbuf.len() as u64 > g.config.query_buffer_limit.load(Ordering::Relaxed) {
            tracing::warn!(client = id, "closing client that exceeded client-query-buffer-limit");
            break;
        }
        out.resp3 = client.resp3;
        // Before AUTH a batch is one request (see `run_batch`): run the
        // rest of what was read, one request at a time, before reading more.
        let proto_err = loop {
            let (err, more) = run_batch(&shard, &st, &mut client, &mut rbuf, &mut out).await;
            if !more || err || client.closing {
                break err;
            }
        };
        // Every batch lets the other connections ready in this loop
        // iteration run first, so replies leave back to back (as Redis's
        // beforeSleep writes them): a client woken by one reply finds the
        // next ready instead of being woken again, and one WAL write (under
        // appendfsync always, one WAL sync) covers every connection's writes
        // of the iteration (group commit; RocksDB buffers WAL records until
        // then). 1 shard, 50 clients: SET -P16 92-98k -> 104-112k, GET -P16
        // 182-192k -> 212-224k ops/s. Single commands used to skip it (a
        // yield cost GET -P1 80k -> 51k) until the main ring stopped taking
        // an IPI per completion (COOP_TASKRUN, shards/glommio): now SET -P1
        // 49-51k -> 71-72k and INCR -P1 44-49k -> 67-71k, GET -P1 unchanged.
        futures_lite::future::yield_now().await;
        if g.engine.unflushed() {
            if let Err(e) = g.engine.flush_written() {
                // Never acknowledge a write that is not in the WAL.
                tracing::error!(error = %e, "WAL write failed; closing the client unanswered");
                break;
            }
        }
        if !out.buf.is_empty() {
            st.net.borrow_mut().1 += out.buf.len() as u64;
            if stream.write_all(&out.buf).await.is_err() {
                break;
            }
            out.buf.clear();
            if out.buf.capacity() > 1 << 20 {
                out.buf.shrink_to(64 * 1024);
            }
        }
        if proto_err || client.closing || info.killed.load(Ordering::Relaxed) {
            break;
        }
    }
    if let Ok(mut clients) = g.clients.lock() {
        clients.remove(&id);
    }
    st.connections.set(st.connections.get().saturating_sub(1));
    let _ = stream.close().await;
}

/// Parses every complete request in `rbuf` and runs them in order, replies
/// into `out`. Returns whether a protocol error ended the batch (reply
/// written; close) and whether complete requests
/// may be left to run (a client that must authenticate runs one at a time).
async fn run_batch(
    shard: &Rc<Shard<ShardState>>,
    st: &Rc<ShardState>,
    client: &mut Client,
    rbuf: &mut BytesMut,
    out: &mut Reply,
) -> (bool, bool) {
    let limits = Limits {
        max_bulk: st.global.config.proto_max_bulk_len.load(Ordering::Relaxed),
        unauthenticated: !client.authed && st.global.config.requirepass_set.load(Ordering::Relaxed),
    };
    let mut frames = Vec::new();
    let mut consumed = 0;
    let mut proto_err = None;
    loop {
        match parse_request(&rbuf[consumed..], limits) {
            Ok(Some(f)) => {
                let base = consumed;
                consumed += f.consumed;
                if f.args.is_empty() && f.owned.is_none() {
                    continue;
                }
                frames.push((base, f));
                // A client that must authenticate gets its limits request by
                // request, as Redis parses them: the request after an AUTH
                // is parsed with the authenticated limits.
                if limits.unauthenticated {
                    break;
                }
            }
            Ok(None) => break,
            Err(e) => {
                proto_err = Some(e);
                break;
            }
        }
    }
    // One freeze per batch: every argument is a slice of this chunk.
    let chunk = rbuf.split_to(consumed).freeze();
    let more = limits.unauthenticated && proto_err.is_none() && !frames.is_empty() && !rbuf.is_empty();
    let mut cmds: Vec<Vec<Bytes>> = frames
        .into_iter()
        .map(|(base, f)| match f.owned {
            Some(owned) => owned.into_iter().map(Bytes::from).collect(),
            None => f.args.into_iter().map(|r| chunk.slice(base + r.start..base + r.end)).collect(),
        })
        .filter(|a: &Vec<Bytes>| !a.is_empty())
        .collect();
    // A bug outside the handlers' own guards must cost this connection, not
    // the shard: a panic that escaped the connection task wedged its whole
    // executor (seen while building deferred replies).
    let ran_ok = std::panic::AssertUnwindSafe(execute(shard, st, client, &mut cmds, out))
        .catch_unwind()
        .await
        .is_ok();
    if !ran_ok {
        tracing::error!("connection loop panicked; closing the connection");
        out.error("ERR internal error");
        return (true, false);
    }
    if let Some(e) = proto_err {
        st.record_error("ERR");
        out.error(&format!("ERR Protocol error: {}", e.0));
        return (true, false);
    }
    (false, more)
}

async fn execute(shard: &Rc<Shard<ShardState>>, st: &Rc<ShardState>, client: &mut Client, cmds: &mut [Vec<Bytes>], out: &mut Reply) {
    let g = &st.global;
    let gate = Gate {
        requirepass: g.config.requirepass_set.load(Ordering::Relaxed),
        writes_refused: g.engine.disk.refused(),
    };
    let here = shard.id();
    let n = shard.count();
    // Consecutive commands run here share one write (`server::group`); the
    // group closes before anything that awaits or replies out of order.
    let mut group: Option<Grouped> = None;
    let mut i = 0;
    while i < cmds.len() && !client.closing {
        let checked = precheck(client, &cmds[i], gate);
        // Where a shard command runs (computed once: it hashes the key).
        let target = match &checked {
            Ok((_, spec)) if matches!(spec.exec, Exec::Shard(_)) => Some(target_of(spec, &cmds[i], here, n)),
            _ => None,
        };
        if target != Some(here) {
            close_group(&mut group, out, &mut []);
        }
        let (idx, spec) = match checked {
            Ok(found) => found,
            Err((idx, msg)) => {
                if let Some(idx) = idx {
                    st.record_rejected(idx);
                }
                st.record_error(&msg);
                out.error(&msg);
                i += 1;
                continue;
            }
        };
        client.info.last_active_ms.store(now_ms(), Ordering::Relaxed);
        client.info.last_cmd.store(idx + 1, Ordering::Relaxed);
        match spec.exec {
            Exec::Shard(f) => {
                let target = target.unwrap_or(here);
                if target == here {
                    let several = cmds.len() > 1;
                    let (cur, next) = cmds[i..].split_at(1);
                    let next = run::Next::Cmds(next);
                    run_here(
                        st,
                        idx,
                        f,
                        &cur[0],
                        next,
                        client.db,
                        &client.info,
                        out,
                        &mut group,
                        several,
                        &mut [],
                    )
                    .await;
                    // A deferred reply belongs right here, at the end of `out`;
                    // it is produced after an await, so the group closes first.
                    if !out.deferred.is_empty() {
                        close_group(&mut group, out, &mut []);
                    }
                    for d in std::mem::take(&mut out.deferred) {
                        run_deferred(shard, st, client, d, out).await;
                    }
                    i += 1;
                    continue;
                }
                // A GET of another shard's key reads that shard's column
                // family from here: no hop (see `strings::get_from`).
                if spec.name == "get" {
                    if let Some(store) = st.peers.get(target) {
                        let start = Instant::now();
                        let next = cmds[i + 1..].iter().map(Vec::as_slice);
                        let found = crate::server::probe::peer_get(store, client.db, &cmds[i][1], next, n, out).await;
                        if let Some(res) = found {
                            match &res {
                                Ok(hit) => st.ks.note_lookup(*hit),
                                Err(e) => out.error(&e.0),
                            }
                            finish_cmd(st, idx, &cmds[i], start, res.as_ref().err(), &client.info);
                            i += 1;
                            continue;
                        }
                    }
                }
                // The run of shard commands from here. Spread over several
                // shards, every shard gets its share at once and replies go
                // back in order; else it is one message to `target`.
                let seg = shard_segment(client, cmds, i, gate, here, n);
                let end = i + seg.len();
                if seg.iter().any(|(_, _, t)| *t != target) {
                    run_spread(shard, st, client, &mut cmds[i..end], seg, out).await;
                    i = end;
                    continue;
                }
                let batch: Vec<_> = seg
                    .into_iter()
                    .zip(cmds[i..end].iter_mut())
                    .map(|((idx, f, _), argv)| (idx, f, std::mem::take(argv)))
                    .collect();
                let (db, resp3, info) = (client.db, client.resp3, client.info.clone());
                let o = shard
                    .invoke_on_then(target, move |remote: &Rc<ShardState>| share_job(remote, batch, db, resp3, &info))
                    .await;
                if o.deferred.is_empty() {
                    out.buf.extend_from_slice(&o.buf);
                } else {
                    splice_deferred(shard, st, client, &o.buf, o.deferred, out).await;
                }
                i = end;
            }
            Exec::Conn(f) => {
                let argv = std::mem::take(&mut cmds[i]);
                let start = Instant::now();
                let res = std::panic::AssertUnwindSafe(f(cmd::Conn { shard, client }, &argv, out))
                    .catch_unwind()
                    .await
                    .unwrap_or_else(|_| Err(internal_error(&argv)));
                if let Err(e) = &res {
                    out.error(&e.0);
                }
                finish_cmd(st, idx, &argv, start, res.err().as_ref(), &client.info);
                i += 1;
            }
        }
    }
    close_group(&mut group, out, &mut []);
}

/// The run of shard commands starting at `from` (which is one): for each,
/// its command index, handler and target shard.
fn shard_segment(
    client: &Client,
    cmds: &[Vec<Bytes>],
    from: usize,
    gate: Gate,
    here: usize,
    n: usize,
) -> Vec<(usize, cmd::ShardFn, usize)> {
    let mut seg = Vec::new();
    for argv in &cmds[from..] {
        match precheck(client, argv, gate) {
            Ok((idx, spec)) => match spec.exec {
                Exec::Shard(f) => seg.push((idx, f, target_of(spec, argv, here, n))),
                Exec::Conn(_) => break,
            },
            Err(_) => break,
        }
    }
    seg
}

/// Runs pipelined shard commands that go to several shards (`seg[k]`:
/// index, handler and target of `cmds[k]`) as one message per shard, all
/// shards at once (this shard's share runs here meanwhile), and writes the
/// replies in command order. Commands for different shards touch different
/// keys, so only the order within each shard matters, and that is kept.
/// (Dragonfly calls this pipeline squashing.)
async fn run_spread(
    shard: &Rc<Shard<ShardState>>,
    st: &Rc<ShardState>,
    client: &Client,
    cmds: &mut [Vec<Bytes>],
    seg: Vec<(usize, cmd::ShardFn, usize)>,
    out: &mut Reply,
) {
    // Each command's share and place in it; shares in order of first use.
    let mut shares: Vec<(usize, Share)> = Vec::new();
    let mut place = Vec::with_capacity(cmds.len());
    for ((idx, f, target), argv) in seg.into_iter().zip(cmds.iter_mut()) {
        let s = match shares.iter().position(|(t, _)| *t == target) {
            Some(s) => s,
            None => {
                shares.push((target, Vec::new()));
                shares.len() - 1
            }
        };
        place.push((s, shares[s].1.len()));
        shares[s].1.push((idx, f, std::mem::take(argv)));
    }
    if let Some(last) = place.last() {
        client.info.last_cmd.store(shares[last.0].1[last.1].0 + 1, Ordering::Relaxed);
    }
    let (db, resp3) = (client.db, client.resp3);
    let here = shard.id();
    let mut futs: Vec<std::pin::Pin<Box<dyn std::future::Future<Output = ShareOut> + '_>>> = Vec::with_capacity(shares.len());
    let mut local = None;
    for (s, (target, share)) in shares.into_iter().enumerate() {
        let info = client.info.clone();
        if target == here {
            local = Some((s, share, info));
        } else {
            futs.push(Box::pin(shard.invoke_on_then(target, move |remote: &Rc<ShardState>| {
                share_job(remote, share, db, resp3, &info)
            })));
        }
    }
    // The remote shares are sent first (join_all polls in order), then this
    // shard's runs while they are under way.
    let local_at = local.as_ref().map(|(s, _, _)| *s);
    if let Some((_, share, info)) = local {
        let st = st.clone();
        futs.push(Box::pin(async move {
            match share_job(&st, share, db, resp3, &info) {
                Then::Now(o) => o,
                Then::Later(f) => f.await,
            }
        }));
    }
    let mut outs: Vec<Option<ShareOut>> = shards::join_all(futs).await.into_iter().map(Some).collect();
    // `outs` is in send order: remote shares by share index, the local last.
    if let Some(at) = local_at {
        let l = outs.pop().flatten();
        outs.insert(at, l);
    }
    let mut deferred: Vec<std::vec::IntoIter<Deferred>> = outs
        .iter_mut()
        .map(|o| o.as_mut().map(|o| std::mem::take(&mut o.deferred)).unwrap_or_default().into_iter())
        .collect();
    for (s, w) in place {
        let Some(o) = outs[s].as_ref() else { continue };
        let (start, d0) = if w == 0 { (0, 0) } else { o.marks[w - 1] };
        let (end, d1) = o.marks[w];
        if d1 == d0 {
            out.buf.extend_from_slice(&o.buf[start..end]);
            continue;
        }
        let mine: Vec<Deferred> = deferred[s]
            .by_ref()
            .take(d1 - d0)
            .map(|mut d| {
                d.at -= start;
                d
            })
            .collect();
        splice_deferred(shard, st, client, &o.buf[start..end], mine, out).await;
    }
}
