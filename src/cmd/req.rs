//! A request resolved once (issue 52, item 3): which command it is, its
//! subcommand, its commandstats slot and the hash slot of the key it is
//! routed by. `dispatch`'s precheck builds one per request; routing, the
//! MULTI queue, the run, the stats, the client's last command (CLIENT
//! LIST's `cmd=`) and the storage's key encoding read it instead of
//! looking the name, the subcommand or the slot up again.

use bytes::Bytes;

use super::{stat_slots, CommandSpec, TABLE};
use crate::slot::{shard_of_slot, slot_of};

/// A subcommand index or a slot that is not there.
const NONE8: u8 = u8::MAX;
const NONE16: u16 = u16::MAX;

/// A resolved request (see the module doc). Small and `Copy`: it travels
/// with the request's arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Req {
    idx: u16,
    sub: u8,
    stat: u16,
    slot: u16,
}

impl Req {
    /// Resolves a request whose name is command `idx` of [`TABLE`]: the
    /// subcommand it names (none when the command has none, or the name is
    /// not one of them: `check` reports that), its stats slot, and the
    /// hash slot of its first key when it has one.
    #[inline]
    pub fn resolve(idx: usize, argv: &[Bytes]) -> Req {
        let spec = &TABLE[idx];
        let sub = spec.subcommand_index(argv);
        let stat = match sub {
            Some(s) => stat_slots().base[idx] + s,
            None => idx,
        };
        let key = usize::try_from(spec.first_key).ok().filter(|&i| i > 0).and_then(|i| argv.get(i));
        let slot = key.map_or(NONE16, |k| slot_of(k));
        Req {
            idx: idx as u16,
            sub: sub.map_or(NONE8, |s| s as u8),
            stat: stat as u16,
            slot,
        }
    }

    /// The command's index in [`TABLE`].
    #[inline]
    pub fn idx(self) -> usize {
        self.idx as usize
    }

    #[inline]
    pub fn spec(self) -> &'static CommandSpec {
        &TABLE[self.idx as usize]
    }

    /// The subcommand's index in the command's `subcommands`.
    #[inline]
    pub fn sub(self) -> Option<usize> {
        (self.sub != NONE8).then_some(self.sub as usize)
    }

    /// Its commandstats slot (`cmd::stat_slot`'s answer).
    #[inline]
    pub fn stat(self) -> usize {
        self.stat as usize
    }

    /// The hash slot of its first key (`argv[spec.first_key]`).
    #[inline]
    pub fn slot(self) -> Option<u16> {
        (self.slot != NONE16).then_some(self.slot)
    }

    /// The shard that runs it of `shards`: its first key's owner, else
    /// `here`.
    #[inline]
    pub fn owner(self, here: usize, shards: usize) -> usize {
        match self.slot() {
            Some(s) => shard_of_slot(s, shards),
            None => here,
        }
    }

    /// The flags that apply: the subcommand's, else the command's.
    pub fn flags(self) -> &'static [&'static str] {
        let spec = self.spec();
        self.sub().map_or(spec.flags, |s| spec.subcommands[s].flags)
    }

    /// Redis's `fullname`: `config|get` for a subcommand, else the name.
    pub fn fullname(self) -> String {
        self.spec().fullname(self.sub())
    }

    /// CLIENT LIST's `cmd=` code of it (`ClientInfo::cmd_code`).
    #[inline]
    pub fn code(self) -> usize {
        (self.idx as usize + 1) | (self.sub().map_or(0, |s| s + 1) << 16)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::{lookup, stat_slot};

    fn req(args: &[&str]) -> Req {
        let argv: Vec<Bytes> = args.iter().map(|a| Bytes::copy_from_slice(a.as_bytes())).collect();
        let (idx, _) = lookup(&argv[0]).expect("a command");
        let r = Req::resolve(idx, &argv);
        assert_eq!(r.stat(), stat_slot(idx, &argv), "{args:?}");
        assert_eq!(r.spec().subcommand_index(&argv), r.sub(), "{args:?}");
        r
    }

    #[test]
    fn a_request_knows_its_command_subcommand_and_slot() {
        let get = req(&["GET", "foo"]);
        assert_eq!(get.spec().name, "get");
        assert_eq!(get.sub(), None);
        assert_eq!(get.slot(), Some(12182));
        assert_eq!((get.owner(0, 1), get.owner(0, 2)), (0, 1));
        assert_eq!(get.fullname(), "get");
        let cfg = req(&["config", "GET", "maxmemory"]);
        assert_eq!(cfg.fullname(), "config|get");
        assert_eq!(cfg.slot(), None);
        assert_eq!(cfg.owner(1, 2), 1);
        assert!(cfg.sub().is_some());
        // A subcommand the command does not have resolves to none.
        let bad = req(&["config", "nosuch"]);
        assert_eq!(bad.sub(), None);
        // No key given: no slot (arity is checked later).
        assert_eq!(req(&["get"]).slot(), None);
        assert_eq!(req(&["ping"]).slot(), None);
        assert_eq!(req(&["SET", "{user1000}.a", "v"]).slot(), Some(slot_of(b"user1000")));
    }

    #[test]
    fn its_code_is_the_clients_command_code() {
        let r = req(&["client", "list"]);
        assert_eq!(crate::client::ClientInfo::cmd_of(r.code()), Some((r.idx(), r.sub())));
        let g = req(&["get", "k"]);
        assert_eq!(crate::client::ClientInfo::cmd_of(g.code()), Some((g.idx(), None)));
    }
}
