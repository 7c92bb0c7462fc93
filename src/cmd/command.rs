//! COMMAND and its subcommands, generated from the command table.

use bytes::Bytes;

use super::args::{is, text, Args};
use super::keys::help_reply;
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
    "help"    2  [loading stale] "Returns helpful text about the different subcommands.";
};

fn acl_categories(flags: &[&str], group: &str) -> Vec<String> {
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

fn write_sub(r: &mut Reply, parent: &CommandSpec, s: &SubSpec) {
    r.array(10);
    r.bulk(format!("{}|{}", parent.name, s.name).as_bytes());
    r.int(s.arity as i64);
    write_flags(r, s.flags);
    let has_key = parent.name == "object" && s.name != "help";
    r.int(if has_key { 2 } else { 0 });
    r.int(if has_key { 2 } else { 0 });
    r.int(if has_key { 1 } else { 0 });
    let cats = acl_categories(s.flags, parent.group);
    r.set(cats.len());
    for c in &cats {
        r.simple(c);
    }
    r.set(0);
    r.array(0);
    r.array(0);
}

fn write_info(r: &mut Reply, c: &CommandSpec) {
    r.array(10);
    r.bulk(c.name.as_bytes());
    r.int(c.arity as i64);
    write_flags(r, c.flags);
    r.int(c.first_key as i64);
    r.int(c.last_key as i64);
    r.int(c.step as i64);
    let cats = acl_categories(c.flags, c.group);
    r.set(cats.len());
    for cat in &cats {
        r.simple(cat);
    }
    r.set(0);
    r.array(0);
    r.array(c.subcommands.len());
    for s in c.subcommands {
        write_sub(r, c, s);
    }
}

fn write_docs(r: &mut Reply, c: &CommandSpec) {
    r.bulk(c.name.as_bytes());
    let n = if c.subcommands.is_empty() { 3 } else { 4 };
    r.map(n);
    r.bulk(b"summary");
    r.bulk(c.summary.as_bytes());
    r.bulk(b"since");
    r.bulk(c.since.as_bytes());
    r.bulk(b"group");
    r.bulk(c.group.as_bytes());
    if !c.subcommands.is_empty() {
        r.bulk(b"subcommands");
        r.map(c.subcommands.len());
        for s in c.subcommands {
            r.bulk(format!("{}|{}", c.name, s.name).as_bytes());
            r.map(3);
            r.bulk(b"summary");
            r.bulk(s.summary.as_bytes());
            r.bulk(b"since");
            r.bulk(c.since.as_bytes());
            r.bulk(b"group");
            r.bulk(c.group.as_bytes());
        }
    }
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
    "HELP",
    "    Print this help.",
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
                    match lookup(name) {
                        Some((_, c)) => write_info(r, c),
                        None => r.null(),
                    }
                }
            }
        }
        "docs" => {
            let found: Vec<&CommandSpec> = if names.is_empty() {
                TABLE.iter().collect()
            } else {
                names.iter().filter_map(|n| lookup(n).map(|(_, c)| c)).collect()
            };
            r.map(found.len());
            for c in found {
                write_docs(r, c);
            }
        }
        "list" => {
            let listed: Vec<&str> = match names {
                [] => TABLE.iter().map(|c| c.name).collect(),
                [filterby, by, v] if is(filterby, "filterby") => {
                    if is(by, "pattern") {
                        TABLE
                            .iter()
                            .filter(|c| glob::matches(v, c.name.as_bytes(), true))
                            .map(|c| c.name)
                            .collect()
                    } else if is(by, "aclcat") {
                        let want = format!("@{}", text(v).to_ascii_lowercase());
                        TABLE
                            .iter()
                            .filter(|c| acl_categories(c.flags, c.group).contains(&want))
                            .map(|c| c.name)
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
        "getkeys" => {
            let cmd = names;
            let Some((_, c)) = lookup(&cmd[0]) else {
                return Err(CmdError::new("ERR Invalid command specified"));
            };
            if !CommandSpec::arity_ok(c.arity, cmd.len()) {
                return Err(CmdError::new("ERR Invalid number of arguments specified for command"));
            }
            let pos = c.key_positions(cmd.len());
            if pos.is_empty() {
                return Err(CmdError::new("ERR The command has no key arguments"));
            }
            r.array(pos.len());
            for p in pos {
                r.bulk(&cmd[p]);
            }
        }
        _ => help_reply(r, COMMAND_HELP),
    }
    Ok(())
}
