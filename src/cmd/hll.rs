//! HyperLogLog commands: PFADD, PFCOUNT, PFMERGE, PFDEBUG and PFSELFTEST.
//! An HLL is a string in Redis's own layout (`types::hll`), so GET, SET,
//! DUMP and RESTORE move it to and from redis-server unchanged. PFCOUNT
//! and PFMERGE read their sources on the shards that own them; PFMERGE's
//! destination is one write on its owner.

use std::borrow::Cow;
use std::sync::atomic::Ordering;

use bytes::Bytes;

use super::{commands, CommandSpec};
use super::{Conn, Ctx};
use crate::clock::now_ms;
use crate::error::{CmdError, CmdResult, WRONGTYPE};
use crate::resp::Reply;
use crate::shard::ShardState;
use crate::slot::owner;
use crate::types::bigstr::{self, Str};
use crate::types::hll::{self, Bad, Hll, REGISTERS};
use crate::types::keyspace::Keyspace;
use crate::types::notify::class::STRING;

/// The HyperLogLog commands (`cmd::table` has the line format).
#[rustfmt::skip]
pub(super) const COMMANDS: &[CommandSpec] = commands! {
    "pfadd"      -2 [write denyoom fast]    1 1 1  Shard(pfadd)      hyperloglog "2.8.9" "Adds elements to a HyperLogLog key. Creates the key if it doesn't exist.";
    "pfcount"    -2 [readonly]              1 -1 1 Conn(pfcount)     hyperloglog "2.8.9" "Returns the approximated cardinality of the set(s) observed by the HyperLogLog key(s).";
    "pfmerge"    -2 [write denyoom]         1 -1 1 Conn(pfmerge)     hyperloglog "2.8.9" "Merges one or more HyperLogLog values into a single key.";
    "pfdebug"    3  [write denyoom admin]   2 2 1  Shard(pfdebug)    hyperloglog "2.8.9" "Internal commands for debugging HyperLogLog values.";
    "pfselftest" 1  [admin]                 0 0 0  Shard(pfselftest) hyperloglog "2.8.9" "An internal command for testing HyperLogLog values.";
};

const NOT_HLL: CmdError = CmdError(Cow::Borrowed("WRONGTYPE Key is not a valid HyperLogLog string value."));
const INVALID: CmdError = CmdError(Cow::Borrowed("INVALIDOBJ Corrupted HLL object detected"));

fn bad(b: Bad) -> CmdError {
    match b {
        Bad::NotHll => NOT_HLL,
        Bad::Corrupt => INVALID,
    }
}

fn sparse_max(st: &ShardState) -> usize {
    st.global.config.hll_sparse_max_bytes.load(Ordering::Relaxed) as usize
}

/// A stored HLL, copied out: the string, its expiry, and what `bigstr::put`
/// needs to replace it.
struct Stored {
    hll: Hll,
    expire: u64,
    coll: Option<crate::storage::meta::Coll>,
}

/// What [`read`] found.
enum Found<R> {
    Missing,
    /// Answered from the stored bytes, no copy.
    Here(R),
    /// Copied out, to be changed.
    Copied(Box<Stored>),
}

/// The HLL at `key`, in one read: `here` answers from the stored bytes
/// when it can (Some: no copy of an inline value), else the string is
/// copied out. WRONGTYPE for other types, Redis's "not a valid
/// HyperLogLog" for a string that is not one.
fn read<R>(ks: &Keyspace, db: u8, key: &[u8], now: u64, here: impl FnOnce(&[u8]) -> Option<R>) -> CmdResult<Found<R>> {
    ks.read(db, key, now, |m| {
        let Some(m) = m else { return Ok(Found::Missing) };
        let copy;
        let v: &[u8] = match bigstr::of(&m)?.ok_or(WRONGTYPE)? {
            Str::Inline(v) => v,
            s => {
                copy = bigstr::read_all(ks, db, key, s)?;
                &copy
            }
        };
        Hll::check(v).map_err(bad)?;
        if let Some(r) = here(v) {
            return Ok(Found::Here(r));
        }
        Ok(Found::Copied(Box::new(Stored {
            hll: Hll(v.to_vec()),
            expire: m.expire_ms,
            coll: m.coll(),
        })))
    })?
}

/// The HLL at `key`, copied out; None when missing.
fn load(ks: &Keyspace, db: u8, key: &[u8], now: u64) -> CmdResult<Option<Stored>> {
    Ok(match read(ks, db, key, now, |_| None::<()>)? {
        Found::Copied(s) => Some(*s),
        Found::Missing | Found::Here(()) => None,
    })
}

/// Writes `hll` at `key` over `old` (None: a new key, no expiry).
fn save(ks: &Keyspace, db: u8, key: &[u8], hll: &Hll, old: Option<&Stored>) -> CmdResult {
    let expire = old.map_or(0, |o| o.expire);
    bigstr::put(ks, db, key, expire, &hll.0, old.map(|o| o.expire), old.and_then(|o| o.coll.clone()))
}

pub fn pfadd(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let key = &argv[1][..];
    let adds: Vec<(usize, u8)> = argv[2..].iter().map(|e| hll::register_of(e)).collect();
    // A dense HLL no element raises is answered where it lies: no copy,
    // no write (most PFADDs to a busy counter).
    let old = match read(ctx.ks(), ctx.db, key, ctx.now_ms, |v| {
        (!hll::is_sparse(v) && !hll::dense_grows(v, &adds)).then_some(())
    })? {
        Found::Here(()) => {
            r.int(0);
            return Ok(());
        }
        Found::Missing => None,
        Found::Copied(s) => Some(*s),
    };
    let mut hll = old.as_ref().map_or_else(Hll::new, |o| o.hll.clone());
    let max = sparse_max(ctx.shard);
    let mut updated = old.is_none();
    for &(index, count) in &adds {
        match hll.raise(index, count, max) {
            Ok(grew) => updated |= grew,
            Err(_) => {
                // As redis-server: what was added before the broken part
                // stays, with no event.
                if updated {
                    save(ctx.ks(), ctx.db, key, &hll, old.as_ref())?;
                }
                return Err(INVALID);
            }
        }
    }
    if updated {
        // A new HLL's cache is stale too, as redis-server leaves it.
        hll.invalidate();
        save(ctx.ks(), ctx.db, key, &hll, old.as_ref())?;
        ctx.notify(STRING, "pfadd", key);
    }
    r.int(updated as i64);
    Ok(())
}

/// PFCOUNT of one key on its owner: the cached cardinality, or the
/// estimate, then cached in the string (a write, as redis-server's).
fn count_one(ks: &Keyspace, db: u8, key: &[u8], now: u64) -> CmdResult<u64> {
    match read(ks, db, key, now, hll::cached_of)? {
        Found::Missing => Ok(0),
        Found::Here(n) => Ok(n),
        Found::Copied(mut old) => {
            let n = hll::count_of(&old.hll.0).map_err(bad)?;
            old.hll.set_cached(n);
            save(ks, db, key, &old.hll, Some(&old))?;
            Ok(n)
        }
    }
}

/// The registers of `keys` (all on this shard), merged into `max`; whether
/// any is dense. Stops at the first key that is not an HLL.
fn gather(ks: &Keyspace, db: u8, keys: &[Bytes], now: u64, max: &mut [u8]) -> CmdResult<bool> {
    let mut dense = false;
    for k in keys {
        let merged = read(ks, db, k, now, |v| {
            dense |= !hll::is_sparse(v);
            Some(hll::merge_into(v, max))
        })?;
        if let Found::Here(m) = merged {
            m.map_err(bad)?;
        }
    }
    Ok(dense)
}

/// The registers of `keys`, read on their owners (runs of keys with one
/// owner in one message, in order, so the first bad key's error is the
/// one answered), and whether any is dense.
async fn gather_all(c: &Conn<'_>, keys: &[Bytes]) -> CmdResult<(Vec<u8>, bool)> {
    let (shard, db, n) = (c.shard, c.db(), c.shard.count());
    let mut max = vec![0u8; REGISTERS];
    let mut dense = false;
    let mut i = 0;
    while i < keys.len() {
        let target = owner(&keys[i], n);
        let mut end = i + 1;
        while end < keys.len() && owner(&keys[end], n) == target {
            end += 1;
        }
        let run = keys[i..end].to_vec();
        let part = std::mem::take(&mut max);
        let (part, d) = shard
            .invoke_on(target, move |st: &ShardState| {
                let mut part = part;
                gather(&st.ks, db, &run, now_ms(), &mut part).map(|d| (part, d))
            })
            .await?;
        max = part;
        dense |= d;
        i = end;
    }
    Ok((max, dense))
}

pub async fn pfcount(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    if argv.len() == 2 {
        let (shard, db, key) = (c.shard, c.db(), argv[1].clone());
        let n = shard
            .invoke_on(owner(&key, shard.count()), move |st: &ShardState| {
                count_one(&st.ks, db, &key, now_ms())
            })
            .await?;
        r.int(n as i64);
        return Ok(());
    }
    let (max, _) = gather_all(&c, &argv[1..]).await?;
    r.int(hll::estimate(&max) as i64);
    Ok(())
}

/// PFMERGE's write on the destination's owner: the destination (created
/// sparse when missing, dense when any input was) with every register
/// raised to `max`'s.
fn merge_store(st: &ShardState, db: u8, dst: &[u8], max: &[u8], dense: bool) -> CmdResult {
    let ks = &st.ks;
    let old = load(ks, db, dst, now_ms())?;
    let mut hll = old.as_ref().map_or_else(Hll::new, |o| o.hll.clone());
    if dense {
        hll.to_dense().map_err(bad)?;
    }
    hll.merge_max(max, sparse_max(st)).map_err(bad)?;
    save(ks, db, dst, &hll, old.as_ref())?;
    ks.notify(STRING, "pfadd", db, dst);
    Ok(())
}

pub async fn pfmerge(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    // The destination is a source too.
    let (max, dense) = gather_all(&c, &argv[1..]).await?;
    let (shard, db, dst) = (c.shard, c.db(), argv[1].clone());
    shard
        .invoke_on(owner(&dst, shard.count()), move |st: &ShardState| {
            merge_store(st, db, &dst, &max, dense)
        })
        .await?;
    r.ok();
    Ok(())
}

/// PFCOUNT and PFMERGE inside EXEC's isolated step, every key on this
/// shard (`multi::one_shard_form`).
pub fn pfcount_here(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    if argv.len() == 2 {
        r.int(count_one(ctx.ks(), ctx.db, &argv[1], ctx.now_ms)? as i64);
        return Ok(());
    }
    let mut max = vec![0u8; REGISTERS];
    gather(ctx.ks(), ctx.db, &argv[1..], ctx.now_ms, &mut max)?;
    r.int(hll::estimate(&max) as i64);
    Ok(())
}

pub fn pfmerge_here(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let mut max = vec![0u8; REGISTERS];
    let dense = gather(ctx.ks(), ctx.db, &argv[1..], ctx.now_ms, &mut max)?;
    merge_store(ctx.shard, ctx.db, &argv[1], &max, dense)?;
    r.ok();
    Ok(())
}

pub fn pfdebug(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let key = &argv[2][..];
    let Some(mut old) = load(ctx.ks(), ctx.db, key, ctx.now_ms)? else {
        return Err(CmdError::new("ERR The specified key does not exist"));
    };
    let sub = argv[1].to_ascii_lowercase();
    match &sub[..] {
        b"getreg" => {
            if hll::is_sparse(&old.hll.0) {
                old.hll.to_dense().map_err(bad)?;
                save(ctx.ks(), ctx.db, key, &old.hll, Some(&old))?;
            }
            let regs = old.hll.registers().map_err(bad)?;
            r.array(regs.len());
            for v in regs {
                r.int(v as i64);
            }
        }
        b"decode" => {
            if !hll::is_sparse(&old.hll.0) {
                return Err(CmdError::new("ERR HLL encoding is not sparse"));
            }
            r.bulk(hll::decode(&old.hll.0).as_bytes());
        }
        b"encoding" => r.simple(if hll::is_sparse(&old.hll.0) { "sparse" } else { "dense" }),
        b"todense" => {
            let sparse = hll::is_sparse(&old.hll.0);
            if sparse {
                old.hll.to_dense().map_err(bad)?;
                save(ctx.ks(), ctx.db, key, &old.hll, Some(&old))?;
            }
            r.int(sparse as i64);
        }
        _ => {
            return Err(CmdError::new(format!(
                "ERR Unknown PFDEBUG subcommand '{}'",
                String::from_utf8_lossy(&argv[1])
            )))
        }
    }
    Ok(())
}

pub fn pfselftest(ctx: &Ctx, _: &[Bytes], r: &mut Reply) -> CmdResult {
    let seed = now_ms() ^ 0x9e37_79b9_7f4a_7c15;
    hll::selftest(sparse_max(ctx.shard), seed).map_err(CmdError::new)?;
    r.ok();
    Ok(())
}
