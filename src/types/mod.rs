//! Data structure logic on top of the storage layer; no RESP here.
//!
//! `keyspace` owns meta records, expiry and key counts for one shard;
//! `string` is pure string-value logic shared by several commands;
//! `multi` holds the per-shard halves of multi-key operations; `notify`
//! keyspace notifications.

/// The type of a key, as its meta record says (TYPE's and SCAN TYPE's
/// names come from it).
pub use crate::storage::meta::KeyType;

pub mod access;
pub mod bigstr;
pub mod bitmap;
pub mod coll;
pub mod dump;
mod expiry;
pub mod geo;
pub mod hash;
pub mod hashsweep;
pub mod hll;
pub mod keyspace;
pub mod lchunk;
pub mod list;
pub mod memory;
pub mod multi;
pub mod notify;
pub mod rdb;
pub mod rdbpack;
pub mod rdbstream;
pub mod rdbvalue;
pub mod stream;
pub mod string;
pub mod writer;
pub mod xgroup;
mod xnode;
pub mod zblock;
pub mod zlayout;
pub mod zpos;
pub mod zrange;
pub mod zset;
pub mod zwrite;

use crate::error::CmdResult;
use crate::storage::ShardStore;

/// Opens a shard's keyspace with the types' hooks in place (the hash
/// repair a meta read may need, and active field expiration's visit of a
/// hash: `keyspace::HashHooks`).
pub fn open(store: ShardStore, databases: usize) -> CmdResult<keyspace::Keyspace> {
    let hooks = keyspace::HashHooks {
        repair: hashsweep::settle,
        visit: hashsweep::visit_due,
    };
    keyspace::Keyspace::open(store, databases, hooks)
}
