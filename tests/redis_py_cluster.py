"""redis-py's RedisCluster against one node (tests/cluster.rs): random and
hash-tagged keys written and read back, CROSSSLOT on MGET across slots,
CLUSTER KEYSLOT equal to the client's own slot, pipelines, and a
transaction on one slot. Prints "ok" or raises.

Usage: redis_py_cluster.py <port> <expected-nodes>
"""

import random
import sys

import redis
from redis.cluster import RedisCluster
from redis.exceptions import MovedError, RedisClusterException, ResponseError


def main():
    port = int(sys.argv[1])
    nodes = int(sys.argv[2])
    rc = RedisCluster(host="127.0.0.1", port=port, socket_timeout=30)
    masters = rc.get_primaries()
    assert len(masters) == nodes, [n.name for n in masters]

    rng = random.Random(7)
    keys = []
    for i in range(10000):
        if i % 2 == 0:
            k = "k:%d:%d" % (i, rng.randrange(1 << 30))
        else:
            k = "{user%d}:field%d" % (rng.randrange(100), i)
        keys.append(k)
    for k in keys:
        rc.set(k, "v-" + k)
    for k in keys:
        assert rc.get(k) == ("v-" + k).encode(), k

    # The node's slot is the client's slot.
    for k in keys[:500]:
        assert rc.cluster_keyslot(k) == rc.keyslot(k), k

    # MGET across slots is refused by the server (the client sends it to
    # one node as it is when asked with target_nodes).
    node = rc.get_node_from_key("{user1}:a")
    try:
        rc.execute_command("MGET", "foo", "bar", target_nodes=node)
        raise AssertionError("MGET across slots was not refused")
    except ResponseError as e:
        assert str(e) == "Keys in request don't hash to the same slot", str(e)
    except RedisClusterException:
        pass
    # MGET within one slot works.
    rc.set("{tag}a", "1")
    rc.set("{tag}b", "2")
    assert rc.mget_nonatomic(["{tag}a", "{tag}b", "{tag}c"]) == [b"1", b"2", None]
    assert rc.execute_command("MGET", "{tag}a", "{tag}b") == [b"1", b"2"]

    # Pipelines spread over the nodes.
    pipe = rc.pipeline()
    for i in range(2000):
        pipe.set("p:%d" % i, i)
    for i in range(2000):
        pipe.get("p:%d" % i)
    out = pipe.execute()
    assert out[:2000] == [True] * 2000
    assert out[2000:] == [str(i).encode() for i in range(2000)]

    # A transaction on one slot, on that slot's node.
    conn = rc.get_redis_connection(rc.get_node_from_key("{acct}x"))
    tx = conn.pipeline(transaction=True)
    tx.set("{acct}x", 10)
    tx.incrby("{acct}x", 5)
    tx.set("{acct}y", "z")
    assert tx.execute() == [True, 15, True]
    assert rc.get("{acct}x") == b"15"
    # A transaction across slots is refused whole.
    tx = conn.pipeline(transaction=True)
    tx.set("{acct}x", 1)
    tx.set("other", 2)
    try:
        tx.execute()
        raise AssertionError("EXEC across slots was not refused")
    except MovedError:
        # With a node per shard, "other" lives on another node.
        assert nodes > 1
    except ResponseError as e:
        assert "CROSSSLOT" in str(e) or "same slot" in str(e), str(e)
    assert rc.get("{acct}x") == b"15"

    # Deletes, counted over the nodes.
    assert rc.delete(*keys[:100]) == 100
    total = rc.dbsize()
    assert total >= 10000 - 100, total
    print("ok")


if __name__ == "__main__":
    main()
