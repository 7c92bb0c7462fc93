//! ACL: users, their rules and the log, as Redis 7.2's ACL command
//! (`crate::acl` holds them), and the catalog of commands ACL rules name:
//! one id per command and per subcommand (the stats slots), with its
//! categories (`aclcats`).

use std::sync::LazyLock;

use bytes::Bytes;

use super::args::{is, parse_i64};
use super::keys::help_reply;
use super::{commands, subcommands, CommandSpec, Conn, SubSpec, TABLE};
use crate::acl::{self, category_bit, Catalog, Denied, Request, User};
use crate::client::{Client, ClientInfo};
use crate::error::{CmdError, CmdResult};
use crate::global::Global;
use crate::resp::Reply;

#[rustfmt::skip]
pub(super) const COMMANDS: &[CommandSpec] = commands! {
    "acl" -2 [] 0 0 0 Conn(acl_cmd) server "6.0.0" "A container for Access List Control commands." subs ACL_SUBS;
};

#[rustfmt::skip]
const ACL_SUBS: &[SubSpec] = subcommands! {
    "cat"     -2 [noscript loading stale]       "Lists the ACL categories, or the commands inside a category.";
    "deluser" -3 [admin noscript loading stale] "Deletes ACL users, and terminates their connections.";
    "dryrun"  -4 [admin noscript loading stale] "Simulates the execution of a command by a user, without executing the command.";
    "genpass" -2 [noscript loading stale]       "Generates a pseudorandom, secure password that can be used to identify ACL users.";
    "getuser" 3  [admin noscript loading stale] "Lists the ACL rules of a user.";
    "help"    2  [loading stale]                "Returns helpful text about the different subcommands.";
    "list"    2  [admin noscript loading stale] "Dumps the effective rules in ACL file format.";
    "load"    2  [admin noscript loading stale] "Reloads the rules from the configured ACL file.";
    "log"     -2 [admin noscript loading stale] "Lists recent security events generated due to ACL rules.";
    "save"    2  [admin noscript loading stale] "Saves the effective ACL rules in the configured ACL file.";
    "setuser" -3 [admin noscript loading stale] "Creates and modifies an ACL user and its rules.";
    "users"   2  [admin noscript loading stale] "Lists all ACL users.";
    "whoami"  2  [noscript loading stale]       "Returns the authenticated username of the current connection.";
};

const ACL_HELP: &[&str] = &[
    "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CAT [<category>]",
    "    List all commands that belong to <category>, or all command categories",
    "    when no category is specified.",
    "DELUSER <username> [<username> ...]",
    "    Delete a list of users.",
    "DRYRUN <username> <command> [<arg> ...]",
    "    Returns whether the user can execute the given command without executing the command.",
    "GETUSER <username>",
    "    Get the user's details.",
    "GENPASS [<bits>]",
    "    Generate a secure 256-bit user password. The optional `bits` argument can",
    "    be used to specify a different size.",
    "LIST",
    "    Show users details in config file format.",
    "LOAD",
    "    Reload users from the ACL file.",
    "LOG [<count> | RESET]",
    "    Show the ACL log entries.",
    "SAVE",
    "    Save the current config to the ACL file.",
    "SETUSER <username> <attribute> [<attribute> ...]",
    "    Create or modify a user with the specified attributes.",
    "USERS",
    "    List all the registered usernames.",
    "WHOAMI",
    "    Return the current connection username.",
    "HELP",
    "    Print this help.",
];

/// The commands as ACL rules see them.
pub fn catalog() -> &'static Catalog {
    static CATALOG: LazyLock<Catalog> = LazyLock::new(|| {
        let mut c = Catalog::default();
        for slot in 0..super::stat_count() {
            let Some((i, sub)) = super::stat_of(slot) else { continue };
            let spec = &TABLE[i];
            let name = spec.fullname(sub);
            let flags = sub.map_or(spec.flags, |s| spec.subcommands[s].flags);
            let cats = super::command::acl_categories(&name, flags, spec.group)
                .iter()
                .filter_map(|n| category_bit(n.trim_start_matches('@').as_bytes()))
                .fold(0, |a, b| a | b);
            c.by_name.insert(name.clone(), slot);
            c.names.push(name);
            c.cats.push(cats);
            c.parent.push(sub.map(|_| i));
            c.subs.push(Vec::new());
            c.no_auth.push(sub.is_none() && spec.no_auth());
        }
        for id in 0..c.names.len() {
            if let Some(p) = c.parent[id] {
                c.subs[p].push(id);
            }
        }
        c
    });
    &CATALOG
}

/// A key's position and the permissions it needs ([`acl::READ`], [`acl::WRITE`]).
pub type KeyNeed = (usize, u8);
/// A channel's position, and whether it is a pattern.
pub type ChannelArg = (usize, bool);

/// The keys of a command with the permissions each needs (Redis's
/// `ACLSelectorCheckKey`: read for an access, write for an insert, delete
/// or update) and its channels (true: a pattern).
pub fn request_parts(idx: usize, argv: &[Bytes]) -> (Vec<KeyNeed>, Vec<ChannelArg>) {
    let spec = &TABLE[idx];
    let need = |flags: &[&str]| {
        flags.iter().fold(0, |n, f| match *f {
            "access" => n | acl::READ,
            "insert" | "delete" | "update" => n | acl::WRITE,
            _ => n,
        })
    };
    let mut keys = Vec::new();
    if let Some(found) = super::command::proc_keys(spec.name, argv) {
        keys = found.into_iter().map(|(pos, flags)| (pos, need(flags))).collect();
    } else {
        let specs = match spec.subcommand_index(argv) {
            Some(s) => super::keyspecs::of(&spec.fullname(Some(s))),
            None => super::keyspecs::of(spec.name),
        };
        super::keyspecs::walk(specs, argv, |pos, k| {
            keys.push((pos, need(super::command::key_flags(spec.name, argv, k.flags))))
        });
    }
    let channels = match spec.name {
        "publish" | "spublish" => vec![(1, false)],
        "subscribe" | "ssubscribe" => (1..argv.len()).map(|i| (i, false)).collect(),
        "psubscribe" => (1..argv.len()).map(|i| (i, true)).collect(),
        _ => Vec::new(),
    };
    (keys, channels)
}

/// Runs `f` on the ACL request of `argv` (command `idx`).
fn with_request<R>(idx: usize, argv: &[Bytes], f: impl FnOnce(&Request<'_>) -> R) -> R {
    let (keys, channels) = request_parts(idx, argv);
    f(&Request {
        id: super::stat_slot(idx, argv),
        argv,
        keys: &keys,
        channels: &channels,
    })
}

/// Checks `argv` (command `idx`) against `user`.
pub fn check(user: &User, idx: usize, argv: &[Bytes]) -> Result<(), Denied> {
    with_request(idx, argv, |req| user.check(catalog(), req))
}

/// Whether `user` may run `argv` (command `idx`) on any key it reads
/// (SORT's BY and GET patterns need it).
pub fn full_key_access(user: &User, idx: usize, argv: &[Bytes]) -> bool {
    user.unrestricted() || with_request(idx, argv, |req| user.full_key_access(catalog(), req))
}

/// A refusal of a connection's command as the client reads it
/// (`-NOPERM ...`), logged: at the top level, while queueing in MULTI, or
/// when EXEC runs the queue (the rules changed since it was queued: Redis's
/// longer text, and the log shows the EXEC).
pub fn refuse(g: &Global, client: &Client, idx: usize, argv: &[Bytes], d: Denied) -> String {
    let spec = &TABLE[idx];
    let fullname = spec.fullname(spec.subcommand_index(argv));
    let in_exec = client.in_exec && !client.in_script;
    let (context, shown) = match (client.multi.is_some(), in_exec) {
        (_, true) => (acl::Context::Multi, "exec".to_string()),
        (true, _) => (acl::Context::Multi, fullname),
        _ => (acl::Context::Toplevel, fullname),
    };
    let text = refuse_as(g, &client.info, &client.user, idx, argv, d, context, Some(&shown));
    if !in_exec {
        return text;
    }
    format!(
        "NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: {}",
        text.trim_start_matches("NOPERM ")
    )
}

/// [`refuse`] for a connection's user and info (a script's command, whose
/// log entry shows the script's command: `shown` None).
#[allow(clippy::too_many_arguments)]
pub fn refuse_as(
    g: &Global,
    info: &ClientInfo,
    user: &User,
    idx: usize,
    argv: &[Bytes],
    d: Denied,
    context: acl::Context,
    shown: Option<&str>,
) -> String {
    let spec = &TABLE[idx];
    let fullname = spec.fullname(spec.subcommand_index(argv));
    let (reason, object, text) = match d {
        Denied::Command => (
            acl::Reason::Command,
            fullname.clone().into_bytes(),
            format!(
                "NOPERM User {} has no permissions to run the '{fullname}' command",
                String::from_utf8_lossy(&user.name)
            ),
        ),
        Denied::Key(p) => (acl::Reason::Key, argv[p].to_vec(), "NOPERM No permissions to access a key".into()),
        Denied::Channel(p) => (
            acl::Reason::Channel,
            argv[p].to_vec(),
            "NOPERM No permissions to access a channel".into(),
        ),
    };
    let now = crate::clock::wall_ms();
    let mut line = super::connection::client_line(info, now, 0);
    // The command being refused, where the connection's last one shows.
    if let (Some(name), Some(at)) = (shown, line.find(" cmd=")) {
        let end = line[at + 5..].find(' ').map_or(line.len(), |e| at + 5 + e);
        line.replace_range(at + 5..end, name);
    }
    g.acl.log(reason, context, &object, &user.name, line, now);
    text
}

fn user_reply(r: &mut Reply, u: &User) {
    r.map(6);
    r.bulk(b"flags");
    // A set in RESP3, as Redis's deferred set length makes it.
    let flags = u.flags();
    r.set(flags.len());
    for f in flags {
        r.bulk(f.as_bytes());
    }
    r.bulk(b"passwords");
    r.array(u.passwords.len());
    for p in &u.passwords {
        r.bulk(p.as_bytes());
    }
    let selector = |r: &mut Reply, s: &acl::user::Selector| {
        r.bulk(b"commands");
        r.bulk(s.commands_text().as_bytes());
        r.bulk(b"keys");
        r.bulk(s.keys_text().as_bytes());
        r.bulk(b"channels");
        r.bulk(s.channels_text().as_bytes());
    };
    selector(r, &u.selectors[0]);
    r.bulk(b"selectors");
    r.array(u.selectors.len() - 1);
    for s in &u.selectors[1..] {
        r.map(3);
        selector(r, s);
    }
}

fn log_reply(r: &mut Reply, e: &acl::Entry, now_ms: u64) {
    r.map(10);
    r.bulk(b"count");
    r.int(e.count as i64);
    r.bulk(b"reason");
    r.bulk(e.reason.name().as_bytes());
    r.bulk(b"context");
    r.bulk(e.context.name().as_bytes());
    r.bulk(b"object");
    r.bulk(&e.object);
    r.bulk(b"username");
    r.bulk(&e.username);
    r.bulk(b"age-seconds");
    r.double(now_ms.saturating_sub(e.updated_ms) as f64 / 1000.0);
    r.bulk(b"client-info");
    r.bulk(e.client_info.as_bytes());
    r.bulk(b"entry-id");
    r.int(e.id as i64);
    r.bulk(b"timestamp-created");
    r.int(e.created_ms as i64);
    r.bulk(b"timestamp-last-updated");
    r.int(e.updated_ms as i64);
}

/// `bits` random bits as hex (Redis's `getRandomHexChars`).
fn random_hex(chars: usize) -> String {
    let mut out = String::with_capacity(chars);
    let mut buf = [0u8; 64];
    while out.len() < chars {
        if getrandom_fill(&mut buf).is_err() {
            // Time and address as a last resort: never a fixed password.
            let seed = crate::clock::now_us() ^ (&buf as *const _ as u64);
            buf.iter_mut()
                .enumerate()
                .for_each(|(i, b)| *b = (seed.rotate_left(i as u32 * 7) >> 3) as u8);
        }
        for b in buf {
            if out.len() >= chars {
                break;
            }
            out.push(char::from_digit((b & 15) as u32, 16).unwrap_or('0'));
        }
    }
    out
}

fn getrandom_fill(buf: &mut [u8]) -> std::io::Result<()> {
    use std::io::Read;
    std::fs::File::open("/dev/urandom")?.read_exact(buf)
}

/// Ends the connections of user `name` subscribed to a channel or pattern
/// its rules no longer allow (Redis 7's `ACLKillPubsubClientsIfNeeded`);
/// the caller's own after its reply.
fn kill_revoked_subscribers(g: &Global, client: &mut Client, name: &[u8]) {
    let Some(u) = g.acl.get(name) else { return };
    // The user's subscribers, taken out of the registry's lock first: the
    // pub/sub registry has a lock of its own.
    let subscribers: Vec<std::sync::Arc<ClientInfo>> = match g.clients.lock() {
        Ok(clients) => clients
            .values()
            .filter(|c| c.subs.iter().any(|n| n.load(std::sync::atomic::Ordering::Relaxed) > 0))
            .filter(|c| ClientInfo::text(&c.user).as_bytes() == name)
            .cloned()
            .collect(),
        Err(_) => return,
    };
    for c in subscribers {
        let revoked = g
            .pubsub
            .subscriptions(c.id)
            .iter()
            .any(|(class, ch)| !u.may_keep(ch, *class == crate::pubsub::Class::Pattern));
        if revoked {
            if c.id == client.info.id {
                client.closing = true;
            } else {
                c.kill();
            }
        }
    }
}

/// Writes the ACL file whole: a temporary file beside it, synced, then
/// renamed over it (as Redis's ACL SAVE).
fn save_file(path: &str, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let tmp = format!("{path}.tmp-{}", std::process::id());
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(text.as_bytes())?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)
}

/// Ends the connections of users that were deleted; the caller's own
/// after its reply.
fn kill_clients_of(g: &Global, client: &mut Client, gone: &[Vec<u8>]) {
    let Ok(clients) = g.clients.lock() else { return };
    for c in clients.values() {
        let name = ClientInfo::text(&c.user);
        if gone.iter().any(|u| u[..] == *name.as_bytes()) {
            if c.id == client.info.id {
                client.closing = true;
            } else {
                c.kill();
            }
        }
    }
}

pub async fn acl_cmd(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let g = &c.shard.state().global;
    let client = c.client;
    let sub = String::from_utf8_lossy(&argv[1]).to_ascii_lowercase();
    let argc = argv.len();
    match sub.as_str() {
        "setuser" => {
            let name = &argv[2];
            if !acl::valid_name(name) {
                return Err(CmdError::new("ERR Usernames can't contain spaces or null characters"));
            }
            let rules: Vec<&[u8]> = argv[3..].iter().map(|a| &a[..]).collect();
            g.acl.set_user(name, &rules).map_err(CmdError::new)?;
            kill_revoked_subscribers(g, client, name);
            r.ok();
        }
        "deluser" => {
            if argv[2..].iter().any(|u| &u[..] == b"default") {
                return Err(CmdError::new("ERR The 'default' user cannot be removed"));
            }
            let names: Vec<&[u8]> = argv[2..].iter().map(|a| &a[..]).collect();
            let gone = g.acl.delete(&names);
            kill_clients_of(g, client, &gone);
            r.int(gone.len() as i64);
        }
        "getuser" => match g.acl.get(&argv[2]) {
            None => r.null(),
            Some(u) => user_reply(r, &u),
        },
        "list" | "users" => {
            let users = g.acl.all();
            r.array(users.len());
            for u in users {
                if sub == "users" {
                    r.bulk(&u.name);
                } else {
                    r.bulk(format!("user {} {}", String::from_utf8_lossy(&u.name), u.describe()).as_bytes());
                }
            }
        }
        "whoami" => r.bulk(&client.user.name),
        "load" | "save" if argc == 2 => {
            let path = g.config.get("aclfile");
            if path.is_empty() {
                return Err(CmdError::new("ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration."));
            }
            if sub == "load" {
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| CmdError::new(format!("ERR Error loading ACLs, opening file '{path}': {e}")))?;
                let gone = g.acl.load(&path, &text).map_err(|e| CmdError::new(format!("ERR {e}")))?;
                kill_clients_of(g, client, &gone);
            } else {
                save_file(&path, &g.acl.save_text()).map_err(|e| {
                    tracing::warn!(%path, error = %e, "ACL SAVE failed");
                    CmdError::new("ERR There was an error trying to save the ACLs. Please check the server logs for more information")
                })?;
            }
            r.ok();
        }
        "cat" if argc == 2 => {
            r.array(acl::CATEGORIES.len());
            for c in acl::CATEGORIES {
                r.bulk(c.as_bytes());
            }
        }
        "cat" if argc == 3 => {
            let Some(bit) = category_bit(&argv[2]) else {
                let name: String = String::from_utf8_lossy(&argv[2]).chars().take(128).collect();
                return Err(CmdError::new(format!("ERR Unknown category '{name}'")));
            };
            let cat = catalog();
            let names: Vec<&String> = (0..cat.len()).filter(|&i| cat.cats[i] & bit != 0).map(|i| &cat.names[i]).collect();
            r.array(names.len());
            for n in names {
                r.bulk(n.as_bytes());
            }
        }
        "genpass" if argc <= 3 => {
            let bits = match argv.get(2) {
                None => 256,
                Some(a) => parse_i64(a).ok_or_else(|| CmdError::new("ERR value is not an integer or out of range"))?,
            };
            if bits <= 0 || bits > 4096 {
                return Err(CmdError::new(
                    "ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096",
                ));
            }
            r.bulk(random_hex(((bits + 3) / 4) as usize).as_bytes());
        }
        "log" if argc <= 3 => {
            let mut count = 10i64;
            if let Some(a) = argv.get(2) {
                if is(a, "reset") {
                    g.acl.log_reset();
                    r.ok();
                    return Ok(());
                }
                count = parse_i64(a)
                    .ok_or_else(|| CmdError::new("ERR value is not an integer or out of range"))?
                    .max(0);
            }
            let entries = g.acl.log_entries(count as usize);
            let now = crate::clock::wall_ms();
            r.array(entries.len());
            for e in &entries {
                log_reply(r, e, now);
            }
        }
        "dryrun" => {
            let Some(u) = g.acl.get(&argv[2]) else {
                return Err(CmdError::new(format!("ERR User '{}' not found", String::from_utf8_lossy(&argv[2]))));
            };
            let cmd = &argv[3..];
            let Some((idx, spec)) = super::lookup(&cmd[0]) else {
                return Err(CmdError::new(format!(
                    "ERR Command '{}' not found",
                    String::from_utf8_lossy(&cmd[0])
                )));
            };
            let sub = spec.subcommand_index(cmd);
            let arity = sub.map_or(spec.arity, |s| spec.subcommands[s].arity);
            if !CommandSpec::arity_ok(arity, cmd.len()) {
                return Err(CmdError::new(format!(
                    "ERR wrong number of arguments for '{}' command",
                    spec.fullname(sub)
                )));
            }
            let name = String::from_utf8_lossy(&u.name).into_owned();
            match check(&u, idx, cmd) {
                Ok(()) => r.ok(),
                Err(Denied::Command) => {
                    r.bulk(format!("User {name} has no permissions to run the '{}' command", spec.fullname(sub)).as_bytes())
                }
                Err(Denied::Key(p)) => r.bulk(
                    format!(
                        "User {name} has no permissions to access the '{}' key",
                        String::from_utf8_lossy(&cmd[p])
                    )
                    .as_bytes(),
                ),
                Err(Denied::Channel(p)) => r.bulk(
                    format!(
                        "User {name} has no permissions to access the '{}' channel",
                        String::from_utf8_lossy(&cmd[p])
                    )
                    .as_bytes(),
                ),
            }
        }
        "help" => help_reply(r, ACL_HELP),
        _ => {
            return Err(CmdError::new(format!(
                "ERR unknown subcommand or wrong number of arguments for '{}'. Try ACL HELP.",
                String::from_utf8_lossy(&argv[1])
            )))
        }
    }
    Ok(())
}
