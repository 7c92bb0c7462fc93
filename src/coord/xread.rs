//! The reads of XREAD and XREADGROUP on one key, on its owner: the
//! commands' first try (`cmd::xread`, through `fan_out`) and the serving
//! of a client blocked on a stream (`coord::serve`) run the same code.

use crate::clock::now_ms;
use crate::error::{CmdError, CmdResult};
use crate::shard::ShardState;
use crate::types::notify::class;
use crate::types::stream::{Entry, Id, Stream};
use crate::types::xgroup::Nack;

/// Where a read starts on one key.
#[derive(Debug, Clone, Copy)]
pub enum From {
    /// After this ID.
    After(Id),
    /// `$`: after the stream's last ID when the read runs.
    Last,
    /// `>` (XREADGROUP): entries never delivered to the group.
    New,
    /// `+` (XREAD, Redis 7.4): the stream's last entry.
    LastEntry,
}

/// Entries as a read replies them: a deleted pending entry has no fields.
pub type Read = Vec<(Id, Option<Vec<Vec<u8>>>)>;

/// One key's part of the reply, or None to leave the key out.
pub type KeyRead = Option<Read>;

/// XREAD of `key` after `from`, on its owner.
pub fn read_key(st: &ShardState, db: u8, key: &[u8], from: From, count: u64) -> CmdResult<KeyRead> {
    Ok(read_key_after(st, db, key, from, count)?.0)
}

/// [`read_key`], and the ID it read after (`$` resolved: the last ID now,
/// 0-0 for a missing key), which a blocked XREAD waits to see passed.
pub fn read_key_after(st: &ShardState, db: u8, key: &[u8], from: From, count: u64) -> CmdResult<(KeyRead, Id)> {
    let Some(s) = Stream::open(&st.ks, db, key, now_ms(), false)? else {
        let after = match from {
            From::After(id) => id,
            _ => Id::MIN,
        };
        return Ok((None, after));
    };
    let after = match from {
        From::After(id) => id,
        From::LastEntry => match s.range(Id::MIN, Id::MAX, 1, true)?.first() {
            Some((top, _)) => top.decr().unwrap_or(Id::MIN),
            None => s.last_id(),
        },
        _ => s.last_id(),
    };
    let Some(start) = after.incr() else {
        return Ok((None, after));
    };
    let got = s.range(start, Id::MAX, count, false)?;
    Ok((
        (!got.is_empty()).then(|| got.into_iter().map(|(id, f)| (id, Some(f))).collect()),
        after,
    ))
}

/// XREADGROUP of `key` for consumer `c` of group `g`, on its owner.
#[allow(clippy::too_many_arguments)]
pub fn read_group_key(st: &ShardState, db: u8, key: &[u8], g: &[u8], c: &[u8], from: From, count: u64, noack: bool) -> CmdResult<KeyRead> {
    // A group read spoils no WATCH, as in Redis.
    st.ks.store.quietly(|| read_group_quiet(st, db, key, g, c, from, count, noack))
}

#[allow(clippy::too_many_arguments)]
fn read_group_quiet(st: &ShardState, db: u8, key: &[u8], g: &[u8], c: &[u8], from: From, count: u64, noack: bool) -> CmdResult<KeyRead> {
    let now = now_ms();
    let nogroup = || {
        CmdError::new(format!(
            "NOGROUP No such key '{}' or consumer group '{}' in XREADGROUP with GROUP option",
            String::from_utf8_lossy(key),
            String::from_utf8_lossy(g)
        ))
    };
    let mut s = Stream::open(&st.ks, db, key, now, false)?.ok_or_else(nogroup)?;
    let mut grp = s.group(g)?.ok_or_else(nogroup)?;
    // `>` with nothing new touches nothing, the consumer included (it is
    // made only when the read is served, as in Redis).
    let got: Vec<Entry> = match from {
        From::New if grp.last != Id::MAX => s.range(grp.last.incr().unwrap_or(Id::MAX), Id::MAX, count, false)?,
        _ => Vec::new(),
    };
    if matches!(from, From::New) && got.is_empty() {
        return Ok(None);
    }
    let (mut con, created) = s.consumer_or_new(g, &mut grp, c, now)?;
    if created {
        st.ks.notify(class::STREAM, "xgroup-createconsumer", db, key);
    }
    con.seen_ms = now;
    let mut out = Vec::new();
    match from {
        From::New => {
            // The first pending entry at or after the first new ID (there is
            // one only after a SETID back): a forward seek from there, which
            // never walks the deletes that acknowledgements leave behind.
            let mut pel_from = None;
            if let Some((first, _)) = got.first().filter(|_| !noack && grp.pending > 0) {
                s.group_pel(g, *first, Id::MAX, false, |id, _| {
                    pel_from = Some(id);
                    false
                })?;
            }
            for (id, fields) in got {
                if !noack {
                    let n = Nack {
                        delivery_ms: now,
                        deliveries: 1,
                        consumer: c.to_vec(),
                    };
                    let old = if pel_from.is_some_and(|f| id >= f) { s.nack(g, id)? } else { None };
                    match old {
                        Some(old) if old.consumer != c => {
                            // Delivered again after a SETID back: the entry
                            // changes hands.
                            if let Some(mut o) = s.consumer(g, &old.consumer)? {
                                o.pending = o.pending.saturating_sub(1);
                                s.put_consumer(g, &old.consumer, &o);
                            }
                            s.drop_nack(g, id, &old);
                            con.pending += 1;
                        }
                        Some(_) => {}
                        None => {
                            grp.pending += 1;
                            con.pending += 1;
                        }
                    }
                    s.put_nack(g, id, &n);
                }
                s.advance_group(&mut grp, id);
                out.push((id, Some(fields)));
            }
            if !out.is_empty() {
                con.active_ms = now;
            }
        }
        From::After(after) => {
            let mut ids = Vec::new();
            if let Some(start) = after.incr() {
                s.consumer_pel(g, c, start, Id::MAX, count, |id| {
                    ids.push(id);
                    true
                })?;
            }
            for id in ids {
                let entry = s.get(id)?.map(|(_, f)| f);
                // Delivered again, unless the entry is gone (Redis replies
                // its ID with no fields and leaves the counts alone).
                if let Some(mut n) = s.nack(g, id)?.filter(|_| entry.is_some()) {
                    n.delivery_ms = now;
                    n.deliveries += 1;
                    s.put_nack(g, id, &n);
                }
                out.push((id, entry));
            }
        }
        // `$` and `+` are refused for XREADGROUP before any read.
        From::Last | From::LastEntry => {}
    }
    s.put_consumer(g, c, &con);
    s.put_group(g, &grp);
    s.commit()?;
    Ok(match from {
        From::New if out.is_empty() => None,
        _ => Some(out),
    })
}

/// Whether stream `key` has an entry after `after`.
pub fn has_after(st: &ShardState, db: u8, key: &[u8], after: Id) -> CmdResult<bool> {
    let Some(s) = Stream::open(&st.ks, db, key, now_ms(), false)? else {
        return Ok(false);
    };
    let Some(start) = after.incr() else {
        return Ok(false);
    };
    Ok(s.last_id() >= start && !s.range(start, Id::MAX, 1, false)?.is_empty())
}
