//! The server commands' declarations (see `cmd::table`).

use super::*;

pub(super) const SPECS: &[CommandSpec] = &[
    spec!(
        "info",
        -1,
        ["loading", "stale"],
        0,
        0,
        0,
        "server",
        "1.0.0",
        "Returns information and statistics about the server.",
        Conn(C::Info)
    ),
    spec!(
        "config",
        -2,
        [],
        0,
        0,
        0,
        "server",
        "2.0.0",
        "A container for server configuration commands.",
        Conn(C::Config),
        CONFIG_SUBS
    ),
    spec!(
        "time",
        1,
        ["loading", "stale", "fast"],
        0,
        0,
        0,
        "server",
        "2.6.0",
        "Returns the server time.",
        Conn(C::Time)
    ),
];
