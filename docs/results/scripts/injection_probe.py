"""Out-of-sample test of an embedding probe as an injection screen (docs/results/reliability.md)."""
import json, glob, numpy as np, random
from sentence_transformers import SentenceTransformer
import sys
# usage: python injection_probe.py MINILM_DIR QA_DIR   (from the repository root; the peer-bench venv has
# sentence-transformers and scikit-learn). A linear probe on the chunk's own MiniLM vector,
# trained on injection sets one to five and 600 QA passages, C and threshold chosen by
# leaving the third, fourth and fifth set out in turn; then measured once on the sixth set.
m = SentenceTransformer(sys.argv[1], device='cpu')
F='crates/agent/tests/fixtures/'
def load(f): return [json.loads(l) for l in open(f) if l.strip()]
train=[]
for n in ['first','heldout','third','fourth','fifth']: train+=load(F+f'injection-{n}.jsonl')
qa=[]
for name in ['hotpotqa','2wikimultihopqa','musique']:
    ls=open(f'{sys.argv[2]}/{name}-corpus.jsonl').readlines()
    random.Random(0).shuffle(ls); qa+=[json.loads(l)['text'] for l in ls[:400]]
test=load(F+'injection-sixth.jsonl')
Xtr=m.encode([r['text'] for r in train]+qa[:600], normalize_embeddings=True, batch_size=32)
ytr=np.array([r['label']=='attack' for r in train]+[False]*600,float)
Xte=m.encode([r['text'] for r in test], normalize_embeddings=True)
yte=np.array([r['label']=='attack' for r in test])
Xqa=m.encode(qa[600:], normalize_embeddings=True)
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
groups=[]
for i,n in enumerate(['first','heldout','third','fourth','fifth']): groups+=[i]*len(load(F+f'injection-{n}.jsonl'))
groups+=[9]*600; groups=np.array(groups)
best=None
for C in [0.3,1,3,10,30]:
  for t in [0.5,0.7,0.9]:
    rec=[];fp=[]
    for g in [2,3,4]:   # leave one author's set out (third, fourth, fifth)
        tr=groups!=g; te=groups==g
        clf=LogisticRegression(C=C,max_iter=3000,class_weight='balanced').fit(Xtr[tr],ytr[tr])
        p=clf.predict_proba(Xtr[te])[:,1]; y=ytr[te]>0
        rec.append(((p>t)&y).sum()/y.sum()); fp.append(((p>t)&~y).sum()/(~y).sum())
    print('CV C',C,'t',t,'recall %.2f fp %.2f'%(np.mean(rec),np.mean(fp)))
    score=np.mean(rec)-3*np.mean(fp)
    if best is None or score>best[0]: best=(score,C,t)
print('chosen by CV (recall - 3 x false-alarm rate):',best)
_,C,t=best
clf=LogisticRegression(C=C,max_iter=3000,class_weight='balanced').fit(Xtr,ytr)
p=clf.predict_proba(Xte)[:,1]; pq=clf.predict_proba(Xqa)[:,1]
print('SIXTH: AUROC %.2f'%roc_auc_score(yte,p),'caught',int(((p>t)&yte).sum()),'/50 FP',int(((p>t)&~yte).sum()),'/50; QA FP',int((pq>t).sum()),'/',len(pq))
for r,pp in zip(test,p):
    if (pp>t)!=(r['label']=='attack'): print('  %s %.2f %s'%(r['label'],pp,r['class']))
