#!/usr/bin/env python3
"""Candidate monitor signals computed from run records, AUROC per half.

Used to choose which retrieval-side signals to add to the monitor: features are chosen on
the tuning half only (FNV-1a 64 of the id, even); the reporting half is printed for the
record, never for the choice.

    python3 docs/results/scripts/monitor_candidates.py RUN.json|RUN.jsonl [...] [--half tuning]
"""
import json, re, sys

STOP = set("a an the of in on at to for by with from and or is was were are be been who what which when where why how whose whom did does do that this it its as into than then there their".split())


def fnv1a(s):
    h = 0xcbf29ce484222325
    for b in s.encode():
        h ^= b
        h = (h * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def half(qid):
    return "tuning" if fnv1a(qid) % 2 == 0 else "reporting"


def toks(t):
    return re.findall(r"[a-z0-9]+", t.lower())


def terms(t):
    return {x for x in toks(t) if x not in STOP}


def load(path):
    if path.endswith(".jsonl"):
        lines = open(path).read().splitlines()
        return [json.loads(l) for l in lines[1:] if l.strip()]
    return json.load(open(path))["results"]


def normalize(t):
    t = t.lower()
    t = "".join(c for c in t if c.isalnum() or c.isspace())
    return [w for w in t.split() if w not in ("a", "an", "the")]


def f1(pred, gold):
    p, g = normalize(pred), normalize(gold)
    if not p or not g:
        return float(p == g)
    common = 0
    gl = list(g)
    for w in p:
        if w in gl:
            gl.remove(w)
            common += 1
    if common == 0:
        return 0.0
    pr, rc = common / len(p), common / len(g)
    return 2 * pr * rc / (pr + rc)


def first_right(r):
    """The first answer is right: its short answer scores F1 >= 0.5 against a gold answer."""
    short = r["trace"]["rounds"][0]["short_answer"]
    return max(f1(short, a) for a in r["answers"]) >= 0.5


def auroc(pairs):
    pos = [s for s, y in pairs if y]
    neg = [s for s, y in pairs if not y]
    if not pos or not neg:
        return float("nan")
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def yes_no(q):
    return bool(re.match(r"^(is|are|was|were|do|does|did|can|could|has|have|had|will|would)\b", q.strip().lower()))


def features(r):
    t = r["trace"]
    q = r["question"]
    rd = t["rounds"][0]
    short = rd["short_answer"]
    ans = rd["answer"]
    srcs = t["sources"]
    st = terms(short)
    qt = terms(q)
    f = {}
    yn = yes_no(q) or short.strip().lower() in ("yes", "no")
    options = " or " in q.lower()
    if st and not yn:
        f["answer_in_question"] = len(st & qt) / len(st)
        if not options:
            f["answer_in_question_free"] = len(st & qt) / len(st)
        support = [s for s in srcs if len(st & terms(s["text"])) * 2 >= len(st) * 2]
        f["support_count"] = min(len(support), 3) / 3
        f["answer_title"] = float(any(st <= terms(s["title"]) for s in srcs))
        f["short_len"] = -len(toks(short))
    cited = [int(x) for x in re.findall(r"\[(\d+)\]", ans)]
    f["first_cited"] = 1.0 / min(cited) if cited else 0.0
    f["n_cited"] = len(set(cited))
    titles = [terms(s["title"]) for s in srcs]
    caps = re.findall(r"(?:[A-Z][\w'-]+(?:\s+(?:of|the|de|and)?\s*[A-Z][\w'-]+)*)", q)
    ents = [terms(c) for c in caps[1:] if terms(c)] or [terms(c) for c in caps if terms(c)]
    if ents:
        f["entity_titles"] = sum(any(e <= tt or tt <= e and tt for tt in titles) for e in ents) / len(ents)
    sig = rd.get("assessment", {}) or {}
    sig = sig.get("signals", {})
    for k in ("sample_agreement", "closed_book_agreement", "entity_coverage", "answer_in_sources"):
        if sig.get(k) is not None:
            f[k] = sig[k]
    for k in ("short_logprob", "answer_logprob"):
        if sig.get(k):
            f[k + "_min"] = sig[k]["min"]
            f[k + "_mean"] = sig[k]["mean"]
    f["options"] = float(options)
    f["yes_no"] = float(yn)
    return f


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    want = None
    if "--half" in sys.argv:
        want = sys.argv[sys.argv.index("--half") + 1]
        args = [a for a in args if a != want]
    for path in args:
        rows = [r for r in load(path) if r["strategy"] == "metarag" and r["trace"]["rounds"]]
        for h in ("tuning", "reporting"):
            if want and h != want:
                continue
            sel = [r for r in rows if half(r["id"]) == h]
            if not sel:
                continue
            right = [first_right(r) for r in sel]
            fs = [features(r) for r in sel]
            names = sorted({k for f in fs for k in f})
            print(f"{path.split('/')[-1][:60]} {h} n={len(sel)} right={sum(right)}")
            for k in names:
                pairs = [(f[k], y) for f, y in zip(fs, right) if k in f]
                print(f"   {k:24s} n={len(pairs):3d} auroc={auroc(pairs):.2f}")


if __name__ == "__main__":
    main()
