//! One shard's state: its keyspace and the counters it owns. Lives on the
//! shard's own thread (plain `Cell`s, no atomics); other shards reach it only
//! through `invoke_on`.

use std::cell::RefCell;
use std::sync::Arc;

use crate::cmd::TABLE;
use crate::server::global::Global;
use crate::types::keyspace::Keyspace;

/// Per-command counters, as INFO commandstats prints them.
#[derive(Debug, Default, Clone, Copy)]
pub struct CmdStat {
    pub calls: u64,
    pub usec: u64,
    pub failed: u64,
    pub rejected: u64,
}

pub struct ShardState {
    pub id: usize,
    pub ks: Keyspace,
    pub global: Arc<Global>,
    /// Indexed like `cmd::TABLE`.
    pub cmd_stats: RefCell<Vec<CmdStat>>,
    /// Bytes read from and written to this shard's clients.
    pub net: RefCell<(u64, u64)>,
}

impl ShardState {
    pub fn new(id: usize, ks: Keyspace, global: Arc<Global>) -> ShardState {
        ShardState {
            id,
            ks,
            global,
            cmd_stats: RefCell::new(vec![CmdStat::default(); TABLE.len()]),
            net: RefCell::new((0, 0)),
        }
    }

    /// Records one call of command `idx`.
    #[inline]
    pub fn record(&self, idx: usize, usec: u64, failed: bool) {
        if let Some(s) = self.cmd_stats.borrow_mut().get_mut(idx) {
            s.calls += 1;
            s.usec += usec;
            s.failed += failed as u64;
        }
    }

    /// Records a command refused before it ran (arity, auth...).
    pub fn record_rejected(&self, idx: usize) {
        if let Some(s) = self.cmd_stats.borrow_mut().get_mut(idx) {
            s.rejected += 1;
        }
    }
}
