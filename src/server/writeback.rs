//! Idle write-back: while a shard serves nothing, it writes the write
//! tier's records back to RocksDB a slice at a time
//! (`ShardStore::tier_write_back`), so the next burst of writes finds the
//! tier empty: its writes then pay no drain of older records, and a
//! restart after a crash has less log to replay. Under a steady load the
//! writes' own pace drains the tier (`storage::wtier`), as before.
//! `write-tier-idle-drain no` turns it off.

use std::rc::Rc;
use std::time::Duration;

use shards::Shard;

use crate::shard::ShardState;
use crate::storage::WriteBack;

/// How long a shard must have received nothing, and run no command,
/// before it writes back.
const IDLE: Duration = Duration::from_millis(10);
/// Records per slice: about half a millisecond of the core, so a request
/// that arrives meanwhile waits no longer than an expiry burst.
const SLICE: usize = 256;
/// The pause between slices, in which the shard polls its sockets.
const BETWEEN: Duration = Duration::from_micros(200);
/// The pause while RocksDB's flushes are behind.
const WAIT: Duration = Duration::from_millis(20);

/// What says a shard did something: bytes received, commands run (other
/// shards' too).
fn activity(st: &ShardState) -> (u64, u64) {
    (st.net.borrow().0, st.total_calls())
}

/// A command runs on this shard now, a multi-shard EXEC holds its gate,
/// or a script paused it.
fn busy(st: &ShardState) -> bool {
    st.gate.running() > 0 || st.gate.is_closed() || st.script_paused.get()
}

pub async fn idle_write_back_loop(shard: Rc<Shard<ShardState>>) {
    let st = shard.state().clone();
    let mut seen = activity(&st);
    loop {
        shards::rt::sleep(IDLE).await;
        let now = activity(&st);
        if now != seen || st.global.config.get("write-tier-idle-drain") != "yes" {
            seen = now;
            continue;
        }
        // Idle since the last look: write back while it stays so, and
        // while no command is under way here (a multi-shard EXEC waiting
        // on another shard, or in a DEBUG SLEEP, receives nothing: a
        // write-back then made its part reach the families as a drain's,
        // and a kill -9 tore the transaction, tests/crash_atomic.rs).
        while activity(&st) == seen && !busy(&st) {
            match st.ks.store.tier_write_back(SLICE) {
                Ok(WriteBack::Done) => break,
                Ok(WriteBack::More) => shards::rt::sleep(BETWEEN).await,
                Ok(WriteBack::Wait) => shards::rt::sleep(WAIT).await,
                Err(e) => {
                    // A disk that takes no writes: the writes' own drains
                    // report it too; look again a second later.
                    tracing::warn!("write tier: writing back failed: {e}");
                    shards::rt::sleep(Duration::from_secs(1)).await;
                    break;
                }
            }
        }
    }
}
