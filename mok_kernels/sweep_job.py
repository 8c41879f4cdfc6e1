"""Device job: exhaustive knob grid for the calibration / tuner-regret workloads.

    PYTHONPATH=. python3 -m mok_kernels.sweep_job --out $OUT/mok_sweep.jsonl [--deadline-s 520]

Workloads: kimi-k2 and glm-5, EP 16 rank emulation (rank 0), 1024/2048/4096 tokens, uniform
routing. Grid per workload: dispatch x combine x minibatch {512..8192} x comm_sms {8,16,32,64} x
macrobatch {half, all of the expected rows} = 160 MoK configs, plus torch-grouped and gemm-only.
Records are appended per workload; the job stops cleanly at the deadline.
"""

from __future__ import annotations

import itertools
import sys
import time

import torch

from mok_model.cli import deadline_arg, distinct, doc_parser, int_at_least, number_list, run_tool
from mok_model.errors import MokInputError
from mok_model.presets import load_model
from mok_model.records import append_records
from mok_model.scenario import KNOB_MAX

from . import require_cuda
from .bench import (MAX_ITERS, Workload, _hardware, _software, check_comm_sms, check_fits,
                    check_records_out, forward_tiles, macro_rows, make_record, run_gemm_only, run_mok,
                    run_torch_grouped)
from .routing import parse_routing, shape_of

EP = 16     # the emulated EP group of every workload


def main(argv: list[str]) -> int:
    p = doc_parser("python -m mok_kernels.sweep_job", __doc__)
    p.add_argument("--out", required=True)
    p.add_argument("--workloads", default="kimi-k2:1024,glm-5:1024,kimi-k2:2048,glm-5:2048,"
                                          "kimi-k2:4096,glm-5:4096")
    p.add_argument("--minibatch", default="512,1024,2048,4096,8192")
    p.add_argument("--comm-sms", default="8,16,32,64")
    p.add_argument("--iters", type=int_at_least(1, MAX_ITERS), default=6)
    p.add_argument("--warmup", type=int_at_least(0, MAX_ITERS), default=2)
    p.add_argument("--deadline-s", type=deadline_arg, default=520)
    p.add_argument("--routing", default="uniform")
    return run_tool(p, lambda a: sweep(a, argv), argv)


def sweep(a, argv: list[str]) -> int:
    """The grid on each workload (flags checked first; a CUDA GPU)."""
    check_records_out(a.out, "--out")
    for flag in ("--workloads", "--minibatch", "--comm-sms"):
        distinct(flag, getattr(a, flag[2:].replace("-", "_")))
    minibatches = number_list(a.minibatch, "--minibatch", high=KNOB_MAX)
    comm_sms = number_list(a.comm_sms, "--comm-sms")
    check_comm_sms(comm_sms)
    workloads = []
    for wspec in a.workloads.split(","):
        model, _, n = wspec.partition(":")
        load_model(model)
        workloads.append((wspec, model, number_list(n, f"--workloads {wspec!r} (MODEL:TOKENS)")[0]))
        shape = shape_of(model)
        parse_routing(a.routing, shape.topk, shape.experts)
        if shape.experts % EP:
            raise MokInputError(f"--workloads {wspec!r}: {model}'s {shape.experts} "
                                f"experts do not divide over EP {EP} (the job's emulated group)")
        check_fits(model, EP, workloads[-1][2], f"--workloads {wspec!r}: tokens")
    require_cuda()
    t0 = time.time()
    hw, sw = _hardware(), _software()
    cmd = "python3 -m mok_kernels.sweep_job " + " ".join(argv)
    note0 = ("single-GPU rank emulation: rank 0 of EP 16, peers' send/combine buffers in local "
             "HBM; MoK timed as CUDA-graph replay of schedule+megakernel+epilogue; " + cmd)
    grid = list(itertools.product(("pull", "push"), ("push", "pull"),
                                  minibatches, comm_sms, ("half", "all")))
    total = 0
    for wspec, model, n in workloads:
        wl = Workload(model, EP, n, a.routing, 0, 0)
        common = dict(model=model, ep=EP, tokens=n, routing=a.routing, seed=0,
                      hardware=hw, software=sw)
        recs = []
        base = dict(dispatch="pull", combine="push", minibatch=4096, comm_sms=32,
                    macrobatch=131072, capacity=0.5)
        for sysname, fn in (("torch-grouped", run_torch_grouped), ("gemm-only", run_gemm_only)):
            t = fn(wl, a.iters + 4, a.warmup)
            recs.append(make_record(system=sysname, knobs=base, times=t, breakdown={},
                                    note=note0 + "; knobs not used by this system", **common))
        best = (1e9, None)
        for d, c, mb, cs, mac in grid:
            if time.time() - t0 > a.deadline_s:
                break
            knobs = dict(dispatch=d, combine=c, minibatch=mb, comm_sms=cs,
                         macrobatch=macro_rows(mac, wl), capacity=0.5)
            ran: dict = {}
            try:
                t, _ = run_mok(wl, knobs, a.iters, a.warmup, True, False, ran)
            except RuntimeError as exc:
                print(f"{wspec} {knobs}: FAILED {exc}", flush=True)
                continue
            r = make_record(system="mok", knobs=knobs, times=t, breakdown={},
                            note=note0 + f"; macrobatch={mac} of expected rows; ring rows used "
                                         f"{max(knobs['macrobatch'], mb + 128)}",
                            tiles=forward_tiles("bf16", wl, split_dn=ran["split_dn"],
                                                dn_blocks=ran["dn_blocks"],
                                                list_lag=ran["list_lag"]), **common)
            recs.append(r)
            if r["latency_ms"]["median"] < best[0]:
                best = (r["latency_ms"]["median"], knobs)
        append_records(a.out, recs)
        total += len(recs)
        tg = recs[0]["latency_ms"]["median"]
        gm = recs[1]["latency_ms"]["median"]
        print(f"{wspec} {a.routing}: {len(recs) - 2} mok configs, best {best[0]:.3f} ms {best[1]}; "
              f"gemm-only {gm:.3f}, torch-grouped {tg:.3f}; elapsed {time.time() - t0:.0f} s",
              flush=True)
        del wl
        torch.cuda.empty_cache()
        if time.time() - t0 > a.deadline_s:
            break
    print(f"records: {total}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
