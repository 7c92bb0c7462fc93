//! The commands: every command declared once, by its family module, beside
//! its handler (name, arity, flags, key positions, how it executes; see
//! `table`), plus argument-parsing helpers.
//!
//! `COMMAND`, `COMMAND INFO/COUNT/DOCS/LIST/GETKEYS`, unknown-command and
//! wrong-arity errors are all generated from [`TABLE`]. A command executes
//! in one of two ways:
//! - [`Exec::Shard`]: a synchronous handler over one shard's keyspace; the
//!   connection routes it to the shard that owns its first key (all its keys
//!   share that key's slot or shard).
//! - [`Exec::Conn`]: runs in the connection task; it may await other shards
//!   (multi-key fan-out, server commands) or touch connection state.

pub mod acl;
pub mod aclcats;
pub mod args;
pub mod bits;
pub mod cluster;
pub mod command;
pub mod connection;
pub mod functions;
pub mod geo;
pub mod hashes;
pub mod hll;
pub mod keys;
pub mod keyspecs;
pub mod lists;
pub mod migrate;
pub mod monitor;
pub mod multi;
pub mod pubsub;
pub mod req;
pub mod scripting;
pub mod server;
pub mod sets;
pub mod sort;
pub mod streams;
pub mod strings;
mod table;
pub mod whole;
pub mod xgroups;
pub mod xread;
pub mod zedit;
pub mod zmulti;
pub mod zscan;
pub mod zsets;

pub use req::Req;
pub use table::TABLE;
pub(crate) use table::{commands, conn_fn, exec, subcommands};

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use bytes::Bytes;
use shards::Shard;

use crate::client::Client;
use crate::error::CmdResult;
use crate::resp::Reply;
use crate::shard::ShardState;
use args::text;

/// What a shard handler sees.
pub struct Ctx<'a> {
    pub shard: &'a ShardState,
    pub db: u8,
    pub now_ms: u64,
    later: Cell<Option<ConnFn>>,
}

impl<'a> Ctx<'a> {
    pub fn new(shard: &'a ShardState, db: u8, now_ms: u64) -> Ctx<'a> {
        Ctx {
            shard,
            db,
            now_ms,
            later: Cell::new(None),
        }
    }

    pub fn ks(&self) -> &crate::types::keyspace::Keyspace {
        &self.shard.ks
    }

    /// Leaves this command's reply to the connection: `f` produces it in
    /// the connection's task, with the same arguments, at this command's
    /// place in the reply order (the handler writes nothing). For a reply
    /// too big to build on the shard in one go (`whole`). The caller
    /// returns what this returns.
    pub fn later(&self, f: ConnFn) -> CmdResult {
        self.later.set(Some(f));
        Ok(())
    }

    /// A keyspace notification for `key` in this command's db, published
    /// once its writes are in (`types::notify`). Call it after the write.
    #[inline]
    pub fn notify(&self, class: u32, event: &'static str, key: &[u8]) {
        self.shard.ks.notify(class, event, self.db, key);
    }

    /// The connection function a handler left its reply to, if any.
    pub fn take_later(&self) -> Option<ConnFn> {
        self.later.take()
    }
}

/// A handler that runs on the shard owning the command's keys.
pub type ShardFn = fn(&Ctx, &[Bytes], &mut Reply) -> CmdResult;

/// What a connection command sees: the shard its connection runs on (to
/// reach the others) and the connection's own state.
pub struct Conn<'a> {
    pub shard: &'a Rc<Shard<ShardState>>,
    pub client: &'a mut Client,
}

impl Conn<'_> {
    #[inline]
    pub fn st(&self) -> &Rc<ShardState> {
        self.shard.state()
    }

    #[inline]
    pub fn db(&self) -> u8 {
        self.client.db
    }
}

/// A connection command's run.
pub type ConnFuture<'a> = Pin<Box<dyn Future<Output = CmdResult> + 'a>>;

/// A handler that runs in the connection's task: it may await other
/// shards and change the connection's state. Written as an `async fn`
/// and declared `Conn(name)` (the declaration boxes its future).
pub type ConnFn = for<'a> fn(Conn<'a>, &'a [Bytes], &'a mut Reply) -> ConnFuture<'a>;

/// How a command runs: the one place both kinds are told apart is the
/// dispatcher.
#[derive(Clone, Copy)]
pub enum Exec {
    Shard(ShardFn),
    Conn(ConnFn),
    /// EVAL and its forms: the dispatcher runs the script
    /// (`dispatch::script`).
    Script(ScriptKind),
}

/// Which EVAL: by body or by SHA1, and whether read-only (`*_RO`).
#[derive(Clone, Copy, Debug)]
pub struct ScriptKind {
    pub by_sha: bool,
    pub read_only: bool,
    /// FCALL and FCALL_RO: argv[1] names a function.
    pub function: bool,
}

impl ScriptKind {
    const fn new(by_sha: bool, read_only: bool, function: bool) -> ScriptKind {
        ScriptKind {
            by_sha,
            read_only,
            function,
        }
    }

    pub const EVAL: ScriptKind = ScriptKind::new(false, false, false);
    pub const EVALSHA: ScriptKind = ScriptKind::new(true, false, false);
    pub const EVAL_RO: ScriptKind = ScriptKind::new(false, true, false);
    pub const EVALSHA_RO: ScriptKind = ScriptKind::new(true, true, false);
    pub const FCALL: ScriptKind = ScriptKind::new(false, false, true);
    pub const FCALL_RO: ScriptKind = ScriptKind::new(false, true, true);
}

/// A subcommand of a container command (CLIENT, CONFIG, OBJECT, COMMAND).
pub struct SubSpec {
    pub name: &'static str,
    pub arity: i32,
    pub flags: &'static [&'static str],
    pub summary: &'static str,
}

/// The flags the server checks per command, as bits of
/// [`CommandSpec::bits`] (the names stay in `flags` for COMMAND).
pub mod flag {
    pub const WRITE: u32 = 1;
    pub const READONLY: u32 = 1 << 1;
    pub const NO_AUTH: u32 = 1 << 2;
    /// Not a flag of Redis's: its key reads are lookups
    /// ([`super::CommandSpec::looks_up`]).
    pub const LOOKS_UP: u32 = 1 << 3;
    /// Not a flag of Redis's: its key reads leave the keys' access times
    /// alone (Redis's `LOOKUP_NOTOUCH`: TYPE, TTL and friends, OBJECT).
    pub const NO_TOUCH: u32 = 1 << 4;
    pub const NO_MULTI: u32 = 1 << 5;
}

const fn eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// [`CommandSpec::bits`] of command `name` with `flags`: [`flag_bits`],
/// and [`flag::LOOKS_UP`] for the commands whose key reads are lookups, as
/// Redis's `lookupKeyRead`: every read-only command but OBJECT
/// (`LOOKUP_NONOTIFY`), and GETDEL and GETEX.
pub const fn spec_bits(name: &str, flags: &[&str]) -> u32 {
    let bits = flag_bits(flags);
    let reads = bits & flag::READONLY != 0 && !eq(name, "object");
    let bits = if reads || eq(name, "getdel") || eq(name, "getex") {
        bits | flag::LOOKS_UP
    } else {
        bits
    };
    let no_touch: [&str; 7] = ["type", "ttl", "pttl", "expiretime", "pexpiretime", "object", "exists"];
    let mut i = 0;
    while i < no_touch.len() {
        if eq(name, no_touch[i]) {
            return bits | flag::NO_TOUCH;
        }
        i += 1;
    }
    bits
}

/// The bits of the flags in `names` that [`flag`] knows; computed at
/// compile time by `commands!`, so a check per command is a mask, not a
/// string search.
pub const fn flag_bits(names: &[&str]) -> u32 {
    let known: [(&str, u32); 4] = [
        ("write", flag::WRITE),
        ("readonly", flag::READONLY),
        ("no_auth", flag::NO_AUTH),
        ("no_multi", flag::NO_MULTI),
    ];
    let mut bits = 0;
    let mut i = 0;
    while i < names.len() {
        let mut k = 0;
        while k < known.len() {
            if eq(names[i], known[k].0) {
                bits |= known[k].1;
            }
            k += 1;
        }
        i += 1;
    }
    bits
}

/// One command's declaration.
#[derive(Clone)]
pub struct CommandSpec {
    /// Lower case, as COMMAND reports it.
    pub name: &'static str,
    /// Redis convention: N exact, -N at least N (argv including the name).
    pub arity: i32,
    pub flags: &'static [&'static str],
    /// The [`flag`] bits of `flags`.
    pub bits: u32,
    pub first_key: i32,
    pub last_key: i32,
    pub step: i32,
    pub group: &'static str,
    pub since: &'static str,
    pub summary: &'static str,
    pub exec: Exec,
    pub subcommands: &'static [SubSpec],
}

impl CommandSpec {
    /// Whether `argc` satisfies `arity`.
    pub fn arity_ok(arity: i32, argc: usize) -> bool {
        if arity >= 0 {
            argc == arity as usize
        } else {
            argc >= (-arity) as usize
        }
    }

    #[inline]
    pub fn is_write(&self) -> bool {
        self.bits & flag::WRITE != 0
    }

    #[inline]
    pub fn is_readonly(&self) -> bool {
        self.bits & flag::READONLY != 0
    }

    /// Whether the command's key reads are lookups (keyspace hits and
    /// misses, `keymiss` events; see [`spec_bits`]).
    #[inline]
    pub fn looks_up(&self) -> bool {
        self.bits & flag::LOOKS_UP != 0
    }

    /// Whether the command's key reads update access times (see
    /// [`flag::NO_TOUCH`]).
    #[inline]
    pub fn touches(&self) -> bool {
        self.bits & flag::NO_TOUCH == 0
    }

    /// Refused inside MULTI (SAVE, SHUTDOWN).
    #[inline]
    pub fn no_multi(&self) -> bool {
        self.bits & flag::NO_MULTI != 0
    }

    /// Runs before AUTH when a password is set (AUTH, HELLO, QUIT, ...).
    #[inline]
    pub fn no_auth(&self) -> bool {
        self.bits & flag::NO_AUTH != 0
    }

    /// Which of this container's subcommands `argv` names (None for a
    /// plain command or an unknown subcommand).
    pub fn subcommand_index(&self, argv: &[Bytes]) -> Option<usize> {
        if self.subcommands.is_empty() {
            return None;
        }
        let sub = argv.get(1)?;
        self.subcommands.iter().position(|s| s.name.as_bytes().eq_ignore_ascii_case(sub))
    }

    /// Redis's `fullname`: `config|get` for subcommand `sub`, else the name.
    pub fn fullname(&self, sub: Option<usize>) -> String {
        match sub.and_then(|s| self.subcommands.get(s)) {
            Some(s) => format!("{}|{}", self.name, s.name),
            None => self.name.to_string(),
        }
    }

    /// Positions of the keys in `argv` (COMMAND GETKEYS and routing).
    pub fn key_positions(&self, argc: usize) -> std::iter::StepBy<std::ops::Range<usize>> {
        // An iterator, not a Vec: every write asks for its keys (the
        // probe before it), and a Vec was an allocation per command.
        if self.first_key <= 0 {
            return (0..0).step_by(1);
        }
        let last = if self.last_key < 0 {
            argc as i32 + self.last_key
        } else {
            self.last_key.min(argc as i32 - 1)
        };
        let first = self.first_key as usize;
        let end = if last < self.first_key {
            first
        } else {
            (last as usize + 1).min(argc).max(first)
        };
        (first..end).step_by(self.step.max(1) as usize)
    }
}

/// Where each command's and each subcommand's stats live (INFO
/// commandstats and latencystats, LATENCY HISTOGRAM): slot `i` of the
/// first [`TABLE`]`.len()` is command `i`; the subcommands' follow, so
/// CONFIG GET counts as `config|get`, as Redis counts it.
struct StatSlots {
    /// Per command, its first subcommand's slot.
    base: Vec<usize>,
    /// Per slot: the command and the subcommand.
    slots: Vec<(usize, Option<usize>)>,
}

fn stat_slots() -> &'static StatSlots {
    static SLOTS: std::sync::OnceLock<StatSlots> = std::sync::OnceLock::new();
    SLOTS.get_or_init(|| {
        let mut slots: Vec<(usize, Option<usize>)> = (0..TABLE.len()).map(|i| (i, None)).collect();
        let mut base = Vec::with_capacity(TABLE.len());
        for (i, c) in TABLE.iter().enumerate() {
            base.push(slots.len());
            slots.extend((0..c.subcommands.len()).map(|s| (i, Some(s))));
        }
        StatSlots { base, slots }
    })
}

/// The stats slot of command `idx` called with `argv`: its subcommand's
/// for a container (one check for any other command).
#[inline]
pub fn stat_slot(idx: usize, argv: &[Bytes]) -> usize {
    match TABLE.get(idx) {
        Some(c) if !c.subcommands.is_empty() => match c.subcommand_index(argv) {
            Some(s) => stat_slots().base[idx] + s,
            None => idx,
        },
        _ => idx,
    }
}

/// The command and subcommand of a stats slot.
pub fn stat_of(slot: usize) -> Option<(usize, Option<usize>)> {
    stat_slots().slots.get(slot).copied()
}

/// How many stats slots there are.
pub fn stat_count() -> usize {
    stat_slots().slots.len()
}

/// The name a stats slot is reported under (`config|get`); None for a
/// container's own slot, which Redis does not report.
pub fn stat_name(slot: usize) -> Option<String> {
    let (i, sub) = *stat_slots().slots.get(slot)?;
    let c = TABLE.get(i)?;
    if sub.is_none() && !c.subcommands.is_empty() {
        return None;
    }
    Some(c.fullname(sub))
}

/// The stats slots of a command or subcommand by name (`config|resetstat`);
/// a container's name stands for all its subcommands, as in Redis's
/// LATENCY HISTOGRAM.
pub fn stat_slots_named(name: &[u8]) -> Vec<usize> {
    match lookup_fullname(name) {
        Some((i, Some(s))) => vec![stat_slots().base[i] + s],
        Some((i, None)) if !TABLE[i].subcommands.is_empty() => (0..TABLE[i].subcommands.len()).map(|s| stat_slots().base[i] + s).collect(),
        Some((i, None)) => vec![i],
        None => Vec::new(),
    }
}

/// A command by name, or a subcommand by its fullname (`client|list`):
/// the command's index and the subcommand's (COMMAND INFO and DOCS, stats).
pub fn lookup_fullname(name: &[u8]) -> Option<(usize, Option<usize>)> {
    match memchr::memchr(b'|', name) {
        None => lookup(name).map(|(i, _)| (i, None)),
        Some(at) => {
            let (i, c) = lookup(&name[..at])?;
            let s = c
                .subcommands
                .iter()
                .position(|s| s.name.as_bytes().eq_ignore_ascii_case(&name[at + 1..]))?;
            Some((i, Some(s)))
        }
    }
}

/// The key specs of each command without subcommands, by its index in
/// [`TABLE`] (the cluster check reads them per command).
static SPECS_BY_INDEX: std::sync::LazyLock<Vec<&'static [keyspecs::KeySpec]>> =
    std::sync::LazyLock::new(|| TABLE.iter().map(|c| keyspecs::of(c.name)).collect());

/// Whether command `idx` names exactly one key, at a fixed place (GET,
/// SET, HSET...): the cluster check's fast path.
pub fn single_key(idx: usize) -> bool {
    static SINGLE: std::sync::LazyLock<Vec<bool>> = std::sync::LazyLock::new(|| {
        TABLE
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let specs = SPECS_BY_INDEX.get(i).copied().unwrap_or(&[]);
                !matches!(c.name, "sort" | "sort_ro")
                    && c.subcommands.is_empty()
                    && matches!(
                        specs,
                        [keyspecs::KeySpec {
                            begin: keyspecs::Begin::Index(_),
                            find: keyspecs::Find::Range(0, _, _),
                            ..
                        }]
                    )
            })
            .collect()
    });
    SINGLE.get(idx).copied().unwrap_or(false)
}

/// The keys Redis Cluster checks of a command (`getNodeByQuery`): every
/// key its key specs find (shard channels too), SORT's key and STORE key,
/// MIGRATE's keys as Redis finds them (`command::proc_keys`);
/// on a malformed command, the keys found before the fault.
pub fn cluster_keys<'a>(idx: usize, spec: &CommandSpec, argv: &'a [Bytes], mut f: impl FnMut(&'a [u8])) {
    if let Some(keys) = command::proc_keys(spec.name, argv) {
        for (pos, _) in keys {
            f(&argv[pos]);
        }
        return;
    }
    let specs = if spec.subcommands.is_empty() {
        SPECS_BY_INDEX.get(idx).copied().unwrap_or(&[])
    } else {
        match spec.subcommand_index(argv) {
            Some(i) => keyspecs::of(&spec.fullname(Some(i))),
            None => &[],
        }
    };
    if specs.is_empty() {
        return;
    }
    keyspecs::walk(specs, argv, |pos, _| f(&argv[pos]));
}

/// Finds a command by name, case-insensitively, without allocating: the
/// name is lower-cased and hashed in one pass, then found in the name
/// index (`table::NameIndex`).
#[inline]
pub fn lookup(name: &[u8]) -> Option<(usize, &'static CommandSpec)> {
    // The longest name is GEORADIUSBYMEMBER_RO's (20).
    if name.len() > 24 {
        return None;
    }
    let mut lower = [0u8; 24];
    let mut h = 0;
    for (d, s) in lower.iter_mut().zip(name) {
        *d = s.to_ascii_lowercase();
        h = table::name_hash(h, *d);
    }
    let table: &'static [CommandSpec] = &TABLE;
    let i = table::INDEX.find(table, &lower[..name.len()], h)?;
    Some((i, &table[i]))
}

/// At most `n` bytes of `a`, stopping at a NUL: C's `%.*s`, which Redis
/// formats client arguments into its errors with.
fn c_prefix(a: &[u8], n: usize) -> &[u8] {
    let a = &a[..a.len().min(n)];
    memchr::memchr(0, a).map_or(a, |i| &a[..i])
}

/// `ERR unknown command '<name>', with args beginning with: '<a>' '<b>' `,
/// built byte for byte as Redis builds it (128-byte caps, raw bytes).
pub fn unknown_command_error(argv: &[Bytes]) -> String {
    let mut args: Vec<u8> = Vec::new();
    for a in argv.iter().skip(1) {
        if args.len() >= 128 {
            break;
        }
        let room = 128 - args.len();
        args.push(b'\'');
        args.extend_from_slice(c_prefix(a, room));
        args.extend_from_slice(b"' ");
    }
    format!(
        "ERR unknown command '{}', with args beginning with: {}",
        text(c_prefix(&argv[0], 128)),
        text(&args)
    )
}

/// `ERR wrong number of arguments for '<name>' command`.
pub fn arity_error(name: &str) -> String {
    format!("ERR wrong number of arguments for '{name}' command")
}

/// Checks a container command's subcommand, resolved already (`sub`,
/// [`Req::sub`]): its existence and its arity.
pub fn check_sub(spec: &CommandSpec, sub: Option<usize>, argv: &[Bytes]) -> Result<(), String> {
    // COMMAND alone (arity -1) is a valid call with no subcommand.
    if spec.subcommands.is_empty() || argv.len() < 2 {
        return Ok(());
    }
    match sub.and_then(|i| spec.subcommands.get(i)) {
        None => Err(format!(
            "ERR unknown subcommand '{}'. Try {} HELP.",
            text(c_prefix(&argv[1], 128)),
            spec.name.to_ascii_uppercase()
        )),
        Some(s) if !CommandSpec::arity_ok(s.arity, argv.len()) => Err(arity_error(&format!("{}|{}", spec.name, s.name))),
        Some(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_is_case_insensitive_and_exact() {
        assert_eq!(lookup(b"GET").map(|(_, c)| c.name), Some("get"));
        assert_eq!(lookup(b"gEtRaNgE").map(|(_, c)| c.name), Some("getrange"));
        assert!(lookup(b"ge").is_none());
        assert!(lookup(b"averyveryverylongcommandname").is_none());
    }

    #[test]
    fn names_are_unique_and_lower_case() {
        for (i, c) in TABLE.iter().enumerate() {
            assert_eq!(c.name, c.name.to_ascii_lowercase());
            assert!(TABLE[i + 1..].iter().all(|o| o.name != c.name), "{} twice", c.name);
        }
    }

    #[test]
    fn flag_bits_follow_the_flag_names() {
        for c in TABLE.iter() {
            assert_eq!(c.is_write(), c.flags.contains(&"write"), "{}", c.name);
            assert_eq!(c.is_readonly(), c.flags.contains(&"readonly"), "{}", c.name);
            assert_eq!(c.no_auth(), c.flags.contains(&"no_auth"), "{}", c.name);
            let reads = c.is_readonly() && c.name != "object" || matches!(c.name, "getdel" | "getex");
            assert_eq!(c.looks_up(), reads, "{}", c.name);
        }
        assert_eq!(flag_bits(&["write", "denyoom", "fast"]), flag::WRITE);
        assert_eq!(flag_bits(&[]), 0);
    }

    #[test]
    fn every_name_is_found_in_any_case() {
        for (i, c) in TABLE.iter().enumerate() {
            assert_eq!(lookup(c.name.as_bytes()).map(|(j, _)| j), Some(i));
            assert_eq!(lookup(c.name.to_ascii_uppercase().as_bytes()).map(|(j, _)| j), Some(i));
        }
    }

    #[test]
    fn key_positions() {
        let (_, mset) = lookup(b"mset").unwrap();
        assert_eq!(mset.key_positions(5).collect::<Vec<_>>(), vec![1, 3]);
        assert_eq!(mset.key_positions(1).count(), 0);
        let (_, get) = lookup(b"get").unwrap();
        assert_eq!(get.key_positions(2).collect::<Vec<_>>(), vec![1]);
        assert_eq!(get.key_positions(1).count(), 0);
        let (_, lcs) = lookup(b"lcs").unwrap();
        assert_eq!(lcs.key_positions(4).collect::<Vec<_>>(), vec![1, 2]);
        let (_, ping) = lookup(b"ping").unwrap();
        assert_eq!(ping.key_positions(2).count(), 0);
        let (_, del) = lookup(b"del").unwrap();
        assert_eq!(del.key_positions(4).collect::<Vec<_>>(), vec![1, 2, 3]);
    }

    #[test]
    fn cluster_keys_follow_the_key_specs() {
        let keys = |line: &str| {
            let argv: Vec<Bytes> = line.split(' ').map(|a| Bytes::copy_from_slice(a.as_bytes())).collect();
            let (idx, spec) = lookup(&argv[0]).unwrap();
            let mut out = Vec::new();
            cluster_keys(idx, spec, &argv, |k| out.push(String::from_utf8_lossy(k).to_string()));
            out
        };
        assert_eq!(keys("get a"), ["a"]);
        assert_eq!(keys("mget a b c"), ["a", "b", "c"]);
        assert_eq!(keys("mset a 1 b 2"), ["a", "b"]);
        assert_eq!(keys("eval s 2 a b c"), ["a", "b"]);
        assert!(keys("eval s 0 a").is_empty());
        assert_eq!(keys("xread count 1 streams a b 0 0"), ["a", "b"]);
        assert_eq!(keys("sort a by w get x store b"), ["a", "b"]);
        assert_eq!(keys("zunionstore d 2 a b weights 1 2"), ["d", "a", "b"]);
        assert_eq!(keys("ssubscribe a b"), ["a", "b"]);
        assert_eq!(keys("object encoding a"), ["a"]);
        assert_eq!(keys("georadius a 0 0 1 km store b"), ["a", "b"]);
        assert!(keys("ping").is_empty());
        let single = |name: &str| single_key(lookup(name.as_bytes()).unwrap().0);
        assert!(single("get") && single("set") && single("hset") && single("incr"));
        assert!(!single("mget") && !single("sort") && !single("georadius") && !single("eval") && !single("ping"));
    }

    #[test]
    fn unknown_command_text() {
        let argv = vec![Bytes::from_static(b"foo"), Bytes::from_static(b"a"), Bytes::from_static(b"b")];
        assert_eq!(
            unknown_command_error(&argv),
            "ERR unknown command 'foo', with args beginning with: 'a' 'b' "
        );
    }
}
