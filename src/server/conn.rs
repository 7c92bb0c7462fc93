//! The connection loop: read, parse, hand the batch to `dispatch`, flush
//! the WAL, write the replies.
//!
// Hot path: everything here runs per read. No allocation per argument
// (arguments are slices of one frozen read chunk), no logging per command,
// one write per batch of pipelined replies.
//
//! A batch is every complete request in the read buffer; `dispatch::execute`
//! runs it in order and writes the replies into one buffer.

use std::ops::Range;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use futures_lite::{AsyncReadExt, AsyncWriteExt, FutureExt};
use shards::rt::TcpStream;
use shards::Shard;

use crate::client::{Client, ClientInfo, ReplyMode, Subs};
use crate::clock::now_ms;
use crate::dispatch;
use crate::global::Global;
use crate::pubsub::Push;
use crate::resp::{parse_request_into, Limits, Reply};
use crate::shard::ShardState;

const READ_CHUNK: usize = 16 * 1024;
/// A client whose reads fill the chunk (a long pipeline, a mass insert)
/// gets a chunk this large: each batch then carries 4x the commands, so a
/// pipeline spread over shards pays a quarter of the hops and each shard
/// writes a quarter as often. 1M SETs by `redis-cli --pipe`, 2 shards:
/// 5.97 s with 16 KiB, 4.97 s with 64 KiB (perf/pipe's workload).
const BIG_READ_CHUNK: usize = 64 * 1024;

/// Redis's refusal of a non-loopback client in protected mode.
const DENIED: &[u8] = b"-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Set up an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n";

/// Protected mode (Redis 7's rule): with `protected-mode yes` and no
/// password, a client not on the loopback interface is refused. An address
/// that cannot be read counts as not local.
fn refused_by_protected_mode(g: &Global, peer: Option<std::net::SocketAddr>) -> bool {
    if !g.config.protected_mode.load(Ordering::Relaxed) || !g.acl.default_open() {
        return false;
    }
    !peer.is_some_and(|a| a.ip().to_canonical().is_loopback())
}

/// Serves one client until it quits, is killed, errs or times out.
pub async fn serve(shard: Rc<Shard<ShardState>>, mut stream: TcpStream, node: Option<usize>) {
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
        multi: (-1).into(),
        subs: Default::default(),
        monitor: false.into(),
        waiter: Default::default(),
        paused: false.into(),
        no_touch: false.into(),
        user: Mutex::new("default".into()),
        mem: Default::default(),
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
    let authed = g.acl.default_open();
    let mut client = Client {
        info: info.clone(),
        db: 0,
        resp3: false,
        authed,
        closing: false,
        multi: None,
        in_exec: false,
        in_script: false,
        watch: None,
        pubsub: None,
        reply: crate::client::ReplyMode::On,
        node,
        user: g.acl.default_user(),
        acl_gen: g.acl.generation(),
    };
    // `rbuf` holds only what the parser has not consumed yet; it grows on
    // demand, so a connection costs one read chunk, not two.
    let mut rbuf = BytesMut::new();
    let mut scratch = vec![0u8; READ_CHUNK];
    let mut out = Reply::new(false);
    let mut requests = Requests::default();
    loop {
        // As Redis: a subscribed or monitoring client never times out.
        let timeout = if client.listening() {
            0
        } else {
            g.config.timeout_secs.load(Ordering::Relaxed)
        };
        let _ = stream.set_read_timeout(if timeout > 0 { Some(Duration::from_secs(timeout)) } else { None });
        // Read into a scratch buffer zeroed once, then append: a small
        // request costs a copy of its own size, not a 16 KiB memset. A
        // subscriber also wakes for its messages.
        let n = match next_event(&mut stream, &mut scratch, client.pubsub.as_deref()).await {
            Event::Read(Ok(0) | Err(_)) => break,
            Event::Read(Ok(n)) => n,
            Event::Pushed(items) => {
                out.resp3 = client.resp3;
                if let Some(s) = &client.pubsub {
                    s.write(items, &mut out);
                }
                st.net.borrow_mut().1 += out.buf.len() as u64;
                if stream.write_all(&out.buf).await.is_err() {
                    break;
                }
                out.buf.clear();
                if info.killed.load(Ordering::Relaxed) {
                    break;
                }
                continue;
            }
        };
        rbuf.extend_from_slice(&scratch[..n]);
        if n == scratch.len() && n < BIG_READ_CHUNK {
            scratch.resize(BIG_READ_CHUNK, 0);
        }
        info.mem.rbp.fetch_max(n as u64, Ordering::Relaxed);
        st.net.borrow_mut().0 += n as u64;
        if rbuf.len() as u64 > g.config.query_buffer_limit.load(Ordering::Relaxed) {
            tracing::warn!(client = id, "closing client that exceeded client-query-buffer-limit");
            break;
        }
        out.resp3 = client.resp3;
        // Before AUTH a batch is one request (see `run_batch`): run the
        // rest of what was read, one request at a time, before reading more.
        // (Only a batch that leaves no request to run holds writes for
        // the turn.)
        let (proto_err, deferred) = loop {
            let (err, more, d) = run_batch(&shard, &st, &mut client, &mut rbuf, &mut requests, &mut out).await;
            if !more || err || client.closing {
                break (err, d);
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
        // The first connection past the yield writes what every connection
        // of the iteration staged (`storage::group`, "Turns"): one RocksDB
        // write for all of them; each then learns whether its writes were
        // lost.
        st.ks.end_turn();
        if let Some(d) = deferred {
            d.settle(&st, &mut out);
        }
        // Messages that came meanwhile go after this batch's replies.
        if client.pubsub.is_some() {
            crate::cmd::pubsub::drain_into(&mut client, &mut out);
        }
        if g.engine.unflushed() {
            if let Err(e) = g.engine.flush_written() {
                // Never acknowledge a write that is not in the WAL.
                tracing::error!(error = %e, "WAL write failed; closing the client unanswered");
                break;
            }
        }
        // CLIENT LIST's figures, and the query buffer's shrink: an empty
        // buffer that grew past 32 KiB (a big argument) gives its memory
        // back, as Redis's clientsCron shrinks an idle one.
        if rbuf.is_empty() && rbuf.capacity() > 32 << 10 {
            rbuf = BytesMut::new();
        }
        let mem = &info.mem;
        mem.qbuf.store(rbuf.len() as u64, Ordering::Relaxed);
        mem.qbuf_free.store((rbuf.capacity() - rbuf.len()) as u64, Ordering::Relaxed);
        mem.rbs.store(scratch.len() as u64, Ordering::Relaxed);
        mem.omem.store(out.buf.len() as u64, Ordering::Relaxed);
        mem.obuf.store(out.buf.capacity() as u64, Ordering::Relaxed);
        if !out.buf.is_empty() {
            st.net.borrow_mut().1 += out.buf.len() as u64;
            if stream.write_all(&out.buf).await.is_err() {
                break;
            }
            out.buf.clear();
            if out.buf.capacity() > 1 << 20 {
                out.buf.shrink_to(64 * 1024);
            }
            mem.omem.store(0, Ordering::Relaxed);
        }
        if proto_err || client.closing || info.killed.load(Ordering::Relaxed) {
            break;
        }
    }
    crate::cmd::pubsub::unsubscribe_all(&g, &mut client);
    if let Ok(mut clients) = g.clients.lock() {
        clients.remove(&id);
    }
    st.connections.set(st.connections.get().saturating_sub(1));
    let _ = stream.close().await;
}

/// What wakes a connection: bytes from its client, or messages for it.
enum Event {
    Read(std::io::Result<usize>),
    Pushed(Vec<Push>),
}

/// Reads into `buf`; a subscriber also wakes when messages arrive. A read
/// dropped because messages won is not lost: glommio's read polls for
/// readiness and only then receives.
async fn next_event(stream: &mut TcpStream, buf: &mut [u8], subs: Option<&Subs>) -> Event {
    match subs {
        None => Event::Read(stream.read(buf).await),
        Some(s) => {
            let read = async { Event::Read(stream.read(buf).await) };
            let pushed = async { Event::Pushed(s.inbox.recv().await) };
            read.or(pushed).await
        }
    }
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
    requests: &mut Requests,
    out: &mut Reply,
) -> (bool, bool, Option<dispatch::Deferred>) {
    let limits = Limits {
        max_bulk: st.global.config.proto_max_bulk_len.load(Ordering::Relaxed),
        unauthenticated: !client.authed && !st.global.acl.default_open(),
    };
    let Requests {
        frames,
        ranges,
        cmds,
        spare,
    } = requests;
    frames.clear();
    ranges.clear();
    let mut consumed = 0;
    let mut proto_err = None;
    loop {
        let from = ranges.len();
        match parse_request_into(&rbuf[consumed..], limits, ranges) {
            Ok(Some(p)) => {
                let base = consumed;
                consumed += p.consumed;
                if ranges.len() == from && p.owned.is_none() {
                    continue;
                }
                frames.push((base, from..ranges.len(), p.owned));
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
    // Each request's argument vector is one the connection used before
    // (`Requests::spare`): a request allocates nothing once the connection is warm.
    for (base, args, owned) in frames.drain(..) {
        let mut argv = spare.pop().unwrap_or_default();
        match owned {
            Some(owned) => argv.extend(owned.into_iter().map(Bytes::from)),
            None => argv.extend(ranges[args].iter().map(|r| chunk.slice(base + r.start..base + r.end))),
        }
        if !argv.is_empty() {
            cmds.push(argv);
        }
    }
    let batch_cmds = &mut cmds[..];
    // A bug outside the handlers' own guards must cost this connection, not
    // the shard: a panic that escaped the connection task wedged its whole
    // executor (seen while building replies left to the connection).
    // A batch's writes wait for the loop iteration's one write (a turn),
    // unless requests run one at a time (before AUTH, CLIENT REPLY).
    let ran = if client.reply == ReplyMode::On && !batch_cmds.iter().any(|a| is_client_reply(a)) && !more {
        std::panic::AssertUnwindSafe(dispatch::execute_turn(shard, client, batch_cmds, out))
            .catch_unwind()
            .await
    } else {
        std::panic::AssertUnwindSafe(one_by_one(shard, client, batch_cmds, out))
            .catch_unwind()
            .await
            .map(|()| None)
    };
    // The arguments go now, not with the next batch: an idle connection
    // must not keep its last read chunk (it may be a 512 MB argument).
    recycle(cmds, spare);
    // A batch of thousands of requests, or one of a million arguments,
    // does not size these for the connection's life.
    if ranges.capacity() > 4 * SPARE_VECS {
        *ranges = Vec::new();
    }
    if frames.capacity() > 4 * SPARE_VECS {
        *frames = Vec::new();
        *cmds = Vec::new();
    }
    let Ok(deferred) = ran else {
        tracing::error!("connection loop panicked; closing the connection");
        out.error("ERR internal error");
        return (true, false, None);
    };
    if let Some(e) = proto_err {
        st.record_error("ERR");
        out.error(&format!("ERR Protocol error: {}", e.0));
        return (true, false, deferred);
    }
    (false, more, deferred)
}

/// A connection's parsing state, kept between batches so that a warm
/// connection parses and runs a batch without allocating per request.
#[derive(Default)]
struct Requests {
    /// Per request: where it starts in the read chunk, its ranges in
    /// `ranges`, and its unquoted arguments if it had to be unquoted.
    frames: Vec<Request>,
    ranges: Vec<Range<usize>>,
    /// The batch's requests, as `dispatch` takes them.
    cmds: Vec<Vec<Bytes>>,
    /// Emptied argument vectors of earlier batches, to be filled again.
    spare: Vec<Vec<Bytes>>,
}

/// A parsed request of a batch: where it starts in the read chunk, its
/// argument ranges in `Requests::ranges`, its unquoted arguments if any.
type Request = (usize, Range<usize>, Option<Vec<Vec<u8>>>);

/// Most argument vectors a connection keeps for reuse, and the largest
/// one kept (a huge MSET's vector is not held for the next GET).
const SPARE_VECS: usize = 1024;
const SPARE_ARGS: usize = 64;

/// Empties the last batch's argument vectors into `spare` (dropping their
/// arguments: the read chunk they share is freed with the last of them).
/// A vector dispatch moved elsewhere (a share sent to another shard) is
/// left empty with no capacity and is not kept.
fn recycle(cmds: &mut Vec<Vec<Bytes>>, spare: &mut Vec<Vec<Bytes>>) {
    for mut argv in cmds.drain(..) {
        if argv.capacity() == 0 || argv.capacity() > SPARE_ARGS || spare.len() >= SPARE_VECS {
            continue;
        }
        argv.clear();
        spare.push(argv);
    }
}

/// Whether `argv` is CLIENT REPLY (a batch holding one runs command by
/// command, so each reply can be dropped or kept).
fn is_client_reply(argv: &[Bytes]) -> bool {
    argv.len() >= 2 && argv[0].len() == 6 && argv[0].eq_ignore_ascii_case(b"client") && argv[1].eq_ignore_ascii_case(b"reply")
}

/// Runs a batch one command at a time under CLIENT REPLY OFF or SKIP,
/// keeping only the replies the mode lets through: none while OFF (the
/// OFF itself included; ON's +OK is sent), none for SKIP and the command
/// after it.
async fn one_by_one(shard: &Rc<Shard<ShardState>>, client: &mut Client, cmds: &mut [Vec<Bytes>], out: &mut Reply) {
    for i in 0..cmds.len() {
        if client.closing {
            break;
        }
        let skipped = client.reply == ReplyMode::SkipNext;
        if skipped {
            client.reply = ReplyMode::Skipping;
        }
        let at = out.buf.len();
        dispatch::execute(shard, client, &mut cmds[i..i + 1], out).await;
        if client.reply == ReplyMode::Skipping {
            client.reply = ReplyMode::On;
        }
        if skipped || matches!(client.reply, ReplyMode::Off | ReplyMode::SkipNext) {
            out.buf.truncate(at);
        }
    }
}
