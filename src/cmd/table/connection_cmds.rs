//! The connection commands' declarations (see `cmd::table`).

use super::*;

pub(super) const SPECS: &[CommandSpec] = &[
    spec!(
        "ping",
        -1,
        ["fast"],
        0,
        0,
        0,
        "connection",
        "1.0.0",
        "Returns the server's liveliness response.",
        Conn(C::Ping)
    ),
    spec!(
        "echo",
        2,
        ["fast"],
        0,
        0,
        0,
        "connection",
        "1.0.0",
        "Returns the given string.",
        Conn(C::Echo)
    ),
    spec!(
        "quit",
        -1,
        ["allow_busy", "noscript", "loading", "stale", "fast", "no_auth"],
        0,
        0,
        0,
        "connection",
        "1.0.0",
        "Closes the connection.",
        Conn(C::Quit)
    ),
    spec!(
        "reset",
        1,
        ["noscript", "loading", "stale", "fast", "no_auth", "allow_busy"],
        0,
        0,
        0,
        "connection",
        "6.2.0",
        "Resets the connection.",
        Conn(C::Reset)
    ),
    spec!(
        "hello",
        -1,
        ["noscript", "loading", "stale", "fast", "no_auth", "allow_busy"],
        0,
        0,
        0,
        "connection",
        "6.0.0",
        "Handshakes with the Redis server.",
        Conn(C::Hello)
    ),
    spec!(
        "auth",
        -2,
        ["noscript", "loading", "stale", "fast", "no_auth", "allow_busy"],
        0,
        0,
        0,
        "connection",
        "1.0.0",
        "Authenticates the connection.",
        Conn(C::Auth)
    ),
    spec!(
        "select",
        2,
        ["loading", "stale", "fast"],
        0,
        0,
        0,
        "connection",
        "1.0.0",
        "Changes the selected database.",
        Conn(C::Select)
    ),
    spec!(
        "client",
        -2,
        [],
        0,
        0,
        0,
        "connection",
        "2.4.0",
        "A container for client connection commands.",
        Conn(C::Client),
        CLIENT_SUBS
    ),
];
