"""Device job: calibration records across the model space (single-GPU rank emulation).

    python -m mok_kernels.space_sweep --plan-out PLAN.jsonl          # CPU: the planned MoK records
    PYTHONPATH=. python3 -m mok_kernels.space_sweep --out $OUT/space.jsonl --deadline-s 400 \\
        [--models kimi-k2,glm-5] [--skip-done calibration/runs/h200_space/space.jsonl.gz] \\
        [--compile-only] [--gemm-phases]
    python -m mok_kernels.space_sweep --shapes A.toml,B.toml --per-shape 4 --tokens 96,1536 \
        --plan-out PLAN.jsonl        # model files (calibration/draw_shapes.py) instead of presets

Workloads: every model preset x EP {4, 8, 16, 32} (where the experts divide evenly) x tokens per
GPU {64 .. 8192} x routing {uniform, zipf:1.2, hot:0.1}, in one seeded random order, so that a run
stopped by its deadline is an even sample of the space and the next run (``--skip-done``) goes on
where it stopped. Per workload: the same rank's GEMMs alone and MoK under the published default
knobs (pull/push, minibatch 4096, 32 comm SMs) plus three knob settings drawn from the grid, each
output checked on a sample of rows against float32 before it is timed. ``--compile-only`` runs each
planned configuration once untimed (several such processes fill Triton's cache in parallel before
the timed run). The plan is fixed by ``--seed``: register its predictions
(``python -m calibration.register --plan``) before running. ``--gemm-phases`` records instead, per
workload, the megakernel's own GEMM phases alone (system ``mok-gemm``: mok_kernels/bench.py
run_mok_gemm), the points of a GEMM efficiency table (``python -m calibration.gemm_table --system
mok-gemm``); ``--skip-done`` then skips the workloads that have one.

``--alternate-default`` times the published default last instead of first in every other
workload (plan order), so that the default's reading with and without being the first setting
timed after the workload's setup can be compared (``python -m calibration.first_timed RUNS
--predictions PRED``); each record's note says where the default was timed.

``--shapes`` takes model files (TOML, as `mok bench --model` does) instead of the presets, for
shapes no fit has seen; ``--per-shape K`` then keeps K workloads of each shape, drawn from its
(EP, tokens, routing) product with the same seed. ``--eps`` and ``--tokens`` replace the space's
EP sizes and token counts; EP sizes that do not divide a shape's experts are skipped.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import sys
import time

MODELS = ("deepseek-v3", "kimi-k2", "glm-4.5", "glm-5", "qwen3-235b-a22b", "qwen3-30b-a3b",
          "qwen3-next-80b-a3b", "gpt-oss-120b", "mixtral-8x7b", "llama4-maverick", "minimax-m2")
EPS = (4, 8, 16, 32)
TOKENS = (64, 256, 1024, 2048, 4096, 8192)
ROUTINGS = ("uniform", "zipf:1.2", "hot:0.1")
DEFAULT_KNOBS = ("pull", "push", 4096, 32)
GRID = list(itertools.product(("pull", "push"), ("push", "pull"), (512, 1024, 2048, 4096, 8192),
                              (8, 16, 32, 64)))
DRAWN = 3
CAPACITY = 1.0          # no routing overflows it (the model refuses 0.5 at hot routing)
MACROBATCH = 131072


def plan(seed: int = 0, models: tuple = MODELS, eps: tuple = EPS, tokens: tuple = TOKENS,
         per_model: int | None = None) -> list[dict]:
    """Every workload of the space (or `per_model` drawn of each model's), in the seeded order,
    each with its knob settings. `models`: preset names or model files."""
    from mok_model.presets import load_model
    rng = random.Random(seed)
    work = []
    for m in models:
        mine = [(m, ep, n, r) for ep, n, r in itertools.product(eps, tokens, ROUTINGS)
                if load_model(m).routed_experts % ep == 0
                and (r != "hot:0.1" or load_model(m).top_k < load_model(m).routed_experts)]
        work += mine if per_model is None else rng.sample(mine, min(per_model, len(mine)))
    rng.shuffle(work)
    out = []
    for model, ep, tokens, routing in work:
        knobs = [DEFAULT_KNOBS] + rng.sample([g for g in GRID if g != DEFAULT_KNOBS], DRAWN)
        out.append({"model": model, "ep": ep, "tokens": tokens, "routing": routing,
                    "configs": [dict(dispatch=d, combine=c, minibatch=mb, comm_sms=cs,
                                     macrobatch=MACROBATCH, capacity=CAPACITY)
                                for d, c, mb, cs in knobs]})
    return out


def timing_order(configs: list[dict], index: int, alternate: bool) -> list[dict]:
    """A workload's settings in the order the sweep times them: as planned (the published
    default first), or, with `alternate`, the default moved last in every other workload
    (odd `index` in plan order)."""
    return configs[1:] + configs[:1] if alternate and index % 2 else list(configs)


def planned_records(seed: int = 0, only: set | None = None, **space) -> list[dict]:
    """The MoK records the plan asks for (calibration.register --plan reads these lines);
    `space`: plan's keywords; `only`: the workloads of these models alone (--models), of the
    same plan."""
    from mok_model.records import record_model

    from .routing import routing_record
    return [{"model": record_model(w["model"]), "ep": w["ep"], "tokens": w["tokens"],
             "routing": routing_record(w["routing"], seed), "config": cfg}
            for w in plan(seed, **space) if only is None or w["model"] in only
            for cfg in w["configs"]]


def _check_workloads(a: argparse.Namespace) -> None:
    """Refuse a space with no workload left for a selected model (every EP size fails to
    divide its routed experts): the sweep would run nothing and the plan would be empty."""
    from mok_model.errors import MokInputError
    from mok_model.presets import load_model
    space = space_of(a)
    models = a.models.split(",") if a.models else list(space["models"])
    eps = ",".join(str(e) for e in space["eps"])
    empty = [m for m in models
             if not any(load_model(m).routed_experts % ep == 0 for ep in space["eps"])]
    if empty and (a.models or len(empty) == len(models)):
        experts = ", ".join(f"{m}'s {load_model(m).routed_experts}" for m in empty)
        raise MokInputError(f"no workload of {', '.join(empty)} at EP {eps}: the routed experts "
                            f"({experts}) divide over none of them; choose --eps that divide them")


def space_of(a: argparse.Namespace) -> dict:
    """plan's keywords from the command line (--shapes, --eps, --tokens, --per-shape)."""
    return {"models": tuple(a.shapes.split(",")) if a.shapes else MODELS,
            "eps": tuple(a.eps) if a.eps else EPS, "tokens": tuple(a.tokens) if a.tokens else TOKENS,
            "per_model": a.per_shape}


def _key(model: str | dict, ep: int, tokens: int, routing: dict) -> tuple:
    return json.dumps(model, sort_keys=True), ep, tokens, json.dumps(routing, sort_keys=True)


def _done(path: str | None, system: str, preset: str | None = None) -> set[tuple]:
    """Workloads with a record of ``system`` in ``path`` (started by an earlier run), of hardware
    ``preset`` where given (a workload timed on another GPU is not done on this one)."""
    if path is None:
        return set()
    if not path.strip():      # never "skip nothing": an empty path is a mistake
        from mok_model.errors import MokInputError
        raise MokInputError(f"--skip-done {path!r} is empty; name a run-records file (or leave "
                            f"--skip-done out)")
    from mok_model.records import read_records
    return {_key(r["model"], r["ep"], r["tokens"], r["routing"])
            for r in read_records([path]) if r["system"] == system
            and preset in (None, r["hardware"]["preset"])}


def run(a: argparse.Namespace) -> int:
    import torch

    from mok_model.records import append_records, record_model

    from .bench import (GEMM_PHASE_KNOBS, GEMM_PHASE_NOTE, Workload, _hardware, _software,
                        capture_graph, forward_tiles, make_record, run_gemm_only, run_mok_gemm,
                        time_events)
    from .megakernel import KernelConfig, MoKLayer
    from .routing import routing_record
    from .tile_sweep import TOL, check
    t0, hw, sw = time.time(), _hardware(), _software()
    cmd = "python3 -m mok_kernels.space_sweep " + " ".join(a.argv)
    space = space_of(a)
    models = set(a.models.split(",")) if a.models else set(space["models"])
    done = _done(a.skip_done, "mok-gemm" if a.gemm_phases else "gemm-only", hw["preset"])
    n_rec = 0
    for wi, w in enumerate(plan(a.seed, **space)):
        if time.time() - t0 > a.deadline_s:
            print(f"deadline: stopped after {n_rec} records ({time.time() - t0:.0f} s)", flush=True)
            break
        model = record_model(w["model"])
        key = _key(model, w["ep"], w["tokens"], routing_record(w["routing"], a.seed))
        if w["model"] not in models or key in done:
            continue
        wl = Workload(w["model"], w["ep"], w["tokens"], w["routing"], a.seed, 0)
        common = dict(model=model, ep=w["ep"], tokens=w["tokens"], routing=w["routing"],
                      seed=a.seed, hardware=hw, software=sw)
        configs = timing_order(w["configs"], wi, a.alternate_default)
        where = "last" if configs[0] is not w["configs"][0] else "first"
        note = (f"single-GPU rank emulation: rank 0 of EP {w['ep']}; graph replay; the first "
                f"setting timed after one discarded timing; the default knobs timed {where}; "
                f"{cmd}")
        name = model if isinstance(model, str) else model["name"]
        recs, line = [], [f"{name}:{w['ep']}:{w['tokens']}:{w['routing']}"]
        if a.gemm_phases:
            try:
                iters, warmup = (1, 0) if a.compile_only else (a.iters, a.warmup)
                ran: dict = {}
                t = run_mok_gemm(wl, iters, warmup, ran)
            except (RuntimeError, ValueError) as exc:     # refused shape, overflow, stall
                print(f"{line[0]} mok-gemm: FAILED {type(exc).__name__}: {exc}", flush=True)
                continue
            if not a.compile_only:
                recs.append(make_record(system="mok-gemm", knobs=GEMM_PHASE_KNOBS, times=t,
                                        breakdown={}, note=f"{note}; {GEMM_PHASE_NOTE}",
                                        tiles=forward_tiles("bf16", wl, split_dn=ran["split_dn"],
                                                                            dn_blocks=ran["dn_blocks"]),
                                        **common))
                line.append(f"mok-gemm {recs[0]['latency_ms']['median']:.3f}")
        elif not a.compile_only:
            t = run_gemm_only(wl, a.iters, a.warmup)
            recs.append(make_record(system="gemm-only", knobs=w["configs"][0], times=t,
                                    breakdown={}, note=note + "; knobs not used by this system",
                                    **common))
            line.append(f"gemm-only {recs[0]['latency_ms']['median']:.3f}")
        for i, knobs in enumerate([] if a.gemm_phases else configs):
            label = f"{knobs['dispatch']}/{knobs['combine']}/{knobs['minibatch']}/{knobs['comm_sms']}"
            layer = fwd = None      # free the last configuration's buffers before the next one
            try:
                layer = MoKLayer(wl.w, wl.ep, wl.tokens, wl.shape.topk, 0,
                                 KernelConfig(**knobs, on_error="raise"), local_weights=True)
                fwd = lambda lay=layer, w=wl: lay.forward(w.x, w.ids, w.wts)  # noqa: E731
                fwd()
                torch.cuda.synchronize()
                layer.check()
                if a.compile_only:
                    continue
                err = check(layer, wl)
                if err > TOL:
                    raise RuntimeError(f"relative error {err:.2e} > {TOL}")
                layer.cfg.on_error = "trap"
                graph = capture_graph(fwd)
                if i == 0:  # timed once more first, untimed: the first setting timed after the
                    # workload's setup read +3.5% at decode sizes (calibration.first_timed)
                    time_events(graph, wl.refresh, a.iters, a.warmup)
                times = time_events(graph, wl.refresh, a.iters, a.warmup)
                layer.check()
            except (RuntimeError, ValueError) as exc:     # refused shape, overflow, stall, wrong
                print(f"{line[0]} {label}: FAILED {type(exc).__name__}: {exc}", flush=True)
                continue
            rec = make_record(system="mok", knobs=knobs, times=times, breakdown={}, note=note,
                              tiles=forward_tiles("bf16", wl, split_dn=layer.cfg.split_dn,
                                                                  dn_blocks=layer.cfg.dn_blocks),
                              **common)
            rec["rel_err_vs_fp32"] = err
            recs.append(rec)
            line.append(f"{label} {rec['latency_ms']['median']:.3f}")
        if recs:
            append_records(a.out, recs)
            n_rec += len(recs)
        print("; ".join(line) + f" ({time.time() - t0:.0f} s)", flush=True)
        del wl
        torch.cuda.empty_cache()
    return 0


def main(argv: list[str]) -> int:
    from mok_model.cli import deadline_arg, doc_parser, int_at_least, run_tool
    from mok_model.scenario import MAX_SEED

    from .bench import MAX_ITERS

    p = doc_parser("python -m mok_kernels.space_sweep", __doc__)
    p.add_argument("--out", help="RUNS.jsonl to append records to")
    p.add_argument("--plan-out", help="write the planned MoK records (JSON lines) and stop")
    p.add_argument("--models", default=None,
                   help="comma list: only these presets' workloads (with --shapes: these files')")
    p.add_argument("--shapes", default=None,
                   help="comma list of model files (TOML) to sweep instead of the presets")
    p.add_argument("--per-shape", type=int_at_least(1), default=None,
                   help="workloads drawn per model (default: all of its space)")
    p.add_argument("--eps", default=None,
                   help="comma list of EP sizes (default 4,8,16,32)")
    p.add_argument("--tokens", default=None,
                   help="comma list of tokens per GPU (default 64,256,1024,2048,4096,8192)")
    p.add_argument("--skip-done", default=None, help="records file: skip its workloads")
    p.add_argument("--compile-only", action="store_true")
    p.add_argument("--gemm-phases", action="store_true",
                   help="record the megakernel's GEMM phases alone (mok-gemm) per workload")
    p.add_argument("--alternate-default", action="store_true",
                   help="time the default knobs last in every other workload (plan order)")
    p.add_argument("--seed", type=int_at_least(0, MAX_SEED), default=0)
    p.add_argument("--iters", type=int_at_least(1, MAX_ITERS), default=None,
                   help="timed iterations (8)")
    p.add_argument("--warmup", type=int_at_least(0, MAX_ITERS), default=None,
                   help="warm-up iterations (2)")
    p.add_argument("--deadline-s", type=deadline_arg, default=None,
                   help="stop starting workloads after this many seconds (400)")
    return run_tool(p, lambda a: _checked_run(a, argv), argv)


def _checked_run(a: argparse.Namespace, argv: list[str]) -> int:
    """Check every flag and output path, then plan (any machine) or sweep (a CUDA GPU)."""
    from mok_model.cli import distinct, number_list
    from mok_model.errors import MokInputError
    from mok_model.fileio import check_output_file
    from mok_model.presets import load_model

    from . import require_cuda
    from .bench import check_fits

    a.argv = argv
    for flag in ("--eps", "--tokens", "--models", "--shapes"):
        value = getattr(a, flag[2:])
        if value is not None:
            distinct(flag, value)
    a.eps = number_list(a.eps, "--eps") if a.eps is not None else None
    a.tokens = number_list(a.tokens, "--tokens") if a.tokens is not None else None
    if a.models is not None:
        space = a.shapes.split(",") if a.shapes else MODELS
        unknown = [m for m in a.models.split(",") if m not in space]
        if unknown:
            raise MokInputError(f"--models {a.models!r}: {unknown} not in the space; choose from "
                                f"{', '.join(space)}")
    if a.shapes is not None:
        from mok_model.presets import load_model
        for path in a.shapes.split(","):
            load_model(path)          # a missing or bad file stops here, naming it
    _check_workloads(a)
    space = space_of(a)
    for m in a.models.split(",") if a.models else space["models"]:
        experts = load_model(m).routed_experts
        for ep in (e for e in space["eps"] if experts % e == 0):
            for n in space["tokens"]:        # a workload that cannot fit, named before the GPU
                check_fits(m, ep, n)
    if a.plan_out is not None:
        for flag, given in (("--out", a.out is not None), ("--skip-done", a.skip_done is not None),
                            ("--compile-only", a.compile_only), ("--gemm-phases", a.gemm_phases),
                            ("--alternate-default", a.alternate_default),
                            ("--iters", a.iters is not None), ("--warmup", a.warmup is not None),
                            ("--deadline-s", a.deadline_s is not None)):
            if given:
                raise MokInputError(f"{flag} with --plan-out: the plan is every planned MoK record "
                                    f"of the space (fixed by --seed), written without running; "
                                    f"leave {flag} out or drop --plan-out")
        if check_output_file(a.plan_out, "--plan-out").exists():
            raise MokInputError(f"--plan-out {a.plan_out!r} exists; a plan is written once (name a "
                                f"new file)")
        check_output_file(a.plan_out, "--plan-out", ".jsonl")    # JSON lines, as register reads
        space = space_of(a)
        models = set(a.models.split(",")) if a.models else set(space["models"])
        with open(a.plan_out, "x") as f:    # --models: that part of the same plan, as run() runs
            for rec in planned_records(a.seed, only=models, **space):
                f.write(json.dumps(rec, sort_keys=True) + "\n")
        return 0
    if a.out is None and not a.compile_only:
        raise MokInputError("--out is required (or --plan-out, or --compile-only)")
    if a.out is not None and a.compile_only:
        raise MokInputError("--out with --compile-only: a compile-only run times nothing and "
                            "writes no records; drop one of them")
    a.iters = 8 if a.iters is None else a.iters
    a.warmup = 2 if a.warmup is None else a.warmup
    a.deadline_s = 400 if a.deadline_s is None else a.deadline_s
    if a.out is not None:
        from .bench import check_records_out
        check_records_out(a.out, "--out")
    _done(a.skip_done, "gemm-only")     # a bad records file stops here, not mid-sweep
    require_cuda()
    return run(a)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
