#!/usr/bin/env python3
"""Samples real encyclopedic passages (none an attack) from the shared QA corpora as benign
injection sets, so `metarag bench injection` measures the model screen's false alarms on
the text users index, not only on hand-written look-alikes.

    python3 docs/results/scripts/injection_corpus_sets.py data/qa docs/results/injection

tuning: 100 HotpotQA passages; reporting: 50 2WikiMultiHopQA + 50 MuSiQue passages
(seeded, so the files are reproducible)."""
import json
import random
import sys

qa, out = sys.argv[1], sys.argv[2]


def sample(name, n, seed):
    with open(f"{qa}/{name}-corpus.jsonl", encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for line in f if line.strip()]
    texts = [t for t in texts if len(t) >= 80]
    return random.Random(seed).sample(texts, n)


def write(path, texts):
    with open(path, "w", encoding="utf-8") as f:
        for t in texts:
            f.write(json.dumps({"label": "benign", "class": "corpus", "text": t}, ensure_ascii=False) + "\n")


write(f"{out}/corpus-tuning.jsonl", sample("hotpotqa", 100, 1))
write(f"{out}/corpus-reporting.jsonl", sample("2wikimultihopqa", 50, 2) + sample("musique", 50, 3))
