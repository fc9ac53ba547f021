#!/usr/bin/env python3
"""Two questions about the monitor's headroom, answered from committed run records only
(no model calls).

1. Would more samples help? Sample agreement is recomputed from k of the four recorded
   samples (k = 1..4, a random k-subset per question, averaged over 200 draws), so the
   curve shows what each extra sample bought; where it flattens, more samples buy little.
2. Does the question's form carry information the signals lack? A logistic model over the
   gate's strongest signals, with and without one-hot question forms ("A or B", yes/no,
   date, number, other: a regex approximation of `AnswerForm::of`), fitted on the tuning
   records and scored on the reporting records.

A first answer is right when its short answer scores token F1 >= 0.5 against a gold answer
(the monitor's label). metarag's first round only.

    python3 docs/results/scripts/monitor_headroom.py --tuning T.json [T2.json ...] --reporting R.json [R2.json ...]
"""
import collections, itertools, json, math, random, re, string, sys


def norm(s):
    s = "".join(c for c in s.lower() if c not in string.punctuation)
    return re.sub(r"\b(a|an|the)\b", " ", s).split()


def f1(p, g):
    p, g = norm(p), norm(g)
    same = sum((collections.Counter(p) & collections.Counter(g)).values())
    if same == 0:
        return 0.0
    pr, rc = same / len(p), same / len(g)
    return 2 * pr * rc / (pr + rc)


def verdict(t):
    return t[0] if len(t) == 1 and t[0] in ("yes", "no") else None


def agree(a, b):
    """`monitor::agree`: the same verdict, or token F1 >= 0.5 between two non-verdicts."""
    va, vb = verdict(norm(a)), verdict(norm(b))
    if va and vb:
        return va == vb
    if not va and not vb:
        return f1(a, b) >= 0.5
    return False


def auroc(scored):
    pos = [s for s, y in scored if y]
    neg = [s for s, y in scored if not y]
    if not pos or not neg:
        return float("nan")
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def form(question):
    q = question.lower()
    if re.search(r"\bor\b", q) and re.match(r"^(which|who|what)\b", q):
        return "choice"
    if re.match(r"^(is|are|was|were|do|does|did|can|could|has|have|had|will|would)\b", q):
        return "yesno"
    if q.startswith("when") or "what year" in q or "what date" in q:
        return "date"
    if q.startswith("how many") or q.startswith("how much"):
        return "number"
    return "other"


def label(path):
    c = json.load(open(path))["config"]
    return f"{c['dataset']} {c['protocol']} {c['split']} (n = {c['n']})"


def rows(path):
    out = []
    for r in json.load(open(path))["results"]:
        if r["strategy"] != "metarag":
            continue
        first = r["trace"]["rounds"][0]
        a = first.get("assessment")
        if not a:
            continue
        sig = a["signals"]
        right = max([f1(first["short_answer"], g) for g in r["answers"]] or [0]) >= 0.5
        feats = {
            "sample_agreement": sig.get("sample_agreement") or 0.0,
            "answer_logprob_min": (sig.get("answer_logprob") or {}).get("min", -1.0),
            "answer_support": 0.5 if sig.get("answer_support") is None else sig["answer_support"],
        }
        for f in ("choice", "yesno", "date", "number"):
            feats["form_" + f] = 1.0 if form(r["question"]) == f else 0.0
        out.append(dict(short=first["short_answer"], samples=a.get("samples") or [],
                        right=right, gate=a["confidence"], feats=feats))
    return out


def fit(train, names, l2=1.0, steps=3000, lr=0.1):
    """Ridge-penalised logistic regression on standardised features (gradient descent)."""
    X = [[r["feats"][n] for n in names] for r in train]
    Y = [1.0 if r["right"] else 0.0 for r in train]
    mean = [sum(x[j] for x in X) / len(X) for j in range(len(names))]
    sd = [max(1e-3, (sum((x[j] - mean[j]) ** 2 for x in X) / len(X)) ** 0.5) for j in range(len(names))]
    Z = [[(x[j] - mean[j]) / sd[j] for j in range(len(names))] for x in X]
    w, b = [0.0] * len(names), 0.0
    for _ in range(steps):
        gw, gb = [0.0] * len(names), 0.0
        for z, y in zip(Z, Y):
            e = 1 / (1 + math.exp(-(b + sum(wj * zj for wj, zj in zip(w, z))))) - y
            gb += e
            for j in range(len(w)):
                gw[j] += e * z[j]
        b -= lr * gb / len(Z)
        w = [w[j] - lr * (gw[j] + l2 * w[j]) / len(Z) for j in range(len(w))]
    return lambda r: b + sum(w[j] * (r["feats"][n] - mean[j]) / sd[j] for j, n in enumerate(names))


def main(argv):
    groups, key = {"tuning": [], "reporting": []}, None
    for a in argv:
        if a in ("--tuning", "--reporting"):
            key = a[2:]
        elif key:
            groups[key].append(a)
    if not groups["tuning"] or not groups["reporting"]:
        sys.exit(__doc__)
    data = {p: rows(p) for p in groups["tuning"] + groups["reporting"]}

    print("## Sample agreement from k of the 4 recorded samples (AUROC, mean of 200 draws)\n")
    print("| record | n | k = 1 | k = 2 | k = 3 | k = 4 |\n|---|---|---|---|---|---|")
    rng = random.Random(1)
    for p, rs in data.items():
        rs4 = [r for r in rs if len(r["samples"]) >= 4]
        cells = []
        for k in range(1, 5):
            draws = []
            for _ in range(200 if k < 4 else 1):
                draws.append(auroc([(sum(agree(s, r["short"]) for s in rng.sample(r["samples"], k)) / k, r["right"]) for r in rs4]))
            cells.append(f"{sum(draws) / len(draws):.3f}")
        print(f"| {label(p)} | {len(rs4)} | " + " | ".join(cells) + " |")

    train = [r for p in groups["tuning"] for r in data[p]]
    base = ["sample_agreement", "answer_logprob_min", "answer_support"]
    forms = ["form_choice", "form_yesno", "form_date", "form_number"]
    print(f"\n## Fitted on {len(train)} tuning answers, scored on each reporting record (AUROC)\n")
    print("| features | " + " | ".join(label(p) for p in groups["reporting"]) + " |")
    print("|---|" + "---|" * len(groups["reporting"]))
    print("| the gate as run | " + " | ".join(f"{auroc([(r['gate'], r['right']) for r in data[p]]):.3f}" for p in groups["reporting"]) + " |")
    for names in (base, base + forms):
        g = fit(train, names)
        print(f"| {', '.join(names)} | " + " | ".join(f"{auroc([(g(r), r['right']) for r in data[p]]):.3f}" for p in groups["reporting"]) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
