"""Compares metarag's sample call per question between the committed HotpotQA gold n=200
record (samples drawn one after another) and a newer run's results file (side by side).

    python3 docs/results/scripts/compare_sample_calls.py runs/RUN.jsonl
"""
import json,statistics as st,sys
old=json.load(open('docs/results/qa/hotpotqa-gold-metarag+standard-qwen2.5-1.5b-instruct-n200-s42.json'))
def sample_calls(res):
    out={}
    for r in res:
        if r['strategy']!='metarag': continue
        for c in r['trace']['calls']:
            if c['purpose']=='sample':
                ms=c.get('original_ms') or c['ms']
                out.setdefault(r['id'],[]).append((ms,c['completion_tokens'],c['prompt_tokens']-c['cached_prompt_tokens']))
                break
    return out
o=sample_calls(old['results'])
new=[json.loads(l) for l in open(sys.argv[1])][1:]
n=sample_calls(new)
common=[k for k in n if k in o]
print('questions', len(common))
om=[o[k][0][0] for k in common]; nm=[n[k][0][0] for k in common]
ot=[o[k][0][1] for k in common]; nt=[n[k][0][1] for k in common]
print('old sample call ms median %.0f mean %.0f, tokens mean %.1f' % (st.median(om), st.mean(om), st.mean(ot)))
print('new sample call ms median %.0f mean %.0f, tokens mean %.1f' % (st.median(nm), st.mean(nm), st.mean(nt)))
print('per-question ratio median %.2f' % st.median([a/b for a,b in zip(nm,om)]))
print('ms per generated token: old %.1f new %.1f' % (sum(om)/sum(ot), sum(nm)/sum(nt)))
