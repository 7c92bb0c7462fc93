//! ACL users (Redis 7.2's model, `user`) and where they live: the
//! registry every connection checks its user in, the ACL log. A client
//! holds its user (`client::Client::user`) and takes it again from here
//! when the registry's generation moved (ACL SETUSER changes a user for
//! every connection authenticated as it, as in Redis).

pub mod catalog;
pub mod user;

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

pub use catalog::{category_bit, Catalog, CATEGORIES};
pub use user::{Denied, Request, RuleError, User, READ, WRITE};

/// Why the log has an entry (Redis's `ACL_DENIED_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    Command,
    Key,
    Channel,
    Auth,
}

impl Reason {
    pub fn name(self) -> &'static str {
        match self {
            Reason::Command => "command",
            Reason::Key => "key",
            Reason::Channel => "channel",
            Reason::Auth => "auth",
        }
    }
}

/// Where the refused command ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    Toplevel,
    Multi,
    Lua,
}

impl Context {
    pub fn name(self) -> &'static str {
        match self {
            Context::Toplevel => "toplevel",
            Context::Multi => "multi",
            Context::Lua => "lua",
        }
    }
}

/// An ACL LOG entry.
#[derive(Debug, Clone)]
pub struct Entry {
    pub count: u64,
    pub reason: Reason,
    pub context: Context,
    pub object: Vec<u8>,
    pub username: Vec<u8>,
    /// The last time (Unix ms) and the first.
    pub updated_ms: u64,
    pub created_ms: u64,
    pub client_info: String,
    pub id: u64,
}

/// Entries this close in time with the same reason, context, object and
/// user are one entry, counted (Redis's `ACL_LOG_GROUPING_MAX_TIME_DELTA`).
const GROUPING_MS: u64 = 60_000;

#[derive(Default)]
struct Log {
    entries: VecDeque<Entry>,
    next_id: u64,
}

/// The users, the log, and a generation that moves with every change.
pub struct Registry {
    pub catalog: &'static Catalog,
    users: RwLock<BTreeMap<Vec<u8>, Arc<User>>>,
    generation: AtomicU64,
    log: Mutex<Log>,
    /// `acllog-max-len`.
    pub log_max: AtomicU64,
    /// The default user is on and takes no password: a new connection
    /// starts authenticated ([`Registry::default_open`]).
    open: AtomicBool,
    /// Refusals by reason (INFO's `acl_access_denied_*`), counted whether
    /// or not the log keeps them.
    denied: [AtomicU64; 4],
}

/// Usernames may not hold spaces or NUL (Redis's `ACLStringHasSpaces`).
pub fn valid_name(name: &[u8]) -> bool {
    !name.iter().any(|&c| c.is_ascii_whitespace() || c == 0)
}

impl Registry {
    pub fn new(catalog: &'static Catalog) -> Registry {
        let mut users = BTreeMap::new();
        users.insert(b"default".to_vec(), Arc::new(User::default_user(catalog)));
        Registry {
            catalog,
            users: RwLock::new(users),
            generation: AtomicU64::new(1),
            log: Mutex::new(Log::default()),
            log_max: AtomicU64::new(128),
            open: AtomicBool::new(true),
            denied: Default::default(),
        }
    }

    /// After a change: the generation moves, the default user's state is
    /// noted.
    fn changed(&self) {
        let open = self.get(b"default").is_some_and(|u| u.enabled && u.nopass);
        self.open.store(open, Ordering::Release);
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// Moves with every change of any user.
    #[inline]
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    pub fn get(&self, name: &[u8]) -> Option<Arc<User>> {
        self.users.read().ok()?.get(name).cloned()
    }

    pub fn default_user(&self) -> Arc<User> {
        match self.get(b"default") {
            Some(u) => u,
            None => Arc::new(User::default_user(self.catalog)),
        }
    }

    /// Every user, by name.
    pub fn all(&self) -> Vec<Arc<User>> {
        self.users.read().map(|u| u.values().cloned().collect()).unwrap_or_default()
    }

    /// ACL SETUSER: the rules applied to a copy of the user (a new one if
    /// absent), which replaces it only if every rule applied. Rules in
    /// parentheses may span arguments (`"(+get" "~k)"`).
    pub fn set_user(&self, name: &[u8], rules: &[&[u8]]) -> Result<(), String> {
        let merged = merge_selectors(rules)?;
        let mut u = match self.get(name) {
            Some(u) => (*u).clone(),
            None => User::new(name, self.catalog),
        };
        for op in &merged {
            u.apply(op, self.catalog)
                .map_err(|e| format!("ERR Error in ACL SETUSER modifier '{}': {}", String::from_utf8_lossy(op), e.text()))?;
        }
        if let Ok(mut users) = self.users.write() {
            users.insert(name.to_vec(), Arc::new(u));
        }
        self.changed();
        Ok(())
    }

    /// ACL DELUSER: the names of the users removed.
    pub fn delete(&self, names: &[&[u8]]) -> Vec<Vec<u8>> {
        let mut gone = Vec::new();
        if let Ok(mut users) = self.users.write() {
            for n in names {
                if users.remove(*n).is_some() {
                    gone.push(n.to_vec());
                }
            }
        }
        self.changed();
        gone
    }

    /// ACL LOAD (and the start): the users of an ACL file's `text`,
    /// replacing every user at once (a default user the file leaves out
    /// comes back as at the start); nothing changes when a line is wrong,
    /// and the error names each (Redis's texts; `path` names the file).
    /// The users that are gone, whose connections must end.
    pub fn load(&self, path: &str, text: &str) -> Result<Vec<Vec<u8>>, String> {
        let mut users: BTreeMap<Vec<u8>, Arc<User>> = BTreeMap::new();
        let mut errors = String::new();
        for (i, line) in text.split('\n').enumerate() {
            let n = i + 1;
            let line = line.trim_matches([' ', '\t', '\r', '\n']);
            if line.is_empty() {
                continue;
            }
            let words: Vec<&[u8]> = line
                .split(' ')
                .map(|w| w.trim_matches(['\t', '\r', '\n']))
                .filter(|w| !w.is_empty())
                .map(str::as_bytes)
                .collect();
            if words.len() < 2 || words[0] != b"user" {
                errors.push_str(&format!("{path}:{n} should start with user keyword followed by the username. "));
                continue;
            }
            let name = words[1];
            if !valid_name(name) {
                errors.push_str(&format!(
                    "'{path}:{n}: username '{}' contains invalid characters. ",
                    String::from_utf8_lossy(name)
                ));
                continue;
            }
            if users.contains_key(name) {
                errors.push_str(&format!(
                    "WARNING: Duplicate user '{}' found on line {n}. ",
                    String::from_utf8_lossy(name)
                ));
                continue;
            }
            let Ok(rules) = merge_selectors(&words[2..]) else {
                errors.push_str(&format!("{path}:{n}: Unmatched parenthesis in selector definition."));
                continue;
            };
            let mut u = User::new(name, self.catalog);
            for op in &rules {
                if let Err(e) = u.apply(op, self.catalog) {
                    errors.push_str(&format!(
                        "{path}:{n}: Error in applying operation '{}': {}. ",
                        String::from_utf8_lossy(op),
                        e.text()
                    ));
                    break;
                }
            }
            users.insert(name.to_vec(), Arc::new(u));
        }
        if !errors.is_empty() {
            errors.push_str("WARNING: ACL errors detected, no change to the previously active ACL rules was performed");
            return Err(errors);
        }
        users
            .entry(b"default".to_vec())
            .or_insert_with(|| Arc::new(User::default_user(self.catalog)));
        let mut gone = Vec::new();
        if let Ok(mut now) = self.users.write() {
            gone = now.keys().filter(|k| !users.contains_key(*k)).cloned().collect();
            *now = users;
        }
        self.changed();
        Ok(gone)
    }

    /// ACL SAVE's text: a `user` line per user, as ACL LIST shows them.
    pub fn save_text(&self) -> String {
        let mut out = String::new();
        for u in self.all() {
            out.push_str(&format!("user {} {}\n", String::from_utf8_lossy(&u.name), u.describe()));
        }
        out
    }

    /// The user `name` opens with `password`, if any.
    pub fn authenticate(&self, name: &[u8], password: &[u8]) -> Option<Arc<User>> {
        self.get(name).filter(|u| u.accepts(password))
    }

    /// `requirepass`: the default user's password (None: nopass).
    pub fn set_default_password(&self, password: Option<&[u8]>) {
        let mut rules: Vec<Vec<u8>> = vec![b"resetpass".to_vec()];
        match password {
            Some(p) => rules.push([b">".as_slice(), p].concat()),
            None => rules.push(b"nopass".to_vec()),
        }
        let refs: Vec<&[u8]> = rules.iter().map(Vec::as_slice).collect();
        let _ = self.set_user(b"default", &refs);
    }

    /// Whether a new connection starts authenticated (the default user is
    /// on and takes no password).
    #[inline]
    pub fn default_open(&self) -> bool {
        self.open.load(Ordering::Acquire)
    }

    /// Refusals for `reason` since the start.
    pub fn denied(&self, reason: Reason) -> u64 {
        self.denied[reason as usize].load(Ordering::Relaxed)
    }

    /// Adds a log entry (or counts it into a recent one like it).
    pub fn log(&self, reason: Reason, context: Context, object: &[u8], username: &[u8], client_info: String, now_ms: u64) {
        self.denied[reason as usize].fetch_add(1, Ordering::Relaxed);
        let max = self.log_max.load(Ordering::Relaxed) as usize;
        let Ok(mut log) = self.log.lock() else { return };
        let similar = log.entries.iter().take(10).position(|e| {
            e.reason == reason
                && e.context == context
                && e.object == object
                && e.username == username
                && now_ms.abs_diff(e.updated_ms) <= GROUPING_MS
        });
        if let Some(i) = similar {
            if let Some(mut e) = log.entries.remove(i) {
                e.count += 1;
                e.updated_ms = now_ms;
                e.client_info = client_info;
                log.entries.push_front(e);
            }
            return;
        }
        let id = log.next_id;
        log.next_id += 1;
        log.entries.push_front(Entry {
            count: 1,
            reason,
            context,
            object: object.to_vec(),
            username: username.to_vec(),
            updated_ms: now_ms,
            created_ms: now_ms,
            client_info,
            id,
        });
        log.entries.truncate(max);
    }

    /// The newest `n` log entries.
    pub fn log_entries(&self, n: usize) -> Vec<Entry> {
        self.log
            .lock()
            .map(|l| l.entries.iter().take(n).cloned().collect())
            .unwrap_or_default()
    }

    pub fn log_reset(&self) {
        if let Ok(mut l) = self.log.lock() {
            l.entries.clear();
        }
    }
}

/// Joins rules that open a selector with `(` up to the one that closes it
/// with `)`, as Redis's `ACLMergeSelectorArguments`.
fn merge_selectors(rules: &[&[u8]]) -> Result<Vec<Vec<u8>>, String> {
    let mut out = Vec::with_capacity(rules.len());
    let mut open: Option<(Vec<u8>, &[u8])> = None;
    for r in rules {
        match &mut open {
            Some((acc, _)) => {
                acc.push(b' ');
                acc.extend_from_slice(r);
                if r.last() == Some(&b')') {
                    if let Some((acc, _)) = open.take() {
                        out.push(acc);
                    }
                }
            }
            None if r.first() == Some(&b'(') && r.last() != Some(&b')') => open = Some((r.to_vec(), r)),
            None => out.push(r.to_vec()),
        }
    }
    if let Some((_, first)) = open {
        return Err(format!(
            "ERR Unmatched parenthesis in acl selector starting at '{}'.",
            String::from_utf8_lossy(first)
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog() -> &'static Catalog {
        static C: std::sync::OnceLock<Catalog> = std::sync::OnceLock::new();
        C.get_or_init(|| {
            let mut c = Catalog::default();
            for (i, n) in ["get", "set"].iter().enumerate() {
                c.names.push(n.to_string());
                c.cats.push(category_bit(b"string").unwrap_or(0));
                c.parent.push(None);
                c.subs.push(Vec::new());
                c.no_auth.push(false);
                c.by_name.insert(n.to_string(), i);
            }
            c
        })
    }

    #[test]
    fn set_user_is_all_or_nothing() {
        let r = Registry::new(catalog());
        let g = r.generation();
        r.set_user(b"alice", &[b"on", b">pw", b"+get"]).unwrap();
        assert!(r.generation() > g);
        assert!(r.authenticate(b"alice", b"pw").is_some());
        let err = r.set_user(b"alice", &[b"-get", b"bogus"]).unwrap_err();
        assert_eq!(err, "ERR Error in ACL SETUSER modifier 'bogus': Syntax error");
        assert_eq!(r.get(b"alice").unwrap().selectors[0].commands_text(), "-@all +get");
        assert_eq!(
            r.set_user(b"bob", &[b"(+get", b"~a"]).unwrap_err(),
            "ERR Unmatched parenthesis in acl selector starting at '(+get'."
        );
        r.set_user(b"bob", &[b"(+get", b"~a)"]).unwrap();
        assert_eq!(r.get(b"bob").unwrap().selectors.len(), 2);
        assert_eq!(r.delete(&[b"bob", b"nobody"]), vec![b"bob".to_vec()]);
    }

    #[test]
    fn acl_files_load_whole_or_not_at_all() {
        let r = Registry::new(catalog());
        r.set_user(b"old", &[b"on"]).unwrap();
        let err = r.load("/f", "user a on +get\n\n# note\nuser b on bogus\nuser a on\n").unwrap_err();
        assert_eq!(
            err,
            "/f:3 should start with user keyword followed by the username. /f:4: Error in applying operation 'bogus': Syntax error. WARNING: Duplicate user 'a' found on line 5. WARNING: ACL errors detected, no change to the previously active ACL rules was performed"
        );
        assert!(r.get(b"old").is_some() && r.get(b"a").is_none());
        let gone = r.load("/f", "user a on >pw +get ~k (+set ~s)\r\n").unwrap();
        assert_eq!(gone, vec![b"old".to_vec()]);
        assert!(r.authenticate(b"a", b"pw").is_some());
        assert!(r.default_open(), "a default user the file leaves out is the start's");
        // What SAVE writes, LOAD reads back the same.
        let text = r.save_text();
        assert!(text.starts_with("user a on sanitize-payload #"), "{text}");
        let before: Vec<User> = r.all().iter().map(|u| (**u).clone()).collect();
        r.load("/f", &text).unwrap();
        let after: Vec<User> = r.all().iter().map(|u| (**u).clone()).collect();
        assert_eq!(before, after);
    }

    #[test]
    fn requirepass_is_the_default_password() {
        let r = Registry::new(catalog());
        assert!(r.default_open());
        r.set_default_password(Some(b"secret"));
        assert!(!r.default_open());
        assert!(r.authenticate(b"default", b"secret").is_some());
        r.set_default_password(None);
        assert!(r.default_open());
    }

    #[test]
    fn log_groups_alike_entries() {
        let r = Registry::new(catalog());
        r.log(Reason::Command, Context::Toplevel, b"get", b"u", "id=1".into(), 1000);
        r.log(Reason::Command, Context::Toplevel, b"get", b"u", "id=2".into(), 2000);
        r.log(Reason::Key, Context::Multi, b"k", b"u", "id=2".into(), 3000);
        let e = r.log_entries(10);
        assert_eq!(e.len(), 2);
        assert_eq!((e[0].reason, e[1].count, e[1].client_info.as_str()), (Reason::Key, 2, "id=2"));
        assert_eq!((e[1].created_ms, e[1].updated_ms), (1000, 2000));
        assert_eq!(
            (r.denied(Reason::Command), r.denied(Reason::Key), r.denied(Reason::Auth)),
            (2, 1, 0)
        );
        r.log_reset();
        assert!(r.log_entries(10).is_empty());
    }
}
