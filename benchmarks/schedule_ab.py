"""The dispatch schedule built in one launch (`KernelConfig(fused_schedule=True)`, schedule.py
builder "fused") against five kernels (the default), on one GPU, in the same run: the schedule
alone, then the whole MoK forward pass, each replayed from a CUDA graph, the two interleaved
(A B A B ...), CUDA events, warm-up, medians over fresh routings.

    PYTHONPATH=. python3 benchmarks/schedule_ab.py [--workloads qwen3-30b-a3b:32:256,...]
        [--knobs pull/push/4096/32] [--rounds 2] [--iters 10] [--out FILE.json]

Each workload is model:EP:tokens (rank 0 of the EP group emulated, uniform routing). Before
timing, the two builders' schedules of the workload's routing are checked equal, field by field.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mok_model.cli import doc_parser, int_at_least, run_tool  # noqa: E402
from mok_model.errors import MokInputError  # noqa: E402

WORKLOADS = ("qwen3-30b-a3b:32:256,qwen3-next-80b-a3b:32:256,gpt-oss-120b:32:256,"
             "mixtral-8x7b:8:64,deepseek-v3:32:64,kimi-k2:16:128,kimi-k2:16:4096")


def parse_workloads(spec: str) -> list[tuple[str, int, int]]:
    """model:EP:tokens items (mok_kernels.tile_sweep's rule), EP dividing the experts."""
    from mok_kernels.tile_sweep import _workloads
    from mok_model.presets import load_model
    out = _workloads(spec)
    for model, ep, _ in out:
        if load_model(model).routed_experts % ep:
            raise MokInputError(f"--workloads {model}:{ep}: EP {ep} must divide the "
                                f"{load_model(model).routed_experts} experts")
    return out


def parse_knobs(spec: str) -> dict:
    """dispatch/combine/minibatch/comm_sms."""
    parts = spec.split("/")
    if (len(parts) != 4 or parts[0] not in ("pull", "push") or parts[1] not in ("pull", "push")
            or not parts[2].isdigit() or not parts[3].isdigit()):
        raise MokInputError(f"--knobs {spec!r}: write dispatch/combine/minibatch/comm_sms, e.g. "
                            f"pull/push/4096/32")
    return dict(dispatch=parts[0], combine=parts[1], minibatch=int(parts[2]),
                comm_sms=int(parts[3]), macrobatch=131072, capacity=1.0)


def same_schedule(ids, **kw) -> None:
    """Raise where the fused builder's schedule differs from the five kernels'."""
    import torch

    from mok_kernels.schedule import build_schedule
    a = build_schedule(ids, builder="kernels", **kw)
    b = build_schedule(ids, builder="fused", **kw)
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, torch.Tensor) and not torch.equal(x, y):
            raise RuntimeError(f"the fused schedule differs from the five kernels' in {f.name}")


def measure(workloads, knobs: dict, rounds: int, iters: int) -> list[dict]:
    from mok_kernels.bench import Workload, capture_graph, run_mok, time_events
    from mok_kernels.schedule import build_schedule

    rows = []
    for model, ep, tokens in workloads:
        wl = Workload(model, ep, tokens, "uniform", 0, 0)
        kw = dict(ep=ep, num_experts=wl.shape.experts, rank=0, capacity_multiplier=1.0,
                  minibatch=knobs["minibatch"], block_m=128)
        same_schedule(wl.ids, **kw)
        alone = {b: capture_graph(lambda b=b, ids=wl.ids, kw=kw: build_schedule(ids, builder=b,
                                                                                 **kw))
                 for b in ("kernels", "fused")}
        t = {f"{b} {part}": [] for b in ("kernels", "fused") for part in ("schedule", "pass")}
        for _ in range(rounds):
            for b in ("kernels", "fused"):
                t[f"{b} schedule"] += time_events(alone[b], wl.refresh, iters, 3)
                t[f"{b} pass"] += run_mok(wl, knobs, iters, 3, True, False,
                                          fused_schedule=b == "fused")[0]
        med = {k: statistics.median(v) for k, v in t.items()}
        row = {"workload": f"{model}:{ep}:{tokens}", "knobs": knobs, "ms": med,
               "pass_fused_over_kernels": med["fused pass"] / med["kernels pass"]}
        print(f"{row['workload']}: schedule {med['kernels schedule'] * 1e3:.1f} -> "
              f"{med['fused schedule'] * 1e3:.1f} us; pass {med['kernels pass']:.4f} -> "
              f"{med['fused pass']:.4f} ms ({row['pass_fused_over_kernels']:.3f}x)", flush=True)
        rows.append(row)
    return rows


def main(argv: list[str]) -> int:
    p = doc_parser("benchmarks/schedule_ab.py", __doc__)
    p.add_argument("--workloads", default=WORKLOADS, help="comma list of model:EP:tokens")
    p.add_argument("--knobs", default="pull/push/4096/32", help="dispatch/combine/minibatch/comm_sms")
    p.add_argument("--rounds", type=int_at_least(1), default=2)
    p.add_argument("--iters", type=int_at_least(1), default=10)
    p.add_argument("--out", default=None, help="write the medians as JSON here")
    return run_tool(p, run, argv)


def run(a) -> int:
    workloads, knobs = parse_workloads(a.workloads), parse_knobs(a.knobs)
    if a.out is not None:
        from mok_model.fileio import check_output_file
        check_output_file(a.out, "--out")
    from mok_kernels import require_cuda
    require_cuda()
    rows = measure(workloads, knobs, a.rounds, a.iters)
    if a.out is not None:
        from mok_model.fileio import atomic_write_text
        atomic_write_text(a.out, json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
