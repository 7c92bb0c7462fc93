//! Active expiration: each shard walks its TTL index `hz` times a second and
//! deletes keys that are due, a bounded slice at a time, so a burst of
//! expiring keys never stalls the core for more than about a millisecond.
//! Lazy expiration (on every read) lives in `types::keyspace`.

use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use shards::Shard;

use crate::server::global::now_ms;
use crate::shard::ShardState;

/// TTL index entries visited per slice.
const SLICE: usize = 64;
/// Work per wake-up before yielding to clients.
const BUDGET: Duration = Duration::from_millis(1);

pub async fn active_expire_loop(shard: Rc<Shard<ShardState>>) {
    let st = shard.state().clone();
    loop {
        let hz = st.global.config.hz.load(Ordering::Relaxed).max(1);
        shards::rt::sleep(Duration::from_millis(1000 / hz)).await;
        let start = Instant::now();
        loop {
            match st.ks.expire_due(now_ms(), SLICE) {
                Ok(n) if n == SLICE && start.elapsed() < BUDGET => continue,
                Ok(_) => break,
                Err(e) => {
                    tracing::error!(shard = st.id, error = %e.0, "active expiration failed");
                    break;
                }
            }
        }
    }
}
