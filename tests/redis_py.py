"""An application's use of redis-py against the server on the port given:
transactional pipelines, transaction() with WATCH from several threads,
pub/sub (get_message, callbacks in a thread, pattern subscriptions),
monitor(), register_script and Lock from several processes.
Any failed expectation raises; success prints "ok". tests/redis_py.rs runs
it against redis-server and Basalt."""

import sys
import threading
import time

import redis

port = int(sys.argv[1])
r = redis.Redis(port=port, decode_responses=True)
r.flushall()

# pipeline(): MULTI/EXEC by default.
p = r.pipeline()
p.set("x", 1).incr("x").get("x").rpush("l", "a", "b").lrange("l", 0, -1)
res = p.execute()
assert res == [True, 2, "2", 2, ["a", "b"]], res

# A runtime error inside EXEC fails that command only (no rollback).
p = r.pipeline()
p.set("s", "str").lpush("s", "x").set("after", "1")
try:
    p.execute()
    raise AssertionError("WRONGTYPE inside EXEC was not raised")
except redis.ResponseError as e:
    assert "WRONGTYPE" in str(e), e
assert r.get("after") == "1"
p = r.pipeline()
res = p.set("y", 1).lpush("y", "x").get("y").execute(raise_on_error=False)
assert res[0] is True and isinstance(res[1], redis.ResponseError) and res[2] == "1", res

# A queued syntax error discards the whole transaction (EXECABORT).
p = r.pipeline()
p.set("z", 1).execute_command("SET", "z")
try:
    p.execute()
    raise AssertionError("EXECABORT was not raised")
except redis.ResponseError as e:
    assert "EXECABORT" in str(e) or "wrong number of arguments" in str(e), e
assert r.get("z") is None

# transaction() with WATCH: concurrent read-modify-write loses nothing.
r.set("counter", 0)


def bump(pipe):
    v = int(pipe.get("counter"))
    pipe.multi()
    pipe.set("counter", v + 1)


def worker():
    c = redis.Redis(port=port, decode_responses=True)
    for _ in range(50):
        c.transaction(bump, "counter")


threads = [threading.Thread(target=worker) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
assert r.get("counter") == "200", r.get("counter")

# A write by another client between WATCH and EXEC aborts the transaction.
with r.pipeline() as pipe:
    pipe.watch("w")
    r.set("w", "theirs")
    pipe.multi()
    pipe.set("w", "mine")
    try:
        pipe.execute()
        raise AssertionError("WatchError was not raised")
    except redis.WatchError:
        pass
assert r.get("w") == "theirs"

# pubsub(): subscribe, publish from another connection, read messages.
ps = r.pubsub()
ps.subscribe("chan")
ps.psubscribe("pat.*")
kinds = []
deadline = time.time() + 5
while len(kinds) < 2 and time.time() < deadline:
    m = ps.get_message(timeout=1)
    if m:
        kinds.append(m["type"])
assert sorted(kinds) == ["psubscribe", "subscribe"], kinds
assert r.publish("chan", "hello") == 1
assert r.publish("pat.x", "p") == 1
assert r.publish("nobody", "x") == 0
got = []
while len(got) < 2 and time.time() < deadline + 5:
    m = ps.get_message(timeout=1)
    if m:
        got.append((m["type"], m["pattern"], m["channel"], m["data"]))
assert got == [("message", None, "chan", "hello"), ("pmessage", "pat.*", "pat.x", "p")], got
assert r.pubsub_channels() == ["chan"], r.pubsub_channels()
assert r.pubsub_numsub("chan", "none") == [("chan", 1), ("none", 0)]
assert r.pubsub_numpat() == 1
ps.unsubscribe()
ps.punsubscribe()
ps.close()

# Callbacks in a thread (run_in_thread), in publish order.
seen = []
ps = r.pubsub()
ps.subscribe(**{"events": lambda m: seen.append(m["data"])})
worker_thread = ps.run_in_thread(sleep_time=0.01)
deadline = time.time() + 5
while r.pubsub_numsub("events")[0][1] != 1 and time.time() < deadline:
    time.sleep(0.01)
for i in range(200):
    assert r.publish("events", str(i)) == 1
while len(seen) < 200 and time.time() < deadline + 10:
    time.sleep(0.01)
# stop() closes the PubSub itself (a second close fails in redis-py 4.3).
worker_thread.stop()
worker_thread.join(timeout=5)
assert seen == [str(i) for i in range(200)], seen[:10]

# monitor(): another client's commands, as redis-py parses MONITOR lines.
seen_cmds = []
ready = threading.Event()


def watch_commands():
    with r.monitor() as m:
        ready.set()
        for cmd in m.listen():
            seen_cmds.append(cmd["command"])
            if cmd["command"].startswith("GET mon:last"):
                return


t = threading.Thread(target=watch_commands)
t.start()
ready.wait(5)
time.sleep(0.2)
other = redis.Redis(port=port, decode_responses=True)
other.set("mon:a", "1")
other.incr("mon:a")
other.get("mon:last")
t.join(timeout=10)
assert not t.is_alive(), "monitor never saw GET mon:last"
assert seen_cmds[-3:] == ["SET mon:a 1", "INCRBY mon:a 1", "GET mon:last"], seen_cmds

# Scripts as applications run them. register_script: EVALSHA, reloaded by
# redis-py after SCRIPT FLUSH, and inside a pipeline.
incr_by = r.register_script("return redis.call('incrby', KEYS[1], ARGV[1])")
assert incr_by(keys=["sc"], args=[5]) == 5
r.script_flush()
assert incr_by(keys=["sc"], args=[2]) == 7
p = r.pipeline()
incr_by(keys=["sc"], args=[1], client=p)
incr_by(keys=["sc2"], args=[1], client=p)
assert p.execute() == [8, 1]
# Lock: acquire, extend, release, from several processes at once; the
# guarded read-modify-write loses nothing.
from multiprocessing import Process


def locker(n):
    c = redis.Redis(port=port, decode_responses=True)
    for _ in range(n):
        with c.lock("lock:res", timeout=5, blocking_timeout=20):
            v = int(c.get("lock:counter") or 0)
            time.sleep(0.001)
            c.set("lock:counter", v + 1)


procs = [Process(target=locker, args=(25,)) for _ in range(4)]
for pr in procs:
    pr.start()
for pr in procs:
    pr.join(60)
    assert pr.exitcode == 0, pr.exitcode
assert r.get("lock:counter") == "100", r.get("lock:counter")
lock = r.lock("lock:x", timeout=2)
assert lock.acquire(blocking=False)
assert not r.lock("lock:x", timeout=2).acquire(blocking=False)
assert lock.extend(5)
assert 2000 < r.pttl("lock:x") <= 7000, r.pttl("lock:x")
assert lock.reacquire()
lock.release()
assert r.get("lock:x") is None
try:
    lock.release()
    raise AssertionError("releasing a lock not held did not raise")
except redis.exceptions.LockError:
    pass

print("ok")
