"""Session 40 probe: copy_rows with two column steps' loads in flight (KernelConfig.copy_pipe)
against one step at a time (session 39's), on one H200 (rank 0 of an emulated EP group).

1. Bits: the layer's output with copy_pipe on and off, same inputs, must be identical (a copy
   moves the same rows; the kernel is checked against float32 by tests/test_kernels_gpu.py),
   at shapes with a masked last column step (H not a multiple of 1024), several minibatches and
   ragged minibatch ends, pull and push dispatch, push and pull combine, BF16 and FP8 rings.
2. Time: the launch alone (benchmarks/copy_beside_gemm.py time_form: graph replay, fresh token
   values, median of 20), the pass and the copies form (skip_gemm), off and on, in
   alternating order over two rounds.

    PYTHONPATH=. python3 benchmarks/device/s40_pipe.py OUT.jsonl [SECONDS]

Ran at 760b523 (logs in mok_kernels/logs_s40/pipe/). The A/B flag (KernelConfig.copy_pipe) was
removed afterwards: the pipelined copy_rows is the only one, so this probe no longer runs as
written.
"""
import json
import statistics
import sys
import time

import torch

sys.path.insert(0, "benchmarks")
from copy_beside_gemm import time_form  # noqa: E402

from mok_kernels.bench import Workload  # noqa: E402
from mok_kernels.megakernel import KernelConfig, MoKLayer  # noqa: E402

D = "calibration/drawn_shapes"
BITS = [  # (model, ep, tokens, seed, dispatch, combine, minibatch, comm_sms, rank, precision)
    ("qwen3-30b-a3b", 8, 1024, 0, "pull", "push", 1024, 8, 0, "bf16"),
    ("qwen3-30b-a3b", 8, 1024, 0, "pull", "pull", 1024, 16, 0, "bf16"),
    ("qwen3-30b-a3b", 8, 1024, 0, "push", "push", 1024, 6, 0, "bf16"),
    ("qwen3-30b-a3b", 8, 1024, 0, "push", "pull", 1024, 12, 0, "bf16"),
    ("qwen3-30b-a3b", 8, 1024, 0, "pull", "pull", 1024, 16, 0, "fp8"),
    ("qwen3-30b-a3b", 8, 1024, 0, "push", "push", 1024, 6, 0, "fp8"),
    (f"{D}/seed14/syn14-h3328-i1280-e256-k7-s1.toml", 16, 640, 14, "pull", "pull", 512, 6, 0,
     "bf16"),
    (f"{D}/seed14/syn14-h3328-i1280-e256-k7-s1.toml", 16, 640, 14, "push", "push", 512, 12, 0,
     "bf16"),
    ("gpt-oss-120b", 8, 512, 0, "pull", "pull", 1024, 8, 0, "bf16"),
    (f"{D}/seed13/syn13-h4352-i384-e160-k10.toml", 4, 640, 13, "pull", "pull", 2048, 8, 0,
     "bf16"),
]
TIMED = [  # (model, ep, tokens, seed, dispatch, combine, minibatch, comm_sms list)
    ("qwen3-30b-a3b", 8, 4096, 0, "pull", "pull", 4096, (8, 16, 32)),
    ("qwen3-30b-a3b", 8, 4096, 0, "pull", "push", 4096, (8, 16)),
    ("qwen3-30b-a3b", 8, 4096, 0, "push", "push", 4096, (8,)),
    (f"{D}/seed14/syn14-h3328-i1280-e256-k7-s1.toml", 16, 6144, 14, "pull", "pull", 4096, (8,)),
    ("kimi-k2", 16, 4096, 0, "pull", "push", 4096, (16,)),
]


def bits(out) -> bool:
    ok = True
    for model, ep, n, seed, disp, comb, mb, cs, rank, prec in BITS:
        wl = Workload(model, ep, n, "uniform", seed, 0)
        flat = wl.ids.reshape(-1)
        served = ((flat >= 0) & (flat < wl.el)).nonzero().squeeze(1)
        res = []
        for pipe in (False, True):
            cfg = KernelConfig(dispatch=disp, combine=comb, minibatch=mb, comm_sms=cs,
                               macrobatch=131072, capacity=1.0, copy_pipe=pipe, on_error="raise",
                               precision=prec)
            layer = MoKLayer(wl.w, ep, n, wl.shape.topk, rank, cfg, local_weights=True)
            layer.forward(wl.x, wl.ids, wl.wts)
            torch.cuda.synchronize()
            # what rank 0 computes: the combine slots of every route it serves and its shared
            # rows (the output's absent peers' slots are never written by an emulated rank)
            res.append(torch.cat([layer.comb[served].reshape(-1)]
                                 + ([layer.sh_out[:n].reshape(-1)] if wl.w.sg is not None else [])))
            nmb = int(layer.last_schedule.num_mb.item())
            del layer
        same = torch.equal(res[0], res[1]) and bool(torch.isfinite(res[0].float()).all())
        ok &= same
        line = {"check": "bits", "model": model, "ep": ep, "tokens": n, "dispatch": disp,
                "combine": comb, "precision": prec,
                "minibatch": mb, "comm_sms": cs, "minibatches": nmb, "identical": same}
        print(json.dumps(line), flush=True)
        out.write(json.dumps(line) + "\n")
        del wl
        torch.cuda.empty_cache()
    return ok


def timed(out, deadline: float) -> None:
    med = statistics.median
    for model, ep, n, seed, disp, comb, mb, css in TIMED:
        wl = Workload(model, ep, n, "uniform", seed, 0)
        for cs in css:
            knobs = dict(dispatch=disp, combine=comb, minibatch=mb, comm_sms=cs,
                         macrobatch=131072, capacity=1.0)
            got: dict = {}
            for rnd in range(2):
                order = [(f, a) for f in ("pass", "copies") for a in (False, True)]
                for form, pipe in (order if rnd == 0 else order[::-1]):
                    if time.time() > deadline:
                        return
                    opts = {"copy_pipe": pipe, **({"skip_gemm": True} if form == "copies" else {})}
                    times, ran = time_form(wl, knobs, 20, **opts)
                    got.setdefault((form, pipe), []).extend(times)
            row = {f"{f}{'_pipe' if a else ''}": med(t) for (f, a), t in got.items()}
            line = {"check": "time", "model": model, "ep": ep, "tokens": n, "knobs": knobs,
                    "ran": ran, "launch_ms": row,
                    "times": {f"{f}{'_pipe' if a else ''}": t for (f, a), t in got.items()}}
            out.write(json.dumps(line) + "\n")
            out.flush()
            print(f"{model.split('/')[-1]}:{ep}:{n} {disp}/{comb} c{cs}: "
                  + ", ".join(f"{k} {v:.3f}" for k, v in row.items())
                  + f"; pipe/step pass {row['pass_pipe'] / row['pass']:.3f}"
                  + f" copies {row['copies_pipe'] / row['copies']:.3f}", flush=True)
        del wl
        torch.cuda.empty_cache()


def main() -> int:
    t0 = time.time()
    budget = float(sys.argv[2]) if len(sys.argv) > 2 else 300.0
    with open(sys.argv[1], "a") as out:
        ok = bits(out)
        print("bits identical everywhere" if ok else "BITS DIFFER", flush=True)
        if ok:
            timed(out, t0 + budget)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
