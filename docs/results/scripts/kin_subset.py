#!/usr/bin/env python3
"""Writes the 2WikiMultiHopQA dev questions that `kin::KinshipChain::of` reads as a
kinship chain (or, with `--check link`, that `link::LinkedQuestion::of` reads as a question
through a relation), by half, as a normalised JSONL subset `bench --dataset FILE` runs:

    python3 docs/results/scripts/kin_subset.py tuning > /work/kin-2wiki.jsonl
    python3 docs/results/scripts/kin_subset.py reporting_sample_n100 > /work/kin-2wiki-report.jsonl
    python3 docs/results/scripts/kin_subset.py tuning --check link > /work/link-2wiki-tuning.jsonl

The ids are in docs/results/qa/kin/questions.json (the tuning half's 21; the reporting
half's n = 100 sample of seed 42 holds 16) and docs/results/qa/link/questions.json (101 of
the tuning half; 35 in the reporting sample).
"""
import json
import sys

root = __file__.rsplit("/docs/", 1)[0]
check = sys.argv[sys.argv.index("--check") + 1] if "--check" in sys.argv else "kin"
want = set(json.load(open(f"{root}/docs/results/qa/{check}/questions.json"))[sys.argv[1]])
for line in open(f"{root}/data/qa/2wikimultihopqa-dev.jsonl"):
    if json.loads(line)["id"] in want:
        sys.stdout.write(line)
