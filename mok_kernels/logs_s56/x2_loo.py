"""Session 56: a parameters file of h200-hgx8 on the real 2-GPU MoK runs, with the FREE terms (comma
list, may be empty) refitted without one token count / one model at a time.

    PYTHONPATH=. python mok_kernels/logs_s56/x2_loo.py PARAMS.json [FREE]

PARAMS is e.g. `python -m calibration.transfer --write-fabric OUT.json` (h200-1's fit with the
NVLink fabric measured); with FREE empty nothing is fitted to these runs and both lines are the
same figures (every run predicted once)."""
import collections
import glob
import sys

import numpy as np

from calibration.fit import fit, workload_key
from calibration.noise import pick_key
from calibration.validate import evaluate, validate
from mok_model.params import load_params
from mok_model.records import predictable, read_records


def main(path: str, free: list[str]) -> None:
    base = load_params(path, "h200-hgx8")
    runs = read_records(sorted(glob.glob("calibration/runs/h200x2/bench_*.jsonl")))
    mok = [r for r in runs if r["system"] == "mok" and predictable(r)]
    for by in ("tokens", "model"):
        recs, pred, regrets, fitted = [], [], [], []
        for g in sorted({str(r[by]) for r in mok}):
            test = [r for r in mok if str(r[by]) == g]
            p = fit([r for r in mok if str(r[by]) != g], base, free).params if free else base
            fitted.append({f: round(p[f], 3) for f in free})
            rows = validate(test, p, "analytic").rows
            recs += test
            pred += [x["predicted_ms"] for x in rows]
            per = collections.defaultdict(list)
            for r, x in zip(test, rows):
                per[workload_key(r)].append((pick_key(r, x["predicted_ms"]), x["measured_ms"]))
            regrets += [min(v)[1] / min(m for _, m in v) - 1 for v in per.values()]
        meas = [r["latency_ms"]["median"] for r in recs]
        ev = evaluate(recs, meas, pred)
        signed = float(np.mean(np.array(pred) / np.array(meas) - 1))
        print(f"free {','.join(free) or 'none'} held out by {by}: n {ev.n} MAPE {100 * ev.mape:.1f}% "
              f"max {100 * ev.max_ape:.1f}% signed {100 * signed:+.1f}% Spearman {ev.spearman:.2f} "
              f"regret max {100 * max(regrets):.1f}% mean {100 * np.mean(regrets):.1f}%; first fits "
              f"{fitted[:3]}")


if __name__ == "__main__":
    main(sys.argv[1], [f for f in (sys.argv[2] if len(sys.argv) > 2 else "").split(",") if f])
