"""H200 microbenchmarks for the cost model (GPU). Appends mok-run/1 records (system "micro-*").

    PYTHONPATH=. python3 calibration/microbench.py --out calibration/runs/h200/micro.jsonl

Measures: row-copy bandwidth vs number of copy SMs (the megakernel's copy loop), flag
release/acquire round trip between two programs, grouped GEMM throughput vs rows per expert
(torch._grouped_mm, expert shapes) and megakernel compute throughput vs compute SM count, SwiGLU
and k-slot reduction bandwidth, schedule-building time, launch and host-sync overhead.
Every record's latency_ms is the measured time of one operation; "metrics" holds the derived
quantity (GB/s, TFLOP/s, us) and the note says what was measured.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import torch

from mok_kernels import require_cuda
from mok_kernels.bench import (_hardware, _software, check_records_out, make_record, stats,
                               time_events)
from mok_model.cli import distinct, doc_parser, run_tool
from mok_model.errors import MokInputError
from mok_model.records import append_records

KNOBS0 = dict(dispatch="pull", combine="push", minibatch=4096, comm_sms=32, macrobatch=131072,
              capacity=0.5)
_K: dict[str, Any] = {}


def _kern() -> dict[str, Any]:
    if _K:
        return _K
    import triton
    import triton.language as tl

    @triton.jit
    def copy_kernel(src, idx, dst, nrows, H: tl.constexpr, CR: tl.constexpr, CC: tl.constexpr):
        pid = tl.program_id(0)
        np_ = tl.num_programs(0)
        cols = tl.arange(0, CC)
        for c in range(pid, (nrows + CR - 1) // CR, np_):
            rows = c * CR + tl.arange(0, CR)
            m = rows < nrows
            s = tl.load(idx + rows, mask=m, other=0).to(tl.int64)
            for h0 in tl.static_range(0, H, CC):
                m2 = m[:, None] & (cols[None, :] < H - h0)   # the last chunk may pass H
                v = tl.load(src + s[:, None] * H + h0 + cols[None, :], mask=m2)
                tl.store(dst + rows.to(tl.int64)[:, None] * H + h0 + cols[None, :], v, mask=m2)

    @triton.jit
    def pingpong(flag, rounds):
        pid = tl.program_id(0)
        for r in range(rounds):
            if pid == 0:
                tl.atomic_xchg(flag, 2 * r + 1, sem="release", scope="gpu")
                v = tl.atomic_add(flag + 1, 0, sem="acquire", scope="gpu")
                while v != 2 * r + 2:
                    v = tl.atomic_add(flag + 1, 0, sem="acquire", scope="gpu")
            else:
                v = tl.atomic_add(flag, 0, sem="acquire", scope="gpu")
                while v != 2 * r + 1:
                    v = tl.atomic_add(flag, 0, sem="acquire", scope="gpu")
                tl.atomic_xchg(flag + 1, 2 * r + 2, sem="release", scope="gpu")

    @triton.jit
    def empty_kernel(x):
        pass

    _K.update(copy=copy_kernel, pingpong=pingpong, empty=empty_kernel)
    return _K


def rec(system: str, ms: list[float], metrics: dict[str, Any], note: str, *, model: Any = None,
        tokens: int = 1024, ep: int = 16) -> dict[str, Any]:
    r = make_record(system=system, model=model or {"hidden": 7168}, ep=ep, tokens=tokens,
                    knobs=KNOBS0, routing="uniform", seed=0, times=ms, breakdown={}, note=note,
                    hardware=_hardware(), software=_software())
    r["emulated_peers"] = False
    r["metrics"] = metrics
    return r


def bench_copy(out: list, hidden: int = 7168, copy_rows: int = 16,
               sms_list: tuple[int, ...] = (1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 132)) -> None:
    """Row gather of 32768 random rows of `hidden` bf16 columns with S programs, `copy_rows` rows
    and min(1024, H rounded up to a power of two) columns per step (the megakernel's copy loop)."""
    k = _kern()["copy"]
    H, rows, cr = hidden, 32768, copy_rows
    cc = min(1024, 1 << (H - 1).bit_length())
    src = torch.randn(rows * 2, H, device="cuda", dtype=torch.bfloat16)
    idx = torch.randperm(rows * 2, device="cuda")[:rows].to(torch.int32)
    dst = torch.empty(rows, H, device="cuda", dtype=torch.bfloat16)
    nbytes = 2 * rows * H * 2
    for sms in sms_list:
        step = lambda: k[(sms,)](src, idx, dst, rows, H=H, CR=cr, CC=cc, num_warps=8)  # noqa
        t = time_events(step, lambda i: None, 5 if sms < 8 else 10, 2)
        med = stats(t)["median"]
        gbs = nbytes / med / 1e6
        out.append(rec("micro-copy", t, {"sms": sms, "GBps": gbs, "bytes": nbytes,
                                         "copy_rows": cr},
                       f"row gather {rows} rows x {H} bf16 with {sms} programs ({cr} rows x {cc} "
                       f"cols per step, 8 warps): {gbs:.0f} GB/s read+write", model={"hidden": H}))
        print(f"copy H={H} rows/step={cr} sms={sms:4d} {gbs:8.0f} GB/s")


def bench_copy_shapes(out: list) -> None:
    """The copy loop's rate by row width and rows per step, at few and many programs."""
    for h in (1536, 2048, 2880, 4096, 5120, 7168):
        bench_copy(out, h, 16, (1, 4, 16, 32))
    for cr in (32, 64):
        bench_copy(out, 2048, cr, (1, 4, 16, 32))


def bench_flag(out: list) -> None:
    k = _kern()["pingpong"]
    flag = torch.zeros(2, dtype=torch.int32, device="cuda")
    rounds = 2000
    t = time_events(lambda: k[(2,)](flag, rounds, num_warps=1), lambda i: flag.zero_(), 5, 2)
    us = stats(t)["median"] * 1e3 / rounds
    out.append(rec("micro-flag", [x / rounds for x in t], {"roundtrip_us": us},
                   f"release/acquire flag ping-pong between two programs: {us:.3f} us round trip"))
    print(f"flag round trip {us:.3f} us")


def bench_gemm(out: list) -> None:
    from mok_kernels.baselines import grouped_mm
    for model, (h, i, el) in {"kimi-k2": (7168, 2048, 24), "glm-5": (6144, 2048, 16)}.items():
        wgu = torch.randn(el, h, 2 * i, device="cuda", dtype=torch.bfloat16)
        wd = torch.randn(el, i, h, device="cuda", dtype=torch.bfloat16)
        for rpe in (32, 64, 128, 256, 512, 1024, 2048):
            m = rpe * el
            a = torch.randn(m, h, device="cuda", dtype=torch.bfloat16)
            hh = torch.randn(m, i, device="cuda", dtype=torch.bfloat16)
            offs = torch.arange(1, el + 1, device="cuda", dtype=torch.int32) * rpe
            fl = 6.0 * m * h * i
            step = lambda: (grouped_mm(a, wgu, offs), grouped_mm(hh, wd, offs))  # noqa
            t = time_events(step, lambda j: None, 10, 3)
            tf = fl / stats(t)["median"] / 1e9
            out.append(rec("micro-gemm", t, {"rows_per_expert": rpe, "experts": el, "TFLOPs": tf},
                           f"torch._grouped_mm gate|up ({h}->{2 * i}) + down ({i}->{h}), {el} experts "
                           f"x {rpe} rows: {tf:.0f} TF/s", model=model))
            print(f"gemm {model} rows/expert={rpe:5d} {tf:6.0f} TF/s")
        del wgu, wd


def bench_gemm_sms(out: list) -> None:
    """Megakernel throughput vs compute programs (8 comm programs, copy skipped)."""
    from mok_kernels.bench import Workload
    wl = Workload("glm-5", 16, 2048, "uniform", 0, 0)
    for nc in (16, 32, 64, 96, 124):
        knobs = dict(KNOBS0, comm_sms=8, minibatch=4096)
        from mok_kernels.megakernel import KernelConfig, MoKLayer
        cfg = KernelConfig(**knobs, grid=8 + nc, skip_copy=True)
        layer = MoKLayer(wl.w, 16, 2048, 8, 0, cfg, local_weights=True)
        layer.ring.normal_()   # copy is skipped: give the GEMMs random rows, not stale memory
        sched = layer.schedule(wl.ids)
        t = time_events(lambda ly=layer, sc=sched: ly.launch(wl.x, sc), lambda i: None, 5, 2)
        layer.check()
        tf = wl.flops() / stats(t)["median"] / 1e9
        out.append(rec("micro-gemm-sms", t, {"compute_programs": nc, "TFLOPs": tf},
                       f"MoK megakernel, glm-5 EP16 rank 0, 2048 tokens, copy skipped, {nc} compute "
                       f"programs: {tf:.0f} TF/s", model="glm-5", tokens=2048))
        print(f"mok compute programs={nc:4d} {tf:6.0f} TF/s")


def bench_swiglu_reduce(out: list) -> None:
    import torch.nn.functional as F
    from mok_kernels.megakernel import _kernels
    m, i = 16384, 2048
    gu = torch.randn(m, 2 * i, device="cuda", dtype=torch.bfloat16)
    t = time_events(lambda: F.silu(gu[:, :i]) * gu[:, i:], lambda j: None, 10, 3)
    gbs = (m * 2 * i * 2 + m * i * 2) / stats(t)["median"] / 1e6
    out.append(rec("micro-swiglu", t, {"GBps": gbs, "rows": m},
                   f"torch SwiGLU on ({m}, 2x{i}) bf16: {gbs:.0f} GB/s"))
    print(f"swiglu {gbs:.0f} GB/s")
    ks = _kernels()
    for n in (1024, 4096):
        h, k = 7168, 8
        sh = torch.randn(n, h, device="cuda")
        comb = torch.randn(n * k, h, device="cuda", dtype=torch.bfloat16)
        w = torch.rand(n, k, device="cuda")
        o = torch.empty(n, h, device="cuda", dtype=torch.bfloat16)
        def step(n=n, h=h, k=k, sh=sh, comb=comb, w=w, o=o) -> None:
            ks["epilogue"][(n, h // 1024)](sh, comb, w, o, 0, 1, K=k, H=h, BH=1024, num_warps=4)

        t = time_events(step, lambda j: None, 10, 3)
        nb = n * k * h * 2 + n * h * 4 + n * h * 2
        gbs = nb / stats(t)["median"] / 1e6
        out.append(rec("micro-reduce", t, {"GBps": gbs, "tokens": n, "k": k},
                       f"epilogue k=8 slot reduction, {n} tokens x {h}: {gbs:.0f} GB/s", tokens=n))
        print(f"reduce n={n} {gbs:.0f} GB/s")


def bench_schedule(out: list) -> None:
    from mok_kernels.routing import make_routing
    from mok_kernels.schedule import build_schedule
    for n in (1024, 2048, 4096):
        ids, _ = make_routing(16 * n, 384, 8, "uniform", 0, device="cuda")
        f = lambda: build_schedule(ids, ep=16, num_experts=384, rank=0, capacity_multiplier=0.5,  # noqa
                                   minibatch=4096)
        t = time_events(f, lambda j: None, 10, 3)
        g = torch.cuda.CUDAGraph()
        f()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            f()
        torch.cuda.current_stream().wait_stream(s)
        with torch.cuda.graph(g):
            f()
        tg = time_events(g.replay, lambda j: None, 10, 3)
        out.append(rec("micro-schedule", tg, {"eager_ms": stats(t)["median"],
                                              "graph_ms": stats(tg)["median"]},
                       f"GPU schedule build, kimi-k2 EP16 rank 0, {n} tokens: graph replay "
                       f"{stats(tg)['median']:.3f} ms, eager {stats(t)['median']:.3f} ms",
                       model="kimi-k2", tokens=n))
        print(f"schedule n={n} graph {stats(tg)['median']:.3f} ms eager {stats(t)['median']:.3f} ms")


def bench_launch(out: list) -> None:
    k = _kern()["empty"]
    x = torch.zeros(1, device="cuda")
    k[(1,)](x)
    torch.cuda.synchronize()
    reps = 200
    t0 = time.perf_counter()
    for _ in range(reps):
        k[(1,)](x)
    torch.cuda.synchronize()
    launch_us = (time.perf_counter() - t0) / reps * 1e6
    t0 = time.perf_counter()
    for _ in range(reps):
        x.add_(1)
    torch.cuda.synchronize()
    op_us = (time.perf_counter() - t0) / reps * 1e6
    t0 = time.perf_counter()
    for _ in range(reps):
        x.add_(1)
        x.item()
    sync_us = (time.perf_counter() - t0) / reps * 1e6
    out.append(rec("micro-launch", [launch_us / 1e3], {"triton_launch_us": launch_us,
                                                       "torch_op_us": op_us, "op_plus_item_us": sync_us},
                   f"host-side: Triton launch {launch_us:.1f} us, torch small op {op_us:.1f} us, "
                   f"op + .item() sync {sync_us:.1f} us (back to back, Python)"))
    print(f"launch triton {launch_us:.1f} us torch op {op_us:.1f} us op+item {sync_us:.1f} us")


def main(argv: list[str]) -> int:
    p = doc_parser("python -m calibration.microbench", __doc__)
    p.add_argument("--out", required=True)
    p.add_argument("--only", default="copy,flag,gemm,gemm_sms,swiglu,schedule,launch",
                   help="comma list of copy, copy_shapes (the copy by row width and rows per "
                        "step), flag, gemm, gemm_sms, swiglu, schedule, launch")
    return run_tool(p, run, argv)


def run(a) -> int:
    """Each chosen microbenchmark, its records appended (flags checked first; a CUDA GPU)."""
    fns = {"copy": bench_copy, "copy_shapes": bench_copy_shapes, "flag": bench_flag,
           "gemm": bench_gemm, "gemm_sms": bench_gemm_sms, "swiglu": bench_swiglu_reduce,
           "schedule": bench_schedule, "launch": bench_launch}
    bad = [n for n in distinct("--only", a.only) if n not in fns]
    if bad:
        raise MokInputError(f"--only {a.only!r}: {bad} not one of {', '.join(fns)}")
    check_records_out(a.out)       # records are appended: a .jsonl of valid records
    require_cuda()
    for name in a.only.split(","):
        out: list = []
        try:
            fns[name](out)
        except Exception as exc:  # keep the other measurements
            print(f"{name}: FAILED {exc!r}")
        if out:
            append_records(a.out, out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
