//! What a script run is and the checks its `redis.call`s share, below
//! the three that run scripts (`script`: the one-shard step; `gated`:
//! behind the transaction gate; `scriptco`: the busy script's task).

use std::sync::Arc;

use bytes::Bytes;

use crate::client::ClientInfo;
use crate::cmd::{self, args::parse_i64};
use crate::resp::Reply;
use crate::script::store::{self, Script};

/// The error of a script SCRIPT KILL stopped.
pub(super) const KILLED: &str = "ERR Script killed by user with SCRIPT KILL...";

/// What a job runs.
pub(super) enum What {
    /// An EVAL script, by SHA1.
    Script([u8; 40], Arc<Script>),
    /// A function, by the name it was registered under.
    Function(String),
}

/// A script to run.
pub(super) struct Job {
    pub what: What,
    /// The script's or the function's flags.
    pub flags: store::Flags,
    pub keys: Vec<Bytes>,
    pub args: Vec<Bytes>,
    pub db: u8,
    pub resp3: bool,
    pub read_only: bool,
    pub info: Arc<ClientInfo>,
    pub time: u64,
    /// The cluster node port the client came in on (`Client::node`).
    pub node: Option<usize>,
    /// The client's ACL user: the script's commands are checked against it.
    pub user: Arc<crate::acl::User>,
}

/// Redis's checks of a command a script calls (`scriptCall`): the
/// request resolved, or None with the error written in `out`.
pub(super) fn checked(argv: &[Bytes], no_writes: bool, out: &mut Reply) -> Option<cmd::Req> {
    let Some((idx, spec)) = cmd::lookup(&argv[0]) else {
        out.error("ERR Unknown Redis command called from script");
        return None;
    };
    let req = cmd::Req::resolve(idx, argv);
    if !cmd::CommandSpec::arity_ok(spec.arity, argv.len()) || cmd::check_sub(spec, req.sub(), argv).is_err() {
        out.error("ERR Wrong number of args calling Redis command from script");
        return None;
    }
    let flags = req.flags();
    if flags.contains(&"noscript") || spec.flags.contains(&"noscript") {
        out.error("ERR This Redis command is not allowed from script");
        return None;
    }
    if matches!(spec.name, "xread" | "xreadgroup") && argv.iter().any(|a| a.eq_ignore_ascii_case(b"block")) {
        out.error(&format!("ERR {} command is not allowed with BLOCK option from scripts", spec.name));
        return None;
    }
    let writes = spec.is_write() || flags.contains(&"write") || matches!(spec.name, "publish" | "spublish");
    if no_writes && writes {
        out.error("ERR Write commands are not allowed from read-only scripts.");
        return None;
    }
    Some(req)
}

/// SELECT inside a script: changes the script's db (`db`), not the
/// client's.
pub(super) fn select(databases: usize, cluster: bool, argv: &[Bytes], db: &mut u8, out: &mut Reply) {
    match parse_i64(&argv[1]) {
        Some(n) if n != 0 && cluster => out.error("ERR SELECT is not allowed in cluster mode"),
        Some(n) if n >= 0 && (n as usize) < databases => {
            *db = n as u8;
            out.ok();
        }
        Some(_) => out.error("ERR DB index is out of range"),
        None => out.error("ERR value is not an integer or out of range"),
    }
}

/// `redis.acl_check_cmd`: whether `user` may run `argv` (None: an
/// unknown command).
pub(super) fn acl_check(user: &crate::acl::User, argv: &[Bytes]) -> Option<bool> {
    let (idx, _) = cmd::lookup(&argv[0])?;
    Some(user.unrestricted() || cmd::acl::check(user, idx, argv).is_ok())
}
