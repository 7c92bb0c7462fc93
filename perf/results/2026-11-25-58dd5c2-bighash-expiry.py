import redis,time,sys
port=int(sys.argv[1]); N=int(sys.argv[2])
r=redis.Redis(port=port)
r.flushall()
p=r.pipeline(transaction=False)
t0=time.time()
due_ms=int((t0+30)*1000)
for s in range(0,N,1000):
    ch=range(s,min(N,s+1000))
    p.hset("big",mapping={f"field:{i}":"v" for i in ch})
    p.execute_command("HPEXPIREAT","big",due_ms,"FIELDS",len(ch),*[f"field:{i}" for i in ch])
    if s%100000==0: p.execute()
p.execute()
due=due_ms/1000
print("filled in",round(time.time()-t0,2),"s; due in",round(due-time.time(),2),"s", flush=True)
while time.time()<due-1: time.sleep(0.1)
stamp=[]; lat=[]; base=r.info("stats")["expired_subkeys"]
end=None
while True:
    a=time.perf_counter(); r.ping(); lat.append(time.perf_counter()-a); stamp.append(time.time()-due)
    now=time.time()
    if len(lat)%200==0:
        ex=r.info("stats")["expired_subkeys"]-base
        if ex>=N and end is None: end=now; break
    if now>due+120: break
    time.sleep(0.0002)
# keep only the samples after due
print("cleared", (end-due) if end else None, "s after due; dbsize", r.dbsize())
top=sorted(zip(lat,stamp))[-6:]; print('worst (ms, s after due):',[(round(l*1e3,2),round(t,3)) for l,t in top])
lat.sort(); n=len(lat)
print("PING samples",n,"p50 %.3f p99 %.3f max %.3f ms"%(lat[n//2]*1e3,lat[int(n*0.99)]*1e3,lat[-1]*1e3))
