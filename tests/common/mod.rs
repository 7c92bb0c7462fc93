//! Test harness: starts the real `basalt` binary (and Debian's
//! `redis-server` for differential tests) on free ports with temp dirs, and a
//! raw RESP client that returns each reply's exact bytes.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A file of this checkout (`rel` from the project root). Cargo's runtime
/// value first: a test binary built in another checkout sharing the target
/// dir (CI's copy) still has that checkout's path compiled in.
pub fn project_file(rel: &str) -> String {
    let root = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string());
    format!("{root}/{rel}")
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// Waits until the server answers PING. False when the child exited first
/// (another process may have taken the port between `free_port` and bind).
fn wait_ready(port: u16, child: &mut Child, what: &str) -> bool {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return false;
        }
        if answers_ping(port) {
            // Another test's server on the same port answers PING too
            // (`free_port` released the port before the child bound it):
            // a server that reports another process is not this one.
            return served_by(port, child.id()) != Some(false) || {
                let _ = child.kill();
                false
            };
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("{what} did not start on port {port}");
}

/// What `ss` shows on `port` (listeners and connections), for a failure
/// message: a restart that could not bind says who held the port.
fn listeners_on(port: u16) -> String {
    Command::new("ss")
        .args(["-tanp", &format!("sport = :{port}")])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_else(|e| format!("(ss: {e})"))
}

/// One PING on a fresh connection; any I/O error means "not ready yet".
/// Whether the server on `port` reports `pid` as its process id (INFO
/// server's `process_id`); None when it does not say (a password is set).
fn served_by(port: u16, pid: u32) -> Option<bool> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    s.write_all(b"*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n").ok()?;
    let mut got = String::new();
    let mut buf = [0u8; 4096];
    loop {
        if got.starts_with('-') {
            return None;
        }
        if let Some((id, _)) = got.split("process_id:").nth(1).and_then(|rest| rest.split_once("\r\n")) {
            return Some(id.trim().parse::<u32>().ok()? == pid);
        }
        let n = s.read(&mut buf).ok().filter(|&n| n > 0)?;
        got.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
}

fn answers_ping(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if s.write_all(b"*1\r\n$4\r\nPING\r\n").is_err() {
        return false;
    }
    let mut buf = [0u8; 64];
    match s.read(&mut buf) {
        // NOAUTH: a password is set; MISCONF: the disk is full (writes and
        // PING are refused, reads served): the server is up either way.
        Ok(n) => buf[..n].starts_with(b"+PONG\r\n") || buf[..n].starts_with(b"-NOAUTH") || buf[..n].starts_with(b"-MISCONF"),
        Err(_) => false,
    }
}

/// Spawns a server on a free port, retrying on a new port when the child
/// exits before answering.
/// Starts a server on a free port, retrying on new ports when one exits
/// before it answers (another test may take the port first). `spawn`
/// gets the port and where the server's stderr goes: a file, so a server
/// that never answers can say why in the panic (or the test's own stderr
/// with `BASALT_TEST_LOG`).
fn spawn_on_free_port(what: &str, mut spawn: impl FnMut(u16, Stdio) -> Child) -> (u16, Child) {
    let mut printed = String::new();
    for _ in 0..5 {
        let port = free_port();
        let log = tempfile::NamedTempFile::new().expect("log file");
        let stderr = if std::env::var("BASALT_TEST_LOG").is_ok() {
            Stdio::inherit()
        } else {
            Stdio::from(log.reopen().expect("log file"))
        };
        let mut child = spawn(port, stderr);
        if wait_ready(port, &mut child, what) {
            return (port, child);
        }
        let status = child.wait().map(|s| s.to_string()).unwrap_or_default();
        printed = format!("{status}: {}", std::fs::read_to_string(log.path()).unwrap_or_default());
    }
    panic!("{what} exited early five times; the last one {printed}");
}

/// A running Basalt server; killed on drop.
pub struct Basalt {
    pub port: u16,
    pub dir: PathBuf,
    _tmp: Option<tempfile::TempDir>,
    child: Option<Child>,
    pub shards: usize,
}

impl Basalt {
    pub fn start(shards: usize) -> Basalt {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().to_path_buf();
        let mut b = Basalt::start_in(&dir, shards, &[]);
        b._tmp = Some(tmp);
        b
    }

    pub fn start_with(shards: usize, extra: &[&str]) -> Basalt {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().to_path_buf();
        let mut b = Basalt::start_in(&dir, shards, extra);
        b._tmp = Some(tmp);
        b
    }

    /// Starts with the config file `file` (its first argument, as
    /// redis-server takes one), the test's own flags after it.
    pub fn start_with_file(shards: usize, file: &Path) -> Basalt {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().to_path_buf();
        let (port, child) = spawn_on_free_port("basalt", |port, err| Self::spawn_logged(&dir, port, shards, &[], Some(file), err));
        Basalt {
            port,
            dir,
            _tmp: Some(tmp),
            child: Some(child),
            shards,
        }
    }

    /// Starts on an existing data dir (restart tests keep the TempDir themselves).
    pub fn start_in(dir: &Path, shards: usize, extra: &[&str]) -> Basalt {
        Self::start_in_env(dir, shards, extra, &[])
    }

    /// [`Basalt::start_in`] with `envs` set for the server (`BASALT_SPLIT`).
    pub fn start_in_env(dir: &Path, shards: usize, extra: &[&str], envs: &[(&str, &str)]) -> Basalt {
        let (port, child) = spawn_on_free_port("basalt", |port, err| {
            let mut c = Self::command(dir, port, shards, extra, None, err);
            c.envs(envs.iter().copied());
            c.spawn().expect("spawn basalt")
        });
        Basalt {
            port,
            dir: dir.to_path_buf(),
            _tmp: None,
            child: Some(child),
            shards,
        }
    }

    /// Starts on `port` exactly (a restart on the port a stopped server
    /// used). Err carries what the server printed when it exited instead of
    /// answering, so a failure in CI names its cause.
    pub fn start_at(dir: &Path, port: u16, shards: usize, extra: &[&str]) -> Result<Basalt, String> {
        let log = tempfile::NamedTempFile::new().map_err(|e| e.to_string())?;
        let stderr = log.reopen().map_err(|e| e.to_string())?;
        let mut child = Self::spawn_logged(dir, port, shards, extra, None, Stdio::from(stderr));
        if !wait_ready(port, &mut child, "basalt") {
            let status = child.wait().map_err(|e| e.to_string())?;
            let printed = std::fs::read_to_string(log.path()).unwrap_or_default();
            let others = listeners_on(port);
            return Err(format!(
                "exited with {status} on port {port}; it printed:\n{printed}\nsockets on the port: {others}"
            ));
        }
        Ok(Basalt {
            port,
            dir: dir.to_path_buf(),
            _tmp: None,
            child: Some(child),
            shards,
        })
    }

    fn spawn_logged(dir: &Path, port: u16, shards: usize, extra: &[&str], file: Option<&Path>, stderr: Stdio) -> Child {
        Self::command(dir, port, shards, extra, file, stderr).spawn().expect("spawn basalt")
    }

    fn command(dir: &Path, port: u16, shards: usize, extra: &[&str], file: Option<&Path>, stderr: Stdio) -> Command {
        {
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_basalt"));
            cmd.args(file);
            cmd.args([
                "--port",
                &port.to_string(),
                "--dir",
                &dir.display().to_string(),
                "--shards",
                &shards.to_string(),
            ])
            .args(["--block-cache-size", "16mb", "--write-buffer-size", "4mb"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(stderr);
            cmd
        }
    }

    pub fn raw(&self) -> Raw {
        Raw::connect(self.port)
    }

    pub fn client(&self) -> redis::Connection {
        redis::Client::open(format!("redis://127.0.0.1:{}/", self.port))
            .and_then(|c| c.get_connection())
            .expect("redis client")
    }

    /// Sends a signal and waits for the process to exit.
    pub fn signal_and_wait(&mut self, sig: &str) -> std::process::ExitStatus {
        let mut child = self.child.take().expect("running");
        Command::new("kill").args([sig, &child.id().to_string()]).status().expect("kill");
        child.wait().expect("wait")
    }

    /// The server's process id (for a kill from another thread).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// Waits for the process to exit on its own (after SHUTDOWN).
    pub fn wait_exit(&mut self) -> std::process::ExitStatus {
        let mut child = self.child.take().expect("running");
        child.wait().expect("wait")
    }
}

impl Drop for Basalt {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Debian's redis-server, persistence off; killed on drop.
pub struct RedisServer {
    pub port: u16,
    child: Child,
    _tmp: tempfile::TempDir,
}

impl RedisServer {
    pub fn start() -> RedisServer {
        RedisServer::start_with(&[])
    }

    /// With extra `--name value` arguments (e.g. `--requirepass`).
    pub fn start_with(extra: &[&str]) -> RedisServer {
        let tmp = tempfile::tempdir().expect("tempdir");
        let bin = std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
        let (port, child) = spawn_on_free_port("redis-server", |port, _| {
            Command::new(&bin)
                .args([
                    "--port",
                    &port.to_string(),
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                ])
                .args(["--dir", &tmp.path().display().to_string(), "--daemonize", "no"])
                .args(extra)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start {bin} (run the README's setup): {e}"))
        });
        RedisServer { port, child, _tmp: tmp }
    }

    pub fn raw(&self) -> Raw {
        Raw::connect(self.port)
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A raw RESP connection: sends commands, returns each reply's exact bytes.
pub struct Raw {
    r: BufReader<TcpStream>,
    w: TcpStream,
}

impl Raw {
    /// A numeric field of INFO `section` (`name:value`); panics if missing.
    #[allow(dead_code)]
    pub fn info_u64(&mut self, section: &str, name: &str) -> u64 {
        let info = String::from_utf8_lossy(&self.cmd(&["INFO", section])).to_string();
        let key = format!("{name}:");
        info.lines()
            .find_map(|l| l.strip_prefix(key.as_str()))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("INFO {section} has no numeric {name}: {info}"))
    }

    pub fn connect(port: u16) -> Raw {
        Raw::from_stream(TcpStream::connect(("127.0.0.1", port)).expect("connect"))
    }

    fn from_stream(s: TcpStream) -> Raw {
        s.set_read_timeout(Some(Duration::from_secs(30))).ok();
        s.set_nodelay(true).ok();
        let w = s.try_clone().expect("clone");
        Raw { r: BufReader::new(s), w }
    }

    pub fn encode<A: AsRef<[u8]>>(args: &[A]) -> Vec<u8> {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            let a = a.as_ref();
            out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
        out
    }

    pub fn send_bytes(&mut self, b: &[u8]) {
        self.w.write_all(b).expect("write");
    }

    /// One command, one reply (exact bytes).
    pub fn cmd<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Vec<u8> {
        self.send_bytes(&Self::encode(args));
        self.reply()
    }

    /// Reads one whole reply, RESP2 or RESP3.
    pub fn reply(&mut self) -> Vec<u8> {
        let mut out = Vec::new();
        self.read_value(&mut out);
        out
    }

    /// True when the server closed the connection.
    pub fn closed(&mut self) -> bool {
        let mut b = [0u8; 1];
        matches!(self.r.read(&mut b), Ok(0) | Err(_))
    }

    fn read_line(&mut self, out: &mut Vec<u8>) -> Vec<u8> {
        let mut line = Vec::new();
        let n = self.r.read_until(b'\n', &mut line).expect("read reply");
        assert!(
            n > 0,
            "connection closed while reading a reply; got so far: {:?}",
            String::from_utf8_lossy(out)
        );
        out.extend_from_slice(&line);
        line.truncate(line.len().saturating_sub(2));
        line
    }

    fn read_value(&mut self, out: &mut Vec<u8>) {
        let line = self.read_line(out);
        let (tag, rest) = (line[0], &line[1..]);
        let n: i64 = std::str::from_utf8(rest).ok().and_then(|s| s.parse().ok()).unwrap_or(0);
        match tag {
            b'$' | b'=' | b'!' if n >= 0 => {
                let mut body = vec![0u8; n as usize + 2];
                self.r.read_exact(&mut body).expect("bulk body");
                out.extend_from_slice(&body);
            }
            b'*' | b'~' | b'>' if n > 0 => (0..n).for_each(|_| self.read_value(out)),
            b'%' | b'|' if n > 0 => (0..2 * n).for_each(|_| self.read_value(out)),
            _ => {}
        }
    }
}

/// xorshift64*: reproducible random cases without a dependency.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    pub fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// Readable form of reply bytes for assertion messages.
pub fn show(b: &[u8]) -> String {
    String::from_utf8_lossy(b).replace("\r\n", "\\r\\n")
}

/// Splits a script line on spaces; `"..."` quotes an argument.
pub fn split(line: &str) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut any = false;
    for ch in line.chars() {
        match ch {
            '"' => {
                quoted = !quoted;
                any = true;
            }
            ' ' if !quoted => {
                if any || !cur.is_empty() {
                    out.push(std::mem::take(&mut cur).into_bytes());
                }
                any = false;
            }
            c => cur.push(c),
        }
    }
    if any || !cur.is_empty() {
        out.push(cur.into_bytes());
    }
    out
}

/// Splits an array reply into its element byte strings (flat arrays only).
fn elements(reply: &[u8]) -> Vec<Vec<u8>> {
    let mut items: Vec<Vec<u8>> = Vec::new();
    let text = reply.to_vec();
    let mut lines = text.split(|&b| b == b'\n').skip(1);
    while let Some(l) = lines.next() {
        if l.is_empty() {
            continue;
        }
        let mut item = l.to_vec();
        if l.starts_with(b"$") && l != b"$-1\r" {
            if let Some(body) = lines.next() {
                item.extend_from_slice(body);
            }
        }
        items.push(item);
    }
    items.sort();
    items
}

/// Runs a differential script against `redis` and `basalt` (both flushed
/// first): every reply must be byte-for-byte the same. A line starting with
/// `~` compares an array reply as an unordered set (KEYS, whose order Redis
/// does not define); `#` starts a comment line.
/// Runs every `(name, script)` against a fresh redis-server and a fresh
/// Basalt with `shards` shards ([`run_script`]).
pub fn run_scripts(scripts: &[(&str, &str)], shards: usize) {
    let redis = RedisServer::start();
    let basalt = Basalt::start(shards);
    let (mut r, mut b) = (redis.raw(), basalt.raw());
    for (name, script) in scripts {
        run_script(name, script, &mut r, &mut b, shards);
    }
}

/// Runs `script` against a fresh redis-server and a fresh Basalt with
/// `shards` shards, both connections switched to RESP3 first.
pub fn run_resp3_script(name: &str, script: &str, shards: usize) {
    let redis = RedisServer::start();
    let basalt = Basalt::start(shards);
    let (mut r, mut b) = (redis.raw(), basalt.raw());
    r.cmd(&["HELLO", "3"]);
    b.cmd(&["HELLO", "3"]);
    run_script(name, script, &mut r, &mut b, shards);
}

pub fn run_script(name: &str, script: &str, redis: &mut Raw, basalt: &mut Raw, shards: usize) {
    redis.cmd(&["FLUSHALL"]);
    basalt.cmd(&["FLUSHALL"]);
    for line in script.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let (unordered, line) = match line.strip_prefix('~') {
            Some(rest) => (true, rest.trim()),
            None => (false, line),
        };
        let args = split(line);
        let want = redis.cmd(&args);
        let got = basalt.cmd(&args);
        let same = if unordered {
            elements(&want) == elements(&got)
        } else {
            want == got
        };
        assert!(
            same,
            "[{name}, {shards} shards] `{line}`\n redis:  {}\n basalt: {}",
            show(&want),
            show(&got)
        );
    }
}

/// A MONITOR line without what differs between two servers (the time and
/// the client's port): `+1700000000.123456 [0 127.0.0.1:5000] "get" "k"`
/// becomes `+T [0 ADDR] "get" "k"`. Other replies are kept as they are.
fn without_time_and_addr(reply: Vec<u8>) -> Vec<u8> {
    let text = String::from_utf8_lossy(&reply).to_string();
    let Some(rest) = text.strip_prefix('+') else { return reply };
    let Some((time, rest)) = rest.split_once(" [") else { return reply };
    let Some((db_addr, args)) = rest.split_once("] ") else {
        return reply;
    };
    let Some((db, _)) = db_addr.split_once(' ') else { return reply };
    if !time.contains('.') || !time.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return reply;
    }
    format!("+T [{db} ADDR] {args}").into_bytes()
}

/// Replies that come in an order Redis does not define, made comparable:
/// each without its trailing integer (an unsubscribe's running count,
/// which depends on that order), sorted, then the integers sorted.
fn unordered_replies(replies: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    let (mut bodies, mut counts) = (Vec::new(), Vec::new());
    for r in replies {
        let text = r.strip_suffix(b"\r\n").unwrap_or(&r);
        match text.iter().rposition(|&c| c == b'\n') {
            Some(at) if text.get(at + 1) == Some(&b':') => {
                bodies.push(r[..at + 1].to_vec());
                counts.push(r[at + 1..].to_vec());
            }
            _ => bodies.push(r),
        }
    }
    bodies.sort();
    counts.sort();
    bodies.extend(counts);
    bodies
}

/// Runs `script` against a fresh redis-server and a fresh Basalt with
/// `shards` shards, with four connections each (A to D; all switched to
/// RESP3 first when `resp3`). A line is one of:
/// - `A: CMD`: sends CMD on A and compares its reply;
/// - `!A: CMD`: the same without comparing (HELLO names the server);
/// - `~A: CMD`: compares an array reply as an unordered set;
/// - `A> CMD`: sends CMD on A and reads nothing yet;
/// - `A<`: reads one more reply (or pushed message) on A and compares
///   (a MONITOR line without its time and client address);
/// - `A<< N`: reads N replies on A and compares them as a multiset (what
///   Redis answers in its dictionary's order, as UNSUBSCRIBE from all;
///   see [`unordered_replies`]);
/// - `SLEEP <ms>`; `#` starts a comment.
pub fn run_clients(name: &str, script: &str, shards: usize, resp3: bool) {
    let redis = RedisServer::start();
    let basalt = Basalt::start(shards);
    let mut r: Vec<Raw> = (0..4).map(|_| redis.raw()).collect();
    let mut b: Vec<Raw> = (0..4).map(|_| basalt.raw()).collect();
    if resp3 {
        for c in r.iter_mut().chain(b.iter_mut()) {
            c.cmd(&["HELLO", "3"]);
        }
    }
    let who = |c: &str| match c {
        "A" => 0,
        "B" => 1,
        "C" => 2,
        "D" => 3,
        _ => panic!("{name}: client `{c}` (A to D)"),
    };
    for line in script.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        if let Some(ms) = line.strip_prefix("SLEEP ") {
            std::thread::sleep(Duration::from_millis(ms.parse().expect("ms")));
            continue;
        }
        let (compare, unordered, rest) = match (line.strip_prefix('!'), line.strip_prefix('~')) {
            (Some(rest), _) => (false, false, rest.trim()),
            (_, Some(rest)) => (true, true, rest.trim()),
            _ => (true, false, line),
        };
        let Some(c) = rest.get(..1) else { continue };
        let (i, tail) = (who(c), &rest[1..]);
        let (want, got): (Vec<Vec<u8>>, Vec<Vec<u8>>) = if let Some(n) = tail.strip_prefix("<< ") {
            let n = n.trim().parse::<usize>().expect("count");
            let want: Vec<_> = (0..n).map(|_| r[i].reply()).collect();
            let got: Vec<_> = (0..n).map(|_| b[i].reply()).collect();
            (unordered_replies(want), unordered_replies(got))
        } else if tail == "<" {
            (vec![without_time_and_addr(r[i].reply())], vec![without_time_and_addr(b[i].reply())])
        } else if let Some(cmd) = tail.strip_prefix("> ") {
            let args = split(cmd);
            r[i].send_bytes(&Raw::encode(&args));
            b[i].send_bytes(&Raw::encode(&args));
            continue;
        } else if let Some(cmd) = tail.strip_prefix(": ") {
            let args = split(cmd);
            (vec![r[i].cmd(&args)], vec![b[i].cmd(&args)])
        } else {
            panic!("{name}: `{line}` is not a script line");
        };
        if !compare {
            continue;
        }
        let same = if unordered {
            want.iter().map(|w| elements(w)).eq(got.iter().map(|g| elements(g)))
        } else {
            want == got
        };
        let show_all = |v: &[Vec<u8>]| v.iter().map(|x| show(x)).collect::<Vec<_>>().join(" | ");
        assert!(
            same,
            "[{name}, {shards} shards{}] `{line}`\n redis:  {}\n basalt: {}",
            if resp3 { ", RESP3" } else { "" },
            show_all(&want),
            show_all(&got)
        );
    }
}

/// The first `<prefix><n>` that shard `shard` of `shards` owns.
pub fn on_shard(prefix: &str, shard: usize, shards: usize) -> String {
    (0..)
        .map(|n| format!("{prefix}{n}"))
        .find(|k| basalt::slot::owner(k.as_bytes(), shards) == shard)
        .unwrap_or_default()
}

/// Waits until the server counts `n` blocked clients.
pub fn wait_blocked(c: &mut Raw, n: usize) {
    let want = format!("blocked_clients:{n}\r\n");
    let start = std::time::Instant::now();
    loop {
        let info = String::from_utf8_lossy(&c.cmd(&["INFO", "clients"])).to_string();
        if info.contains(&want) {
            return;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "never {n} blocked clients: {info}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Runs `scenario` on a fresh redis-server and a fresh Basalt of `shards`
/// shards and compares what it recorded.
pub fn same_on_both(shards: usize, scenario: fn(u16) -> Vec<String>) {
    let redis = RedisServer::start();
    let want = scenario(redis.port);
    let basalt = Basalt::start(shards);
    let got = scenario(basalt.port);
    assert_eq!(want, got, "redis (left) and basalt (right) differ");
}

/// Sends a command without waiting for its reply (a client about to block).
pub fn send(c: &mut Raw, args: &[&str]) {
    c.send_bytes(&Raw::encode(args));
}

/// The next reply, readable.
pub fn rec(c: &mut Raw) -> String {
    show(&c.reply())
}

/// Runs a scripting test script (`tests/scripting.rs` has the format:
/// `run_script`'s, with `\\n` in an argument for a newline) on both servers, both
/// connections in RESP3 first when `resp3`.
pub fn run_lua_script(name: &str, script: &str, shards: usize, resp3: bool) {
    let redis = RedisServer::start();
    let basalt = Basalt::start(shards);
    let (mut r, mut b) = (redis.raw(), basalt.raw());
    if resp3 {
        r.cmd(&["HELLO", "3"]);
        b.cmd(&["HELLO", "3"]);
    }
    compare_lua(name, script, &mut r, &mut b, shards);
}

pub fn compare_lua(name: &str, script: &str, r: &mut Raw, b: &mut Raw, shards: usize) {
    for line in script.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let (unordered, line) = match line.strip_prefix('~') {
            Some(rest) => (true, rest.trim()),
            None => (false, line),
        };
        let args: Vec<Vec<u8>> = split(line)
            .into_iter()
            .map(|a| String::from_utf8_lossy(&a).replace("\\n", "\n").into_bytes())
            .collect();
        let (mut want, mut got) = (r.cmd(&args), b.cmd(&args));
        if unordered {
            want = sorted_lines(&want);
            got = sorted_lines(&got);
        }
        assert!(
            want == got,
            "[{name}, {shards} shards] `{line}`\n redis:  {}\n basalt: {}",
            show(&want),
            show(&got)
        );
    }
}

/// A reply's lines, sorted (an array whose order Redis does not define).
fn sorted_lines(reply: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(reply);
    let mut lines: Vec<&str> = text.split("\r\n").collect();
    lines.sort();
    lines.join("\n").into_bytes()
}

/// Keyspace events (`__keyevent@0__:*`, already subscribed on `sub`) up
/// to and including the one for the key `marker`: each event's name.
pub fn keyevents_until_marker(sub: &mut Raw) -> Vec<String> {
    let mut seen = Vec::new();
    loop {
        let m = show(&sub.reply());
        let done = m.contains("marker");
        seen.push(m);
        if done {
            break;
        }
    }
    seen.iter()
        .map(|m| {
            let channel = m.split("__keyevent@0__:").nth(2).unwrap_or("");
            channel.split("\\r\\n").next().unwrap_or("").to_string()
        })
        .collect()
}
