//! A run of pipelined shard commands spread over several shards: one
//! message per shard, all shards at once, replies in command order.
//! (Dragonfly calls this pipeline squashing.)

use std::rc::Rc;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use shards::{Shard, Then};

use super::{precheck, share_job, splice_later, Gate, Later, Share, ShareOut};
use crate::client::Client;
use crate::cmd::{self, Exec, Req};
use crate::resp::Reply;
use crate::shard::ShardState;

/// The run of shard commands starting at `from` (which is one, checked
/// already: `first`): for each, its request, handler and target shard.
pub(super) fn segment(
    client: &Client,
    cmds: &[Vec<Bytes>],
    from: usize,
    first: (Req, cmd::ShardFn, usize),
    gate: Gate<'_>,
    here: usize,
    n: usize,
) -> Vec<(Req, cmd::ShardFn, usize)> {
    let mut seg = vec![first];
    for argv in &cmds[from + 1..] {
        match precheck(client, argv, gate) {
            Ok(req) => match req.spec().exec {
                Exec::Shard(f) => seg.push((req, f, req.owner(here, n))),
                Exec::Conn(_) | Exec::Script(_) => break,
            },
            Err(_) => break,
        }
    }
    seg
}

/// Runs pipelined shard commands that go to several shards (`seg[k]`:
/// index, handler and target of `cmds[k]`) as one message per shard, all
/// shards at once (this shard's share runs here meanwhile), and writes the
/// replies in command order. Commands for different shards touch different
/// keys, so only the order within each shard matters, and that is kept.
pub(super) async fn run(
    shard: &Rc<Shard<ShardState>>,
    client: &mut Client,
    cmds: &mut [Vec<Bytes>],
    seg: Vec<(Req, cmd::ShardFn, usize)>,
    out: &mut Reply,
) {
    let st = shard.state();
    // Each command's share and place in it; shares in order of first use.
    let mut shares: Vec<(usize, Share)> = Vec::new();
    let mut place = Vec::with_capacity(cmds.len());
    for ((req, f, target), argv) in seg.into_iter().zip(cmds.iter_mut()) {
        let s = match shares.iter().position(|(t, _)| *t == target) {
            Some(s) => s,
            None => {
                shares.push((target, Vec::new()));
                shares.len() - 1
            }
        };
        place.push((s, shares[s].1.len()));
        shares[s].1.push((req, f, std::mem::take(argv)));
    }
    if let Some(last) = place.last() {
        client.info.last_cmd.store(shares[last.0].1[last.1].0.code(), Ordering::Relaxed);
    }
    let (db, resp3) = (client.db, client.resp3);
    let here = shard.id();
    let mut outs: Vec<Option<ShareOut>> = {
        let mut futs: Vec<std::pin::Pin<Box<dyn std::future::Future<Output = ShareOut> + '_>>> = Vec::with_capacity(shares.len());
        let mut local = None;
        for (s, (target, share)) in shares.into_iter().enumerate() {
            let info = client.info.clone();
            if target == here {
                local = Some((s, share, info));
            } else {
                futs.push(Box::pin(shard.invoke_on_then(target, move |remote: &Rc<ShardState>| {
                    share_job(remote, share, db, resp3, &info)
                })));
            }
        }
        // The remote shares are sent first (join_all polls in order), then
        // this shard's runs while they are under way.
        let local_at = local.as_ref().map(|(s, _, _)| *s);
        if let Some((_, share, info)) = local {
            let st = st.clone();
            futs.push(Box::pin(async move {
                match share_job(&st, share, db, resp3, &info) {
                    Then::Now(o) => o,
                    Then::Later(f) => f.await,
                }
            }));
        }
        let mut outs: Vec<Option<ShareOut>> = shards::join_all(futs).await.into_iter().map(Some).collect();
        // `outs` is in send order: remote shares by share index, the local last.
        if let Some(at) = local_at {
            let l = outs.pop().flatten();
            outs.insert(at, l);
        }
        outs
    };
    let mut later: Vec<std::vec::IntoIter<Later>> = outs
        .iter_mut()
        .map(|o| o.as_mut().map(|o| std::mem::take(&mut o.later)).unwrap_or_default().into_iter())
        .collect();
    for (s, w) in place {
        let Some(o) = outs[s].as_ref() else { continue };
        let (start, l0) = if w == 0 { (0, 0) } else { o.marks[w - 1] };
        let (end, l1) = o.marks[w];
        if l1 == l0 {
            out.buf.extend_from_slice(&o.buf[start..end]);
            continue;
        }
        let mine: Vec<Later> = later[s]
            .by_ref()
            .take(l1 - l0)
            .map(|mut l| {
                l.at -= start;
                l
            })
            .collect();
        splice_later(shard, st, client, &o.buf[start..end], mine, out).await;
    }
}
