"""The megakernel's own copies alone and beside its own GEMMs (one GPU, rank 0 of an emulated EP
group): for each workload and knob setting the launch is timed three ways, the schedule built
once and the launch replayed from a CUDA graph on fresh token values:

- ``pass``: the whole launch (dispatch copies, GEMM items, combine);
- ``copies``: the same launch with the GEMM items' K loops skipped (KernelConfig.skip_gemm: the
  items store zero tiles and signal, so every copy and wait runs as in the pass while the compute
  programs are idle);
- ``gemms``: the same launch with the dispatch copies skipped (KernelConfig.skip_copy; pull
  dispatch only; a pull combine still copies).

Where the copies bound the pass, ``pass`` minus ``copies`` is what the GEMMs beside them cost the
copies (the model's copy_slowdown_beside_gemm x the GEMMs' overlap). Diagnostic: appends one JSON
line per form and setting to --out (not run records; the outputs are not the layer's) and prints
a table.

    PYTHONPATH=. python3 benchmarks/copy_beside_gemm.py --out copy.jsonl \\
        --workloads kimi-k2:16:4096,FILE.toml:16:6144 --combine push,pull \\
        [--minibatch 4096] [--comm-sms 8,16] [--routing uniform] [--seed 0] [--iters 20]
"""

from __future__ import annotations

import json
import statistics
import sys
import time

import torch

from mok_kernels import require_cuda
from mok_kernels.bench import MAX_ITERS
from mok_model.cli import distinct, doc_parser, int_at_least, number_list, run_tool

FORMS = {"pass": {}, "copies": {"skip_gemm": True}, "gemms": {"skip_copy": True}}


def main(argv: list[str]) -> int:
    p = doc_parser("benchmarks/copy_beside_gemm.py", __doc__)
    p.add_argument("--out", required=True, help="a .jsonl file: one line per form and setting "
                                                "is appended")
    p.add_argument("--workloads", required=True, help="MODEL:EP:TOKENS,... (a preset or a "
                                                      "model .toml)")
    p.add_argument("--dispatch", default="pull", help="pull and/or push")
    p.add_argument("--combine", default="push", help="push and/or pull")
    p.add_argument("--minibatch", default="4096")
    p.add_argument("--comm-sms", default="8,16")
    p.add_argument("--routing", default="uniform")
    p.add_argument("--seed", type=int_at_least(0, 2**31 - 1), default=0)
    p.add_argument("--iters", type=int_at_least(1, MAX_ITERS), default=20)
    return run_tool(p, run, argv)


def settings(a) -> list[dict]:
    """Every knob setting asked for, each checked as `mok bench` checks it."""
    from mok_kernels.bench import check_knobs
    from mok_model.errors import MokInputError

    out = []
    for name, allowed in (("--dispatch", ("pull", "push")), ("--combine", ("push", "pull"))):
        values = distinct(name, getattr(a, name[2:]))
        if not values or "" in values:
            raise MokInputError(f"{name} {getattr(a, name[2:])!r}: a comma list of "
                                f"{', '.join(allowed)}, no empty item")
        for v in values:
            if v not in allowed:
                raise MokInputError(f"{name} {v!r}: allowed {', '.join(allowed)}")
    for d in distinct("--dispatch", a.dispatch):
        for c in distinct("--combine", a.combine):
            for mb in number_list(a.minibatch, "--minibatch"):
                for cs in number_list(a.comm_sms, "--comm-sms"):
                    knobs = dict(dispatch=d, combine=c, minibatch=mb, comm_sms=cs,
                                 macrobatch=131072, capacity=1.0)
                    check_knobs({k: knobs[k] for k in ("minibatch", "comm_sms")}, "--comm-sms")
                    out.append(knobs)
    return out


def time_form(wl, knobs: dict, iters: int, **opts) -> tuple[list[float], dict]:
    """CUDA-event times (ms) of the megakernel launch alone, graph-replayed, fresh token values
    before each; and what the layer ran (split, lag, minibatches, rows received)."""
    from mok_kernels.bench import time_launch
    from mok_kernels.megakernel import KernelConfig, MoKLayer

    layer = MoKLayer(wl.w, wl.ep, wl.tokens, wl.shape.topk, wl.rank,
                     KernelConfig(**knobs, **opts), local_weights=True)
    sched = layer.schedule(wl.ids)
    nmb = int(sched.num_mb.item())
    ran = {"split_dn": layer.cfg.split_dn, "dn_blocks": layer.cfg.dn_blocks,
           "list_lag": layer.cfg.list_lag, "minibatches": nmb,
           "routed_rows": int(sched.mb_row[nmb].item())}
    return time_launch(layer, wl.x, sched, lambda i: wl.x.normal_(), iters, 3), ran


def run(a) -> int:
    """Each workload x setting x form timed (flags and --out checked first; a CUDA GPU)."""
    from mok_kernels.tile_sweep import _workloads
    from mok_model.errors import MokInputError
    from mok_model.fileio import check_output_file
    from mok_kernels.routing import parse_routing

    out = check_output_file(a.out, "--out", ".jsonl")
    workloads = _workloads(a.workloads)
    parse_routing(a.routing)
    grid = settings(a)
    require_cuda()
    from mok_kernels.bench import Workload

    gpu = torch.cuda.get_device_name(0)
    med = statistics.median
    for model, ep, n in workloads:
        wl = Workload(model, ep, n, a.routing, a.seed, 0)
        for knobs in grid:
            row = {}
            for form, opts in FORMS.items():
                if form == "gemms" and knobs["dispatch"] != "pull":
                    continue
                try:
                    times, ran = time_form(wl, knobs, a.iters, **opts)
                except ValueError as exc:   # a knob the layer refuses for this shape
                    raise MokInputError(f"{model}:{ep}:{n} {knobs}: {exc}") from None
                row[form] = med(times)
                line = {"workload": {"model": model, "ep": ep, "tokens": n,
                                     "routing": a.routing, "seed": a.seed},
                        "knobs": knobs, "form": form, "ran": ran, "gpu": gpu,
                        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                        "launch_ms": {"median": med(times), "times": times}}
                with open(out, "a") as f:
                    f.write(json.dumps(line) + "\n")
            print(f"{model}:{ep}:{n} {knobs['dispatch']}/{knobs['combine']} mb {knobs['minibatch']} "
                  f"comm {knobs['comm_sms']:3d} ({ran['minibatches']} mb, {ran['routed_rows']} rows): "
                  + ", ".join(f"{k} {v:.3f}" for k, v in row.items())
                  + f" ms; pass - copies {row['pass'] - row['copies']:+.3f}", flush=True)
        del wl
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
