//! COMMAND and its subcommands, generated from the command table.

use bytes::Bytes;

use super::args::{is, text, Args};
use super::keys::help_reply;
use super::keyspecs::{self, Begin, Find, KeySpec};
use super::{lookup, subcommands, CommandSpec, Conn, SubSpec, TABLE};
use crate::error::{CmdError, CmdResult, SYNTAX};
use crate::glob;
use crate::resp::Reply;

/// COMMAND's subcommands.
#[rustfmt::skip]
pub(super) const COMMAND_SUBS: &[SubSpec] = subcommands! {
    "count"   2  [loading stale] "Returns a count of commands.";
    "info"    -2 [loading stale] "Returns information about one, multiple or all commands.";
    "docs"    -2 [loading stale] "Returns documentary information about one, multiple or all commands.";
    "list"    -2 [loading stale] "Returns a list of command names.";
    "getkeys" -3 [loading stale] "Extracts the key names from an arbitrary command.";
    "getkeysandflags" -3 [loading stale] "Extracts the key names and access flags for an arbitrary command.";
    "help"    2  [loading stale] "Returns helpful text about the different subcommands.";
};

/// The ACL categories of command or subcommand `name`: Redis's
/// (`aclcats`), or for one Redis 7.0 lacks, derived from its flags and group.
pub(super) fn acl_categories(name: &str, flags: &[&str], group: &str) -> Vec<String> {
    if let Some(cats) = super::aclcats::of(name) {
        return cats.iter().map(|c| c.to_string()).collect();
    }
    let mut cats = Vec::new();
    for (flag, cat) in [("write", "@write"), ("readonly", "@read"), ("fast", "@fast"), ("admin", "@admin")] {
        if flags.contains(&flag) {
            cats.push(cat.to_string());
        }
    }
    if !flags.contains(&"fast") {
        cats.push("@slow".into());
    }
    match group {
        "string" => cats.push("@string".into()),
        "generic" => cats.push("@keyspace".into()),
        "connection" => cats.push("@connection".into()),
        "transactions" => cats.push("@transaction".into()),
        "hash" => cats.push("@hash".into()),
        "list" => cats.push("@list".into()),
        "set" => cats.push("@set".into()),
        "pubsub" => cats.push("@pubsub".into()),
        _ => {}
    }
    cats
}

fn write_flags(r: &mut Reply, flags: &[&str]) {
    r.set(flags.len());
    for f in flags {
        r.simple(f);
    }
}

/// Redis's legacy (first, last, step) of a subcommand: from its one plain
/// range key spec, else 0 0 0.
fn legacy_range(specs: &[KeySpec]) -> (i64, i64, i64) {
    match specs {
        [KeySpec {
            begin: Begin::Index(i),
            find: Find::Range(last, step, _),
            ..
        }] if *last >= 0 => (*i as i64, (*i + *last) as i64, *step as i64),
        _ => (0, 0, 0),
    }
}

/// SORT's keys as Redis's `sortGetKeys` finds them: the key sorted, and
/// the last STORE's key (LIMIT's, GET's and BY's arguments skipped).
/// The keys of the commands whose key specs are incomplete, as Redis's
/// `getkeys_proc`s find them (COMMAND GETKEYS and ACLs use these): SORT's,
/// and MIGRATE's (the key, or with KEYS and an empty key the keys after
/// it, AUTH's and AUTH2's arguments skipped). None for the others.
pub(super) fn proc_keys(name: &str, cmd: &[Bytes]) -> Option<Vec<(usize, &'static [&'static str])>> {
    match name {
        "sort" | "sort_ro" => Some(sort_keys(cmd)),
        "migrate" => {
            const FLAGS: &[&str] = &["RW", "access", "delete"];
            let (mut first, mut num) = (3, 1);
            let mut i = 6;
            while i < cmd.len() {
                if is(&cmd[i], "keys") {
                    if !cmd[3].is_empty() {
                        return Some(Vec::new());
                    }
                    first = i + 1;
                    num = cmd.len() - first;
                    break;
                }
                if is(&cmd[i], "auth") {
                    i += 1;
                } else if is(&cmd[i], "auth2") {
                    i += 2;
                }
                i += 1;
            }
            Some((first..first + num).filter(|&p| p < cmd.len()).map(|p| (p, FLAGS)).collect())
        }
        _ => None,
    }
}

fn sort_keys(cmd: &[Bytes]) -> Vec<(usize, &'static [&'static str])> {
    let mut out: Vec<(usize, &'static [&'static str])> = vec![(1, &["RO", "access"])];
    let mut store = None;
    let mut i = 2;
    while i < cmd.len() {
        let a = &cmd[i];
        if is(a, "limit") {
            i += 2;
        } else if is(a, "get") || is(a, "by") {
            i += 1;
        } else if is(a, "store") && i + 1 < cmd.len() {
            store = Some(i + 1);
        }
        i += 1;
    }
    if let Some(at) = store {
        out.push((at, &["OW", "update"]));
    }
    out
}

/// Redis's `addReplyCommandKeySpecs`.
fn write_key_specs(r: &mut Reply, specs: &[KeySpec]) {
    r.array(specs.len());
    for k in specs {
        r.map(if k.notes.is_empty() { 3 } else { 4 });
        if !k.notes.is_empty() {
            r.bulk(b"notes");
            r.bulk(k.notes.as_bytes());
        }
        r.bulk(b"flags");
        write_flags(r, k.flags);
        r.bulk(b"begin_search");
        r.map(2);
        r.bulk(b"type");
        match k.begin {
            Begin::Index(i) => {
                r.bulk(b"index");
                r.bulk(b"spec");
                r.map(1);
                r.bulk(b"index");
                r.int(i as i64);
            }
            Begin::Unknown => {
                r.bulk(b"unknown");
                r.bulk(b"spec");
                r.map(0);
            }
            Begin::Keyword(word, from) => {
                r.bulk(b"keyword");
                r.bulk(b"spec");
                r.map(2);
                r.bulk(b"keyword");
                r.bulk(word.as_bytes());
                r.bulk(b"startfrom");
                r.int(from as i64);
            }
        }
        r.bulk(b"find_keys");
        r.map(2);
        r.bulk(b"type");
        let (kind, names, values) = match k.find {
            Find::Range(last, step, limit) => ("range", ["lastkey", "keystep", "limit"], [last, step, limit]),
            Find::Keynum(idx, first, step) => ("keynum", ["keynumidx", "firstkey", "keystep"], [idx, first, step]),
            Find::Unknown => {
                r.bulk(b"unknown");
                r.bulk(b"spec");
                r.map(0);
                continue;
            }
        };
        r.bulk(kind.as_bytes());
        r.bulk(b"spec");
        r.map(3);
        for (n, v) in names.iter().zip(values) {
            r.bulk(n.as_bytes());
            r.int(v as i64);
        }
    }
}

fn write_sub(r: &mut Reply, parent: &CommandSpec, s: &SubSpec) {
    let fullname = format!("{}|{}", parent.name, s.name);
    r.array(10);
    r.bulk(fullname.as_bytes());
    r.int(s.arity as i64);
    write_flags(r, s.flags);
    let (first, last, step) = legacy_range(keyspecs::of(&fullname));
    r.int(first);
    r.int(last);
    r.int(step);
    let cats = acl_categories(&fullname, s.flags, parent.group);
    r.set(cats.len());
    for c in &cats {
        r.simple(c);
    }
    r.set(0);
    write_key_specs(r, keyspecs::of(&fullname));
    r.array(0);
}

fn write_info(r: &mut Reply, c: &CommandSpec) {
    r.array(10);
    r.bulk(c.name.as_bytes());
    r.int(c.arity as i64);
    write_flags(r, c.flags);
    // A container's keys are its subcommands' (OBJECT routes by them).
    if c.subcommands.is_empty() {
        r.int(c.first_key as i64);
        r.int(c.last_key as i64);
        r.int(c.step as i64);
    } else {
        r.int(0);
        r.int(0);
        r.int(0);
    }
    let cats = acl_categories(c.name, c.flags, c.group);
    r.set(cats.len());
    for cat in &cats {
        r.simple(cat);
    }
    r.set(0);
    write_key_specs(r, keyspecs::of(c.name));
    r.array(c.subcommands.len());
    for s in c.subcommands {
        write_sub(r, c, s);
    }
}

fn write_docs(r: &mut Reply, c: &CommandSpec) {
    r.bulk(c.name.as_bytes());
    let n = if c.subcommands.is_empty() { 3 } else { 4 };
    r.map(n);
    write_doc_fields(r, c.summary, c.since, c.group);
    if !c.subcommands.is_empty() {
        r.bulk(b"subcommands");
        r.map(c.subcommands.len());
        for s in c.subcommands {
            write_sub_docs(r, c, s);
        }
    }
}

/// A subcommand's docs entry: its fullname and summary, since, group.
fn write_sub_docs(r: &mut Reply, c: &CommandSpec, s: &SubSpec) {
    r.bulk(format!("{}|{}", c.name, s.name).as_bytes());
    r.map(3);
    write_doc_fields(r, s.summary, c.since, c.group);
}

/// The summary, since and group pairs of a docs entry.
fn write_doc_fields(r: &mut Reply, summary: &str, since: &str, group: &str) {
    for (k, v) in [("summary", summary), ("since", since), ("group", group)] {
        r.bulk(k.as_bytes());
        r.bulk(v.as_bytes());
    }
}

/// A command by name, or a subcommand by its fullname (`client|list`), as
/// COMMAND INFO and DOCS take them.
fn find(name: &[u8]) -> Option<(&'static CommandSpec, Option<&'static SubSpec>)> {
    let (i, sub) = super::lookup_fullname(name)?;
    let c = &TABLE[i];
    Some((c, sub.map(|s| &c.subcommands[s])))
}

/// The command (or subcommand) `cmd` names, as Redis's `lookupCommand`:
/// its fullname and its declared arity.
fn named(cmd: &[Bytes]) -> Option<(String, i32)> {
    let (_, c) = lookup(&cmd[0])?;
    if c.subcommands.is_empty() {
        return Some((c.name.to_string(), c.arity));
    }
    let i = c.subcommand_index(cmd)?;
    Some((c.fullname(Some(i)), c.subcommands[i].arity))
}

/// COMMAND GETKEYS/GETKEYSANDFLAGS: the positions of `cmd`'s keys with
/// their flags, found with its key specs as Redis's
/// `getKeysUsingKeySpecs`; SET's flags depend on its GET option, as
/// Redis's `setGetKeys` says.
/// The flags of a key of `cmd` (command `name`): its spec's, or for the
/// two commands whose flags depend on their arguments (`variable_flags`),
/// what Redis's `setGetKeys` and `bitfieldGetKeys` say.
pub(super) fn key_flags(name: &str, cmd: &[Bytes], spec: &'static [&'static str]) -> &'static [&'static str] {
    match name {
        "set" if cmd.iter().skip(3).any(|a| is(a, "get")) => &["RW", "access", "update"],
        "set" => &["OW", "update"],
        "bitfield" if cmd.iter().skip(2).any(|a| is(a, "set") || is(a, "incrby")) => &["RW", "access", "update"],
        "bitfield" => &["RO", "access"],
        _ => spec,
    }
}

fn keys_of(cmd: &[Bytes]) -> CmdResult<Vec<(usize, &'static [&'static str])>> {
    let Some((name, arity)) = named(cmd) else {
        return Err(CmdError::new("ERR Invalid command specified"));
    };
    let specs = keyspecs::of(&name);
    if specs.is_empty() {
        return Err(CmdError::new("ERR The command has no key arguments"));
    }
    if !CommandSpec::arity_ok(arity, cmd.len()) {
        return Err(CmdError::new("ERR Invalid number of arguments specified for command"));
    }
    let invalid = || CmdError::new("ERR Invalid arguments specified for command");
    let mut out = Vec::new();
    if let Some(keys) = proc_keys(&name, cmd) {
        return if keys.is_empty() { Err(invalid()) } else { Ok(keys) };
    }
    let complete = keyspecs::walk(specs, cmd, |i, k| out.push((i, key_flags(&name, cmd, k.flags))));
    if !complete {
        return Err(invalid());
    }
    if out.is_empty() {
        return Err(invalid());
    }
    Ok(out)
}

const COMMAND_HELP: &[&str] = &[
    "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "(no subcommand)",
    "    Return details about all Redis commands.",
    "COUNT",
    "    Return the total number of commands in this Redis server.",
    "LIST",
    "    Return a list of all commands in this Redis server.",
    "INFO [<command-name> ...]",
    "    Return details about multiple Redis commands.",
    "    If no command names are given, documentation details for all",
    "    commands are returned.",
    "DOCS [<command-name> ...]",
    "    Return documentation details about multiple Redis commands.",
    "    If no command names are given, documentation details for all",
    "    commands are returned.",
    "GETKEYS <full-command>",
    "    Return the keys from a full Redis command.",
    "GETKEYSANDFLAGS <full-command>",
    "    Return the keys and the access flags from a full Redis command.",
    "HELP",
    "    Prints this help.",
];

pub async fn command(_: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    if argv.len() == 1 {
        r.array(TABLE.len());
        for c in TABLE.iter() {
            write_info(r, c);
        }
        return Ok(());
    }
    let mut args = Args::new(argv);
    let sub = text(args.bytes()?).to_ascii_lowercase();
    let names = Args::at(argv, 2).rest();
    match sub.as_str() {
        "count" => r.int(TABLE.len() as i64),
        "info" => {
            if names.is_empty() {
                r.array(TABLE.len());
                for c in TABLE.iter() {
                    write_info(r, c);
                }
            } else {
                r.array(names.len());
                for name in names {
                    match find(name) {
                        Some((c, None)) => write_info(r, c),
                        Some((c, Some(sub))) => write_sub(r, c, sub),
                        None => r.null(),
                    }
                }
            }
        }
        "docs" => {
            // Unknown names are left out; a subcommand goes by its fullname.
            let found: Vec<(&CommandSpec, Option<&SubSpec>)> = if names.is_empty() {
                TABLE.iter().map(|c| (c, None)).collect()
            } else {
                names.iter().filter_map(|n| find(n)).collect()
            };
            r.map(found.len());
            for (c, sub) in found {
                match sub {
                    None => write_docs(r, c),
                    Some(s) => write_sub_docs(r, c, s),
                }
            }
        }
        "list" => {
            // Every command and every subcommand by its fullname, as Redis lists them.
            let all = TABLE.iter().flat_map(|c| {
                std::iter::once((c.name.to_string(), c.flags, c.group)).chain(
                    c.subcommands
                        .iter()
                        .map(move |s| (format!("{}|{}", c.name, s.name), s.flags, c.group)),
                )
            });
            let listed: Vec<String> = match names {
                [] => all.map(|(n, _, _)| n).collect(),
                [filterby, by, v] if is(filterby, "filterby") => {
                    if is(by, "pattern") {
                        all.filter(|(n, _, _)| glob::matches(v, n.as_bytes(), true))
                            .map(|(n, _, _)| n)
                            .collect()
                    } else if is(by, "aclcat") {
                        let want = format!("@{}", text(v).to_ascii_lowercase());
                        all.filter(|(n, f, g)| acl_categories(n, f, g).contains(&want))
                            .map(|(n, _, _)| n)
                            .collect()
                    } else if is(by, "module") {
                        Vec::new()
                    } else {
                        return Err(SYNTAX);
                    }
                }
                _ => return Err(SYNTAX),
            };
            r.array(listed.len());
            for n in listed {
                r.bulk(n.as_bytes());
            }
        }
        "getkeys" | "getkeysandflags" => {
            let keys = keys_of(names)?;
            r.array(keys.len());
            for (pos, flags) in keys {
                if sub == "getkeys" {
                    r.bulk(&names[pos]);
                } else {
                    r.array(2);
                    r.bulk(&names[pos]);
                    write_flags(r, flags);
                }
            }
        }
        _ => help_reply(r, COMMAND_HELP),
    }
    Ok(())
}
