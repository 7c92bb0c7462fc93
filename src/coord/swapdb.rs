//! SWAPDB across every shard: behind the transaction gate (no command
//! runs anywhere while the databases swap, so none sees it half done),
//! one synced write of the db map (`storage::dbmap`: after a crash either
//! both databases are swapped on every shard or none is), then each shard
//! swaps its key counts, moves its watches (touching the watched keys that
//! exist in either db) and serves the clients blocked on keys of either
//! db that the swapped-in one has data for, once the gate opens.

use super::{gate, serve, S};
use crate::error::{CmdError, CmdResult};
use crate::shard::ShardState;

/// Swaps `SELECT` indexes `a` and `b` (both below `databases`). `held`:
/// the caller already holds the gate (SWAPDB queued in a MULTI runs inside
/// its EXEC's hold).
pub async fn swap_dbs(shard: &S, client: u64, held: bool, a: u8, b: u8) -> CmdResult<()> {
    if a == b {
        return Ok(());
    }
    let hold = if held {
        None
    } else {
        gate::close(shard, client).await;
        Some(gate::Held::new(shard))
    };
    let swapped = shard.state().global.engine.swap_dbs(a, b).map_err(CmdError::from);
    if swapped.is_ok() {
        shard
            .broadcast(move |st: &ShardState| {
                st.ks.swap_dbs(a, b);
                // Served when the gate opens (it holds serving back).
                for (db, key) in st.blocked.keys_in(a, b) {
                    serve::key_ready(st, db, &key);
                }
            })
            .await;
    }
    if let Some(h) = hold {
        h.open(Ok(())).await;
    }
    swapped
}
