//! FUNCTION libraries, process-wide: what FUNCTION LOAD registered, by
//! library and by function name. Each shard's interpreter loads them on
//! its first FCALL after a change ([`Functions::epoch`]); the set is kept
//! on disk by the caller (`storage::functions`).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::store::Flags;

/// One function of a library.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionInfo {
    pub name: String,
    pub description: Option<String>,
    pub flags: Flags,
}

/// One library: its code and what it registered.
#[derive(Debug, Clone)]
pub struct Library {
    pub name: String,
    pub code: Vec<u8>,
    pub functions: Vec<FunctionInfo>,
}

/// Every library.
#[derive(Default)]
pub struct Functions {
    libs: Mutex<BTreeMap<String, Arc<Library>>>,
    epoch: AtomicU64,
    /// Held through a whole change (check, write to disk, install), so
    /// that two changes from different shards do not lose one another.
    change: Mutex<()>,
}

/// Where a library's code starts after its shebang line (its newline
/// kept, so that line numbers stay right).
pub fn code_at(code: &[u8]) -> usize {
    memchr::memchr(b'\n', code).unwrap_or(code.len())
}

/// A library's name from its first line, `#!lua name=<name>` (Redis's
/// `functionExtractLibMetaData`); the error is Redis's reply text.
pub fn library_name(code: &[u8]) -> Result<String, String> {
    if !code.starts_with(b"#!") {
        return Err("ERR Missing library metadata".into());
    }
    let end = memchr::memchr(b'\n', code).unwrap_or(code.len());
    let line = String::from_utf8_lossy(&code[2..end]).into_owned();
    let mut parts = line.split(' ').filter(|p| !p.is_empty());
    let engine = parts.next().unwrap_or("");
    if !engine.eq_ignore_ascii_case("lua") {
        return Err(format!("ERR Engine '{engine}' not found"));
    }
    let mut name = None;
    for part in parts {
        match part.split_once('=') {
            Some(("name", v)) => name = Some(v.to_string()),
            _ => return Err(format!("ERR Invalid metadata value given: {part}")),
        }
    }
    let Some(name) = name else {
        return Err("ERR Library name was not given".into());
    };
    if !valid_name(&name) {
        return Err(
            "ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long".into(),
        );
    }
    Ok(name)
}

/// Letters, digits and underscores, at least one (library and function
/// names alike).
pub fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

impl Functions {
    /// Bumped at every change: an interpreter that loaded an older set
    /// loads the libraries again.
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::SeqCst)
    }

    fn libs(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Arc<Library>>> {
        self.libs.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Held through a change of the set.
    pub fn changing(&self) -> std::sync::MutexGuard<'_, ()> {
        self.change.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every library, by name.
    pub fn all(&self) -> Vec<Arc<Library>> {
        self.libs().values().cloned().collect()
    }

    /// The library that registered function `name`, and the function.
    pub fn find(&self, name: &str) -> Option<(Arc<Library>, FunctionInfo)> {
        self.libs().values().find_map(|l| {
            l.functions
                .iter()
                .find(|f| f.name.eq_ignore_ascii_case(name))
                .map(|f| (l.clone(), f.clone()))
        })
    }

    /// The set with `lib` added (replacing its namesake when `replace`),
    /// or Redis's error; nothing changes until [`Functions::set`].
    pub fn with(&self, lib: Library, replace: bool) -> Result<Vec<Arc<Library>>, String> {
        merged(self.all(), vec![lib], replace)
    }

    /// Installs `libs` as the whole set (once it is on disk).
    pub fn set(&self, libs: Vec<Arc<Library>>) {
        *self.libs() = libs.into_iter().map(|l| (l.name.clone(), l)).collect();
        self.epoch.fetch_add(1, Ordering::SeqCst);
    }

    /// (libraries, functions): FUNCTION STATS.
    pub fn counts(&self) -> (usize, usize) {
        let libs = self.libs();
        (libs.len(), libs.values().map(|l| l.functions.len()).sum())
    }
}

/// `current` with `new` added in order (each replacing its namesake when
/// `replace`), or Redis's error for the first conflict.
pub fn merged(current: Vec<Arc<Library>>, new: Vec<Library>, replace: bool) -> Result<Vec<Arc<Library>>, String> {
    let mut libs: BTreeMap<String, Arc<Library>> = current.into_iter().map(|l| (l.name.clone(), l)).collect();
    for lib in new {
        if libs.contains_key(&lib.name) && !replace {
            return Err(format!("ERR Library '{}' already exists", lib.name));
        }
        for f in &lib.functions {
            let taken = libs
                .values()
                .any(|l| l.name != lib.name && l.functions.iter().any(|g| g.name.eq_ignore_ascii_case(&f.name)));
            if taken {
                return Err(format!("ERR Function {} already exists", f.name));
            }
        }
        libs.insert(lib.name.clone(), Arc::new(lib));
    }
    Ok(libs.into_values().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_names_as_redis_reads_them() {
        assert_eq!(library_name(b"#!lua name=mylib\nreturn 1").unwrap(), "mylib");
        assert_eq!(library_name(b"return 1").unwrap_err(), "ERR Missing library metadata");
        assert_eq!(library_name(b"#!js name=x\n").unwrap_err(), "ERR Engine 'js' not found");
        assert_eq!(library_name(b"#!lua\n").unwrap_err(), "ERR Library name was not given");
        assert_eq!(
            library_name(b"#!lua foo=bar\n").unwrap_err(),
            "ERR Invalid metadata value given: foo=bar"
        );
        assert!(library_name(b"#!lua name=a-b\n")
            .unwrap_err()
            .starts_with("ERR Library names can only"));
    }

    #[test]
    fn conflicts_are_refused() {
        let fs = Functions::default();
        let lib = |name: &str, f: &str| Library {
            name: name.into(),
            code: Vec::new(),
            functions: vec![FunctionInfo {
                name: f.into(),
                description: None,
                flags: Flags::default(),
            }],
        };
        fs.set(fs.with(lib("a", "f1"), false).unwrap());
        assert_eq!(fs.with(lib("a", "f2"), false).unwrap_err(), "ERR Library 'a' already exists");
        assert_eq!(fs.with(lib("b", "f1"), false).unwrap_err(), "ERR Function f1 already exists");
        assert_eq!(fs.with(lib("a", "f2"), true).unwrap().len(), 1);
        assert_eq!(fs.find("f1").unwrap().0.name, "a");
        assert_eq!(fs.counts(), (1, 1));
    }
}
