//! The parameter table: every Redis 7.2 parameter (with its old alias),
//! and Basalt's own. One line each: name, built-in default (Redis's, where
//! Basalt does not differ), what it accepts, and either `live` (Basalt acts
//! on it) or `inert` with the reason it has no meaning here; `fixed`: not
//! settable by CONFIG SET; `protected`: only with enable-protected-configs.
//! tuning.md lists the inert ones with these reasons.

use super::{Kind::*, Mode, Param};

const I32: i64 = i32::MAX as i64;

const ACL: &str = "a new ACL user always starts with `resetchannels`, Redis's default";
const ALLOC: &str = "no in-memory dictionaries to rehash or defragment: data lives in RocksDB, whose compaction rewrites it on disk";
const CLUSTER: &str = "no cluster bus, replicas or failover yet: one process is the whole cluster (docs/cluster.md)";
const EVICTION: &str = "nothing is evicted: data lives on disk, and maxmemory sizes the caches in front of it (docs/larger-than-memory.md)";
const QUICKLIST: &str = "list elements are RocksDB records, compressed by block with the rest of the data (bottommost-compression): there are no quicklist nodes to compress";
const FILES: &str = "RocksDB's WAL and SST files replace RDB and AOF: every write is in the WAL (appendfsync says when it is synced), BGSAVE makes a checkpoint";
const HZ: &str = "the housekeeping tick is fixed by hz";
const LAZYFREE: &str = "deleting a big collection already costs one record: its members are reclaimed by compaction, off the command";
const LOCALE: &str = "SORT ALPHA compares bytes, as redis-server does in the C locale (its default when the environment sets none); other locales are not followed";
const MODULES: &str = "no modules";
const OUTPUT: &str = "replies are written per batch and not yet capped per client class";
const PROCESS: &str = "process management (daemon, supervisor, pid file, syslog, title, THP, OOM score, CPU lists, signal policy) is the service manager's: Basalt runs in the foreground, logs with loglevel/logfile, and always syncs the WAL on shutdown";
const REPL: &str = "no replication yet";
const RESTORE: &str = "RESTORE always checks its whole payload";
const SOCKETS: &str = "the listener is glommio's TCP socket with its own backlog and no keepalive; no unix socket yet";
const THREADS: &str = "thread-per-core: every shard does its own I/O (the number of shards is `shards`)";
const TLS: &str = "no TLS listener: terminate TLS in front of Basalt";
const TRACKING: &str = "no client-side caching (CLIENT TRACKING) yet";

const fn live(name: &'static str, default: &'static str, kind: super::Kind) -> Param {
    Param {
        name,
        alias: "",
        default,
        kind,
        mode: Mode::Mutable,
        inert: None,
    }
}

const fn inert(name: &'static str, default: &'static str, kind: super::Kind, why: &'static str) -> Param {
    Param {
        inert: Some(why),
        ..live(name, default, kind)
    }
}

impl Param {
    const fn fixed(self) -> Param {
        let mode = match self.mode {
            Mode::Protected | Mode::ProtectedFixed => Mode::ProtectedFixed,
            Mode::Mutable | Mode::Immutable => Mode::Immutable,
        };
        Param { mode, ..self }
    }

    const fn protected(self) -> Param {
        let mode = match self.mode {
            Mode::Immutable | Mode::ProtectedFixed => Mode::ProtectedFixed,
            Mode::Mutable | Mode::Protected => Mode::Protected,
        };
        Param { mode, ..self }
    }

    const fn alias(self, alias: &'static str) -> Param {
        Param { alias, ..self }
    }
}

#[rustfmt::skip]
pub(super) const PARAMS: &[Param] = &[
    live("port", "6379", Int(0, 65535)).fixed(),
    live("bind", "127.0.0.1", Str).fixed(),
    live("dir", "./basalt-data", Str).protected().fixed(),
    live("databases", "16", Int(1, 254)).fixed(),
    live("requirepass", "", Str),
    live("acllog-max-len", "128", Int(0, i64::MAX)),
    live("aclfile", "", Str).fixed(),
    live("protected-mode", "yes", Bool),
    live("appendfsync", "everysec", Enum(&["everysec", "always", "no"])),
    live("maxclients", "10000", Int(1, u32::MAX as i64)),
    live("timeout", "0", Int(0, I32)),
    live("loglevel", "notice", Enum(&["debug", "verbose", "notice", "warning", "nothing"])),
    live("logfile", "", Str).fixed(),
    live("proto-max-bulk-len", "536870912", Bytes(1024 * 1024, i64::MAX)),
    live("client-query-buffer-limit", "1073741824", Bytes(1024 * 1024, i64::MAX)),
    live("maxmemory", "0", UBytes),
    live("hz", "10", Int(0, I32)),
    live("slowlog-log-slower-than", "10000", Int(-1, i64::MAX)),
    live("slowlog-max-len", "128", Int(0, i64::MAX)),
    live("latency-monitor-threshold", "0", Int(0, i64::MAX)),
    live("latency-tracking", "yes", Bool),
    live("latency-tracking-info-percentiles", "50 99 99.9", Percentiles),
    live("enable-debug-command", "no", Enum(&["no", "yes", "local"])).fixed(),
    live("hash-max-listpack-entries", "512", Int(0, i64::MAX)).alias("hash-max-ziplist-entries"),
    live("hash-max-listpack-value", "64", Bytes(0, i64::MAX)).alias("hash-max-ziplist-value"),
    live("set-max-intset-entries", "512", Int(0, i64::MAX)),

    inert("acl-pubsub-default", "resetchannels", Enum(&["allchannels", "resetchannels"]), ACL),
    inert("active-defrag-cycle-max", "25", Int(1, 99), ALLOC),
    inert("active-defrag-cycle-min", "1", Int(1, 99), ALLOC),
    inert("active-defrag-ignore-bytes", "104857600", Bytes(1, i64::MAX), ALLOC),
    inert("active-defrag-max-scan-fields", "1000", Int(1, i64::MAX), ALLOC),
    inert("active-defrag-threshold-lower", "10", Int(0, 1000), ALLOC),
    inert("active-defrag-threshold-upper", "100", Int(0, 1000), ALLOC),
    live("active-expire-effort", "1", Int(1, 10)),
    inert("activedefrag", "no", Bool, ALLOC),
    inert("activerehashing", "yes", Bool, ALLOC),
    inert("always-show-logo", "no", Bool, PROCESS).fixed(),
    inert("aof-disable-auto-gc", "no", Bool, FILES),
    inert("aof-load-truncated", "yes", Bool, FILES),
    inert("aof-rewrite-incremental-fsync", "yes", Bool, FILES),
    inert("aof-timestamp-enabled", "no", Bool, FILES),
    inert("aof-use-rdb-preamble", "yes", Bool, FILES),
    inert("aof_rewrite_cpulist", "", Str, FILES).fixed(),
    inert("appenddirname", "appendonlydir", Str, FILES).fixed(),
    inert("appendfilename", "appendonly.aof", Str, FILES).fixed(),
    inert("appendonly", "yes", Bool, FILES),
    inert("auto-aof-rewrite-min-size", "67108864", Bytes(0, i64::MAX), FILES),
    inert("auto-aof-rewrite-percentage", "100", Int(0, I32), FILES),
    inert("bgsave_cpulist", "", Str, PROCESS).fixed(),
    inert("bind-source-addr", "", Str, REPL),
    inert("bio_cpulist", "", Str, PROCESS).fixed(),
    live("busy-reply-threshold", "5000", Int(0, i64::MAX)).alias("lua-time-limit"),
    live("client-output-buffer-limit", "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60", OutputLimits),
    inert("cluster-allow-pubsubshard-when-down", "yes", Bool, CLUSTER),
    live("cluster-allow-reads-when-down", "no", Bool),
    inert("cluster-allow-replica-migration", "yes", Bool, CLUSTER),
    live("cluster-announce-bus-port", "0", Int(0, 65535)),
    inert("cluster-announce-hostname", "", Hostname, CLUSTER),
    inert("cluster-announce-human-nodename", "", Str, CLUSTER),
    live("cluster-announce-ip", "", Str),
    live("cluster-announce-port", "0", Int(0, 65535)),
    inert("cluster-announce-tls-port", "0", Int(0, 65535), CLUSTER),
    live("cluster-config-file", "nodes.conf", Str).fixed(),
    live("cluster-enabled", "no", Bool).fixed(),
    inert("cluster-link-sendbuf-limit", "0", UBytes, CLUSTER),
    inert("cluster-migration-barrier", "1", Int(0, I32), CLUSTER),
    inert("cluster-node-timeout", "15000", Int(0, i64::MAX), CLUSTER),
    live("cluster-port", "0", Int(0, 65535)).fixed(),
    inert("cluster-preferred-endpoint-type", "ip", Enum(&["ip", "hostname", "unknown-endpoint"]), CLUSTER),
    inert("cluster-replica-no-failover", "no", Bool, CLUSTER).alias("cluster-slave-no-failover"),
    inert("cluster-replica-validity-factor", "10", Int(0, I32), CLUSTER).alias("cluster-slave-validity-factor"),
    live("cluster-require-full-coverage", "yes", Bool),
    inert("crash-log-enabled", "yes", Bool, PROCESS),
    inert("crash-memcheck-enabled", "yes", Bool, PROCESS),
    inert("daemonize", "no", Bool, PROCESS).fixed(),
    inert("dbfilename", "dump.rdb", Str, FILES).protected(),
    inert("disable-thp", "yes", Bool, PROCESS).fixed(),
    inert("dynamic-hz", "yes", Bool, HZ),
    inert("enable-module-command", "no", Enum(&["no", "yes", "local"]), MODULES).fixed(),
    live("enable-protected-configs", "no", Enum(&["no", "yes", "local"])).fixed(),
    live("hll-sparse-max-bytes", "3000", Bytes(0, i64::MAX)),
    inert("ignore-warnings", "", Str, PROCESS),
    inert("io-threads", "1", Int(1, 128), THREADS).fixed(),
    inert("io-threads-do-reads", "no", Bool, THREADS).fixed(),
    inert("jemalloc-bg-thread", "yes", Bool, ALLOC),
    inert("lazyfree-lazy-eviction", "no", Bool, LAZYFREE),
    inert("lazyfree-lazy-expire", "no", Bool, LAZYFREE),
    inert("lazyfree-lazy-server-del", "no", Bool, LAZYFREE),
    inert("lazyfree-lazy-user-del", "no", Bool, LAZYFREE),
    inert("lazyfree-lazy-user-flush", "no", Bool, LAZYFREE),
    live("lfu-decay-time", "1", Int(0, I32)),
    live("lfu-log-factor", "10", Int(0, I32)),
    inert("list-compress-depth", "0", Int(0, I32), QUICKLIST),
    live("list-max-listpack-size", "-2", Int(-I32 - 1, I32)).alias("list-max-ziplist-size"),
    inert("locale-collate", "", Str, LOCALE),
    inert("masterauth", "", Str, REPL),
    inert("masteruser", "", Str, REPL),
    inert("maxmemory-clients", "0", MemOrPercent, OUTPUT),
    inert("maxmemory-eviction-tenacity", "10", Int(0, 100), EVICTION),
    live("maxmemory-policy", "noeviction", Enum(&["volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl", "allkeys-lru", "allkeys-lfu", "allkeys-random", "noeviction"])),
    inert("maxmemory-samples", "5", Int(1, I32), EVICTION),
    inert("min-replicas-max-lag", "10", Int(0, I32), REPL).alias("min-slaves-max-lag"),
    inert("min-replicas-to-write", "0", Int(0, I32), REPL).alias("min-slaves-to-write"),
    inert("no-appendfsync-on-rewrite", "no", Bool, FILES),
    live("notify-keyspace-events", "", Events),
    inert("oom-score-adj", "no", Enum(&["no", "yes", "relative", "absolute"]), PROCESS),
    inert("oom-score-adj-values", "0 200 800", OomValues, PROCESS),
    inert("pidfile", "/var/run/redis.pid", Str, PROCESS).fixed(),
    inert("proc-title-template", "{title} {listen-addr} {server-mode}", Str, PROCESS),
    inert("propagation-error-behavior", "ignore", Enum(&["ignore", "panic", "panic-on-replicas"]), REPL),
    inert("rdb-del-sync-files", "no", Bool, FILES),
    inert("rdb-save-incremental-fsync", "yes", Bool, FILES),
    inert("rdbchecksum", "yes", Bool, FILES).fixed(),
    inert("rdbcompression", "yes", Bool, FILES),
    inert("repl-backlog-size", "1048576", Bytes(1, i64::MAX), REPL),
    inert("repl-backlog-ttl", "3600", Int(0, i64::MAX), REPL),
    inert("repl-disable-tcp-nodelay", "no", Bool, REPL),
    inert("repl-diskless-load", "disabled", Enum(&["disabled", "on-empty-db", "swapdb"]), REPL),
    inert("repl-diskless-sync", "yes", Bool, REPL),
    inert("repl-diskless-sync-delay", "5", Int(0, I32), REPL),
    inert("repl-diskless-sync-max-replicas", "0", Int(0, I32), REPL),
    inert("repl-ping-replica-period", "10", Int(1, I32), REPL).alias("repl-ping-slave-period"),
    inert("repl-timeout", "60", Int(1, I32), REPL),
    inert("replica-announce-ip", "", Str, REPL).alias("slave-announce-ip"),
    inert("replica-announce-port", "0", Int(0, 65535), REPL).alias("slave-announce-port"),
    inert("replica-announced", "yes", Bool, REPL),
    inert("replica-ignore-disk-write-errors", "no", Bool, REPL),
    inert("replica-ignore-maxmemory", "yes", Bool, REPL).alias("slave-ignore-maxmemory"),
    inert("replica-lazy-flush", "no", Bool, REPL).alias("slave-lazy-flush"),
    inert("replica-priority", "100", Int(0, I32), REPL).alias("slave-priority"),
    inert("replica-read-only", "yes", Bool, REPL).alias("slave-read-only"),
    inert("replica-serve-stale-data", "yes", Bool, REPL).alias("slave-serve-stale-data"),
    inert("replicaof", "", Str, REPL).fixed().alias("slaveof"),
    inert("sanitize-dump-payload", "no", Enum(&["no", "yes", "clients"]), RESTORE),
    inert("save", "", Save, FILES),
    inert("server_cpulist", "", Str, PROCESS).fixed(),
    live("set-max-listpack-entries", "128", Int(0, i64::MAX)),
    live("set-max-listpack-value", "64", Bytes(0, i64::MAX)),
    inert("set-proc-title", "yes", Bool, PROCESS).fixed(),
    inert("shutdown-on-sigint", "default", Enum(&["default", "save", "nosave", "now", "force"]), PROCESS),
    inert("shutdown-on-sigterm", "default", Enum(&["default", "save", "nosave", "now", "force"]), PROCESS),
    inert("shutdown-timeout", "10", Int(0, I32), PROCESS),
    inert("socket-mark-id", "0", Int(0, i64::MAX), SOCKETS).fixed(),
    inert("stop-writes-on-bgsave-error", "yes", Bool, FILES),
    live("stream-node-max-bytes", "4096", Bytes(0, i64::MAX)),
    live("stream-node-max-entries", "100", Int(0, i64::MAX)),
    inert("supervised", "no", Enum(&["upstart", "systemd", "auto", "no"]), PROCESS).fixed(),
    inert("syslog-enabled", "no", Bool, PROCESS).fixed(),
    inert("syslog-facility", "local0", Enum(&["user", "local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7"]), PROCESS).fixed(),
    inert("syslog-ident", "redis", Str, PROCESS).fixed(),
    inert("tcp-backlog", "511", Int(0, i32::MAX as i64), SOCKETS).fixed(),
    inert("tcp-keepalive", "300", Int(0, I32), SOCKETS),
    inert("tls-auth-clients", "yes", Enum(&["no", "yes", "optional"]), TLS),
    inert("tls-ca-cert-dir", "", Str, TLS),
    inert("tls-ca-cert-file", "", Str, TLS),
    inert("tls-cert-file", "", Str, TLS),
    inert("tls-ciphers", "", Str, TLS),
    inert("tls-ciphersuites", "", Str, TLS),
    inert("tls-client-cert-file", "", Str, TLS),
    inert("tls-client-key-file", "", Str, TLS),
    inert("tls-client-key-file-pass", "", Str, TLS),
    inert("tls-cluster", "no", Bool, TLS),
    inert("tls-dh-params-file", "", Str, TLS),
    inert("tls-key-file", "", Str, TLS),
    inert("tls-key-file-pass", "", Str, TLS),
    inert("tls-port", "0", Int(0, 65535), TLS),
    inert("tls-prefer-server-ciphers", "no", Bool, TLS),
    inert("tls-protocols", "", Str, TLS),
    inert("tls-replication", "no", Bool, TLS),
    inert("tls-session-cache-size", "20480", Int(0, I32), TLS),
    inert("tls-session-cache-timeout", "300", Int(0, I32), TLS),
    inert("tls-session-caching", "yes", Bool, TLS),
    inert("tracking-table-max-keys", "1000000", Int(0, i64::MAX), TRACKING),
    inert("unixsocket", "", Str, SOCKETS).fixed(),
    inert("unixsocketperm", "0", Int(0, i64::MAX), SOCKETS).fixed(),
    live("zset-max-listpack-entries", "128", Int(0, i64::MAX)).alias("zset-max-ziplist-entries"),
    live("zset-max-listpack-value", "64", Bytes(0, i64::MAX)).alias("zset-max-ziplist-value"),
    // Basalt's own: members per count block of a big sorted set (docs/encoding.md).
    live("zset-rank-block", "64", Int(2, 65536)).fixed(),
    // Basalt's own (tuning.md).
    live("shards", "0", Int(0, 1024)).fixed(),
    live("cores", "", Str).fixed(),
    live("listen-shards", "", Str).fixed(),
    // Basalt's own (docs/cluster.md): every shard a cluster node on its own port.
    live("cluster-port-per-shard", "no", Bool).fixed(),
    live("cluster-shard-ports", "", Str).fixed(),
    live("shard-spin-us", "0", Int(0, 100_000)).fixed(),
    // How long a busy shard runs before it polls its sockets and peers
    // again (shards::DEFAULT_PREEMPT, tuning.md).
    live("shard-preempt-us", "2000", Int(10, 1_000_000)).fixed(),
    live("min-free-disk", "134217728", Bytes(0, i64::MAX)),
    live("block-cache-size", "268435456", Bytes(1 << 20, i64::MAX)).fixed(),
    live("meta-cache-size", "536870912", Bytes(0, i64::MAX)).fixed(),
    // Basalt's own (storage::wtier): the write tier's memory, all shards
    // together; 0 off. Left at its default, a memory budget sizes it.
    live("write-tier-memory", "268435456", Bytes(0, i64::MAX)).fixed(),
    // Whether an idle shard writes its tier back (server/writeback.rs).
    live("write-tier-idle-drain", "yes", Bool),
    live("write-buffer-size", "67108864", Bytes(1 << 20, 1 << 34)).fixed(),
    live("bottommost-compression", "zstd", Enum(&["zstd", "lz4", "none"])).fixed(),
    live("disk-read-threads", "16", Int(0, 1024)).fixed(),
    live("background-priority", "low-flush", Enum(&["low-flush", "low", "normal"])).fixed(),
];
