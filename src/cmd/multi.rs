//! Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH (issue 15).
//!
//! The connection's state lives in `client::Multi`. Queueing and EXEC's run
//! of the queue happen in the dispatcher (`dispatch::execute`), since EXEC
//! runs commands as a batch through the same loop; the handlers here are
//! what runs outside that: MULTI starting a queue, DISCARD dropping it, and
//! EXEC without MULTI.

use bytes::Bytes;

use super::{commands, CommandSpec, Conn, Ctx, ShardFn};
use crate::clock::now_ms;
use crate::coord;
use crate::error::{CmdError, CmdResult};
use crate::resp::Reply;
use crate::types::multi as keys;

/// The transaction commands (`cmd::table` has the line format).
#[rustfmt::skip]
pub(super) const COMMANDS: &[CommandSpec] = commands! {
    "multi"   1 [noscript loading stale fast allow_busy] 0 0 0 Conn(multi)   transactions "1.2.0" "Starts a transaction.";
    "exec"    1 [noscript loading stale skip_slowlog]    0 0 0 Conn(exec)    transactions "1.2.0" "Executes all commands in a transaction.";
    "discard" 1 [noscript loading stale fast allow_busy] 0 0 0 Conn(discard) transactions "2.0.0" "Discards a transaction.";
    "watch"   -2 [noscript loading stale fast allow_busy] 1 -1 1 Conn(watch) transactions "2.2.0" "Monitors changes to keys to determine the execution of a transaction.";
    "unwatch" 1 [noscript loading stale fast allow_busy] 0 0 0 Conn(unwatch) transactions "2.2.0" "Forgets about watched keys of a transaction.";
};

/// EXEC's answer to a transaction a refused command spoiled.
pub const EXECABORT: &str = "EXECABORT Transaction discarded because of previous errors.";

/// The commands that run at once inside MULTI instead of being queued
/// (Redis's `processCommand`).
pub fn runs_in_multi(name: &str) -> bool {
    matches!(name, "exec" | "discard" | "multi" | "watch" | "quit" | "reset")
}

pub async fn multi(c: Conn<'_>, _: &[Bytes], r: &mut Reply) -> CmdResult {
    let client = c.client;
    if client.multi.is_some() {
        return Err(CmdError::new("ERR MULTI calls can not be nested"));
    }
    client.multi = Some(Default::default());
    client.info.multi.store(0, std::sync::atomic::Ordering::Relaxed);
    r.ok();
    Ok(())
}

pub async fn discard(c: Conn<'_>, _: &[Bytes], r: &mut Reply) -> CmdResult {
    match c.client.end_multi() {
        Some(_) => {
            r.ok();
            Ok(())
        }
        None => Err(CmdError::new("ERR DISCARD without MULTI")),
    }
}

/// WATCH: each key's owner sets the client's flag when a write touches it
/// (`storage::watch`); EXEC then answers a null array.
pub async fn watch(c: Conn<'_>, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    if c.client.multi.is_some() {
        return Err(CmdError::new("ERR WATCH inside MULTI is not allowed"));
    }
    let db = c.db();
    let w = c.client.watch.get_or_insert_with(Default::default);
    // Already spoiled: nothing more to watch (as Redis).
    if !w.flag.load(std::sync::atomic::Ordering::SeqCst) {
        let flag = w.flag.clone();
        // One job per owner, which registers the flag (`Keyspace::watch`).
        let keys = coord::keys_from(argv, 1, 1);
        let parts = coord::fan_out(c.shard, db, &keys, coord::Access::Read, move |st, ks| {
            ks.iter()
                .map(|k| st.ks.watch(db, k, now_ms(), &flag))
                .collect::<CmdResult<Vec<u64>>>()
        })
        .await;
        for (_, expires) in parts {
            let expires = expires?;
            if let Some(w) = c.client.watch.as_mut() {
                w.expires.extend(expires);
            }
        }
    }
    r.ok();
    Ok(())
}

pub async fn unwatch(c: Conn<'_>, _: &[Bytes], r: &mut Reply) -> CmdResult {
    c.client.watch = None;
    r.ok();
    Ok(())
}

/// The form a multi-key connection command takes inside EXEC's isolated
/// step, when all its keys belong to the shard running the step: the
/// per-shard part its connection handler would send to that one shard.
pub fn one_shard_form(name: &str) -> Option<ShardFn> {
    Some(match name {
        "del" | "unlink" => del_here,
        "exists" | "touch" => exists_here,
        "mget" => mget_here,
        "mset" => mset_here,
        "msetnx" => msetnx_here,
        "pfcount" => super::hll::pfcount_here,
        "pfmerge" => super::hll::pfmerge_here,
        _ => return None,
    })
}

fn del_here(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    r.int(keys::del_keys(&ctx.shard.ks, ctx.db, &argv[1..], ctx.now_ms)?);
    Ok(())
}

fn exists_here(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    r.int(keys::exists_keys(&ctx.shard.ks, ctx.db, &argv[1..], ctx.now_ms)?);
    Ok(())
}

fn mget_here(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let values = keys::mget_keys(&ctx.shard.ks, ctx.db, &argv[1..], ctx.now_ms)?;
    r.array(values.len());
    for v in &values {
        match v {
            Some(v) => r.bulk(v),
            None => r.null(),
        }
    }
    Ok(())
}

/// MSET's and MSETNX's pairs, with their arity check.
fn pairs(argv: &[Bytes], name: &str) -> CmdResult<Vec<(Bytes, Bytes)>> {
    if argv.len().is_multiple_of(2) {
        return Err(CmdError::new(super::arity_error(name)));
    }
    Ok(argv[1..].chunks(2).map(|p| (p[0].clone(), p[1].clone())).collect())
}

fn mset_here(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    keys::mset_pairs(
        &ctx.shard.ks,
        ctx.db,
        &pairs(argv, "mset")?,
        ctx.now_ms,
        false,
        crate::storage::intent::Rider::None,
    )?;
    r.ok();
    Ok(())
}

fn msetnx_here(ctx: &Ctx, argv: &[Bytes], r: &mut Reply) -> CmdResult {
    let done = keys::mset_pairs(
        &ctx.shard.ks,
        ctx.db,
        &pairs(argv, "msetnx")?,
        ctx.now_ms,
        true,
        crate::storage::intent::Rider::None,
    )?;
    r.int(done as i64);
    Ok(())
}

/// EXEC outside MULTI; inside, the dispatcher runs the queue instead.
pub async fn exec(_: Conn<'_>, _: &[Bytes], _: &mut Reply) -> CmdResult {
    Err(CmdError::new("ERR EXEC without MULTI"))
}
