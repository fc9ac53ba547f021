"""Replays metarag's lazy closed-book probe on a finished run record.

For each metarag question, recomputes the first assessment's confidence from its recorded
signals with the default MonitorModel (crates/agent/src/monitor.rs), checks that it matches
the recorded one, and asks whether the answer would pass even if the probe disagreed
(MonitorModel::confidence_at_worst). Where it would, the probe is skipped and its recorded
time subtracted. Prints the skipped probes and the median seconds per question beside
standard's.

    python3 docs/results/scripts/replay_lazy_probe.py docs/results/qa/RUN.json
"""
import json,math,statistics as st,sys
W={"answer_in_sources":(0.6326,0.9607,0.1877),"answer_logprob_mean":(0.0781,-0.1906,0.2031),"answer_logprob_min":(-0.0236,-0.4324,0.3510),"closed_book_agreement":(0.2311,0.1224,0.3278),"entity_coverage":(0.0503,0.9915,0.0601),"sample_agreement":(1.0465,0.7321,0.3916),"short_logprob_mean":(0.3026,-0.8327,1.7510),"short_logprob_min":(0.0928,-1.0483,1.6973),"type_match":(0.6,0.9,0.3),"refusal":(-1.0,0.05,0.2)}
B=0.6; T=0.3826
rec=json.load(open(sys.argv[1]))
res=[r for r in rec['results'] if r['strategy']=='metarag']
std={r['id']:r for r in rec['results'] if r['strategy']=='standard'}
def conf(sig,override=None):
    z=B
    for k,(w,m,s) in W.items():
        if k.startswith('short_logprob') or k.startswith('answer_logprob'):
            base=sig.get(k.rsplit('_',1)[0]); x=base.get(k.rsplit('_',1)[1]) if base else None
        else: x=sig.get(k)
        if k=='closed_book_agreement' and override is not None: x=override
        if x is None: continue
        if isinstance(x,bool): x=1.0 if x else 0.0
        z+=w*(x-m)/s
    return 1/(1+math.exp(-z))
def cs(r):
    ms=r['latency_ms']
    for c in r['trace']['calls']:
        if c['cached']: ms+=c['original_ms']-c['ms']
    return ms/1000
skip=0; saved=[]; new_t=[]; old_t=[]
for r in res:
    a=r['trace']['rounds'][0].get('assessment')
    sig=a['signals']
    c=conf(sig); 
    assert abs(c-a['confidence'])<1e-3, (c,a['confidence'])
    cbms=sum((c_.get('original_ms') or c_['ms']) for c_ in r['trace']['calls'] if c_['purpose']=='closed_book')
    t=cs(r)
    old_t.append(t)
    if conf(sig,0.0)>=T:
        skip+=1; new_t.append(t-cbms/1000)
    else: new_t.append(t)
s_t=[ cs(std[r['id']]) for r in res]
print('skipped probes',skip,'of',len(res))
print('metarag p50 %.2f -> %.2f ; standard p50 %.2f ; ratio %.2f -> %.2f'%(st.median(old_t),st.median(new_t),st.median(s_t),st.median(old_t)/st.median(s_t),st.median(new_t)/st.median(s_t)))
