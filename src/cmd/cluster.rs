//! CLUSTER and the cluster connection commands (READONLY, READWRITE,
//! ASKING), over `crate::cluster` (docs/cluster.md). Outside cluster mode
//! they answer Redis's "cluster support disabled".
//!
//! The node knows no peers: it is the whole cluster (one node owning the
//! served slots, or with `cluster-port-per-shard` one node per shard).
//! What needs a peer (MEET, REPLICATE, FAILOVER, migrating SETSLOT)
//! answers as a node that knows none.

use bytes::Bytes;

use super::args::{is, parse_i64};
use super::keys::help_reply;
use super::{commands, subcommands, CommandSpec, Conn, SubSpec};
use crate::client::Client;
use crate::cluster::{Cluster, Node, DISABLED};
use crate::error::{CmdError, CmdResult};
use crate::global::Global;
use crate::resp::Reply;
use crate::shard::ShardState;
use crate::slot::{shard_of_slot, slot_of, SLOTS};

#[rustfmt::skip]
pub(super) const COMMANDS: &[CommandSpec] = commands! {
    "cluster"   -2 []                   0 0 0 Conn(cluster)   cluster "3.0.0" "A container for Redis Cluster commands." subs CLUSTER_SUBS;
    "readonly"  1  [loading stale fast] 0 0 0 Conn(readonly)  cluster "3.0.0" "Enables read-only queries for a connection to a Redis Cluster replica node.";
    "readwrite" 1  [loading stale fast] 0 0 0 Conn(readwrite) cluster "3.0.0" "Enables read-write queries for a connection to a Redis Cluster replica node.";
    "asking"    1  [fast]               0 0 0 Conn(asking)    cluster "3.0.0" "Signals that a cluster client is following an -ASK redirect.";
};

#[rustfmt::skip]
const CLUSTER_SUBS: &[SubSpec] = subcommands! {
    "addslots"              -3 [admin stale no_async_loading] "Assigns new hash slots to a node.";
    "addslotsrange"         -4 [admin stale no_async_loading] "Assigns new hash slot ranges to a node.";
    "bumpepoch"             2  [admin stale no_async_loading] "Advances the cluster config epoch.";
    "count-failure-reports" 3  [admin stale]                  "Returns the number of active failure reports active for a node.";
    "countkeysinslot"       3  [stale]                        "Returns the number of keys in a hash slot.";
    "delslots"              -3 [admin stale no_async_loading] "Sets hash slots as unbound for a node.";
    "delslotsrange"         -4 [admin stale no_async_loading] "Sets hash slot ranges as unbound for a node.";
    "failover"              -2 [admin stale no_async_loading] "Forces a replica to perform a manual failover of its master.";
    "flushslots"            2  [admin stale no_async_loading] "Deletes all slots information from a node.";
    "forget"                3  [admin stale no_async_loading] "Removes a node from the nodes table.";
    "getkeysinslot"         4  [stale]                        "Returns the key names in a hash slot.";
    "help"                  2  [loading stale]                "Returns helpful text about the different subcommands.";
    "info"                  2  [stale]                        "Returns information about the state of a node.";
    "keyslot"               3  [stale]                        "Returns the hash slot for a key.";
    "links"                 2  [stale]                        "Returns a list of all TCP links to and from peer nodes.";
    "meet"                  -4 [admin stale no_async_loading] "Forces a node to handshake with another node.";
    "myid"                  2  [stale]                        "Returns the ID of a node.";
    "myshardid"             2  [stale]                        "Returns the shard ID of a node.";
    "nodes"                 2  [stale]                        "Returns the cluster configuration for a node.";
    "replicas"              3  [admin stale]                  "Lists the replica nodes of a master node.";
    "replicate"             3  [admin stale no_async_loading] "Configure a node as replica of a master node.";
    "reset"                 -2 [admin noscript stale]         "Resets a node.";
    "saveconfig"            2  [admin stale no_async_loading] "Forces a node to save the cluster configuration to disk.";
    "set-config-epoch"      3  [admin stale no_async_loading] "Sets the configuration epoch for a new node.";
    "setslot"               -4 [admin stale no_async_loading] "Binds a hash slot to a node.";
    "shards"                2  [stale]                        "Returns the mapping of cluster slots to shards.";
    "slaves"                3  [admin stale]                  "Lists the replica nodes of a master node.";
    "slots"                 2  [stale]                        "Returns the mapping of cluster slots to nodes.";
};

const CLUSTER_HELP: &[&str] = &[
    "CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ADDSLOTS <slot> [<slot> ...]",
    "    Assign slots to current node.",
    "ADDSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
    "    Assign slots which are between <start-slot> and <end-slot> to current node.",
    "BUMPEPOCH",
    "    Advance the cluster config epoch.",
    "COUNT-FAILURE-REPORTS <node-id>",
    "    Return number of failure reports for <node-id>.",
    "COUNTKEYSINSLOT <slot>",
    "    Return the number of keys in <slot>.",
    "DELSLOTS <slot> [<slot> ...]",
    "    Delete slots information from current node.",
    "DELSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
    "    Delete slots information which are between <start-slot> and <end-slot> from current node.",
    "FAILOVER [FORCE|TAKEOVER]",
    "    Promote current replica node to being a master.",
    "FORGET <node-id>",
    "    Remove a node from the cluster.",
    "GETKEYSINSLOT <slot> <count>",
    "    Return key names stored by current node in a slot.",
    "FLUSHSLOTS",
    "    Delete current node own slots information.",
    "INFO",
    "    Return information about the cluster.",
    "KEYSLOT <key>",
    "    Return the hash slot for <key>.",
    "MEET <ip> <port> [<bus-port>]",
    "    Connect nodes into a working cluster.",
    "MYID",
    "    Return the node id.",
    "MYSHARDID",
    "    Return the node's shard id.",
    "NODES",
    "    Return cluster configuration seen by node. Output format:",
    "    <id> <ip:port> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
    "REPLICATE <node-id>",
    "    Configure current node as replica to <node-id>.",
    "RESET [HARD|SOFT]",
    "    Reset current node (default: soft).",
    "SET-CONFIG-EPOCH <epoch>",
    "    Set config epoch of current node.",
    "SETSLOT <slot> (IMPORTING <node-id>|MIGRATING <node-id>|STABLE|NODE <node-id>)",
    "    Set slot state.",
    "REPLICAS <node-id>",
    "    Return <node-id> replicas.",
    "SAVECONFIG",
    "    Force saving cluster configuration on disk.",
    "SLOTS",
    "    Return information about slots range mappings. Each range is made of:",
    "    start, end, master and replicas IP addresses, ports and ids",
    "SHARDS",
    "    Return information about slot range mappings and the nodes associated with them.",
    "LINKS",
    "    Return information about all network links between this node and its peers.",
    "    Output format is an array where each array element is a map containing attributes of a link",
    "HELP",
    "    Prints this help.",
];

pub async fn readonly(c: Conn<'_>, _: &[Bytes], r: &mut Reply) -> CmdResult {
    enabled(&c.st().global)?;
    r.ok();
    Ok(())
}

pub async fn readwrite(c: Conn<'_>, _: &[Bytes], r: &mut Reply) -> CmdResult {
    enabled(&c.st().global)?;
    r.ok();
    Ok(())
}

/// ASKING: no slot is ever migrating here, so there is no ASK to follow;
/// answered as Redis does.
pub async fn asking(c: Conn<'_>, _: &[Bytes], r: &mut Reply) -> CmdResult {
    enabled(&c.st().global)?;
    r.ok();
    Ok(())
}

fn enabled(g: &Global) -> CmdResult {
    if g.cluster.enabled {
        Ok(())
    } else {
        Err(CmdError::new(DISABLED))
    }
}

/// A slot argument of ADDSLOTS and its kin.
fn slot_arg(a: &[u8]) -> CmdResult<u16> {
    parse_i64(a)
        .filter(|s| (0..SLOTS as i64).contains(s))
        .map(|s| s as u16)
        .ok_or_else(|| CmdError::new("ERR Invalid or out of range slot"))
}

/// The slots of ADDSLOTS/DELSLOTS (a list) or their RANGE forms (pairs).
fn slot_list(argv: &[Bytes], ranges: bool) -> CmdResult<Vec<u16>> {
    let args = &argv[2..];
    if !ranges {
        return args.iter().map(|a| slot_arg(a)).collect();
    }
    if args.len() % 2 == 1 {
        let sub = String::from_utf8_lossy(&argv[1]).to_lowercase();
        return Err(CmdError::new(format!("ERR wrong number of arguments for 'cluster|{sub}' command")));
    }
    let mut out = Vec::new();
    for pair in args.chunks(2) {
        let (a, b) = (slot_arg(&pair[0])?, slot_arg(&pair[1])?);
        if a > b {
            return Err(CmdError::new(format!(
                "ERR start slot number {a} is greater than end slot number {b}"
            )));
        }
        out.extend(a..=b);
    }
    Ok(out)
}

pub async fn cluster(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let g = c.st().global.clone();
    enabled(&g)?;
    let cl = &g.cluster;
    let node = c.client.node.filter(|_| cl.per_shard);
    let sub = String::from_utf8_lossy(&argv[1]).to_ascii_lowercase();
    let done = |res: Result<(), String>, r: &mut Reply| -> CmdResult {
        res.map_err(CmdError::new)?;
        r.ok();
        Ok(())
    };
    match sub.as_str() {
        "help" => help_reply(r, CLUSTER_HELP),
        "info" => r.verbatim(&info_text(&g, node, c.client.info.shard)),
        "myid" => r.bulk(cl.myid(node).as_bytes()),
        "myshardid" => r.bulk(cl.myshardid(node).as_bytes()),
        "nodes" => r.verbatim(&nodes_text(&g, c.client)),
        "slots" => slots_reply(&g, c.client, r),
        "shards" => shards_reply(&g, c.client, r),
        "links" => r.array(0),
        "keyslot" => r.int(slot_of(&argv[2]) as i64),
        "countkeysinslot" => {
            let slot = parse_i64(&argv[2]).ok_or_else(|| CmdError::new("ERR value is not an integer or out of range"))?;
            if !(0..SLOTS as i64).contains(&slot) {
                return Err(CmdError::new("ERR Invalid slot"));
            }
            let keys = keys_in_slot(&c, slot as u16, usize::MAX).await?;
            r.int(keys.1 as i64);
        }
        "getkeysinslot" => {
            let int = |a: &[u8]| parse_i64(a).ok_or_else(|| CmdError::new("ERR value is not an integer or out of range"));
            let (slot, count) = (int(&argv[2])?, int(&argv[3])?);
            if !(0..SLOTS as i64).contains(&slot) || count < 0 {
                return Err(CmdError::new("ERR Invalid slot or number of keys"));
            }
            let (keys, _) = keys_in_slot(&c, slot as u16, count as usize).await?;
            r.bulk_array(&keys);
        }
        "addslots" | "addslotsrange" => return done(cl.add_slots(&slot_list(argv, sub.ends_with("range"))?), r),
        "delslots" | "delslotsrange" => return done(cl.del_slots(&slot_list(argv, sub.ends_with("range"))?), r),
        "flushslots" => {
            if total_keys(&c).await > 0 {
                return Err(CmdError::new("ERR DB must be empty to perform CLUSTER FLUSHSLOTS."));
            }
            return done(cl.flush_slots(), r);
        }
        "reset" => {
            let hard = match argv.get(2) {
                _ if argv.len() > 3 => return Err(sub_syntax(argv)),
                None => false,
                Some(a) if is(a, "hard") => true,
                Some(a) if is(a, "soft") => false,
                Some(_) => return Err(CmdError::new("ERR syntax error")),
            };
            if total_keys(&c).await > 0 {
                return Err(CmdError::new("ERR CLUSTER RESET can't be called with master nodes containing keys"));
            }
            return done(cl.reset(hard), r);
        }
        "saveconfig" => return done(cl.save(), r),
        "bumpepoch" => {
            let (bumped, epoch) = cl.bump_epoch().map_err(CmdError::new)?;
            r.simple(&format!("{} {epoch}", if bumped { "BUMPED" } else { "STILL" }));
        }
        "set-config-epoch" => {
            let e = parse_i64(&argv[2]).ok_or_else(|| CmdError::new("ERR value is not an integer or out of range"))?;
            if cl.per_shard {
                return Err(CmdError::new(
                    "ERR The user can assign a config epoch only when the node does not know any other node.",
                ));
            }
            return done(cl.set_config_epoch(e), r);
        }
        "count-failure-reports" => {
            known_node(cl, &argv[2])?;
            r.int(0);
        }
        "replicas" | "slaves" => {
            known_node(cl, &argv[2])?;
            r.array(0);
        }
        "forget" => {
            let id = String::from_utf8_lossy(&argv[2]);
            if id == cl.myid(node) {
                return Err(CmdError::new("ERR I tried hard but I can't forget myself..."));
            }
            known_node(cl, &argv[2])?;
            return Err(CmdError::new("ERR Basalt's shard nodes are one process: none can be forgotten"));
        }
        "replicate" => {
            let id = String::from_utf8_lossy(&argv[2]);
            if id == cl.myid(node) {
                return Err(CmdError::new("ERR Can't replicate myself"));
            }
            known_node(cl, &argv[2])?;
            return Err(CmdError::new("ERR Basalt has no replication yet"));
        }
        "failover" => {
            if argv.len() > 3 {
                return Err(sub_syntax(argv));
            }
            let ok = match argv.get(2) {
                None => true,
                Some(a) => is(a, "force") || is(a, "takeover"),
            };
            if !ok {
                return Err(CmdError::new("ERR syntax error"));
            }
            return Err(CmdError::new("ERR You should send CLUSTER FAILOVER to a replica"));
        }
        "meet" => {
            let port = parse_i64(&argv[3]).filter(|p| (0..=65535).contains(p));
            if port.is_none() {
                let p = String::from_utf8_lossy(&argv[3]);
                return Err(CmdError::new(format!("ERR Invalid base port specified: {p}")));
            }
            return Err(CmdError::new(
                "ERR Basalt has no cluster bus yet: its nodes are one process and meet no others",
            ));
        }
        "setslot" => return setslot(cl, node, argv, r),
        // Unknown subcommands were refused before the handler.
        _ => return Err(CmdError::new("ERR syntax error")),
    }
    Ok(())
}

/// Redis's `addReplySubcommandSyntaxError`, naming the subcommand as sent.
fn sub_syntax(argv: &[Bytes]) -> CmdError {
    let sub = String::from_utf8_lossy(&argv[1]);
    CmdError::new(format!(
        "ERR unknown subcommand or wrong number of arguments for '{sub}'. Try CLUSTER HELP."
    ))
}

/// CLUSTER SETSLOT: the only nodes known are this process's; a slot
/// stays with the shard that holds it.
fn setslot(cl: &Cluster, node: Option<usize>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let slot = slot_arg(&argv[2])?;
    let action = &argv[3];
    if is(action, "stable") {
        if argv.len() != 4 {
            return Err(CmdError::new("ERR syntax error"));
        }
        r.ok();
        return Ok(());
    }
    if argv.len() != 5 || !(is(action, "node") || is(action, "migrating") || is(action, "importing")) {
        return Err(CmdError::new(
            "ERR Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP",
        ));
    }
    let target = known_node(cl, &argv[4])?;
    let owner = cl.per_shard.then(|| shard_of_slot(slot, cl.shards));
    let mine = owner == node || !cl.per_shard;
    if is(action, "node") {
        if target != owner {
            return Err(CmdError::new(
                "ERR Basalt keeps a slot on the shard that holds it: it cannot be given to another node",
            ));
        }
        if !cl.served(slot) {
            cl.add_slots(&[slot]).map_err(CmdError::new)?;
        }
        r.ok();
        return Ok(());
    }
    if is(action, "migrating") && !mine {
        return Err(CmdError::new(format!("ERR I'm not the owner of hash slot {slot}")));
    }
    if is(action, "importing") && target == node {
        return Err(CmdError::new(format!("ERR I'm already the owner of hash slot {slot}")));
    }
    Err(CmdError::new("ERR Basalt does not migrate slots between its nodes yet"))
}

/// The shard of a known node id (None: the one node), or Redis's error.
fn known_node(cl: &Cluster, id: &[u8]) -> CmdResult<Option<usize>> {
    let id = String::from_utf8_lossy(id);
    cl.nodes()
        .into_iter()
        .find(|n| n.id == id)
        .map(|n| n.shard)
        .ok_or_else(|| CmdError::new(format!("ERR Unknown node {id}")))
}

/// Keys of database 0 (cluster mode has no other) on every shard.
async fn total_keys(c: &Conn<'_>) -> i64 {
    c.shard.broadcast(|st: &ShardState| st.ks.count(0)).await.iter().sum()
}

/// Up to `max` keys of `slot` on the shard holding it, and how many it has.
async fn keys_in_slot(c: &Conn<'_>, slot: u16, max: usize) -> CmdResult<(Vec<Bytes>, usize)> {
    let target = shard_of_slot(slot, c.shard.count());
    c.shard
        .invoke_on(target, move |st: &ShardState| {
            let (mut keys, mut n) = (Vec::new(), 0usize);
            st.ks.scan_slots(0, slot, slot + 1, crate::clock::now_ms(), |key, _| {
                if keys.len() < max {
                    keys.push(Bytes::copy_from_slice(key));
                }
                n += 1;
                true
            })?;
            Ok((keys, n))
        })
        .await
}

/// CLUSTER INFO's text.
fn info_text(g: &Global, node: Option<usize>, accepted_on: usize) -> String {
    let cl = &g.cluster;
    let full = g.config.get("cluster-require-full-coverage") == "yes";
    let nodes = cl.nodes();
    let served = cl.served_count();
    let size = nodes.iter().filter(|n| !n.ranges.is_empty()).count();
    let me = &nodes[cl.me(node, accepted_on).min(nodes.len() - 1)];
    let current = nodes.iter().map(|n| n.epoch).max().unwrap_or(0).max(cl.epochs().0);
    format!(
        "cluster_state:{}\r\ncluster_slots_assigned:{served}\r\ncluster_slots_ok:{served}\r\ncluster_slots_pfail:0\r\n\
         cluster_slots_fail:0\r\ncluster_known_nodes:{}\r\ncluster_size:{size}\r\ncluster_current_epoch:{current}\r\n\
         cluster_my_epoch:{}\r\ncluster_stats_messages_sent:0\r\ncluster_stats_messages_received:0\r\n\
         total_cluster_links_buffer_limit_exceeded:0\r\n",
        if cl.state_ok(full) { "ok" } else { "fail" },
        nodes.len(),
        me.epoch,
    )
}

/// A node's announced port and its bus port (`cluster-announce-bus-port`,
/// else `cluster-port` for the main one, else port + 10000).
fn ports(g: &Global, n: &Node) -> (u16, u16) {
    let cl = &g.cluster;
    let port = cl.announced(n.port, announce_port(g));
    let bus = g.config.get_int("cluster-announce-bus-port");
    let cport = g.config.get_int("cluster-port");
    let bus = if bus > 0 && n.shard.is_none_or(|s| s == 0) {
        bus
    } else if cport > 0 && n.shard.is_none() {
        cport
    } else {
        port as i64 + 10000
    };
    (port, bus.clamp(0, 65535) as u16)
}

/// CLUSTER NODES's text: a line per node, `myself` on the one answering.
fn nodes_text(g: &Global, client: &Client) -> String {
    let cl = &g.cluster;
    let ip = announced_ip(g, client);
    let me = cl.me(client.node.filter(|_| cl.per_shard), client.info.shard);
    let now = crate::clock::now_ms();
    let mut out = String::new();
    for (i, n) in cl.nodes().iter().enumerate() {
        let (port, bus) = ports(g, n);
        let (flags, pong) = if i == me { ("myself,master", 0) } else { ("master", now) };
        out.push_str(&format!("{} {ip}:{port}@{bus} {flags} - 0 {pong} {} connected", n.id, n.epoch));
        for (a, b) in &n.ranges {
            if a == b {
                out.push_str(&format!(" {a}"));
            } else {
                out.push_str(&format!(" {a}-{b}"));
            }
        }
        out.push('\n');
    }
    out
}

/// CLUSTER SLOTS: `[start, end, [ip, port, id, {}]]` per range.
fn slots_reply(g: &Global, client: &Client, r: &mut Reply) {
    let ip = announced_ip(g, client);
    let nodes = g.cluster.nodes();
    r.array(nodes.iter().map(|n| n.ranges.len()).sum());
    for n in &nodes {
        let (port, _) = ports(g, n);
        for (a, b) in &n.ranges {
            r.array(3);
            r.int(*a as i64);
            r.int(*b as i64);
            r.array(4);
            r.bulk(ip.as_bytes());
            r.int(port as i64);
            r.bulk(n.id.as_bytes());
            r.map(0);
        }
    }
}

/// CLUSTER SHARDS: per shard its slots and its one node.
fn shards_reply(g: &Global, client: &Client, r: &mut Reply) {
    let ip = announced_ip(g, client);
    let nodes = g.cluster.nodes();
    r.array(nodes.len());
    for n in &nodes {
        let (port, _) = ports(g, n);
        r.map(2);
        r.bulk(b"slots");
        r.array(n.ranges.len() * 2);
        for (a, b) in &n.ranges {
            r.int(*a as i64);
            r.int(*b as i64);
        }
        r.bulk(b"nodes");
        r.array(1);
        r.map(7);
        r.bulk(b"id");
        r.bulk(n.id.as_bytes());
        r.bulk(b"port");
        r.int(port as i64);
        r.bulk(b"ip");
        r.bulk(ip.as_bytes());
        r.bulk(b"endpoint");
        r.bulk(ip.as_bytes());
        r.bulk(b"role");
        r.bulk(b"master");
        r.bulk(b"replication-offset");
        r.int(0);
        r.bulk(b"health");
        r.bulk(b"online");
    }
}

/// `ip:port` of shard `shard`'s node as clients are told it: the
/// announced ip, else the address the client reached us on.
pub fn node_addr(g: &Global, c: &Cluster, client: &Client, shard: usize) -> String {
    let port = c.shard_ports.get(shard).copied().unwrap_or(c.port);
    format!("{}:{}", announced_ip(g, client), c.announced(port, announce_port(g)))
}

/// `cluster-announce-ip`, else the local address of the client's connection.
pub fn announced_ip(g: &Global, client: &Client) -> String {
    let ip = g.config.get("cluster-announce-ip");
    if !ip.is_empty() {
        return ip;
    }
    let laddr = &client.info.laddr;
    match laddr.parse::<std::net::SocketAddr>() {
        Ok(a) => a.ip().to_canonical().to_string(),
        Err(_) => String::new(),
    }
}

pub fn announce_port(g: &Global) -> u16 {
    g.config.get_int("cluster-announce-port").clamp(0, 65535) as u16
}
