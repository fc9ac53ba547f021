#!/usr/bin/env python3
"""Fits a probe on the local model's hidden state of its first answers and measures it.

Labels: an answer is right when its F1 against gold is >= 0.5 (issue 13's definition).
Everything is chosen on the tuning half (feature set, PCA size, regularisation: 5-fold
cross-validation there, grouped by question) and the one chosen probe, refitted on the whole tuning half, is
scored once on the reporting half. Beside it, the existing monitor's confidence on the same
rows (metarag's first round) for comparison.

usage: probe_fit.py PAIRS.jsonl FEATURES.jsonl [--out REPORT.json]
needs: numpy, scikit-learn (python3 -m pip install numpy scikit-learn)
"""
import json
import sys

import numpy as np
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedGroupKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler


def load(pairs_path, feats_path):
    pairs = {}
    for line in open(pairs_path):
        p = json.loads(line)
        pairs[p["id"]] = p
    rows = []
    for line in open(feats_path):
        f = json.loads(line)
        p = pairs.get(f["id"])
        if p is None:
            continue
        rows.append((p, np.array(f["last"], dtype=np.float64), np.array(f["mean"], dtype=np.float64)))
    return rows


def features(rows, kind):
    if kind == "last":
        return np.stack([r[1] for r in rows])
    if kind == "mean":
        return np.stack([r[2] for r in rows])
    return np.hstack([np.stack([r[1] for r in rows]), np.stack([r[2] for r in rows])])


def model(pca, c):
    steps = [StandardScaler()]
    if pca:
        steps.append(PCA(n_components=pca, random_state=0))
    steps.append(LogisticRegression(C=c, max_iter=5000))
    return make_pipeline(*steps)


def groups(rows):
    """The question of each row: metarag's and standard's first answers to one question are
    often the same call (same prompt, same answer), so they are kept in one fold; split
    apart, the probe would be scored on answers it was trained on."""
    return [r[0]["id"].split("/")[0] for r in rows]


def cv_auroc(x, y, g, pca, c, seed=0):
    scores = np.zeros(len(y))
    for train, test in StratifiedGroupKFold(5, shuffle=True, random_state=seed).split(x, y, g):
        m = model(pca, c).fit(x[train], y[train])
        scores[test] = m.predict_proba(x[test])[:, 1]
    return roc_auc_score(y, scores)


def bootstrap(y, s, n=2000, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        i = rng.integers(0, len(y), len(y))
        if len(set(y[i])) < 2:
            continue
        out.append(roc_auc_score(y[i], s[i]))
    return float(np.percentile(out, 2.5)), float(np.percentile(out, 97.5))


def main():
    pairs_path, feats_path = sys.argv[1], sys.argv[2]
    out_path = sys.argv[sys.argv.index("--out") + 1] if "--out" in sys.argv else None
    rows = load(pairs_path, feats_path)
    tune = [r for r in rows if r[0]["split"] == "tuning"]
    rep = [r for r in rows if r[0]["split"] == "reporting"]
    y_t = np.array([r[0]["f1"] >= 0.5 for r in tune], dtype=int)
    y_r = np.array([r[0]["f1"] >= 0.5 for r in rep], dtype=int)
    print(f"tuning {len(tune)} ({y_t.sum()} right), reporting {len(rep)} ({y_r.sum()} right)")
    grid = []
    for kind in ("last", "mean", "both"):
        x = features(tune, kind)
        for pca in (0, 8, 16, 32):
            for c in (0.001, 0.01, 0.1, 1.0):
                a = np.mean([cv_auroc(x, y_t, groups(tune), pca, c, seed) for seed in range(3)])
                grid.append({"features": kind, "pca": pca, "C": c, "cv_auroc": round(float(a), 4)})
    grid.sort(key=lambda g: -g["cv_auroc"])
    best = grid[0]
    print("best on tuning (5-fold CV, 3 seeds):", best)
    m = model(best["pca"], best["C"]).fit(features(tune, best["features"]), y_t)
    s_r = m.predict_proba(features(rep, best["features"]))[:, 1]
    auc = roc_auc_score(y_r, s_r)
    lo, hi = bootstrap(y_r, s_r)
    acc = float(((s_r >= 0.5) == y_r).mean())
    print(f"reporting AUROC {auc:.3f} [{lo:.3f}, {hi:.3f}], accuracy at 0.5 {acc:.3f}")
    report = {
        "tuning": {"rows": len(tune), "right": int(y_t.sum())},
        "reporting": {"rows": len(rep), "right": int(y_r.sum())},
        "chosen": best,
        "grid_top10": grid[:10],
        "reporting_auroc": round(float(auc), 4),
        "reporting_auroc_ci95": [round(lo, 4), round(hi, 4)],
        "reporting_accuracy_at_0_5": round(acc, 4),
        "by_strategy": {},
    }
    # The monitor's confidence on the rows that have one, alone and stacked with the
    # probe (weights fitted on the tuning half's out-of-fold probe scores).
    mon_t = [i for i, r in enumerate(tune) if r[0].get("monitor") is not None]
    mon_r = [i for i, r in enumerate(rep) if r[0].get("monitor") is not None]
    if mon_t and mon_r:
        x_t = features(tune, best["features"])
        oof = np.zeros(len(y_t))
        for train, test in StratifiedGroupKFold(5, shuffle=True, random_state=0).split(x_t, y_t, groups(tune)):
            oof[test] = model(best["pca"], best["C"]).fit(x_t[train], y_t[train]).predict_proba(x_t[test])[:, 1]
        z_t = np.array([[oof[i], tune[i][0]["monitor"]] for i in mon_t])
        stack = LogisticRegression().fit(z_t, y_t[mon_t])
        z_r = np.array([[s_r[i], rep[i][0]["monitor"]] for i in mon_r])
        m_auc = roc_auc_score(y_r[mon_r], z_r[:, 1])
        p_auc = roc_auc_score(y_r[mon_r], z_r[:, 0])
        s_auc = roc_auc_score(y_r[mon_r], stack.predict_proba(z_r)[:, 1])
        report["monitor_rows"] = {
            "rows": len(mon_r),
            "monitor_auroc": round(float(m_auc), 4),
            "monitor_auroc_ci95": [round(v, 4) for v in bootstrap(y_r[mon_r], z_r[:, 1])],
            "probe_auroc": round(float(p_auc), 4),
            "probe_plus_monitor_auroc": round(float(s_auc), 4),
            "stack_weights": [round(float(w), 4) for w in stack.coef_[0]],
        }
        print(f"metarag rows ({len(mon_r)}): monitor {m_auc:.3f}, probe {p_auc:.3f}, both {s_auc:.3f}")
    for strategy in sorted({r[0]["strategy"] for r in rep}):
        idx = [i for i, r in enumerate(rep) if r[0]["strategy"] == strategy]
        ys, ss = y_r[idx], s_r[idx]
        if len(set(ys)) == 2:
            report["by_strategy"][strategy] = {"rows": len(idx), "probe_auroc": round(float(roc_auc_score(ys, ss)), 4)}
            print(f"  {strategy}: probe AUROC {roc_auc_score(ys, ss):.3f} on {len(idx)}")
    if out_path:
        with open(out_path, "w") as f:
            json.dump(report, f, indent=2)


if __name__ == "__main__":
    main()
