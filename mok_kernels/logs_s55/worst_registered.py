"""The worst registered predictions of a registration against its runs (after calibration.registered).

    PYTHONPATH=. python mok_kernels/logs_s55/worst_registered.py PRED RUNS [N]
"""
import sys

from calibration.registered import match, read_predictions
from mok_model.records import read_records


def main(pred_path, runs_path, n=6):
    pairs = match(read_predictions(pred_path), read_records([runs_path]))
    rows = []
    for p, r in pairs:
        if r["system"] != "mok":
            continue
        m = r["latency_ms"]["median"]
        rows.append((p["predicted_ms"] / m - 1, p["engine"], r))
    rows.sort(key=lambda x: -abs(x[0]))
    for e, eng, r in rows[:n]:
        c = r["config"]
        name = r["model"]["name"] if isinstance(r["model"], dict) else r["model"]
        routing = r.get("routing", {}).get("kind", "uniform")
        print(f"{e:+.1%} {eng} {name} EP {r['ep']} x {r['tokens']} {routing}"
              f" {c['dispatch']}/{c['combine']} mb {c['minibatch']} c{c['comm_sms']}:"
              f" measured {r['latency_ms']['median']:.3f} ms")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 6)
