//! Key specs: where each command's keys are and what it does to them, as
//! Redis 7's COMMAND INFO `key_specifications` say (cluster clients route
//! by them; COMMAND GETKEYS and GETKEYSANDFLAGS read them here). Taken from
//! redis-server 7.0.15's COMMAND INFO for every command Basalt has; the
//! Redis 7.4/8.0 hash field commands, which 7.0 lacks, are written from
//! their documentation. `tests/command_keys.rs` compares them with
//! redis-server's.

/// One key spec.
pub struct KeySpec {
    pub notes: &'static str,
    /// RO RW OW RM, then access update insert delete, ... (Redis's names).
    pub flags: &'static [&'static str],
    pub begin: Begin,
    pub find: Find,
}

/// Where the search for the keys begins.
pub enum Begin {
    /// At this argument.
    Index(i32),
    /// After this keyword, searched for from argument `startfrom`
    /// (counted from the end when negative).
    Keyword(&'static str, i32),
    /// Not found by a spec (SORT's BY/GET keys, its STORE key).
    Unknown,
}

/// How the keys are found from there.
pub enum Find {
    /// (lastkey, keystep, limit): lastkey relative to the first key, or
    /// counted from the end when negative.
    Range(i32, i32, i32),
    /// (keynumidx, firstkey, keystep): the key count is an argument.
    Keynum(i32, i32, i32),
    Unknown,
}

/// The key specs of command or subcommand `fullname` (`object|encoding`);
/// empty for one without keys.
pub fn of(fullname: &str) -> &'static [KeySpec] {
    SPECS.binary_search_by(|(n, _)| n.cmp(&fullname)).map_or(&[], |i| SPECS[i].1)
}

/// Visits the positions of `cmd`'s keys by `specs`, as Redis's
/// `getKeysUsingKeySpecs`: each with the spec that found it. Specs of
/// unknown kind (SORT's) are skipped, and so is a spec whose keyword is not
/// in the command. False: a spec's key count is missing or out of range,
/// or the count is 0 (COMMAND GETKEYS: "Invalid arguments"); the keys
/// found before it were visited.
pub fn walk(specs: &'static [KeySpec], cmd: &[bytes::Bytes], mut f: impl FnMut(usize, &'static KeySpec)) -> bool {
    let argc = cmd.len() as i64;
    for k in specs {
        let mut first = match k.begin {
            Begin::Index(i) => i as i64,
            // A keyword not there: this spec finds no key (Redis's
            // `getKeysUsingKeySpecs` goes on with the next one).
            Begin::Keyword(word, from) => match keyword_at(cmd, word, from) {
                Some(at) => at + 1,
                None => continue,
            },
            Begin::Unknown => continue,
        };
        let (last, step) = match k.find {
            Find::Range(lastkey, step, limit) => {
                let last = if lastkey >= 0 {
                    first + lastkey as i64
                } else if limit == 0 {
                    argc + lastkey as i64
                } else {
                    first + ((argc - first) / limit as i64 + lastkey as i64)
                };
                (last, step as i64)
            }
            Find::Keynum(idx, firstkey, step) => {
                if idx as i64 >= argc - first {
                    return false;
                }
                let Some(n) = super::args::parse_i64(&cmd[(first + idx as i64) as usize]).filter(|n| *n >= 0) else {
                    return false;
                };
                first += firstkey as i64;
                (first + n - 1, step as i64)
            }
            Find::Unknown => continue,
        };
        if last >= argc || last < first || first >= argc {
            return false;
        }
        let mut i = first;
        while i <= last {
            f(i as usize, k);
            i += step.max(1);
        }
    }
    true
}

/// Where `word` is in `cmd`, searched for from argument `from` (from the
/// end when negative, as Redis's keyword begin-search).
fn keyword_at(cmd: &[bytes::Bytes], word: &str, from: i32) -> Option<i64> {
    let n = cmd.len() as i64;
    let is = |a: &[u8]| a.eq_ignore_ascii_case(word.as_bytes());
    if from >= 0 {
        (from as i64..n).find(|&i| is(&cmd[i as usize]))
    } else {
        (1..=(n + from as i64)).rev().find(|&i| is(&cmd[i as usize]))
    }
}

#[rustfmt::skip]
const SPECS: &[(&str, &[KeySpec])] = &[
("append", &[KeySpec { notes: "", flags: &["RW", "insert"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("asking", &[]),
    ("auth", &[]),
    ("bgrewriteaof", &[]),
    ("bgsave", &[]),
    ("bitcount", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("bitfield", &[KeySpec { notes: "This command allows both access and modification of the key", flags: &["RW", "access", "update", "variable_flags"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("bitfield_ro", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("bitop", &[KeySpec { notes: "", flags: &["OW", "update"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }, KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(3), find: Find::Range(-1, 1, 0) }]),
    ("bitpos", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("blmove", &[KeySpec { notes: "", flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }, KeySpec { notes: "", flags: &["RW", "insert"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }]),
    ("blmpop", &[KeySpec { notes: "", flags: &["RW", "access", "delete"], begin: Begin::Index(2), find: Find::Keynum(0, 1, 1) }]),
    ("blpop", &[KeySpec { notes: "", flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Range(-2, 1, 0) }]),
    ("brpop", &[KeySpec { notes: "", flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Range(-2, 1, 0) }]),
    ("brpoplpush", &[KeySpec { notes: "", flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }, KeySpec { notes: "", flags: &["RW", "insert"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }]),
    ("bzmpop", &[KeySpec { notes: "", flags: &["RW", "access", "delete"], begin: Begin::Index(2), find: Find::Keynum(0, 1, 1) }]),
    ("bzpopmax", &[KeySpec { notes: "", flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Range(-2, 1, 0) }]),
    ("bzpopmin", &[KeySpec { notes: "", flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Range(-2, 1, 0) }]),
    ("client", &[]),
    ("client|caching", &[]),
    ("client|getname", &[]),
    ("client|getredir", &[]),
    ("client|help", &[]),
    ("client|id", &[]),
    ("client|info", &[]),
    ("client|kill", &[]),
    ("client|list", &[]),
    ("client|no-evict", &[]),
    ("client|pause", &[]),
    ("client|reply", &[]),
    ("client|setname", &[]),
    ("client|tracking", &[]),
    ("client|trackinginfo", &[]),
    ("client|unblock", &[]),
    ("client|unpause", &[]),
    ("cluster", &[]),
    ("cluster|addslots", &[]),
    ("cluster|addslotsrange", &[]),
    ("cluster|bumpepoch", &[]),
    ("cluster|count-failure-reports", &[]),
    ("cluster|countkeysinslot", &[]),
    ("cluster|delslots", &[]),
    ("cluster|delslotsrange", &[]),
    ("cluster|failover", &[]),
    ("cluster|flushslots", &[]),
    ("cluster|forget", &[]),
    ("cluster|getkeysinslot", &[]),
    ("cluster|help", &[]),
    ("cluster|info", &[]),
    ("cluster|keyslot", &[]),
    ("cluster|links", &[]),
    ("cluster|meet", &[]),
    ("cluster|myid", &[]),
    ("cluster|myshardid", &[]),
    ("cluster|nodes", &[]),
    ("cluster|replicas", &[]),
    ("cluster|replicate", &[]),
    ("cluster|reset", &[]),
    ("cluster|saveconfig", &[]),
    ("cluster|set-config-epoch", &[]),
    ("cluster|setslot", &[]),
    ("cluster|shards", &[]),
    ("cluster|slaves", &[]),
    ("cluster|slots", &[]),
    ("command", &[]),
    ("command|count", &[]),
    ("command|docs", &[]),
    ("command|getkeys", &[]),
    ("command|getkeysandflags", &[]),
    ("command|help", &[]),
    ("command|info", &[]),
    ("command|list", &[]),
    ("config", &[]),
    ("config|get", &[]),
    ("config|help", &[]),
    ("config|resetstat", &[]),
    ("config|rewrite", &[]),
    ("config|set", &[]),
    ("copy", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }, KeySpec { notes: "", flags: &["OW", "update"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }]),
    ("dbsize", &[]),
    ("debug", &[]),
    ("decr", &[KeySpec { notes: "", flags: &["RW", "access", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("decrby", &[KeySpec { notes: "", flags: &["RW", "access", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("del", &[KeySpec { notes: "", flags: &["RM", "delete"], begin: Begin::Index(1), find: Find::Range(-1, 1, 0) }]),
    ("discard", &[]),
    ("dump", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("echo", &[]),
    ("eval", &[KeySpec { notes: "We cannot tell how the keys will be used so we assume the worst, RW and UPDATE", flags: &["RW", "access", "update"], begin: Begin::Index(2), find: Find::Keynum(0, 1, 1) }]),
    ("eval_ro", &[KeySpec { notes: "We cannot tell how the keys will be used so we assume the worst, RO and ACCESS", flags: &["RO", "access"], begin: Begin::Index(2), find: Find::Keynum(0, 1, 1) }]),
    ("evalsha", &[KeySpec { notes: "", flags: &["RW", "access", "update"], begin: Begin::Index(2), find: Find::Keynum(0, 1, 1) }]),
    ("evalsha_ro", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(2), find: Find::Keynum(0, 1, 1) }]),
    ("exec", &[]),
    ("exists", &[KeySpec { notes: "", flags: &["RO"], begin: Begin::Index(1), find: Find::Range(-1, 1, 0) }]),
    ("expire", &[KeySpec { notes: "", flags: &["RW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("expireat", &[KeySpec { notes: "", flags: &["RW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("expiretime", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("fcall", &[KeySpec { notes: "We cannot tell how the keys will be used so we assume the worst, RW and UPDATE", flags: &["RW", "access", "update"], begin: Begin::Index(2), find: Find::Keynum(0, 1, 1) }]),
    ("fcall_ro", &[KeySpec { notes: "We cannot tell how the keys will be used so we assume the worst, RO and ACCESS", flags: &["RO", "access"], begin: Begin::Index(2), find: Find::Keynum(0, 1, 1) }]),
    ("flushall", &[]),
    ("flushdb", &[]),
    ("function", &[]),
    ("function|delete", &[]),
    ("function|dump", &[]),
    ("function|flush", &[]),
    ("function|help", &[]),
    ("function|kill", &[]),
    ("function|list", &[]),
    ("function|load", &[]),
    ("function|restore", &[]),
    ("function|stats", &[]),
    ("geoadd", &[KeySpec { notes: "", flags: &["RW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("geodist", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("geohash", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("geopos", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("georadius", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }, KeySpec { notes: "", flags: &["OW", "update"], begin: Begin::Keyword("STORE", 6), find: Find::Range(0, 1, 0) }, KeySpec { notes: "", flags: &["OW", "update"], begin: Begin::Keyword("STOREDIST", 6), find: Find::Range(0, 1, 0) }]),
    ("georadius_ro", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("georadiusbymember", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }, KeySpec { notes: "", flags: &["OW", "update"], begin: Begin::Keyword("STORE", 5), find: Find::Range(0, 1, 0) }, KeySpec { notes: "", flags: &["OW", "update"], begin: Begin::Keyword("STOREDIST", 5), find: Find::Range(0, 1, 0) }]),
    ("georadiusbymember_ro", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("geosearch", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("geosearchstore", &[KeySpec { notes: "", flags: &["OW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }, KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }]),
    ("get", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("getbit", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("getdel", &[KeySpec { notes: "", flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("getex", &[KeySpec { notes: "RW and UPDATE because it changes the TTL", flags: &["RW", "access", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("getrange", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("getset", &[KeySpec { notes: "", flags: &["RW", "access", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("hdel", &[KeySpec { notes: "", flags: &["RW", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("hello", &[]),
    ("hexists", &[KeySpec { notes: "", flags: &["RO"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("hexpire", &[KeySpec { notes: "", flags: &["RW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("hexpireat", &[KeySpec { notes: "", flags: &["RW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("hexpiretime", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("hget", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("hgetall", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("hgetdel", &[KeySpec { notes: "", flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("hgetex", &[KeySpec { notes: "", flags: &["RW", "access", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("hincrby", &[KeySpec { notes: "", flags: &["RW", "access", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("hincrbyfloat", &[KeySpec { notes: "", flags: &["RW", "access", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("hkeys", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("hlen", &[KeySpec { notes: "", flags: &["RO"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("hmget", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("hmset", &[KeySpec { notes: "", flags: &["RW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("hpersist", &[KeySpec { notes: "", flags: &["RW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("hpexpire", &[KeySpec { notes: "", flags: &["RW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("hpexpireat", &[KeySpec { notes: "", flags: &["RW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("hpexpiretime", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("hpttl", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("hrandfield", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("hscan", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("hset", &[KeySpec { notes: "", flags: &["RW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("hsetex", &[KeySpec { notes: "", flags: &["RW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("hsetnx", &[KeySpec { notes: "", flags: &["RW", "insert"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("hstrlen", &[KeySpec { notes: "", flags: &["RO"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("httl", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("hvals", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("incr", &[KeySpec { notes: "", flags: &["RW", "access", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("incrby", &[KeySpec { notes: "", flags: &["RW", "access", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("incrbyfloat", &[KeySpec { notes: "", flags: &["RW", "access", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("info", &[]),
    ("keys", &[]),
    ("lastsave", &[]),
    ("latency", &[]),
    ("latency|doctor", &[]),
    ("latency|graph", &[]),
    ("latency|help", &[]),
    ("latency|histogram", &[]),
    ("latency|history", &[]),
    ("latency|latest", &[]),
    ("latency|reset", &[]),
    ("lcs", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(1, 1, 0) }]),
    ("lindex", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("linsert", &[KeySpec { notes: "", flags: &["RW", "insert"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("llen", &[KeySpec { notes: "", flags: &["RO"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("lmove", &[KeySpec { notes: "", flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }, KeySpec { notes: "", flags: &["RW", "insert"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }]),
    ("lmpop", &[KeySpec { notes: "", flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Keynum(0, 1, 1) }]),
    ("lolwut", &[]),
    ("lpop", &[KeySpec { notes: "", flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("lpos", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("lpush", &[KeySpec { notes: "", flags: &["RW", "insert"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("lpushx", &[KeySpec { notes: "", flags: &["RW", "insert"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("lrange", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("lrem", &[KeySpec { notes: "", flags: &["RW", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("lset", &[KeySpec { notes: "", flags: &["RW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("ltrim", &[KeySpec { notes: "", flags: &["RW", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("memory", &[]),
    ("memory|doctor", &[]),
    ("memory|help", &[]),
    ("memory|malloc-stats", &[]),
    ("memory|purge", &[]),
    ("memory|stats", &[]),
    ("memory|usage", &[KeySpec { notes: "", flags: &["RO"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }]),
    ("mget", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(-1, 1, 0) }]),
    ("migrate", &[KeySpec { notes: "", flags: &["RW", "access", "delete"], begin: Begin::Index(3), find: Find::Range(0, 1, 0) }, KeySpec { notes: "", flags: &["RW", "access", "delete", "incomplete"], begin: Begin::Keyword("KEYS", -2), find: Find::Range(-1, 1, 0) }]),
    ("monitor", &[]),
    ("move", &[KeySpec { notes: "", flags: &["RW", "access", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("mset", &[KeySpec { notes: "", flags: &["OW", "update"], begin: Begin::Index(1), find: Find::Range(-1, 2, 0) }]),
    ("msetnx", &[KeySpec { notes: "", flags: &["OW", "insert"], begin: Begin::Index(1), find: Find::Range(-1, 2, 0) }]),
    ("multi", &[]),
    ("object", &[]),
    ("object|encoding", &[KeySpec { notes: "", flags: &["RO"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }]),
    ("object|freq", &[KeySpec { notes: "", flags: &["RO"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }]),
    ("object|help", &[]),
    ("object|idletime", &[KeySpec { notes: "", flags: &["RO"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }]),
    ("object|refcount", &[KeySpec { notes: "", flags: &["RO"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }]),
    ("persist", &[KeySpec { notes: "", flags: &["RW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("pexpire", &[KeySpec { notes: "", flags: &["RW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("pexpireat", &[KeySpec { notes: "", flags: &["RW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("pexpiretime", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("pfadd", &[KeySpec { notes: "", flags: &["RW", "insert"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("pfcount", &[KeySpec { notes: "RW because it may change the internal representation of the key, and propagate to replicas", flags: &["RW", "access"], begin: Begin::Index(1), find: Find::Range(-1, 1, 0) }]),
    ("pfdebug", &[KeySpec { notes: "", flags: &["RW", "access"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }]),
    ("pfmerge", &[KeySpec { notes: "", flags: &["RW", "access", "insert"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }, KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(2), find: Find::Range(-1, 1, 0) }]),
    ("ping", &[]),
    ("psetex", &[KeySpec { notes: "", flags: &["OW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("psubscribe", &[]),
    ("pttl", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("publish", &[]),
    ("pubsub", &[]),
    ("pubsub|channels", &[]),
    ("pubsub|help", &[]),
    ("pubsub|numpat", &[]),
    ("pubsub|numsub", &[]),
    ("pubsub|shardchannels", &[]),
    ("pubsub|shardnumsub", &[]),
    ("punsubscribe", &[]),
    ("quit", &[]),
    ("randomkey", &[]),
    ("readonly", &[]),
    ("readwrite", &[]),
    ("rename", &[KeySpec { notes: "", flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }, KeySpec { notes: "", flags: &["OW", "update"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }]),
    ("renamenx", &[KeySpec { notes: "", flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }, KeySpec { notes: "", flags: &["OW", "insert"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }]),
    ("reset", &[]),
    ("restore", &[KeySpec { notes: "", flags: &["OW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("restore-asking", &[KeySpec { notes: "", flags: &["OW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("role", &[]),
    ("rpop", &[KeySpec { notes: "", flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("rpoplpush", &[KeySpec { notes: "", flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }, KeySpec { notes: "", flags: &["RW", "insert"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }]),
    ("rpush", &[KeySpec { notes: "", flags: &["RW", "insert"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("rpushx", &[KeySpec { notes: "", flags: &["RW", "insert"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("sadd", &[KeySpec { notes: "", flags: &["RW", "insert"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("save", &[]),
    ("scan", &[]),
    ("scard", &[KeySpec { notes: "", flags: &["RO"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("script", &[]),
    ("script|debug", &[]),
    ("script|exists", &[]),
    ("script|flush", &[]),
    ("script|help", &[]),
    ("script|kill", &[]),
    ("script|load", &[]),
    ("sdiff", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(-1, 1, 0) }]),
    ("sdiffstore", &[KeySpec { notes: "", flags: &["OW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }, KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(2), find: Find::Range(-1, 1, 0) }]),
    ("select", &[]),
    ("set", &[KeySpec { notes: "RW and ACCESS due to the optional `GET` argument", flags: &["RW", "access", "update", "variable_flags"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("setbit", &[KeySpec { notes: "", flags: &["RW", "access", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("setex", &[KeySpec { notes: "", flags: &["OW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("setnx", &[KeySpec { notes: "", flags: &["OW", "insert"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("setrange", &[KeySpec { notes: "", flags: &["RW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("shutdown", &[]),
    ("sinter", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(-1, 1, 0) }]),
    ("sintercard", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Keynum(0, 1, 1) }]),
    ("sinterstore", &[KeySpec { notes: "", flags: &["RW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }, KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(2), find: Find::Range(-1, 1, 0) }]),
    ("sismember", &[KeySpec { notes: "", flags: &["RO"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("slowlog", &[]),
    ("slowlog|get", &[]),
    ("slowlog|help", &[]),
    ("slowlog|len", &[]),
    ("slowlog|reset", &[]),
    ("smembers", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("smismember", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("smove", &[KeySpec { notes: "", flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }, KeySpec { notes: "", flags: &["RW", "insert"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }]),
    ("sort", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }, KeySpec { notes: "For the optional BY/GET keyword. It is marked 'unknown' because the key names derive from the content of the key we sort", flags: &["RO", "access"], begin: Begin::Unknown, find: Find::Unknown }, KeySpec { notes: "For the optional STORE keyword. It is marked 'unknown' because the keyword can appear anywhere in the argument array", flags: &["OW", "update"], begin: Begin::Unknown, find: Find::Unknown }]),
    ("sort_ro", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }, KeySpec { notes: "For the optional BY/GET keyword. It is marked 'unknown' because the key names derive from the content of the key we sort", flags: &["RO", "access"], begin: Begin::Unknown, find: Find::Unknown }]),
    ("spop", &[KeySpec { notes: "", flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("spublish", &[KeySpec { notes: "", flags: &["not_key"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("srandmember", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("srem", &[KeySpec { notes: "", flags: &["RW", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("sscan", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("ssubscribe", &[KeySpec { notes: "", flags: &["not_key"], begin: Begin::Index(1), find: Find::Range(-1, 1, 0) }]),
    ("strlen", &[KeySpec { notes: "", flags: &["RO"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("subscribe", &[]),
    ("substr", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("sunion", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(-1, 1, 0) }]),
    ("sunionstore", &[KeySpec { notes: "", flags: &["OW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }, KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(2), find: Find::Range(-1, 1, 0) }]),
    ("sunsubscribe", &[KeySpec { notes: "", flags: &["not_key"], begin: Begin::Index(1), find: Find::Range(-1, 1, 0) }]),
    ("swapdb", &[]),
    ("time", &[]),
    ("touch", &[KeySpec { notes: "", flags: &["RO"], begin: Begin::Index(1), find: Find::Range(-1, 1, 0) }]),
    ("ttl", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("type", &[KeySpec { notes: "", flags: &["RO"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("unlink", &[KeySpec { notes: "", flags: &["RM", "delete"], begin: Begin::Index(1), find: Find::Range(-1, 1, 0) }]),
    ("unsubscribe", &[]),
    ("unwatch", &[]),
    ("watch", &[KeySpec { notes: "", flags: &["RO"], begin: Begin::Index(1), find: Find::Range(-1, 1, 0) }]),
    ("xack", &[KeySpec { notes: "", flags: &["RW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("xackdel", &[KeySpec { notes: "", flags: &["RW", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("xadd", &[KeySpec { notes: "UPDATE instead of INSERT because of the optional trimming feature", flags: &["RW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("xautoclaim", &[KeySpec { notes: "", flags: &["RW", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("xclaim", &[KeySpec { notes: "", flags: &["RW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("xdel", &[KeySpec { notes: "", flags: &["RW", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("xdelex", &[KeySpec { notes: "", flags: &["RW", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("xgroup", &[]),
    ("xgroup|create", &[KeySpec { notes: "", flags: &["RW", "insert"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }]),
    ("xgroup|createconsumer", &[KeySpec { notes: "", flags: &["RW", "insert"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }]),
    ("xgroup|delconsumer", &[KeySpec { notes: "", flags: &["RW", "delete"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }]),
    ("xgroup|destroy", &[KeySpec { notes: "", flags: &["RW", "delete"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }]),
    ("xgroup|help", &[]),
    ("xgroup|setid", &[KeySpec { notes: "", flags: &["RW", "update"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }]),
    ("xinfo", &[]),
    ("xinfo|consumers", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }]),
    ("xinfo|groups", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }]),
    ("xinfo|help", &[]),
    ("xinfo|stream", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }]),
    ("xlen", &[KeySpec { notes: "", flags: &["RO"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("xpending", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("xrange", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("xread", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Keyword("STREAMS", 1), find: Find::Range(-1, 1, 2) }]),
    ("xreadgroup", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Keyword("STREAMS", 4), find: Find::Range(-1, 1, 2) }]),
    ("xrevrange", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("xsetid", &[KeySpec { notes: "", flags: &["RW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("xtrim", &[KeySpec { notes: "", flags: &["RW", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("zadd", &[KeySpec { notes: "", flags: &["RW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("zcard", &[KeySpec { notes: "", flags: &["RO"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("zcount", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("zdiff", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Keynum(0, 1, 1) }]),
    ("zdiffstore", &[KeySpec { notes: "", flags: &["OW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }, KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(2), find: Find::Keynum(0, 1, 1) }]),
    ("zincrby", &[KeySpec { notes: "", flags: &["RW", "access", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("zinter", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Keynum(0, 1, 1) }]),
    ("zintercard", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Keynum(0, 1, 1) }]),
    ("zinterstore", &[KeySpec { notes: "", flags: &["OW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }, KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(2), find: Find::Keynum(0, 1, 1) }]),
    ("zlexcount", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("zmpop", &[KeySpec { notes: "", flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Keynum(0, 1, 1) }]),
    ("zmscore", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("zpopmax", &[KeySpec { notes: "", flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("zpopmin", &[KeySpec { notes: "", flags: &["RW", "access", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("zrandmember", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("zrange", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("zrangebylex", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("zrangebyscore", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("zrangestore", &[KeySpec { notes: "", flags: &["OW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }, KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(2), find: Find::Range(0, 1, 0) }]),
    ("zrank", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("zrem", &[KeySpec { notes: "", flags: &["RW", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("zremrangebylex", &[KeySpec { notes: "", flags: &["RW", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("zremrangebyrank", &[KeySpec { notes: "", flags: &["RW", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("zremrangebyscore", &[KeySpec { notes: "", flags: &["RW", "delete"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("zrevrange", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("zrevrangebylex", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("zrevrangebyscore", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("zrevrank", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("zscan", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("zscore", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }]),
    ("zunion", &[KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(1), find: Find::Keynum(0, 1, 1) }]),
    ("zunionstore", &[KeySpec { notes: "", flags: &["OW", "update"], begin: Begin::Index(1), find: Find::Range(0, 1, 0) }, KeySpec { notes: "", flags: &["RO", "access"], begin: Begin::Index(2), find: Find::Keynum(0, 1, 1) }]),
];

#[cfg(test)]
mod tests {
    #[test]
    fn sorted_for_the_binary_search() {
        assert!(super::SPECS.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(super::of("get").len(), 1);
        assert_eq!(super::of("lmove").len(), 2);
        assert!(super::of("ping").is_empty());
        assert_eq!(super::of("object|encoding").len(), 1);
    }
}
