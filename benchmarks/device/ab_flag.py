"""A/B of a KernelConfig flag on one H200 (rank 0 of an emulated EP group): the probe each kernel
change of the comm copies was measured with (benchmarks/device/s39_ahead.py, s40_pipe.py).

1. Bits: the layer's output with the flag off and on, same inputs, must be identical (a copy loop
   moves the same rows; the kernel is checked against float32 by tests/test_kernels_gpu.py).
2. Time: the launch alone (benchmarks/copy_beside_gemm.py time_form: graph replay, fresh token
   values, median of 20), the pass and the copies form (skip_gemm), off and on, in alternating
   order over two rounds.

A probe module names its flag, BITS and TIMED cases and calls main(flag, BITS, TIMED).
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
# the bit cases of a copy-loop change: pull and push dispatch, push and pull combine, BF16 and FP8
# rings, several minibatches and ragged minibatch ends, H with a masked last column step
COPY_BITS = [  # (model, ep, tokens, seed, dispatch, combine, minibatch, comm_sms, rank, precision)
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


def bits(out, flag: str, cases: list) -> bool:
    """Whether every case's output is the same with `flag` off and on (a line per case)."""
    ok = True
    for model, ep, n, seed, disp, comb, mb, cs, rank, prec in cases:
        wl = Workload(model, ep, n, "uniform", seed, 0)
        flat = wl.ids.reshape(-1)
        served = ((flat >= 0) & (flat < wl.el)).nonzero().squeeze(1)
        res = []
        for on in (False, True):
            cfg = KernelConfig(dispatch=disp, combine=comb, minibatch=mb, comm_sms=cs,
                               macrobatch=131072, capacity=1.0, on_error="raise",
                               precision=prec, **{flag: on})
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


def timed(out, flag: str, cases: list, deadline: float) -> None:
    """Each case timed at each of its comm-SM counts: pass and copies, flag off and on."""
    med = statistics.median
    for model, ep, n, seed, disp, comb, mb, css in cases:
        wl = Workload(model, ep, n, "uniform", seed, 0)
        for cs in css:
            knobs = dict(dispatch=disp, combine=comb, minibatch=mb, comm_sms=cs,
                         macrobatch=131072, capacity=1.0)
            got: dict = {}
            for rnd in range(2):
                order = [(f, a) for f in ("pass", "copies") for a in (False, True)]
                for form, on in (order if rnd == 0 else order[::-1]):
                    if time.time() > deadline:
                        return
                    opts = {flag: on, **({"skip_gemm": True} if form == "copies" else {})}
                    times, ran = time_form(wl, knobs, 20, **opts)
                    got.setdefault((form, on), []).extend(times)
            row = {f"{f}{'_on' if a else ''}": med(t) for (f, a), t in got.items()}
            line = {"check": "time", "model": model, "ep": ep, "tokens": n, "knobs": knobs,
                    "ran": ran, "launch_ms": row,
                    "times": {f"{f}{'_on' if a else ''}": t for (f, a), t in got.items()}}
            out.write(json.dumps(line) + "\n")
            out.flush()
            print(f"{model.split('/')[-1]}:{ep}:{n} {disp}/{comb} c{cs}: "
                  + ", ".join(f"{k} {v:.3f}" for k, v in row.items())
                  + f"; on/off pass {row['pass_on'] / row['pass']:.3f}"
                  + f" copies {row['copies_on'] / row['copies']:.3f}", flush=True)
        del wl
        torch.cuda.empty_cache()


def main(flag: str, bits_cases: list, timed_cases: list) -> int:
    """argv: OUT.jsonl [SECONDS]: bits first, then time until SECONDS from the start."""
    t0 = time.time()
    budget = float(sys.argv[2]) if len(sys.argv) > 2 else 300.0
    with open(sys.argv[1], "a") as out:
        ok = bits(out, flag, bits_cases)
        print("bits identical everywhere" if ok else "BITS DIFFER", flush=True)
        if ok:
            timed(out, flag, timed_cases, t0 + budget)
    return 0 if ok else 1
