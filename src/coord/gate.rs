//! The transaction gate: how an EXEC whose commands span shards runs with
//! no other client's command in between (issue 15; docs/cross-shard.md,
//! "Transactions").
//!
//! Every shard counts the client commands running on it ([`Gate::enter`]
//! / [`Gate::leave`], around each batch a connection runs, so also around
//! the jobs those commands send to other shards and the reads they wait
//! for). A multi-shard EXEC:
//! 1. stops counting itself and takes the process-wide gate (one such EXEC
//!    at a time; waiting for it is not counted either, so two EXECs never
//!    wait on each other);
//! 2. closes every shard's gate: from then on a connection admits no new
//!    command but the owner's ([`admit`] waits, uncounted);
//! 3. waits until every shard counts no running command: whatever was
//!    admitted before has finished, and nothing else can start;
//! 4. runs its queue, then opens the gates.
//!
//! No shard thread ever waits: a closed gate parks connection tasks, and
//! the shards go on running jobs (the owner's, and what the commands
//! admitted earlier still send). A client parked on a blocking command
//! (BLPOP...) is not counted while it waits.
//!
//! What it costs: while the EXEC runs, every other client waits, on every
//! shard (Dragonfly's "global" transaction mode, without its per-key
//! locks). Two hops to every shard to close, one round to drain, one to
//! open.

use std::sync::atomic::Ordering;
use std::time::Duration;

use shards::{rt, Then};

use super::S;
use crate::shard::ShardState;

/// How often a parked connection looks at a closed gate again, and the
/// owner at the commands still running.
const POLL: Duration = Duration::from_micros(20);

/// Waits, uncounted, until the gate lets `client`'s next command in.
pub async fn admit(st: &ShardState, client: u64) {
    if !st.gate.closed_to(client) {
        return;
    }
    st.gate.leave();
    while st.gate.closed_to(client) {
        rt::sleep(POLL).await;
    }
    st.gate.enter();
}

/// Takes the gate for `client`'s EXEC: when this returns, no other
/// client's command runs on any shard until [`open`].
pub async fn close(shard: &S, client: u64) {
    let st = shard.state();
    let g = &st.global;
    st.gate.leave();
    while g.tx_gate.compare_exchange(0, client, Ordering::AcqRel, Ordering::Acquire).is_err() {
        rt::sleep(POLL).await;
    }
    shard.broadcast(move |st: &ShardState| st.gate.set_owner(client)).await;
    let drains = (0..shard.count())
        .map(|t| {
            shard.invoke_on_then(t, |st: &std::rc::Rc<ShardState>| {
                if st.gate.running() == 0 {
                    return Then::Now(());
                }
                let st = st.clone();
                Then::Later(Box::pin(async move {
                    while st.gate.running() > 0 {
                        rt::sleep(POLL).await;
                    }
                }))
            })
        })
        .collect();
    shards::join_all(drains).await;
    st.gate.enter();
}

/// Opens the gate [`close`] took.
pub async fn open(shard: &S) {
    shard.broadcast(|st: &ShardState| st.gate.set_owner(0)).await;
    shard.state().global.tx_gate.store(0, Ordering::Release);
}
