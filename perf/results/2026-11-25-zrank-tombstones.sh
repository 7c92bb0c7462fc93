#!/bin/bash
BIN=$HOME/.cache/basalt-target/release/basalt; PORT=7796
rm -rf /tmp/zr; mkdir -p /tmp/zr
taskset -c 0 $BIN --port $PORT --dir /tmp/zr --shards 1 > /tmp/zr/log 2>&1 &
for _ in $(seq 50); do redis-cli -p $PORT ping >/dev/null 2>&1 && break; sleep 0.1; done
python3 -c "
import sys
w=sys.stdout.write
w('*'+str(2+2000)+'\r\n\$4\r\nZADD\r\n\$2\r\nlb\r\n')
for i in range(1000):
    s=str(i); m='m:'+str(i)
    w('\$'+str(len(s))+'\r\n'+s+'\r\n\$'+str(len(m))+'\r\n'+m+'\r\n')
" | redis-cli -p $PORT --pipe >/dev/null
t() { python3 -c "
import socket,time
s=socket.create_connection(('127.0.0.1',$PORT)); ts=[]
for i in range(20):
    a=time.perf_counter(); s.sendall(b'*3\r\n\$5\r\nZRANK\r\n\$2\r\nlb\r\n\$5\r\nm:500\r\n'); s.recv(100); ts.append(time.perf_counter()-a)
ts.sort(); print('ZRANK m:500 median %.3f ms'%(ts[10]*1e3))
"; }
echo -n "fresh: "; t
taskset -c 1 redis-benchmark -p $PORT -c 50 -n 400000 -r 1000 -P 16 -q ZINCRBY lb 1 m:__rand_int__ | tr '\r' '\n' | tail -1
echo -n "after 400k ZINCRBY: "; t
redis-cli -p $PORT compact >/dev/null
echo -n "after COMPACT: "; t
redis-cli -p $PORT shutdown nosave >/dev/null
