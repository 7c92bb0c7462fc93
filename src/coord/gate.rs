//! The transaction gate: how an EXEC whose commands span shards runs with
//! no other client's command in between (issue 15; docs/cross-shard.md,
//! "Transactions").
//!
//! Every shard counts the client commands running on it ([`Gate::enter`]
//! / [`Gate::leave`], around each batch a connection runs, so also around
//! the jobs those commands send to other shards and the reads they wait
//! for). A multi-shard EXEC:
//! 1. stops counting itself and takes the process-wide gate (one such EXEC
//!    at a time, handed over in arrival order; waiting for it is not
//!    counted either, so two EXECs never wait on each other);
//! 2. closes every shard's gate: from then on a connection admits no new
//!    command but the owner's ([`admit`] waits, uncounted);
//! 3. waits until every shard counts no running command: whatever was
//!    admitted before has finished, and nothing else can start;
//! 4. opens every shard's transaction (`storage::tx`), only now: a shard
//!    drained earlier still runs the jobs other shards' commands send it;
//! 5. runs its queue, then opens the gates.
//!
//! No shard thread ever waits: a closed gate parks connection tasks, and
//! the shards go on running jobs (the owner's, and what the commands
//! admitted earlier still send). A client parked on a blocking command
//! (BLPOP...) is not counted while it waits.
//!
//! What it costs: while the EXEC runs, every other client waits, on every
//! shard (Dragonfly's "global" transaction mode, without its per-key
//! locks). One round to close and drain, one to open the transactions,
//! one to open.

use std::rc::Rc;
use std::task::Poll;

use shards::Then;

use super::S;
use crate::shard::ShardState;
use crate::storage::StorageError;

/// Waits, uncounted, until the gate lets `client`'s next command in.
pub async fn admit(st: &ShardState, client: u64) {
    if !st.gate.closed_to(client) {
        return;
    }
    st.gate.leave();
    std::future::poll_fn(|cx| {
        // A busy script holding the gate lets commands through: they get
        // -BUSY (or, SCRIPT KILL, stop it).
        if st.gate.closed_to(client) && st.global.script_board.busy_error().is_none() {
            st.gate.wait(cx.waker());
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    st.gate.enter();
}

/// Waits until no client command runs on `st`.
async fn drained(st: &ShardState) {
    std::future::poll_fn(|cx| {
        if st.gate.running() > 0 {
            st.gate.wait(cx.waker());
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await
}

/// Takes the gate for `client`'s EXEC: when this returns, no other
/// client's command runs on any shard until [`open`].
pub async fn close(shard: &S, client: u64) {
    let st = shard.state();
    let g = &st.global;
    st.gate.leave();
    let mut turn = None;
    {
        let mut q = g.tx_queue.lock().unwrap_or_else(|e| e.into_inner());
        if q.held {
            let (mb, post) = shard.mailbox::<bool>();
            q.waiting.push_back((client, post));
            turn = Some(mb);
        } else {
            q.held = true;
        }
    }
    if let Some(mb) = turn {
        // Handed over by the previous holder's `open`: with the gates still
        // closed and ours (nothing else ran since), or opened.
        let closed_for_us = mb.recv().await.first().copied().unwrap_or(false);
        if closed_for_us {
            st.gate.enter();
            return;
        }
    }
    // Each shard closes, then waits until the commands it admitted are
    // done (with the jobs they send to other shards).
    let drains = (0..shard.count())
        .map(|t| {
            shard.invoke_on_then(t, move |st: &Rc<ShardState>| {
                st.gate.set_owner(client);
                // Pushes inside the EXEC serve blocked clients after it.
                super::serve::hold(st);
                if st.gate.running() == 0 {
                    return Then::Now(());
                }
                let st = st.clone();
                Then::Later(Box::pin(async move { drained(&st).await }))
            })
        })
        .collect();
    shards::join_all(drains).await;
    // Only once every shard is drained does each stage the EXEC's writes
    // for one write (`storage::tx`). Begun as its own drain ended, a shard
    // took the jobs other shards' commands still sent it into the EXEC's
    // transaction: a one-step script's own (`dispatch::script`) ended it,
    // and the EXEC's writes there went out alone, ahead of the rest
    // (tests/script_atomic.rs, a script torn by kill -9).
    shard.broadcast(|st: &ShardState| st.ks.store.begin_tx(true)).await;
    st.gate.enter();
}

/// EXECs that may take the gate in a row before it opens for the other
/// clients once.
const HANDOVERS: u32 = 8;

/// Opens the gate [`close`] took, or hands it, still closed, to the next
/// EXEC waiting (at most [`HANDOVERS`] times in a row: a row of EXECs
/// then costs one broadcast each instead of three rounds, and the other
/// clients still get their turn). The same broadcast ends every shard's
/// transaction with `written`, how its write went (`storage::tx`), and,
/// handing over, opens the next one.
pub async fn open(shard: &S, written: Result<(), StorageError>) {
    let g = shard.state().global.clone();
    if written.is_err() {
        // Left unwritten (an EXEC that unwound): gone. A written or failed
        // write took what was there.
        g.engine.drop_tx();
    }
    let next = {
        let mut q = g.tx_queue.lock().unwrap_or_else(|e| e.into_inner());
        if q.handovers < HANDOVERS {
            q.waiting.pop_front()
        } else {
            None
        }
    };
    if let Some((client, post)) = next {
        let w = written.clone();
        shard
            .broadcast(move |st: &ShardState| {
                end_tx(st, &w);
                // Clients blocked on what the EXEC pushed are served
                // between it and the next.
                super::serve::release(st);
                super::serve::hold(st);
                st.gate.set_owner(client);
                st.ks.store.begin_tx(true);
            })
            .await;
        g.tx_queue.lock().unwrap_or_else(|e| e.into_inner()).handovers += 1;
        if post.post(true) {
            return;
        }
        // Its connection went away: open, and go on as below.
    }
    shard
        .broadcast(move |st: &ShardState| {
            end_tx(st, &written);
            super::serve::release(st);
            st.gate.set_owner(0);
        })
        .await;
    let mut q = g.tx_queue.lock().unwrap_or_else(|e| e.into_inner());
    q.handovers = 0;
    // The next waiter takes the opened gate itself. One whose connection
    // went away refuses the post: try the next.
    while let Some((_, next)) = q.waiting.pop_front() {
        if next.post(false) {
            return;
        }
    }
    q.held = false;
}

/// Ends the transaction of `st`, written or not (`written`), before the
/// blocked clients its pushes fed are served.
fn end_tx(st: &ShardState, written: &Result<(), StorageError>) {
    if st.ks.store.in_tx() {
        st.ks.end_tx(written);
    }
}

/// The gate held by an EXEC: [`Held::open`] opens it; dropped unopened (a
/// panic unwinding through EXEC), it opens from a task of its own, so a
/// bug cannot leave every client parked for good.
pub struct Held {
    shard: Option<S>,
}

impl Held {
    pub fn new(shard: &S) -> Held {
        Held {
            shard: Some(shard.clone()),
        }
    }

    /// Opens the gate, ending the transaction with `written`.
    pub async fn open(mut self, written: Result<(), StorageError>) {
        if let Some(shard) = self.shard.take() {
            open(&shard, written).await;
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(shard) = self.shard.take() {
            tracing::error!("transaction gate dropped while held; opening it");
            let abandoned = Err(StorageError("transaction abandoned".into()));
            shards::rt::spawn(async move { open(&shard, abandoned).await });
        }
    }
}
