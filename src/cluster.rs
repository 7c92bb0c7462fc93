//! Redis Cluster's view of this process (docs/cluster.md): the node ids,
//! which hash slots are served, the epochs, and the topology cluster
//! clients are shown. A leaf: it names `slot` and the standard library only.
//!
//! With `cluster-enabled yes` the process is one cluster node owning every
//! slot (until CLUSTER DELSLOTS/FLUSHSLOTS/RESET say otherwise). With
//! `cluster-port-per-shard yes` as well, each shard is shown as a node of
//! its own, listening on its own port and owning exactly the slots of its
//! shard (`slot::shard_of_slot`), so a cluster client sends each command to
//! the core that holds its key.
//!
//! What is kept in the data directory (`cluster-config-file`, Basalt's own
//! text format, rewritten whole and renamed into place): the node id, the
//! per-shard node ids, the epochs and the served slots.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use crate::slot::{shard_of_slot, SLOTS};

/// Redis's refusals, word for word.
pub const CROSSSLOT: &str = "CROSSSLOT Keys in request don't hash to the same slot";
pub const DOWN_UNBOUND: &str = "CLUSTERDOWN Hash slot not served";
pub const DOWN_STATE: &str = "CLUSTERDOWN The cluster is down";
pub const DOWN_READONLY: &str = "CLUSTERDOWN The cluster is down and only accepts read commands";
pub const TRYAGAIN: &str = "TRYAGAIN Multiple keys request during rehashing of slot";
pub const DISABLED: &str = "ERR This instance has cluster support disabled";

/// What the persisted state holds.
#[derive(Clone, Debug, PartialEq)]
struct State {
    id: String,
    shard_id: String,
    /// One node id per shard (`cluster-port-per-shard`).
    shard_ids: Vec<String>,
    current_epoch: u64,
    my_epoch: u64,
}

/// The cluster state of the process.
pub struct Cluster {
    pub enabled: bool,
    /// Each shard is a node on its own port.
    pub per_shard: bool,
    pub shards: usize,
    /// The main port.
    pub port: u16,
    /// The port each shard's node listens on (`per_shard`).
    pub shard_ports: Vec<u16>,
    file: PathBuf,
    state: Mutex<State>,
    /// Served slots, a bit each: read on every keyed command.
    served: Vec<AtomicU64>,
    /// Every slot is served: the checks' fast path.
    all: AtomicBool,
}

/// One node of the topology shown to clients.
#[derive(Clone, Debug)]
pub struct Node {
    pub id: String,
    /// The shard it stands for (`per_shard`), else None.
    pub shard: Option<usize>,
    /// Its port, as listened on (the announced one is [`Cluster::announced`]).
    pub port: u16,
    pub epoch: u64,
    /// Served slot ranges, inclusive.
    pub ranges: Vec<(u16, u16)>,
}

/// Why a keyed command may not run on this node.
#[derive(Debug, PartialEq)]
pub enum Refusal {
    CrossSlot,
    /// The slot is served by another node (`per_shard`): its shard.
    Moved(u16, usize),
    Unbound,
    Down,
    DownReadonly,
}

impl Refusal {
    /// Redis's error text; `addr` is the `ip:port` of a MOVED's node.
    pub fn text(&self, addr: impl Fn(usize) -> String) -> String {
        match self {
            Refusal::CrossSlot => CROSSSLOT.into(),
            Refusal::Moved(slot, shard) => format!("MOVED {slot} {}", addr(*shard)),
            Refusal::Unbound => DOWN_UNBOUND.into(),
            Refusal::Down => DOWN_STATE.into(),
            Refusal::DownReadonly => DOWN_READONLY.into(),
        }
    }
}

/// 40 random hex digits, as Redis's node ids.
pub fn random_id() -> String {
    let mut bytes = [0u8; 20];
    let ok = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))
        .is_ok();
    if !ok {
        // No urandom: the clock and the pid, mixed.
        let mut x = crate::clock::now_us() ^ ((std::process::id() as u64) << 32);
        for b in bytes.iter_mut() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *b = x as u8;
        }
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn is_id(s: &str) -> bool {
    s.len() == 40 && s.bytes().all(|c| c.is_ascii_hexdigit())
}

impl State {
    fn fresh(shards: usize) -> State {
        State {
            id: random_id(),
            shard_id: random_id(),
            shard_ids: (0..shards).map(|_| random_id()).collect(),
            current_epoch: 0,
            my_epoch: 0,
        }
    }
}

impl Cluster {
    /// A process outside cluster mode: every check passes.
    pub fn disabled(shards: usize, port: u16) -> Cluster {
        let c = Cluster::new(false, false, shards, port, Vec::new(), PathBuf::new(), State::fresh(0));
        c.set_all(true);
        c
    }

    fn new(enabled: bool, per_shard: bool, shards: usize, port: u16, shard_ports: Vec<u16>, file: PathBuf, state: State) -> Cluster {
        Cluster {
            enabled,
            per_shard,
            shards,
            port,
            shard_ports,
            file,
            state: Mutex::new(state),
            served: (0..SLOTS as usize / 64).map(|_| AtomicU64::new(0)).collect(),
            all: AtomicBool::new(false),
        }
    }

    /// Opens the cluster state kept at `dir/file`, or starts one that
    /// serves every slot and saves it.
    pub fn open(per_shard: bool, shards: usize, port: u16, shard_ports: Vec<u16>, dir: &Path, file: &str) -> Result<Cluster, String> {
        let path = dir.join(file);
        let (state, slots) = match std::fs::read_to_string(&path) {
            Ok(text) => parse(&text, shards).map_err(|e| format!("{}: {e}", path.display()))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (State::fresh(shards), vec![(0, SLOTS - 1)]),
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        let c = Cluster::new(true, per_shard, shards, port, shard_ports, path, state);
        for (a, b) in slots {
            for s in a..=b {
                c.mark(s, true);
            }
        }
        c.refresh_all();
        c.save()?;
        Ok(c)
    }

    fn mark(&self, slot: u16, on: bool) {
        let w = &self.served[slot as usize / 64];
        let bit = 1u64 << (slot % 64);
        if on {
            w.fetch_or(bit, Ordering::Relaxed);
        } else {
            w.fetch_and(!bit, Ordering::Relaxed);
        }
    }

    fn set_all(&self, on: bool) {
        for w in &self.served {
            w.store(if on { u64::MAX } else { 0 }, Ordering::Relaxed);
        }
        self.all.store(on, Ordering::Release);
    }

    fn refresh_all(&self) {
        let all = self.served.iter().all(|w| w.load(Ordering::Relaxed) == u64::MAX);
        self.all.store(all, Ordering::Release);
    }

    /// Whether `slot` is served here.
    #[inline]
    pub fn served(&self, slot: u16) -> bool {
        self.served[slot as usize / 64].load(Ordering::Relaxed) & (1u64 << (slot % 64)) != 0
    }

    /// Every slot is served: nothing to check but CROSSSLOT (and MOVED
    /// with per-shard nodes).
    #[inline]
    pub fn all_served(&self) -> bool {
        self.all.load(Ordering::Acquire)
    }

    /// How many slots are served.
    pub fn served_count(&self) -> usize {
        self.served.iter().map(|w| w.load(Ordering::Relaxed).count_ones() as usize).sum()
    }

    /// `cluster_state:ok`: with full coverage required, every slot served;
    /// else at least one (a node with none is in the minority of a cluster
    /// of no masters, as Redis's quorum rule has it).
    pub fn state_ok(&self, require_full_coverage: bool) -> bool {
        if require_full_coverage {
            self.all_served()
        } else {
            self.served_count() > 0
        }
    }

    /// Where a keyed command whose keys fall in `slot` may run, for a
    /// client of node `node` (its shard's port; None: the main port, which
    /// serves every served slot).
    pub fn route(&self, slot: u16, node: Option<usize>, write: bool, full: bool, reads_when_down: bool) -> Result<(), Refusal> {
        if !self.all_served() {
            if !self.served(slot) {
                return Err(Refusal::Unbound);
            }
            if !self.state_ok(full) {
                if !reads_when_down {
                    return Err(Refusal::Down);
                }
                if write {
                    return Err(Refusal::DownReadonly);
                }
            }
        }
        match node {
            Some(n) if self.per_shard => {
                let owner = shard_of_slot(slot, self.shards);
                if owner != n {
                    return Err(Refusal::Moved(slot, owner));
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// This node's id (the main port's, or shard `node`'s).
    pub fn myid(&self, node: Option<usize>) -> String {
        let st = self.lock();
        match node {
            Some(n) if self.per_shard => st.shard_ids.get(n).cloned().unwrap_or_else(|| st.id.clone()),
            _ => st.id.clone(),
        }
    }

    /// CLUSTER MYSHARDID: a shard of one master; with per-shard nodes each
    /// node is its own shard, named by its node id.
    pub fn myshardid(&self, node: Option<usize>) -> String {
        if self.per_shard {
            return self.myid(node);
        }
        self.lock().shard_id.clone()
    }

    pub fn epochs(&self) -> (u64, u64) {
        let st = self.lock();
        (st.current_epoch, st.my_epoch)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The nodes: one, or one per shard.
    pub fn nodes(&self) -> Vec<Node> {
        let st = self.lock();
        if self.per_shard {
            (0..self.shards)
                .map(|i| Node {
                    id: st.shard_ids.get(i).cloned().unwrap_or_default(),
                    shard: Some(i),
                    port: self.shard_ports.get(i).copied().unwrap_or(0),
                    epoch: st.my_epoch + i as u64,
                    ranges: self.ranges(|s| shard_of_slot(s, self.shards) == i),
                })
                .collect()
        } else {
            vec![Node {
                id: st.id.clone(),
                shard: None,
                port: self.port,
                epoch: st.my_epoch,
                ranges: self.ranges(|_| true),
            }]
        }
    }

    /// The served slots `pick` keeps, as inclusive ranges.
    fn ranges(&self, pick: impl Fn(u16) -> bool) -> Vec<(u16, u16)> {
        let mut out: Vec<(u16, u16)> = Vec::new();
        for s in 0..SLOTS {
            if !self.served(s) || !pick(s) {
                continue;
            }
            match out.last_mut() {
                Some(r) if r.1 + 1 == s => r.1 = s,
                _ => out.push((s, s)),
            }
        }
        out
    }

    /// The index in [`Cluster::nodes`] of the node a client of `node`
    /// talks to; `accepted_on` is the shard that accepted the connection
    /// (the main port with per-shard nodes shows that shard's node).
    pub fn me(&self, node: Option<usize>, accepted_on: usize) -> usize {
        if self.per_shard {
            node.unwrap_or(accepted_on).min(self.shards.saturating_sub(1))
        } else {
            0
        }
    }

    /// The port a node announces: its own, moved by `cluster-announce-port`
    /// (the main port's announced value; per-shard ports keep their offset).
    pub fn announced(&self, port: u16, announce_port: u16) -> u16 {
        if announce_port == 0 {
            return port;
        }
        (announce_port as i32 + port as i32 - self.port as i32).clamp(0, 65535) as u16
    }

    /// CLUSTER ADDSLOTS: every slot must be free, else Redis's error names
    /// the first busy one and nothing changes.
    pub fn add_slots(&self, slots: &[u16]) -> Result<(), String> {
        self.set_slots(slots, true)
    }

    /// CLUSTER DELSLOTS: every slot must be served.
    pub fn del_slots(&self, slots: &[u16]) -> Result<(), String> {
        self.set_slots(slots, false)
    }

    /// Serves (`on`) or stops serving `slots`, all or none, and saves.
    fn set_slots(&self, slots: &[u16], on: bool) -> Result<(), String> {
        {
            let _guard = self.lock();
            let mut seen = std::collections::HashSet::new();
            for &s in slots {
                if self.served(s) == on {
                    let why = if on { "already busy" } else { "already unassigned" };
                    return Err(format!("ERR Slot {s} is {why}"));
                }
                if !seen.insert(s) {
                    return Err(format!("ERR Slot {s} specified multiple times"));
                }
            }
            for &s in slots {
                self.mark(s, on);
            }
            self.refresh_all();
        }
        self.save()
    }

    /// CLUSTER FLUSHSLOTS and the slot part of CLUSTER RESET.
    pub fn flush_slots(&self) -> Result<(), String> {
        self.set_all(false);
        self.save()
    }

    /// CLUSTER RESET: slots forgotten; HARD also new ids and epochs 0.
    pub fn reset(&self, hard: bool) -> Result<(), String> {
        {
            let mut st = self.lock();
            if hard {
                *st = State::fresh(self.shards);
            }
        }
        self.flush_slots()
    }

    /// CLUSTER BUMPEPOCH: `BUMPED n`, or `STILL n` when this node's epoch
    /// is already the greatest (always, alone: Redis bumps only a node
    /// whose epoch is 0 or not the greatest).
    pub fn bump_epoch(&self) -> Result<(bool, u64), String> {
        let bumped = {
            let mut st = self.lock();
            if st.my_epoch == 0 || st.my_epoch != st.current_epoch {
                st.current_epoch += 1;
                st.my_epoch = st.current_epoch;
                Some(st.my_epoch)
            } else {
                None
            }
        };
        match bumped {
            Some(e) => self.save().map(|_| (true, e)),
            None => Ok((false, self.epochs().1)),
        }
    }

    /// CLUSTER SET-CONFIG-EPOCH: only on a node whose epoch is 0, alone.
    pub fn set_config_epoch(&self, epoch: i64) -> Result<(), String> {
        {
            let mut st = self.lock();
            if epoch < 0 {
                return Err(format!("ERR Invalid config epoch specified: {epoch}"));
            }
            if st.my_epoch != 0 {
                return Err("ERR Node config epoch is already non-zero".into());
            }
            st.my_epoch = epoch as u64;
            st.current_epoch = st.current_epoch.max(epoch as u64);
        }
        self.save()
    }

    /// Writes the state file (a temp file renamed over it, then synced).
    pub fn save(&self) -> Result<(), String> {
        if !self.enabled {
            return Ok(());
        }
        let text = {
            let st = self.lock();
            let mut t = String::from("# Basalt's cluster state (docs/cluster.md): written by Basalt\n");
            t.push_str(&format!("id {}\nshard-id {}\n", st.id, st.shard_id));
            t.push_str(&format!("shard-ids {}\n", st.shard_ids.join(" ")));
            t.push_str(&format!("epochs {} {}\n", st.current_epoch, st.my_epoch));
            let ranges: Vec<String> = self
                .ranges(|_| true)
                .iter()
                .map(|(a, b)| if a == b { a.to_string() } else { format!("{a}-{b}") })
                .collect();
            t.push_str(&format!("slots {}\n", ranges.join(" ")));
            t
        };
        let tmp = self.file.with_extension("tmp");
        let write = || -> std::io::Result<()> {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(text.as_bytes())?;
            f.sync_all()?;
            std::fs::rename(&tmp, &self.file)?;
            if let Some(dir) = self.file.parent() {
                std::fs::File::open(dir)?.sync_all()?;
            }
            Ok(())
        };
        write().map_err(|e| format!("ERR Error saving the cluster node config: {e}"))
    }
}

/// Reads the state file; a shard count that grew gets new ids.
fn parse(text: &str, shards: usize) -> Result<(State, Vec<(u16, u16)>), String> {
    let mut st = State::fresh(shards);
    let mut slots = Vec::new();
    let (mut have_id, mut have_slots) = (false, false);
    for line in text.lines() {
        let mut words = line.split_ascii_whitespace();
        match words.next() {
            None => {}
            Some(w) if w.starts_with('#') => {}
            Some("id") => {
                st.id = words.next().filter(|w| is_id(w)).ok_or("bad node id")?.to_string();
                have_id = true;
            }
            Some("shard-id") => st.shard_id = words.next().filter(|w| is_id(w)).ok_or("bad shard id")?.to_string(),
            Some("shard-ids") => {
                let ids: Vec<String> = words.map(str::to_string).collect();
                if ids.iter().any(|w| !is_id(w)) {
                    return Err("bad shard node id".into());
                }
                for (i, id) in ids.into_iter().take(shards).enumerate() {
                    st.shard_ids[i] = id;
                }
            }
            Some("epochs") => {
                let mut n = || words.next().and_then(|w| w.parse::<u64>().ok()).ok_or("bad epochs");
                st.current_epoch = n()?;
                st.my_epoch = n()?;
            }
            Some("slots") => {
                have_slots = true;
                for w in words {
                    let (a, b) = w.split_once('-').unwrap_or((w, w));
                    let (a, b) = (a.parse::<u16>().map_err(|_| "bad slot")?, b.parse::<u16>().map_err(|_| "bad slot")?);
                    if a > b || b >= SLOTS {
                        return Err(format!("bad slot range {w}"));
                    }
                    slots.push((a, b));
                }
            }
            Some(other) => return Err(format!("unknown line '{other}'")),
        }
    }
    if !have_id || !have_slots {
        return Err("the node id or the slots line is missing".into());
    }
    Ok((st, slots))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(dir: &Path, per_shard: bool, shards: usize) -> Cluster {
        let ports = (0..shards).map(|i| 7001 + i as u16).collect();
        Cluster::open(per_shard, shards, 7000, ports, dir, "nodes.conf").unwrap()
    }

    #[test]
    fn state_survives_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let c = open(dir.path(), false, 2);
        assert!(c.all_served());
        let id = c.myid(None);
        c.del_slots(&[5, 6, 100]).unwrap();
        assert_eq!(c.del_slots(&[5]).unwrap_err(), "ERR Slot 5 is already unassigned");
        assert_eq!(c.add_slots(&[7]).unwrap_err(), "ERR Slot 7 is already busy");
        drop(c);
        let c = open(dir.path(), false, 2);
        assert_eq!(c.myid(None), id);
        assert!(!c.all_served());
        assert_eq!(c.nodes()[0].ranges, vec![(0, 4), (7, 99), (101, 16383)]);
        assert_eq!(c.route(5, None, false, true, false), Err(Refusal::Unbound));
        assert_eq!(c.route(7, None, false, true, false), Err(Refusal::Down));
        assert_eq!(c.route(7, None, false, false, false), Ok(()));
        assert_eq!(c.route(7, None, true, true, true), Err(Refusal::DownReadonly));
        c.add_slots(&[5, 6, 100]).unwrap();
        assert!(c.all_served());
        c.reset(true).unwrap();
        assert_ne!(c.myid(None), id);
        assert_eq!(c.served_count(), 0);
    }

    #[test]
    fn per_shard_nodes_own_their_shards_slots() {
        let dir = tempfile::tempdir().unwrap();
        let c = open(dir.path(), true, 3);
        let nodes = c.nodes();
        assert_eq!(nodes.len(), 3);
        assert_eq!(nodes[0].ranges, vec![(0, 5461)]);
        assert_eq!(nodes[1].ranges, vec![(5462, 10922)]);
        assert_eq!(nodes[2].ranges, vec![(10923, 16383)]);
        assert_eq!(c.route(0, Some(0), false, true, false), Ok(()));
        assert_eq!(c.route(16383, Some(0), false, true, false), Err(Refusal::Moved(16383, 2)));
        assert_eq!(c.route(16383, None, false, true, false), Ok(()));
        assert_eq!(c.announced(7002, 0), 7002);
        assert_eq!(c.announced(7002, 8000), 8002);
        assert_ne!(c.myid(Some(0)), c.myid(Some(1)));
    }

    #[test]
    fn a_bad_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("nodes.conf"), "id xyz\nslots 0-16383\n").unwrap();
        assert!(Cluster::open(false, 1, 7000, vec![], dir.path(), "nodes.conf").is_err());
        std::fs::write(dir.path().join("nodes.conf"), format!("id {}\nslots 0-16384\n", "a".repeat(40))).unwrap();
        assert!(Cluster::open(false, 1, 7000, vec![], dir.path(), "nodes.conf").is_err());
    }
}
