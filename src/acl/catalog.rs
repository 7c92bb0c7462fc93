//! The commands as ACL rules name them: one id per command and per
//! subcommand, with its categories (the command layer builds the catalog
//! from its table, `cmd::acl::catalog`), and Redis's category names.

use std::collections::HashMap;

/// Redis's command categories, in ACL CAT's order.
pub const CATEGORIES: [&str; 21] = [
    "keyspace",
    "read",
    "write",
    "set",
    "sortedset",
    "list",
    "hash",
    "string",
    "bitmap",
    "hyperloglog",
    "geo",
    "stream",
    "pubsub",
    "admin",
    "fast",
    "slow",
    "blocking",
    "dangerous",
    "connection",
    "transaction",
    "scripting",
];

/// The bit of category `name` (without `@`), case-insensitively.
pub fn category_bit(name: &[u8]) -> Option<u32> {
    CATEGORIES
        .iter()
        .position(|c| c.as_bytes().eq_ignore_ascii_case(name))
        .map(|i| 1 << i)
}

/// The commands as ACLs see them: one id per command and per subcommand,
/// with its categories (built by the command layer from its table).
#[derive(Debug, Default)]
pub struct Catalog {
    /// Per id: the fullname (`config|get`).
    pub names: Vec<String>,
    /// Per id: its category bits.
    pub cats: Vec<u32>,
    pub parent: Vec<Option<usize>>,
    pub subs: Vec<Vec<usize>>,
    /// Per id: runs before authentication (AUTH, HELLO): always allowed.
    pub no_auth: Vec<bool>,
    pub by_name: HashMap<String, usize>,
}

impl Catalog {
    pub fn id(&self, name: &[u8]) -> Option<usize> {
        let lower = String::from_utf8_lossy(name).to_ascii_lowercase();
        self.by_name.get(&lower).copied()
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}
