//! An ACL user as Redis 7.2 keeps one: flags, password hashes, and
//! selectors (the root one, then those added in parentheses), each with
//! its allowed commands, key patterns and channel patterns. Rules are
//! applied as Redis's `ACLSetUser` applies them; the command rules are kept
//! as their ordered list (Redis's `command_rules`), which is what ACL LIST
//! and GETUSER print after `+@all` or `-@all`.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

use super::catalog::{category_bit, Catalog};
use crate::glob::matches as glob_match;

/// Key pattern permissions (`%R~`, `%W~`, `~` is both).
pub const READ: u8 = 1;
pub const WRITE: u8 = 2;

/// Why a rule was refused: Redis's texts (`ACLSetUserStringError`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleError {
    Syntax,
    Unknown,
    KeysAfterAll,
    ChannelsAfterAll,
    NoSuchPassword,
    BadHash,
    FirstArgOfSub,
}

impl RuleError {
    pub fn text(self) -> &'static str {
        match self {
            RuleError::Syntax => "Syntax error",
            RuleError::Unknown => "Unknown command or category name in ACL",
            RuleError::KeysAfterAll => {
                "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns"
            }
            RuleError::ChannelsAfterAll => {
                "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels"
            }
            RuleError::NoSuchPassword => "The password you are trying to remove from the user does not exist",
            RuleError::BadHash => "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters",
            RuleError::FirstArgOfSub => "Allowing first-arg of a subcommand is not supported",
        }
    }
}

/// A set of permissions: commands, keys, channels.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Selector {
    bits: Vec<u64>,
    /// Every command allowed (cleared by any command denied).
    all_commands: bool,
    /// `+@all` was the last of `+@all`/`-@all` (Redis's reserved bit for
    /// future commands): the rules print after `+@all`.
    future: bool,
    /// `+select|0`: first arguments allowed of an otherwise denied command.
    firstargs: BTreeMap<usize, Vec<String>>,
    /// The command rules in order (`+get`, `-@read`), lower case.
    rules: Vec<String>,
    all_keys: bool,
    keys: Vec<(Vec<u8>, u8)>,
    all_channels: bool,
    channels: Vec<Vec<u8>>,
}

/// What a check refused, Redis's `ACL_DENIED_*` (ordered as Redis ranks
/// them when picking the error to report), with the argument's position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Denied {
    Command,
    Key(usize),
    Channel(usize),
}

impl Denied {
    fn rank(self) -> (u8, usize) {
        match self {
            Denied::Command => (1, 0),
            Denied::Key(p) => (2, p),
            Denied::Channel(p) => (4, p),
        }
    }
}

/// A command to check: its id, its arguments, where its keys are (with
/// the permissions each needs) and its channels (true: a pattern, which
/// must equal an allowed pattern).
pub struct Request<'a> {
    pub id: usize,
    pub argv: &'a [bytes::Bytes],
    pub keys: &'a [(usize, u8)],
    pub channels: &'a [(usize, bool)],
}

fn has_spaces(s: &[u8]) -> bool {
    s.iter().any(|&c| c.is_ascii_whitespace() || c == 0)
}

impl Selector {
    fn new(cat: &Catalog) -> Selector {
        Selector {
            bits: vec![0; cat.len().div_ceil(64)],
            ..Default::default()
        }
    }

    fn bit(&self, id: usize) -> bool {
        self.bits.get(id / 64).is_some_and(|w| w & (1 << (id % 64)) != 0)
    }

    fn set_bit(&mut self, id: usize, on: bool) {
        if let Some(w) = self.bits.get_mut(id / 64) {
            if on {
                *w |= 1 << (id % 64);
            } else {
                *w &= !(1 << (id % 64));
                self.all_commands = false;
            }
        }
    }

    /// A command and its subcommands, on or off.
    fn change(&mut self, cat: &Catalog, id: usize, on: bool) {
        self.set_bit(id, on);
        self.firstargs.remove(&id);
        for &s in &cat.subs[id] {
            self.set_bit(s, on);
        }
    }

    /// Redis's `ACLUpdateCommandRules`: the rule replaces earlier rules of
    /// the same name (and of its subcommands), then goes last.
    fn update_rules(&mut self, rule: &str, allow: bool) {
        let rule = rule.to_ascii_lowercase();
        self.rules.retain(|r| {
            let body = &r[1..];
            !(body == rule || (body.len() > rule.len() && body.starts_with(&rule) && body.as_bytes()[rule.len()] == b'|'))
        });
        self.rules.push(format!("{}{rule}", if allow { '+' } else { '-' }));
    }

    /// Applies one selector rule.
    pub fn apply(&mut self, op: &[u8], cat: &Catalog) -> Result<(), RuleError> {
        let is = |w: &str| op.eq_ignore_ascii_case(w.as_bytes());
        if is("allkeys") || op == b"~*" {
            self.all_keys = true;
            self.keys.clear();
        } else if is("resetkeys") {
            self.all_keys = false;
            self.keys.clear();
        } else if is("allchannels") || op == b"&*" {
            self.all_channels = true;
            self.channels.clear();
        } else if is("resetchannels") {
            self.all_channels = false;
            self.channels.clear();
        } else if is("allcommands") || is("+@all") {
            self.bits.iter_mut().for_each(|w| *w = u64::MAX);
            self.all_commands = true;
            self.future = true;
            self.rules.clear();
            self.firstargs.clear();
        } else if is("nocommands") || is("-@all") {
            self.bits.iter_mut().for_each(|w| *w = 0);
            self.all_commands = false;
            self.future = false;
            self.rules.clear();
            self.firstargs.clear();
        } else if op.first() == Some(&b'~') || op.first() == Some(&b'%') {
            if self.all_keys {
                return Err(RuleError::KeysAfterAll);
            }
            let (mut flags, mut at) = (0u8, 1);
            if op[0] == b'%' {
                let mut ok = false;
                while at < op.len() {
                    match op[at].to_ascii_uppercase() {
                        b'R' if flags & READ == 0 => flags |= READ,
                        b'W' if flags & WRITE == 0 => flags |= WRITE,
                        b'~' => {
                            at += 1;
                            ok = true;
                            break;
                        }
                        _ => break,
                    }
                    at += 1;
                }
                if flags == 0 || !ok {
                    return Err(RuleError::Syntax);
                }
            } else {
                flags = READ | WRITE;
            }
            let pat = &op[at..];
            if has_spaces(pat) {
                return Err(RuleError::Syntax);
            }
            match self.keys.iter_mut().find(|(p, _)| p == pat) {
                Some(k) => k.1 |= flags,
                None => self.keys.push((pat.to_vec(), flags)),
            }
        } else if op.first() == Some(&b'&') {
            if self.all_channels {
                return Err(RuleError::ChannelsAfterAll);
            }
            let pat = &op[1..];
            if has_spaces(pat) {
                return Err(RuleError::Syntax);
            }
            if !self.channels.iter().any(|c| c == pat) {
                self.channels.push(pat.to_vec());
            }
        } else if op.len() > 1 && (op[0] == b'+' || op[0] == b'-') && op[1] == b'@' {
            let bit = category_bit(&op[2..]).ok_or(RuleError::Unknown)?;
            let allow = op[0] == b'+';
            for id in 0..cat.len() {
                if cat.cats[id] & bit != 0 {
                    self.change(cat, id, allow);
                }
            }
            self.update_rules(&String::from_utf8_lossy(&op[1..]), allow);
        } else if op.first() == Some(&b'+') {
            let name = &op[1..];
            match memchr::memrchr(b'|', name) {
                None => {
                    let id = cat.id(name).ok_or(RuleError::Unknown)?;
                    self.change(cat, id, true);
                    self.update_rules(&cat.names[id], true);
                }
                Some(at) => {
                    let id = cat.id(&name[..at]).ok_or(RuleError::Unknown)?;
                    if cat.parent[id].is_some() {
                        return Err(RuleError::FirstArgOfSub);
                    }
                    let sub = &name[at + 1..];
                    if sub.is_empty() {
                        return Err(RuleError::Syntax);
                    }
                    if !cat.subs[id].is_empty() {
                        let sid = cat.id(name).ok_or(RuleError::Unknown)?;
                        self.change(cat, sid, true);
                    } else {
                        let sub = String::from_utf8_lossy(sub).to_ascii_lowercase();
                        let list = self.firstargs.entry(id).or_default();
                        if !list.contains(&sub) {
                            list.push(sub);
                        }
                    }
                    self.update_rules(&String::from_utf8_lossy(name), true);
                }
            }
        } else if op.first() == Some(&b'-') {
            let id = cat.id(&op[1..]).ok_or(RuleError::Unknown)?;
            self.change(cat, id, false);
            self.update_rules(&cat.names[id], false);
        } else {
            return Err(RuleError::Syntax);
        }
        Ok(())
    }

    /// `+@all ...` or `-@all ...`: the command rules as ACL LIST prints them.
    pub fn commands_text(&self) -> String {
        let mut s = String::from(if self.future { "+@all" } else { "-@all" });
        for r in &self.rules {
            s.push(' ');
            s.push_str(r);
        }
        s
    }

    fn pattern_text(p: &[u8], flags: u8) -> String {
        let p = String::from_utf8_lossy(p);
        match flags {
            f if f == READ | WRITE => format!("~{p}"),
            READ => format!("%R~{p}"),
            _ => format!("%W~{p}"),
        }
    }

    /// The key patterns as GETUSER shows them (`~*` for all keys).
    pub fn keys_text(&self) -> String {
        if self.all_keys {
            return "~*".into();
        }
        self.keys
            .iter()
            .map(|(p, f)| Self::pattern_text(p, *f))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The channel patterns as GETUSER shows them (`&*` for all).
    pub fn channels_text(&self) -> String {
        if self.all_channels {
            return "&*".into();
        }
        self.channels
            .iter()
            .map(|c| format!("&{}", String::from_utf8_lossy(c)))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Redis's `ACLDescribeSelector`: keys, channels, commands.
    fn describe(&self) -> String {
        let mut s = String::new();
        if self.all_keys {
            s.push_str("~* ");
        } else {
            for (p, f) in &self.keys {
                s.push_str(&Self::pattern_text(p, *f));
                s.push(' ');
            }
        }
        if self.all_channels {
            s.push_str("&* ");
        } else {
            s.push_str("resetchannels ");
            for c in &self.channels {
                s.push('&');
                s.push_str(&String::from_utf8_lossy(c));
                s.push(' ');
            }
        }
        s.push_str(&self.commands_text());
        s
    }

    /// Whether everything is allowed here (no check needed).
    fn unrestricted(&self) -> bool {
        self.all_commands && self.all_keys && self.all_channels
    }

    /// Redis's `ACLSelectorCheckCmd`.
    fn check(&self, cat: &Catalog, req: &Request<'_>) -> Result<(), Denied> {
        if !self.all_commands && !cat.no_auth[req.id] && !self.bit(req.id) {
            let at = if cat.parent[req.id].is_some() { 2 } else { 1 };
            let first = req.argv.get(at).map(|a| String::from_utf8_lossy(a).to_ascii_lowercase());
            let ok = match (first, self.firstargs.get(&req.id)) {
                (Some(f), Some(list)) => list.contains(&f),
                _ => false,
            };
            if !ok {
                return Err(Denied::Command);
            }
        }
        if !self.all_keys {
            for &(pos, need) in req.keys {
                let key = &req.argv[pos];
                if !self.keys.iter().any(|(p, f)| f & need == need && glob_match(p, key, false)) {
                    return Err(Denied::Key(pos));
                }
            }
        }
        if !self.all_channels {
            for &(pos, pattern) in req.channels {
                let ch = &req.argv[pos];
                let ok = self
                    .channels
                    .iter()
                    .any(|p| if pattern { p[..] == ch[..] } else { glob_match(p, ch, false) });
                if !ok {
                    return Err(Denied::Channel(pos));
                }
            }
        }
        Ok(())
    }
}

/// A user.
#[derive(Debug, Clone, PartialEq)]
pub struct User {
    pub name: Vec<u8>,
    pub enabled: bool,
    pub nopass: bool,
    pub skip_sanitize: bool,
    /// SHA-256 hex digests, in the order added.
    pub passwords: Vec<String>,
    /// The root selector first.
    pub selectors: Vec<Selector>,
}

fn sha256_hex(p: &[u8]) -> String {
    Sha256::digest(p).iter().map(|b| format!("{b:02x}")).collect()
}

fn valid_hash(h: &[u8]) -> bool {
    h.len() == 64 && h.iter().all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
}

/// The hash a password rule names: of the password (`>`, `<`), or given
/// (`#`, `!`: 64 lowercase hex digits).
fn password_hash(op: &[u8]) -> Result<String, RuleError> {
    match op[0] {
        b'>' | b'<' => Ok(sha256_hex(&op[1..])),
        _ if valid_hash(&op[1..]) => Ok(String::from_utf8_lossy(&op[1..]).into_owned()),
        _ => Err(RuleError::BadHash),
    }
}

impl User {
    /// A new user as Redis makes one: off, no passwords, commands, keys or
    /// channels (`acl-pubsub-default resetchannels`).
    pub fn new(name: &[u8], cat: &Catalog) -> User {
        User {
            name: name.to_vec(),
            enabled: false,
            nopass: false,
            skip_sanitize: false,
            passwords: Vec::new(),
            selectors: vec![Selector::new(cat)],
        }
    }

    /// The default user: on, nopass, every key, channel and command.
    pub fn default_user(cat: &Catalog) -> User {
        let mut u = User::new(b"default", cat);
        for op in ["on", "nopass", "~*", "&*", "+@all"] {
            let _ = u.apply(op.as_bytes(), cat);
        }
        u
    }

    /// Applies one rule (Redis's `ACLSetUser`); a rule in parentheses adds
    /// a selector.
    pub fn apply(&mut self, op: &[u8], cat: &Catalog) -> Result<(), RuleError> {
        let is = |w: &str| op.eq_ignore_ascii_case(w.as_bytes());
        if op.is_empty() {
            return Ok(());
        }
        if is("on") {
            self.enabled = true;
        } else if is("off") {
            self.enabled = false;
        } else if is("skip-sanitize-payload") {
            self.skip_sanitize = true;
        } else if is("sanitize-payload") {
            self.skip_sanitize = false;
        } else if is("nopass") {
            self.nopass = true;
            self.passwords.clear();
        } else if is("resetpass") {
            self.nopass = false;
            self.passwords.clear();
        } else if op[0] == b'>' || op[0] == b'#' {
            let hash = password_hash(op)?;
            if !self.passwords.contains(&hash) {
                self.passwords.push(hash);
            }
            self.nopass = false;
        } else if op[0] == b'<' || op[0] == b'!' {
            let hash = password_hash(op)?;
            let at = self.passwords.iter().position(|p| *p == hash).ok_or(RuleError::NoSuchPassword)?;
            self.passwords.remove(at);
        } else if op[0] == b'(' && op.len() > 1 && op[op.len() - 1] == b')' {
            let mut s = Selector::new(cat);
            for part in op[1..op.len() - 1].split(|c| c.is_ascii_whitespace()).filter(|p| !p.is_empty()) {
                s.apply(part, cat)?;
            }
            self.selectors.push(s);
        } else if is("clearselectors") {
            self.selectors.truncate(1);
        } else if is("reset") {
            for r in [
                "resetpass",
                "resetkeys",
                "resetchannels",
                "off",
                "sanitize-payload",
                "clearselectors",
                "-@all",
            ] {
                self.apply(r.as_bytes(), cat)?;
            }
        } else {
            self.selectors[0].apply(op, cat)?;
        }
        Ok(())
    }

    /// Flags as GETUSER lists them.
    pub fn flags(&self) -> Vec<&'static str> {
        let mut f = vec![if self.enabled { "on" } else { "off" }];
        if self.nopass {
            f.push("nopass");
        }
        f.push(if self.skip_sanitize {
            "skip-sanitize-payload"
        } else {
            "sanitize-payload"
        });
        f
    }

    /// Redis's `ACLDescribeUser`: the user as ACL LIST prints it (after
    /// `user <name> `).
    pub fn describe(&self) -> String {
        let mut s = self.flags().join(" ");
        for p in &self.passwords {
            s.push_str(" #");
            s.push_str(p);
        }
        for (i, sel) in self.selectors.iter().enumerate() {
            if i == 0 {
                s.push(' ');
                s.push_str(&sel.describe());
            } else {
                s.push_str(&format!(" ({})", sel.describe()));
            }
        }
        s
    }

    /// Whether `password` opens this user (on, and nopass or a match).
    pub fn accepts(&self, password: &[u8]) -> bool {
        if !self.enabled {
            return false;
        }
        if self.nopass {
            return true;
        }
        let given = sha256_hex(password);
        // Every hash compared, no early exit.
        self.passwords.iter().fold(false, |ok, p| ok | (p.as_bytes() == given.as_bytes()))
    }

    /// Whether a subscription may stay when the user's rules change
    /// (Redis's `ACLKillPubsubClientsIfNeeded`): some selector allows every
    /// channel, or a pattern of any selector matches `name` (equals it, for
    /// a pattern subscription).
    pub fn may_keep(&self, name: &[u8], pattern: bool) -> bool {
        self.selectors.iter().any(|s| s.all_channels)
            || self
                .selectors
                .iter()
                .flat_map(|s| &s.channels)
                .any(|p| if pattern { p[..] == *name } else { glob_match(p, name, false) })
    }

    /// Redis's `ACLUserCheckCmdWithUnrestrictedKeyAccess`: a selector that
    /// allows the command also reads every key (SORT's BY and GET read
    /// keys no key spec names).
    pub fn full_key_access(&self, cat: &Catalog, req: &Request<'_>) -> bool {
        self.selectors
            .iter()
            .any(|s| s.check(cat, req).is_ok() && (s.all_keys || s.keys.iter().any(|(p, f)| p == b"*" && f & READ != 0)))
    }

    /// Whether every command, key and channel is allowed.
    pub fn unrestricted(&self) -> bool {
        self.selectors[0].unrestricted()
    }

    /// Redis's `ACLCheckAllUserCommandPerm`: allowed when one selector
    /// allows all of it; else the most relevant refusal.
    pub fn check(&self, cat: &Catalog, req: &Request<'_>) -> Result<(), Denied> {
        let mut worst = Denied::Command;
        for s in &self.selectors {
            match s.check(cat, req) {
                Ok(()) => return Ok(()),
                Err(d) if d.rank() > worst.rank() => worst = d,
                Err(_) => {}
            }
        }
        Err(worst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    /// get (read, string), set (write, string), client with client|id
    /// (connection) and client|kill (admin), select, auth (no auth).
    fn catalog() -> Catalog {
        let mut c = Catalog::default();
        let mut add = |name: &str, cats: &[&str], parent: Option<usize>, no_auth: bool| {
            let id = c.names.len();
            c.names.push(name.into());
            c.cats
                .push(cats.iter().map(|n| category_bit(n.as_bytes()).unwrap()).fold(0, |a, b| a | b));
            c.parent.push(parent);
            c.subs.push(Vec::new());
            c.no_auth.push(no_auth);
            c.by_name.insert(name.into(), id);
            if let Some(p) = parent {
                c.subs[p].push(id);
            }
            id
        };
        add("get", &["read", "string", "fast"], None, false);
        add("set", &["write", "string", "slow"], None, false);
        let client = add("client", &["slow"], None, false);
        add("client|id", &["slow", "connection"], Some(client), false);
        add("client|kill", &["admin", "slow", "dangerous", "connection"], Some(client), false);
        add("select", &["fast", "connection"], None, false);
        add("auth", &["fast", "connection"], None, true);
        add("publish", &["pubsub", "fast"], None, false);
        c
    }

    fn user(rules: &[&str], cat: &Catalog) -> User {
        let mut u = User::new(b"u", cat);
        for r in rules {
            u.apply(r.as_bytes(), cat).unwrap();
        }
        u
    }

    fn args(a: &[&str]) -> Vec<Bytes> {
        a.iter().map(|s| Bytes::copy_from_slice(s.as_bytes())).collect()
    }

    #[test]
    fn rules_print_as_redis_prints_them() {
        let cat = catalog();
        let u = user(
            &[
                "on",
                ">pw",
                "~foo:*",
                "%R~bar",
                "&ch",
                "+get",
                "+@string",
                "-set",
                "+client|id",
                "+select|0",
                "(+set ~x)",
            ],
            &cat,
        );
        assert_eq!(
            u.describe(),
            "on sanitize-payload #30c952fab122c3f9759f02a6d95c3758b246b4fee239957b2d4fee46e26170c4 ~foo:* %R~bar resetchannels &ch -@all +get +@string -set +client|id +select|0 (~x resetchannels -@all +set)"
        );
        // A later rule of the same name replaces the earlier one.
        let u = user(&["+get", "+set", "-get"], &cat);
        assert_eq!(u.selectors[0].commands_text(), "-@all +set -get");
        let u = user(&["+client|id", "-client"], &cat);
        assert_eq!(u.selectors[0].commands_text(), "-@all -client");
        assert_eq!(User::default_user(&cat).describe(), "on nopass sanitize-payload ~* &* +@all");
        // A command denied after +@all: still printed after +@all.
        let u = user(&["+@all", "-set"], &cat);
        assert_eq!(u.selectors[0].commands_text(), "+@all -set");
        assert!(!u.selectors[0].unrestricted());
    }

    #[test]
    fn refusals_name_the_rule_error() {
        let cat = catalog();
        let mut u = User::new(b"u", &cat);
        assert_eq!(u.apply(b"%X~a", &cat), Err(RuleError::Syntax));
        assert_eq!(u.apply(b"%R", &cat), Err(RuleError::Syntax));
        assert_eq!(u.apply(b"+client|id|x", &cat), Err(RuleError::FirstArgOfSub));
        assert_eq!(u.apply(b"+nosuch", &cat), Err(RuleError::Unknown));
        assert_eq!(u.apply(b"+@nosuch", &cat), Err(RuleError::Unknown));
        assert_eq!(u.apply(b"#abc", &cat), Err(RuleError::BadHash));
        assert_eq!(u.apply(b"<nope", &cat), Err(RuleError::NoSuchPassword));
        assert_eq!(u.apply(b"heeyyyy", &cat), Err(RuleError::Syntax));
        u.apply(b"allkeys", &cat).unwrap();
        assert_eq!(u.apply(b"~a", &cat), Err(RuleError::KeysAfterAll));
    }

    #[test]
    fn checks_follow_commands_keys_and_channels() {
        let cat = catalog();
        let u = user(
            &[
                "on",
                "~foo:*",
                "%R~ro:*",
                "&news.*",
                "+@string",
                "+client|id",
                "+select|0",
                "+publish",
            ],
            &cat,
        );
        let get = |k: &str| args(&["get", k]);
        let ok = |id, a: &[Bytes], keys: &[(usize, u8)], ch: &[(usize, bool)]| {
            u.check(
                &cat,
                &Request {
                    id,
                    argv: a,
                    keys,
                    channels: ch,
                },
            )
        };
        assert_eq!(ok(0, &get("foo:1"), &[(1, READ)], &[]), Ok(()));
        assert_eq!(ok(0, &get("ro:1"), &[(1, READ)], &[]), Ok(()));
        assert_eq!(ok(1, &args(&["set", "ro:1", "v"]), &[(1, WRITE)], &[]), Err(Denied::Key(1)));
        assert_eq!(ok(4, &args(&["client", "kill", "x"]), &[], &[]), Err(Denied::Command));
        assert_eq!(ok(3, &args(&["client", "id"]), &[], &[]), Ok(()));
        assert_eq!(ok(5, &args(&["select", "0"]), &[], &[]), Ok(()));
        assert_eq!(ok(5, &args(&["select", "1"]), &[], &[]), Err(Denied::Command));
        assert_eq!(ok(6, &args(&["auth", "x"]), &[], &[]), Ok(()), "no-auth commands always run");
        assert_eq!(ok(7, &args(&["publish", "news.a", "m"]), &[], &[(1, false)]), Ok(()));
        assert_eq!(
            ok(7, &args(&["publish", "other", "m"]), &[], &[(1, false)]),
            Err(Denied::Channel(1))
        );
        // A pattern subscription must name an allowed pattern exactly.
        assert_eq!(ok(7, &args(&["x", "news.*"]), &[], &[(1, true)]), Ok(()));
        assert_eq!(ok(7, &args(&["x", "news.a*"]), &[], &[(1, true)]), Err(Denied::Channel(1)));
        // A selector allows what the root does not.
        let s = user(&["on", "+get", "~a", "(+set ~b)"], &cat);
        let req = |id, a: &[Bytes]| {
            s.check(
                &cat,
                &Request {
                    id,
                    argv: a,
                    keys: &[(1, READ | WRITE)],
                    channels: &[],
                },
            )
        };
        assert_eq!(req(1, &args(&["set", "b", "1"])), Ok(()));
        assert_eq!(req(1, &args(&["set", "a", "1"])), Err(Denied::Key(1)));
        assert_eq!(req(0, &args(&["get", "b"])), Err(Denied::Key(1)));
    }

    #[test]
    fn passwords() {
        let cat = catalog();
        let mut u = user(&["on", ">one", ">two"], &cat);
        assert!(u.accepts(b"one") && u.accepts(b"two") && !u.accepts(b"three"));
        u.apply(b"<one", &cat).unwrap();
        assert!(!u.accepts(b"one"));
        u.apply(b"off", &cat).unwrap();
        assert!(!u.accepts(b"two"), "a disabled user takes no password");
        u.apply(b"on", &cat).unwrap();
        u.apply(b"nopass", &cat).unwrap();
        assert!(u.accepts(b"anything") && u.passwords.is_empty());
    }
}
