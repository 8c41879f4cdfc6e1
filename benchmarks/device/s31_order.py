"""Session 31 probe: does the setting a sweep times first read slow? The seed-11 drawn sweep's
workloads at <= 640 tokens per GPU, each setting built and timed as space_sweep does (graph
replay, fresh routings, mok_kernels.bench.time_events), first in the plan's order (default
first), then reversed (default last), then in the plan's order again, in one process. Prints a
JSON line a workload: the medians of each pass by setting.

    PYTHONPATH=. python3 benchmarks/device/s31_order.py --limit 5
"""

import argparse
import glob
import json
import time

import torch

from mok_kernels.bench import Workload, capture_graph, time_events
from mok_kernels.megakernel import KernelConfig, MoKLayer
from mok_kernels.space_sweep import plan


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--limit", type=int, default=10)
    p.add_argument("--deadline-s", type=float, default=240.0)
    a = p.parse_args()
    t0 = time.time()
    shapes = tuple(sorted(glob.glob("calibration/drawn_shapes/seed11/*.toml")))
    small = [w for w in plan(11, models=shapes, tokens=(128, 640, 2048, 4608, 6144), per_model=5)
             if w["tokens"] <= 640][:a.limit]
    for w in small:
        if time.time() - t0 > a.deadline_s:
            break
        wl = Workload(w["model"], w["ep"], w["tokens"], w["routing"], 11, 0)
        steps = []
        for knobs in w["configs"]:
            layer = MoKLayer(wl.w, wl.ep, wl.tokens, wl.shape.topk, 0,
                             KernelConfig(**knobs, on_error="trap"), local_weights=True)
            fwd = lambda lay=layer, wk=wl: lay.forward(wk.x, wk.ids, wk.wts)  # noqa: E731
            fwd()
            torch.cuda.synchronize()
            steps.append((layer, capture_graph(fwd)))
        n = len(steps)
        passes = {}
        for name, order in (("plan", range(n)), ("reversed", reversed(range(n))),
                            ("plan_again", range(n))):
            med = [None] * n
            for i in order:
                t = sorted(time_events(steps[i][1], wl.refresh, 8, 2))
                steps[i][0].check()
                med[i] = round((t[3] + t[4]) / 2, 4)
            passes[name] = med
        print(json.dumps({"workload": [w["model"].split("/")[-1], w["ep"], w["tokens"], w["routing"]],
                          "settings": [f"{c['dispatch']}/{c['combine']}/{c['minibatch']}/{c['comm_sms']}"
                                       for c in w["configs"]], **passes,
                          "s": round(time.time() - t0)}), flush=True)
        del steps, wl
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
