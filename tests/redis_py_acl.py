"""redis-py's ACL methods against a server (tests/acl.rs), run the same on
redis-server and on Basalt: users made, read back and used through the
client's own parsing. Prints "ok" or raises.

Usage: redis_py_acl.py <port>
"""

import sys

import redis
from redis.exceptions import AuthenticationError, NoPermissionError, ResponseError


def main():
    port = int(sys.argv[1])
    r = redis.Redis(port=port, decode_responses=True)
    assert r.acl_whoami() == "default"
    assert "default" in r.acl_users()
    assert r.acl_setuser(
        "worker",
        enabled=True,
        passwords=["+secret"],
        keys=["jobs:*"],
        channels=["events"],
        commands=["+get", "+set", "+lpush", "+brpop", "+publish", "+acl|whoami"],
    )
    u = r.acl_getuser("worker")
    assert u["enabled"] is True, u
    assert "on" in u["flags"], u
    assert len(u["passwords"]) == 1, u
    assert u["keys"] == ["~jobs:*"], u
    assert set(u["commands"]) >= {"+get", "+set", "+lpush", "+brpop", "+publish"}, u
    assert r.acl_getuser("nobody") is None
    assert "hash" in r.acl_cat()
    assert "hget" in r.acl_cat("hash")
    assert len(r.acl_genpass()) == 64
    assert any(line.startswith("user worker on") for line in r.acl_list())
    w = redis.Redis(port=port, username="worker", password="secret", decode_responses=True)
    assert w.acl_whoami() == "worker"
    assert w.set("jobs:1", "x") and w.get("jobs:1") == "x"
    assert w.lpush("jobs:q", "a") == 1
    assert w.brpop("jobs:q", 1) == ("jobs:q", "a")
    assert w.publish("events", "hi") == 0
    for call in (lambda: w.get("other"), lambda: w.delete("jobs:1"), lambda: w.publish("nope", "x")):
        try:
            call()
            raise AssertionError("not refused")
        except NoPermissionError:
            pass
    try:
        redis.Redis(port=port, username="worker", password="wrong").ping()
        raise AssertionError("wrong password accepted")
    except (AuthenticationError, ResponseError) as e:
        assert "WRONGPASS" in str(e), e
    log = r.acl_log()
    assert log and log[0]["username"] in ("worker",), log
    assert {e["reason"] for e in log} >= {"key", "command", "channel", "auth"}, log
    assert r.acl_log_reset()
    assert r.acl_log() == []
    assert r.acl_deluser("worker") == 1
    try:
        r.acl_setuser("bad", commands=["+nosuchcommand"])
        raise AssertionError("unknown command accepted")
    except ResponseError as e:
        assert "Unknown command" in str(e), e
    print("ok")


if __name__ == "__main__":
    main()
