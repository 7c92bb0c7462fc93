//! Blocking commands across shards: BLPOP, BRPOP, BLMPOP, BLMOVE,
//! BRPOPLPUSH, and the sorted sets' BZPOPMIN, BZPOPMAX and BZMPOP
//! (docs/cross-shard.md, "Blocking"). Streams will wait the same way, with
//! their own [`Wait`].
//!
//! A client that finds none of its keys ready becomes one shared
//! [`Waiter`], queued on every key it names, on each key's owner. The
//! check and the queueing happen in one step on each owner, so a push
//! there either comes before (and the check sees it) or after (and finds
//! the waiter). A push that makes a key ready serves that key's waiters in
//! arrival order right after its command (`coord::serve`), on the owner:
//! claiming a waiter ([`Waiter::claim`]) and popping for it happen in the
//! same synchronous step, so an element is popped only for a client still
//! waiting, and a client waiting on keys of several shards is served by
//! exactly one. Its timeout, CLIENT UNBLOCK, CLIENT KILL and its
//! connection closing claim it the same way, so none of them races a pop.
//!
//! The served result travels to the client's shard through a one-shot
//! channel. A BLMOVE whose destination lives on another shard is popped
//! with an intent record, and the client's task pushes it on the
//! destination's owner (`coord::list::finish_move`), as LMOVE does.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_lite::future;
use shards::rt;

use super::list::finish_move;
use super::serve::{has_data, take_for};
use super::S;
use crate::blocked::{Gone, Outcome, Served, Waiter};
use crate::client::ClientInfo;
use crate::clock::now_ms;
use crate::error::{CmdError, CmdResult};
use crate::shard::ShardState;
use crate::slot::owner;
use crate::types::list::End;
use crate::types::string::{timeout_ms, TimeoutError};

pub use crate::blocked::{Wait, XWait};

/// How often a blocked client checks that its connection is still open.
const HANGUP_CHECK: Duration = Duration::from_millis(100);

/// The timeout of a blocking command that must not block (inside EXEC):
/// it answers from the data there is, or as if its timeout had passed.
/// No parsed timeout is zero: 0 means forever, and anything above rounds
/// up to a millisecond.
pub const NO_BLOCK: Option<Duration> = Some(Duration::ZERO);

/// A blocking command's timeout, as Redis's `getTimeoutFromObjectOrReply`
/// reads seconds (`types::string::timeout_ms`); 0 blocks forever.
pub fn parse_timeout(a: &[u8]) -> CmdResult<Option<Duration>> {
    let ms = timeout_ms(a).map_err(|e| {
        CmdError::new(match e {
            TimeoutError::NotFloat => "ERR timeout is not a float or out of range",
            TimeoutError::OutOfRange => "ERR timeout is out of range",
            TimeoutError::Negative => "ERR timeout is negative",
        })
    })?;
    // Redis adds the clock to it, refusing what would overflow.
    if ms > i64::MAX as u64 - now_ms() {
        return Err(CmdError::new("ERR timeout is out of range"));
    }
    Ok((ms > 0).then(|| Duration::from_millis(ms)))
}

/// Queues `w` on its keys of this shard, in order, unless one has data:
/// then `w` is served from it at once.
fn register(st: &ShardState, w: &Arc<Waiter>, keys: &[Bytes]) {
    for key in keys {
        if !w.is_waiting() {
            return;
        }
        if has_data(st, w, key) {
            if w.claim() {
                w.deliver(Ok(take_for(st, w, key)));
            }
            return;
        }
        st.blocked.add(w.db, key.clone(), w.clone());
    }
}

/// Drops `w` from the queues of its keys of this shard.
fn forget(st: &ShardState, w: &Arc<Waiter>, keys: &[Bytes]) {
    for key in keys {
        st.blocked.remove(w.db, key, w);
    }
}

/// Blocks `client` (of db `db`) on `keys` until one can serve `wait`, or
/// `timeout` passes (None: forever). The served key and elements; None on
/// timeout (or when the connection went away meanwhile).
pub async fn block(
    shard: &S,
    client: &Arc<ClientInfo>,
    db: u8,
    keys: Vec<Bytes>,
    wait: Wait,
    timeout: Option<Duration>,
) -> CmdResult<Option<Served>> {
    let (tx, rx) = shard.oneshot::<Outcome>();
    let w = Arc::new(Waiter::new(client.id, db, wait, tx));
    // Keys by owner, each owner's in command order, owners in the order of
    // their first key.
    let n = shard.count();
    let mut groups: Vec<(usize, Vec<Bytes>)> = Vec::new();
    for k in keys {
        let o = owner(&k, n);
        match groups.iter_mut().find(|(g, _)| *g == o) {
            Some((_, ks)) => {
                if !ks.contains(&k) {
                    ks.push(k)
                }
            }
            None => groups.push((o, vec![k])),
        }
    }
    for (o, ks) in &groups {
        if !w.is_waiting() {
            break;
        }
        let (w2, ks) = (w.clone(), ks.clone());
        shard.invoke_on(*o, move |st: &ShardState| register(st, &w2, &ks)).await;
    }
    // Counted as blocked (INFO, CLIENT UNBLOCK) once queued on every key's
    // owner: a client that sees it blocked knows a write to any of its
    // keys will find it.
    client.set_waiter(Some(w.clone()));
    // Parked, the client is not a running command: a multi-shard EXEC
    // does not wait for it (`coord::gate`).
    shard.state().gate.leave();
    let outcome = wait_for(&w, &rx, client, timeout).await;
    shard.state().gate.enter();
    // Served by another client's EXEC: what remains (a move's push) waits
    // for its end, as a command of this client would.
    super::gate::admit(shard.state(), client.id).await;
    client.set_waiter(None);
    let (shard2, w2) = (shard.clone(), w.clone());
    rt::spawn(async move {
        for (o, ks) in groups {
            let w3 = w2.clone();
            shard2.invoke_on(o, move |st: &ShardState| forget(st, &w3, &ks)).await;
        }
    });
    match outcome {
        Ok(Ok(served)) => match (served.pending, &w.wait) {
            (Some((part, emptied)), Wait::Move { dst, from, to }) => {
                let key = served.key;
                let element = served.elements.into_iter().next().unwrap_or_default();
                let popped = (element, emptied);
                let moved = finish_move(shard, db, key.clone(), dst.clone(), (*from, *to), popped, part).await?;
                Ok(moved.map(|e| Served {
                    key,
                    elements: vec![e],
                    scores: Vec::new(),
                    entries: Vec::new(),
                    pending: None,
                }))
            }
            (_, _) => Ok(Some(Served { pending: None, ..served })),
        },
        Ok(Err(e)) => Err(e),
        Err(Gone::UnblockedError) => Err(CmdError::new("UNBLOCKED client unblocked via CLIENT UNBLOCK")),
        Err(Gone::Timeout | Gone::Unblocked | Gone::Closed) => Ok(None),
    }
}

/// Waits for `w`'s outcome: served, or given up by its timeout, CLIENT
/// UNBLOCK or KILL, or its connection closing (checked every
/// [`HANGUP_CHECK`]).
async fn wait_for(w: &Arc<Waiter>, rx: &shards::Receiver<Outcome>, client: &ClientInfo, timeout: Option<Duration>) -> Outcome {
    let deadline = timeout.map(|t| std::time::Instant::now() + t);
    // One wait for the whole block, polled again after each check.
    let mut recv = std::pin::pin!(rx.recv());
    loop {
        let tick = match deadline {
            Some(d) => HANGUP_CHECK.min(d.saturating_duration_since(std::time::Instant::now())),
            None => HANGUP_CHECK,
        };
        let got = future::or(async { Some(recv.as_mut().await) }, async {
            rt::sleep(tick).await;
            None
        })
        .await;
        if let Some(o) = got {
            return o;
        }
        let why = if deadline.is_some_and(|d| std::time::Instant::now() >= d) {
            Gone::Timeout
        } else if client.peer_closed() {
            Gone::Closed
        } else {
            continue;
        };
        if w.give_up(why) {
            return Err(why);
        }
        // Taken meanwhile: the outcome is on its way.
        return recv.await;
    }
}

/// BLPOP, BRPOP, BLMPOP: pops from the first of `keys` holding data now,
/// else blocks. The key and the elements popped; None on timeout.
pub async fn pop(
    shard: &S,
    client: &Arc<ClientInfo>,
    db: u8,
    keys: Vec<Bytes>,
    end: End,
    count: Option<u64>,
    timeout: Option<Duration>,
) -> CmdResult<Option<(Bytes, Vec<Vec<u8>>)>> {
    if let Some(hit) = super::list::mpop(shard, db, &keys, end, count.unwrap_or(1)).await? {
        return Ok(Some(hit));
    }
    if timeout == NO_BLOCK {
        return Ok(None);
    }
    let got = block(shard, client, db, keys, Wait::Pop { end, count }, timeout).await?;
    Ok(got.map(|s| (s.key, s.elements)))
}

/// BZPOPMIN, BZPOPMAX, BZMPOP: pops up to `count` members (one when None)
/// from the low end (high with `max`) of the first of `keys` holding a
/// sorted set now, else blocks. The key and the members with their
/// scores; None on timeout.
pub async fn zpop(
    shard: &S,
    client: &Arc<ClientInfo>,
    db: u8,
    keys: Vec<Bytes>,
    max: bool,
    count: Option<u64>,
    timeout: Option<Duration>,
) -> CmdResult<Option<(Bytes, Vec<(Vec<u8>, f64)>)>> {
    if let Some(hit) = super::zset::mpop(shard, db, &keys, max, count.unwrap_or(1)).await? {
        return Ok(Some(hit));
    }
    if timeout == NO_BLOCK {
        return Ok(None);
    }
    let got = block(shard, client, db, keys, Wait::ZPop { max, count }, timeout).await?;
    Ok(got.map(|s| (s.key, s.elements.into_iter().zip(s.scores).collect())))
}

/// BLMOVE, BRPOPLPUSH: LMOVE at once when `src` holds data, else blocks on
/// `src`. The element moved; None on timeout.
pub async fn lmove(
    shard: &S,
    client: &Arc<ClientInfo>,
    db: u8,
    (src, dst): (Bytes, Bytes),
    (from, to): (End, End),
    timeout: Option<Duration>,
) -> CmdResult<Option<Vec<u8>>> {
    if let Some(v) = super::list::lmove(shard, db, src.clone(), dst.clone(), from, to).await? {
        return Ok(Some(v));
    }
    if timeout == NO_BLOCK {
        return Ok(None);
    }
    let wait = Wait::Move { dst, from, to };
    Ok(block(shard, client, db, vec![src], wait, timeout)
        .await?
        .and_then(|mut s| s.elements.pop()))
}
