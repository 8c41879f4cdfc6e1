"""The plan of a `mok bench --auto` run beside a sweep, for `python -m calibration.register
--plan`: per workload every swept setting (pull dispatch, push combine, capacity 1.0, ring
131072 rows, minibatch x comm SMs x work-list lag) and the automatic pick (the tuner's knobs and
lag, as MoKLayer resolves them on one H200), so the registered predictions meet every record the
bench writes. Written before the run, committed with the registration.

    PYTHONPATH=. python benchmarks/auto_plan.py --workloads MODEL:EP:TOKENS,... \\
        [--minibatch 512,1024,2048,4096,8192] [--comm-sms 32,64] [--list-lag 1,2,4] \\
        [--routing uniform|zipf:S|hot:F] [--auto-hint] > PLAN.jsonl

`--routing` (the bench's, seed 0) is every workload's routing; the automatic pick does not see
it (the layer chooses its knobs before any token is routed: robust over uniform, zipf:1.2 and
hot:0.1 since session 44, tuner.robust_routings), the predictions do. `--auto-hint`: also the
pick told the routing (`mok bench --auto --auto-hint`).

Session 20's plan (calibration/predictions/h200_auto_lag_plan_2026-12-02.jsonl) is the defaults
with --workloads calibration/drawn_shapes/seed2/syn2-h7936-i256-e64-k6-s1.toml:8:1024,
calibration/drawn_shapes/seed5/syn5-h5888-i640-e32-k1-s1.toml:4:3072,
calibration/drawn_shapes/seed4/syn4-h2048-i320-e8-k2-s1.toml:8:2048,
calibration/drawn_shapes/seed3/syn3-h1792-i320-e64-k4-s1.toml:16:4096, qwen3-30b-a3b:8:4096,
kimi-k2:16:1024.
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mok_kernels.knobs import choose_knobs, shape_of  # noqa: E402
from mok_kernels.routing import parse_routing, routing_record  # noqa: E402
from mok_kernels.tile_sweep import _workloads  # noqa: E402
from mok_kernels.bench import check_comm_sms  # noqa: E402
from mok_model.cli import distinct, doc_parser, number_list, run_tool  # noqa: E402
from mok_model.errors import MokInputError  # noqa: E402
from mok_model.presets import load_model  # noqa: E402
from mok_model.records import record_model  # noqa: E402
from mok_model.scenario import MAX_LIST_LAG  # noqa: E402
from mok_model.workload import check_hot_fits  # noqa: E402


RING = 131072   # every planned record's macrobatch: a minibatch must fit in it


def line(model: str, ep: int, tokens: int, config: dict, lag: int, routing: str = "uniform") -> dict:
    """One planned MoK record: its workload, routing (as the bench records it), knobs and (when
    not 1) lag."""
    return {"config": config, "ep": ep, "model": record_model(model),
            "routing": routing_record(routing, 0), "tokens": tokens,
            **({"tiles": {"list_lag": lag}} if lag != 1 else {})}


def main(argv: list[str]) -> int:
    p = doc_parser("benchmarks/auto_plan.py", __doc__)
    p.add_argument("--workloads", required=True, help="MODEL:EP:TOKENS,... (presets or TOML files)")
    p.add_argument("--minibatch", default="512,1024,2048,4096,8192")
    p.add_argument("--comm-sms", default="32,64")
    p.add_argument("--list-lag", default="1,2,4")
    p.add_argument("--routing", default="uniform", help="uniform, zipf:S or hot:F (the bench's)")
    p.add_argument("--auto-hint", action="store_true", help="also the pick told the routing")
    return run_tool(p, run, argv)


def check_routing(spec: str, model: str, ep: int, tokens: int, hint: bool) -> None:
    """Refuse a --routing that a workload's model cannot draw (as the bench and the registered
    predictions draw it: hot:F at most 1/top_k, the other experts filling the top_k slots)."""
    m = load_model(model)
    try:
        kind, _ = parse_routing(spec, m.top_k)
        if kind == "hot":
            check_hot_fits(spec, m.top_k, m.routed_experts)
    except MokInputError as exc:
        raise MokInputError(f"{exc} (workload {model}:{ep}:{tokens})") from None
    if hint and kind == "onehot":
        raise MokInputError(f"--routing {spec!r} with --auto-hint: the tuner is told uniform, "
                            f"zipf:S or hot:F only")


def run(a) -> int:
    """Print the plan's JSON lines, sweep first, the automatic pick last, per workload; every
    line is made before any is printed, so an error leaves no partial plan."""
    grid = (number_list(a.minibatch, "--minibatch", high=RING),
            number_list(a.comm_sms, "--comm-sms"),
            number_list(a.list_lag, "--list-lag", high=MAX_LIST_LAG))
    for flag in ("--workloads", "--minibatch", "--comm-sms", "--list-lag"):
        distinct(flag, getattr(a, flag[2:].replace("-", "_")))
    check_comm_sms(grid[1])       # the plan is the bench's on one H200 (h200-1)
    workloads = _workloads(a.workloads)
    for model, ep, tokens in workloads:   # --routing against every workload's model
        check_routing(a.routing, model, ep, tokens, a.auto_hint)
    lines = []
    for model, ep, tokens in workloads:
        for mb, cs, lag in itertools.product(*grid):
            cfg = dict(dispatch="pull", combine="push", minibatch=mb, comm_sms=cs,
                       macrobatch=RING, capacity=1.0)
            lines.append(line(model, ep, tokens, cfg, lag, a.routing))
        shape = shape_of(load_model(model))
        picks = [choose_knobs("h200-1", shape, ep, tokens)]
        if a.auto_hint:
            picks.append(choose_knobs("h200-1", shape, ep, tokens, routing=a.routing))
        lines += [line(model, ep, tokens, auto.knobs, auto.list_lag, a.routing) for auto in picks]
    print("\n".join(json.dumps(x, sort_keys=True) for x in lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
