//! Redis Cluster's check of a request (`getNodeByQuery`), in cluster mode
//! only (docs/cluster.md): every key of the command (for EXEC, of every
//! queued command) must hash to one slot (`-CROSSSLOT`), the slot must be
//! served (`-CLUSTERDOWN`), and with per-shard nodes it must belong to
//! the shard whose port the client came in on (`-MOVED` to the right one).
//! Scripts' own commands are checked by [`ScriptSlots`].

use bytes::Bytes;

use crate::client::Client;
use crate::cluster::Refusal;
use crate::cmd::cluster::node_addr;
use crate::cmd::{self, CommandSpec};
use crate::global::Global;
use crate::slot::slot_of;

/// The slot every key of `argv` (command `idx`) hashes to, if it names a
/// key; the keys of a multi-key request must agree.
fn slot_of_cmd(idx: usize, spec: &CommandSpec, argv: &[Bytes]) -> Result<Option<u16>, Refusal> {
    // One key at a fixed place: no key spec to walk.
    if cmd::single_key(idx) {
        return Ok(argv.get(spec.first_key as usize).map(|k| slot_of(k)));
    }
    let mut first: Option<(&[u8], u16)> = None;
    let mut cross = false;
    cmd::cluster_keys(idx, spec, argv, |key| match first {
        None => first = Some((key, slot_of(key))),
        // The same key again needs no hash.
        Some((k, _)) if k == key => {}
        Some((_, s)) => cross |= slot_of(key) != s,
    });
    if cross {
        return Err(Refusal::CrossSlot);
    }
    Ok(first.map(|(_, s)| s))
}

/// The one slot of a transaction's queued commands, if any names a key.
fn slot_of_queue(queue: &[Vec<Bytes>]) -> Result<Option<u16>, Refusal> {
    let mut slot = None;
    for argv in queue {
        let Some((idx, spec)) = cmd::lookup(&argv[0]) else {
            continue;
        };
        match (slot, slot_of_cmd(idx, spec, argv)?) {
            (_, None) => {}
            (None, Some(s)) => slot = Some(s),
            (Some(a), Some(b)) if a != b => return Err(Refusal::CrossSlot),
            _ => {}
        }
    }
    Ok(slot)
}

/// The check of one request before it runs or is queued. `Err` holds
/// Redis's error text.
pub(super) fn check(g: &Global, client: &Client, idx: usize, spec: &CommandSpec, argv: &[Bytes]) -> Result<(), String> {
    let c = &g.cluster;
    let node = client.node.filter(|_| c.per_shard);
    // The fast path: a one-key command on a node that serves every slot.
    if node.is_none() && c.all_served() && cmd::single_key(idx) {
        return Ok(());
    }
    let (slot, write) = if spec.name == "exec" {
        // EXEC without MULTI fails on its own.
        let Some(m) = client.multi.as_ref() else {
            return Ok(());
        };
        let write = m.queue.iter().any(|q| cmd::lookup(&q[0]).is_some_and(|(_, s)| s.is_write()));
        (slot_of_queue(&m.queue), write)
    } else {
        (slot_of_cmd(idx, spec, argv), spec.is_write())
    };
    let slot = match slot {
        Ok(Some(slot)) => slot,
        Ok(None) => return Ok(()),
        Err(r) => return Err(refusal_text(g, client, r)),
    };
    route(g, slot, node, write).map_err(|r| refusal_text(g, client, r))
}

/// [`Cluster::route`] with the settings it reads only when a slot is not
/// served (two config reads, off the hot path).
fn route(g: &Global, slot: u16, node: Option<usize>, write: bool) -> Result<(), Refusal> {
    let c = &g.cluster;
    let (full, reads_when_down) = if c.all_served() {
        (true, false)
    } else {
        (
            g.config.get("cluster-require-full-coverage") == "yes",
            g.config.get("cluster-allow-reads-when-down") == "yes",
        )
    };
    c.route(slot, node, write, full, reads_when_down)
}

/// Whether `msg` is a cluster refusal: a refused EXEC answers with it
/// rather than EXECABORT, as Redis's `clusterRedirectClient`.
pub(super) fn is_redirect(msg: &str) -> bool {
    ["CROSSSLOT ", "MOVED ", "ASK ", "CLUSTERDOWN ", "TRYAGAIN "]
        .iter()
        .any(|p| msg.starts_with(p))
}

/// Redis's text of a refusal; a MOVED names the node's announced address.
fn refusal_text(g: &Global, client: &Client, r: Refusal) -> String {
    r.text(|shard| node_addr(g, &g.cluster, client, shard))
}

/// What a script's own commands are checked against (Redis's
/// `scriptVerifyClusterState`), in cluster mode.
pub struct ScriptSlots {
    /// The port's shard: keys of other shards are not local.
    node: Option<usize>,
    /// A script with a shebang or a function, without
    /// `allow-cross-slot-keys`: every key in one slot.
    one_slot: bool,
    /// The slot seen first (the declared keys', else the first command's).
    slot: Option<u16>,
}

impl ScriptSlots {
    /// For a script run with `keys` by a client of `node`; None outside
    /// cluster mode.
    pub fn new(g: &Global, node: Option<usize>, one_slot: bool, keys: &[Bytes]) -> Option<ScriptSlots> {
        if !g.cluster.enabled {
            return None;
        }
        Some(ScriptSlots {
            node: node.filter(|_| g.cluster.per_shard),
            one_slot,
            slot: keys.first().map(|k| slot_of(k)),
        })
    }

    /// The check of one `redis.call`: Redis's error text if refused.
    pub fn check(&mut self, g: &Global, idx: usize, spec: &CommandSpec, argv: &[Bytes]) -> Result<(), String> {
        let slot = match slot_of_cmd(idx, spec, argv) {
            Ok(Some(s)) => s,
            Ok(None) => return Ok(()),
            Err(_) => {
                let name = spec.fullname(spec.subcommand_index(argv));
                return Err(format!(
                    "ERR Command '{name}' in script attempted to access keys that don't hash to the same slot"
                ));
            }
        };
        match route(g, slot, self.node, spec.is_write()) {
            Ok(()) => {}
            Err(Refusal::Down) => return Err("ERR Script attempted to execute a command while the cluster is down".into()),
            Err(Refusal::DownReadonly) => {
                return Err("ERR Script attempted to execute a write command while the cluster is down and readonly".into())
            }
            Err(Refusal::Unbound) => return Err("ERR Script attempted to access a slot not served".into()),
            Err(_) => return Err("ERR Script attempted to access a non local key in a cluster node".into()),
        }
        match self.slot {
            Some(s) if s != slot && self.one_slot => Err("ERR Script attempted to access keys that do not hash to the same slot".into()),
            Some(_) => Ok(()),
            None => {
                self.slot = Some(slot);
                Ok(())
            }
        }
    }
}
