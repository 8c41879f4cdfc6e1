"""Megakernel vs grouped-GEMM-only vs torch-grouped on one H200 (EP rank emulation), with
achieved TFLOP/s against the measured ceilings (752 TF/s bf16 dense GEMM, 4.2 TB/s copy).

    PYTHONPATH=. python3 benchmarks/bench_megakernel.py [--models kimi-k2,glm-5]
        [--tokens 1024,2048,4096] [--ep 16] [--configs pull/push/2048/32,...] [--out RUNS.jsonl]

Each MoK config is 'dispatch/combine/minibatch/comm_sms'; the table shows the best one per row.
"""

from __future__ import annotations

import itertools
import sys

import torch

from mok_kernels import require_cuda
from mok_kernels.aot import _cfg_fields
from mok_kernels.bench import (MAX_ITERS, Workload, _hardware, _software, check_knobs,
                               check_records_out, check_workloads, forward_tiles, make_record,
                               run_gemm_only, run_mok, run_torch_grouped)
from mok_model.cli import distinct, doc_parser, int_at_least, number_list, run_tool
from mok_model.errors import MokInputError
from mok_model.presets import load_model
from mok_model.scenario import KNOB_MAX
from mok_model.records import append_records

GEMM_TF, COPY_TBS = 752.0, 4.2
RING = 131072   # macrobatch rows of every config


def main(argv: list[str]) -> int:
    p = doc_parser("benchmarks/bench_megakernel.py", __doc__)
    p.add_argument("--models", default="kimi-k2,glm-5")
    p.add_argument("--tokens", default="1024,2048,4096")
    p.add_argument("--ep", type=int_at_least(1), default=16)
    p.add_argument("--configs", default="pull/push/2048/32,pull/push/4096/24")
    p.add_argument("--variants", default="",
                   help="';'-separated KernelConfig tile options to compare, e.g. 'tma=1;block_m=64,num_warps=4'")
    p.add_argument("--iters", type=int_at_least(1, MAX_ITERS), default=10)
    p.add_argument("--out", default=None, help="RUNS.jsonl to append records to (default: none)")
    return run_tool(p, run, argv)


def configs(text: str) -> list[tuple[str, dict]]:
    """--configs: (text, knobs) of each 'dispatch/combine/minibatch/comm_sms', checked as the
    kernel would check them (bench.check_knobs), each once."""
    out = []
    for c in distinct("--configs", text):
        parts = c.split("/")
        if len(parts) != 4:
            raise MokInputError(f"--configs {c!r}: each config is dispatch/combine/minibatch/"
                                f"comm_sms, e.g. pull/push/2048/32")
        mb, cs = number_list(f"{parts[2]},{parts[3]}", f"--configs {c!r} (minibatch, comm_sms)",
                             high=KNOB_MAX)
        knobs = dict(dispatch=parts[0], combine=parts[1], minibatch=mb, comm_sms=cs,
                     macrobatch=RING, capacity=0.5)
        check_knobs(knobs, f"--configs {c!r}")
        if mb > RING:
            raise MokInputError(f"--configs {c!r}: minibatch {mb} is more than the ring's {RING} "
                                f"rows (the kernel would enlarge the ring without saying so)")
        out.append((c, knobs))
    return out


def run(a) -> int:
    """Time each model x tokens x config (flags checked first; a CUDA GPU)."""
    tokens = number_list(a.tokens, "--tokens")
    distinct("--tokens", a.tokens)
    models = distinct("--models", a.models)
    for model in models:
        load_model(model)
    check_workloads(models, [a.ep], tokens)
    grid = configs(a.configs)
    variants = [_cfg_fields(v, "--variants") for v in distinct("--variants", a.variants, ";")]
    for (c, knobs), var in itertools.product(grid, variants):
        check_knobs({**knobs, **var}, f"--configs {c!r} --variants {a.variants!r}")
    if a.out is not None:
        check_records_out(a.out)
    require_cuda()
    hw, sw = _hardware(), _software()
    rows = []
    for model in a.models.split(","):
        for n in [int(t) for t in a.tokens.split(",")]:
            wl = Workload(model, a.ep, n, "uniform", 0, 0)
            g = run_gemm_only(wl, a.iters, 3)
            tg = run_torch_grouped(wl, a.iters, 3)
            best = None
            for (c, knobs), (var, tiles) in itertools.product(
                    grid, zip(a.variants.split(";"), variants)):
                ran: dict = {}
                t, bd = run_mok(wl, knobs, a.iters, 3, True, True, ran, **tiles)
                med = sorted(t)[len(t) // 2]
                if a.out:
                    rec = make_record(system="mok", model=model, ep=a.ep, tokens=n, knobs=knobs,
                                      routing="uniform", seed=0, times=t, breakdown=bd,
                                      note="single-GPU rank emulation (rank 0), peers' buffers in "
                                           f"local HBM; graph replay; tile options {tiles or 'default'}; "
                                           "benchmarks/bench_megakernel.py", hardware=hw, software=sw,
                                      tiles=forward_tiles("bf16", wl, **{
                                          **tiles, "split_dn": ran["split_dn"],
                                          "dn_blocks": ran["dn_blocks"],
                                          "list_lag": ran["list_lag"]}))
                    append_records(a.out, [rec])
                label = f"{c} {var}".strip()
                print(f"  {model} {n} {label}: {med:.3f} ms", flush=True)
                if best is None or med < best[0]:
                    best = (med, label, bd)
            gm, tm = sorted(g)[len(g) // 2], sorted(tg)[len(tg) // 2]
            fl = wl.flops()
            copy_bytes = 2 * wl.expected_rows() * wl.shape.hidden * 2 * 2  # dispatch+combine r+w
            rows.append((model, n, gm, tm, best[0], best[1], fl, copy_bytes, best[2]))
            del wl
            torch.cuda.empty_cache()
    print(f"{'model':8s} {'tok':>5s} {'gemm':>7s} {'torch-g':>7s} {'mok':>7s} {'mok/gemm':>8s} "
          f"{'tg/mok':>7s} {'mokTF':>6s} {'%752':>5s} {'gemmTF':>6s} {'copy@4.2':>8s} config / breakdown")
    for model, n, gm, tm, mm, cfg, fl, cb, bd in rows:
        print(f"{model:8s} {n:5d} {gm:7.3f} {tm:7.3f} {mm:7.3f} {mm / gm:8.2f} {tm / mm:7.2f} "
              f"{fl / mm / 1e9:6.0f} {100 * fl / mm / 1e9 / GEMM_TF:5.1f} {fl / gm / 1e9:6.0f} "
              f"{cb / COPY_TBS / 1e9:8.3f} {cfg} {bd}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
