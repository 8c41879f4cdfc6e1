import json, sys, numpy as np, collections
from mok_model.records import read_records, model_records, record_scenario, record_config, record_design
from mok_model.predict import predict
from mok_model.params import load_params
hw=sys.argv[1]; files=sys.argv[2:]
P=load_params(None,hw)
recs,_=model_records([r for r in read_records(files) if r['system']=='mok' and r['pass']=='fwd' and r['precision']=='bf16'])
by=collections.defaultdict(list)
for r in recs:
    try:
        p=predict(record_scenario(r),record_config(r),'mok',P.with_design(**record_design(r)),refuse_overflow=False).latency_ms
    except Exception as e: continue
    e=p/r['latency_ms']['median']-1
    m=r['model'] if isinstance(r['model'],str) else r['model']['name']
    c=r['config']
    by[(c['minibatch'], 'big-H' if (r['model'] if isinstance(r['model'],dict) else None) is None and m in ('kimi-k2','deepseek-v3','glm-5') else 'other', c['dispatch'])].append(e)
for k in sorted(by, key=lambda k:(k[1],k[2],k[0])):
    v=np.array(by[k]); print(k, f"n {len(v):4d} signed median {100*np.median(v):+5.1f}% mean {100*v.mean():+5.1f}%")
