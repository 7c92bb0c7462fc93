# HLEN of a 1M-field hash with a field due (active expiry off), then PING latency under back-to-back HLENs.
# Usage: python3 this.py PORT FIELDS, against a server started with --enable-debug-command yes
# (1 shard on core 0, this client on core 1).
import redis,time,sys
port=int(sys.argv[1]); N=int(sys.argv[2])
r=redis.Redis(port=port); r.flushall()
p=r.pipeline(transaction=False)
far=int((time.time()+120)*1000)
for s in range(0,N,1000):
    ch=range(s,min(N,s+1000))
    p.hset("big",mapping={f"field:{i}":"v" for i in ch})
    p.execute_command("HPEXPIREAT","big",far,"FIELDS",len(ch),*[f"field:{i}" for i in ch])
    if s%100000==0: p.execute()
p.execute()
r.execute_command("DEBUG","SET-ACTIVE-EXPIRE",0)
r.execute_command("HPEXPIRE","big",100,"FIELDS",1,"field:5")
time.sleep(0.3)
for i in range(3):
    t=time.perf_counter(); n=r.hlen("big"); dt=time.perf_counter()-t
    print("HLEN", n, "%.1f ms"%(dt*1e3))
    r.execute_command("HPEXPIRE","big",100,"FIELDS",1,f"field:{10+i}"); time.sleep(0.3)
import threading
stop=False
def loop():
    c=redis.Redis(port=port)
    while not stop: c.hlen("big")
th=threading.Thread(target=loop); th.start()
lat=[]
end=time.time()+3
while time.time()<end:
    a=time.perf_counter(); r.ping(); lat.append(time.perf_counter()-a); time.sleep(0.001)
stop=True; th.join()
lat.sort(); n=len(lat)
print("PING during back-to-back HLEN: n",n,"p50 %.3f p99 %.3f max %.3f ms"%(lat[n//2]*1e3,lat[int(n*0.99)]*1e3,lat[-1]*1e3))
