"""Where a MoK forward spends its time beyond the GEMMs (one GPU, rank 0 of an emulated EP group):
the library's grouped GEMMs alone, the megakernel's GEMM phases alone (copies skipped, launch
only), and the whole forward, without its dispatch copies (pull), with its copies and signals
alone (no GEMM K loops) and with comm SMs that never join (push combine: a pull combine's never
do), each split into schedule, megakernel and epilogue; with --trace, three passes seen from the
kernel's own stamps (mok_kernels/trace.py: when each minibatch's rows were in, how long items
waited). Diagnostic: prints a table, writes no run records.

    PYTHONPATH=. python3 benchmarks/narrow_diag.py --workloads qwen3-30b-a3b:8:4096,kimi-k2:8:4096 \\
        [--comm-sms 16,32] [--minibatch 2048] [--list-lag 1] [--dispatch pull,push]
        [--combine push,pull] [--routing uniform] [--seed 0] [--push-loop tiles,shares] [--trace]
"""

from __future__ import annotations

import statistics
import sys

import torch

from mok_kernels import require_cuda
from mok_kernels.bench import MAX_ITERS
from mok_kernels.megakernel import PUSH_LOOPS
from mok_model.cli import distinct, doc_parser, int_at_least, number_list, run_tool
from mok_model.errors import MokInputError
from mok_model.scenario import MAX_LIST_LAG


def main(argv: list[str]) -> int:
    p = doc_parser("benchmarks/narrow_diag.py", __doc__)
    p.add_argument("--workloads", default="qwen3-30b-a3b:8:4096,kimi-k2:8:4096")
    p.add_argument("--comm-sms", default="16,32")
    p.add_argument("--minibatch", type=int_at_least(1, 131072), default=2048,
                   help="rows per step, at most the ring's 131072")
    p.add_argument("--iters", type=int_at_least(1, MAX_ITERS), default=10)
    p.add_argument("--list-lag", type=int_at_least(1, MAX_LIST_LAG), default=1,
                   help="the work list's lag of the MoK rows (KernelConfig.list_lag)")
    p.add_argument("--dispatch", default="pull", help="comma list of pull, push")
    p.add_argument("--combine", default="push", help="comma list of push, pull")
    p.add_argument("--routing", default="uniform",
                   help="uniform | zipf:S | hot:X | onehot (as mok bench)")
    p.add_argument("--seed", type=int_at_least(0, 2**31 - 1), default=0,
                   help="the routing draw's seed (as mok bench --seed)")
    p.add_argument("--push-loop", default="tiles",
                   help="comma list of tiles, shares (KernelConfig.push_loop): each push-dispatch "
                        "setting is timed with each loop")
    p.add_argument("--trace", action="store_true",
                   help="after each setting's timings, three traced passes (KernelConfig.trace): "
                        "when each minibatch's rows were in, and how long the items waited")
    return run_tool(p, run, argv)


def run(a) -> int:
    """Each workload's phases timed (flags checked first; a CUDA GPU)."""
    from mok_kernels.tile_sweep import _workloads

    from mok_kernels.bench import check_knobs
    from mok_kernels.routing import parse_routing, shape_of

    workloads = _workloads(a.workloads)
    comm_sms = number_list(a.comm_sms, "--comm-sms")
    distinct("--comm-sms", a.comm_sms)
    dispatches = distinct("--dispatch", a.dispatch)
    combines = distinct("--combine", a.combine)
    for flag, modes in (("--dispatch", dispatches), ("--combine", combines)):
        for m in modes:
            if m not in ("pull", "push"):
                raise MokInputError(f"{flag} {m!r}: allowed pull, push")
    for model, _, _ in workloads:   # the kernel's reading (mok bench's): no file, hot:X that fits
        shape = shape_of(model)
        parse_routing(a.routing, shape.topk, shape.experts)
    loops = distinct("--push-loop", a.push_loop)
    for lp in loops:
        if lp not in PUSH_LOOPS:
            raise MokInputError(f"--push-loop {lp!r}: allowed {', '.join(PUSH_LOOPS)}")
    if loops != ["tiles"] and "push" not in dispatches:
        raise MokInputError(f"--push-loop {a.push_loop}: the loops are push dispatch's; add push "
                            f"to --dispatch")
    for cs in comm_sms:
        check_knobs(dict(minibatch=a.minibatch, comm_sms=cs, list_lag=a.list_lag), "--comm-sms")
    require_cuda()
    from mok_kernels.bench import Workload, run_gemm_only, run_mok, run_mok_gemm
    from mok_kernels.trace import format_summary, trace_pass

    med = statistics.median
    for model, ep, n in workloads:
        wl = Workload(model, ep, n, a.routing, a.seed, 0)
        lib = med(run_gemm_only(wl, a.iters, 3))
        own = med(run_mok_gemm(wl, a.iters, 3))
        print(f"{model}:{ep}:{n}: library GEMMs {lib:.3f} ms; megakernel GEMM phases alone "
              f"{own:.3f} ({own / lib:.2f}x)", flush=True)
        runs = [(cs, d, k, lp) for cs in comm_sms for d in dispatches for k in combines
                for lp in (loops if d == "push" else ["tiles"])]
        for cs, d, k, lp in runs:
            knobs = dict(dispatch=d, combine=k, minibatch=a.minibatch, comm_sms=cs,
                         macrobatch=131072, capacity=1.0)
            lag = (f" lag {a.list_lag}" if a.list_lag != 1 else "") + f" {d}" + (
                f" {lp}" if d == "push" and len(loops) > 1 else "") + (
                f" / {k} combine" if len(combines) > 1 else "")
            # skip_copy is pull dispatch's diagnostic; skip_gemm (the copies and signals alone)
            # runs in every mode; comm SMs join only beside a push combine
            variants = [("MoK", {}), ("MoK, copies alone", {"skip_gemm": True})]
            if k == "push":
                variants.append(("MoK, comm SMs never join", {"join": False}))
            if d == "pull":
                variants.insert(1, ("MoK, no copies", {"skip_copy": True}))
            for label, opts in variants:
                t, bd = run_mok(wl, knobs, a.iters, 3, True, True, list_lag=a.list_lag,
                                push_loop=lp, **opts)
                print(f"  comm {cs:3d}{lag} {label:26s} {med(t):.3f} ms ({med(t) / lib:.2f}x library, "
                      f"{med(t) / own:.2f}x own GEMMs); eager schedule {bd['schedule']:.3f}, "
                      f"megakernel {bd['megakernel']:.3f}, epilogue {bd['epilogue']:.3f}",
                      flush=True)
            if a.trace:
                for summary in trace_pass(wl, knobs, list_lag=a.list_lag, push_loop=lp):
                    print(f"  comm {cs:3d}{lag} traced: {format_summary(summary)}", flush=True)
        del wl
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
