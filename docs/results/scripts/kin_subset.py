#!/usr/bin/env python3
"""Writes the 2WikiMultiHopQA dev questions that `kin::KinshipChain::of` reads as a
kinship chain, by half, as a normalised JSONL subset `bench --dataset FILE` runs:

    python3 docs/results/scripts/kin_subset.py tuning > /work/kin-2wiki.jsonl
    python3 docs/results/scripts/kin_subset.py reporting_sample_n100 > /work/kin-2wiki-report.jsonl

The ids are in docs/results/qa/kin/questions.json (the tuning half's 21; the reporting
half's n = 100 sample of seed 42 holds 16).
"""
import json
import sys

root = __file__.rsplit("/docs/", 1)[0]
want = set(json.load(open(f"{root}/docs/results/qa/kin/questions.json"))[sys.argv[1]])
for line in open(f"{root}/../shared/data/qa/2wikimultihopqa-dev.jsonl"):
    if json.loads(line)["id"] in want:
        sys.stdout.write(line)
