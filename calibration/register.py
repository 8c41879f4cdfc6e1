"""Register the model's predictions for a `mok bench` grid before it runs.

    python -m calibration.register --gpus 2 --model glm-5,kimi-k2 --tokens 256,4096 \\
        --routing uniform,zipf:1.2 --dispatch pull,push --combine push,pull --minibatch 4096 \\
        --comm-sms 32 --out calibration/predictions/h200x2_NAME.jsonl
    python -m calibration.register --gpus 0 --ep 8 --pass bwd --model kimi-k2 --tokens 4096 \\
        --out calibration/predictions/h200_NAME.jsonl      # one GPU emulating EP 8 (h200-1)
    python -m calibration.register --plan PLAN.jsonl --out ...  # records planned by a device job

The grid arguments are the bench's own (`--gpus 0`: one GPU emulating its EP peers, MoK only,
parameters of h200-1 unless --hardware says otherwise). For every MoK configuration and, with
--gpus N, every workload's
nccl-torch pass, the analytic model and the simulator predict the record the bench will write
(the same reading of a record as validation uses: mok_model.records), with the parameters the
hardware ships now, or with `--params FILE` (another parameters file of that hardware, e.g. a
transfer registered beside the shipped fit: calibration.transfer --write-fabric). The file must
not exist: a registration is written once, committed, and only then are the runs made (compare
with calibration.report_h200x2).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
from datetime import datetime, timezone
from pathlib import Path

from mok_kernels.routing import parse_routing, routing_record
from mok_model.cli import capacity_arg, distinct, doc_parser, int_at_least, number_list, run_tool
from mok_model.errors import MokInputError
from mok_model.fileio import check_output_file, read_json_lines
from mok_model.params import PARAMS_DIR
from mok_model.presets import load_hardware, load_model, model_from_shape
from mok_model.predict import predict
from mok_model.records import (DEFAULT_BWD, KNOBS, PASSES, SCHEMA, kernel_variant, record_config,
                               record_design, record_model, record_scenario, routing_spec,
                               training_variant, validate_record)
from mok_model.scenario import (MAX_LIST_LAG, MAX_SEED, check_ep_tokens, check_source_order,
                                 check_source_orders)
from mok_model.sim import simulate

from .checks import params_file, required_text, shipped_params


def _check_plan_tiles(rec: dict) -> None:
    """A planned record's tiles: an object; a backward's the default or the layer's training
    tiles (the model reads no other variant); its source_order not "rank" on the Triton forward
    only; its fp8_kernel one of the bench's --fp8-kernel values (a
    misspelt "gluon" would be read as the Triton kernel), "gluon" on the FP8 forward only."""
    from mok_kernels.bench import FP8_VARIANTS

    tiles = rec.get("tiles", {})
    if not isinstance(tiles, dict):
        raise MokInputError(f"tiles={tiles!r} must be an object")
    if (rec["pass"] == "bwd" and tiles and not training_variant(rec)
            and kernel_variant(rec) != DEFAULT_BWD):
        raise MokInputError(f"tiles={tiles!r}: the model reads the backward's default tiles and the "
                            f"layer's training tiles for the shape only (mok_model/records.py "
                            f"TRAINING_BWD, TRAINING_BWD_NARROW)")
    check_source_order(tiles.get("source_order", "rank"), rec["pass"], tiles.get("fp8_kernel"),
                       "tiles.source_order")
    kern = tiles.get("fp8_kernel")
    if kern is None:
        return
    if kern not in FP8_VARIANTS:
        raise MokInputError(f"tiles.fp8_kernel={kern!r} must be one of {', '.join(FP8_VARIANTS)}")
    if rec["precision"] != "fp8" or rec["pass"] != "fwd":
        raise MokInputError(f"tiles.fp8_kernel={kern!r} with precision {rec['precision']!r}, pass "
                            f"{rec['pass']!r}: FP8 kernels run the FP8 forward only")


# the fields of a run record that a plan line does not name (its run is still to be made), so
# that validate_record checks the fields it does name as a record's
_PLAN_AS_RECORD = {"schema": SCHEMA, "id": "planned", "date": "2026-01-01T00:00:00+00:00",
                   "software": {}, "emulated_peers": True, "latency_ms": {"median": 1.0},
                   "source": "measured"}


def _planned(line: dict, hardware: str) -> dict:
    """A plan line as the MoK record it plans (forward BF16 and the registered hardware where it
    names none)."""
    return {"pass": "fwd", "precision": "bf16", "system": "mok", "hardware": {"preset": hardware}} | line


def _check_plan_line(line, hardware: str, gpus: int) -> None:
    """Raise MokInputError naming the first field of a plan line that is wrong: the record's
    schema (validate_record), MoK on the registered hardware, then the grid's rules (check_run)."""
    if not isinstance(line, dict):
        raise MokInputError("a planned record must be a JSON object")
    missing = [k for k in ("model", "ep", "tokens", "routing", "config") if k not in line]
    if missing:
        raise MokInputError(f"missing field(s) {missing}")
    check_ep_tokens(line["ep"], line["tokens"])     # in the grid's words, as Scenario's
    rec = _planned(line, hardware)
    validate_record(_PLAN_AS_RECORD | rec)
    if rec["system"] != "mok":
        raise MokInputError(f"system={rec['system']!r}: a plan holds MoK runs (the grid registers "
                            f"nccl-torch with --gpus N)")
    if rec["hardware"]["preset"] != hardware:
        raise MokInputError(f"hardware.preset={rec['hardware']['preset']!r}: this registration "
                            f"predicts {hardware} (--hardware); plan another hardware's runs in "
                            f"a registration of its own")
    _check_plan_tiles(rec)
    check_run(rec, gpus)
    record_scenario(rec)
    record_config(rec)


def read_plan(path: str, hardware: str, gpus: int = 0) -> list[dict]:
    """The planned MoK records of a --plan file (JSON lines with model, ep, tokens, routing and
    config, optionally pass, precision and tiles), each held to the grid's rules and read as the
    model reads it; a bad or repeated line stops the reader with its file and line."""
    if os.path.isdir(path):
        raise MokInputError(f"--plan {path!r} is a folder; name a plan file (JSON lines) inside it")
    if not os.path.isfile(path):
        raise MokInputError(f"--plan {path!r}: no such file")
    out, seen = [], {}
    try:
        for where, lineno, line in read_json_lines(path, "plan", "planned records",
                                                    lambda x: _check_plan_line(x, hardware, gpus)):
            rec = _planned(line, hardware)
            key = json.dumps(rec, sort_keys=True)
            if key in seen:     # its predictions would be registered twice
                raise MokInputError(f"{where}: the same planned record as line {seen[key]}; a run "
                                    f"is registered once (drop one)")
            seen[key] = lineno
            out.append(rec)
    except MokInputError as exc:
        raise MokInputError(f"--plan {exc}") from None
    return out


def planned_records(a: argparse.Namespace) -> list[dict]:
    """The records (without times) to predict: a --plan file's (read_plan) or those the bench
    grid will write (grid_records)."""
    return read_plan(a.plan, a.hardware, a.gpus) if a.plan else grid_records(a)


def grid_records(a: argparse.Namespace) -> list[dict]:
    """The records (without times) of a bench grid: MoK, and nccl-torch with --gpus N."""
    out = []
    eps = [a.gpus] if a.gpus else number_list(a.ep, "--ep")
    for model, ep, tokens, routing in itertools.product(a.model.split(","), eps,
                                                        number_list(a.tokens, "--tokens"),
                                                        a.routing.split(",")):
        base = {"model": record_model(model), "ep": ep, "tokens": tokens, "pass": a.pass_,
                "precision": a.precision, "routing": routing_record(routing, a.seed),
                "hardware": {"preset": a.hardware}}
        if a.gpus:
            out.append(base | {"system": "nccl-torch", "config": {}})
        for d, c, mb, cs, lag, so in itertools.product(
                a.dispatch.split(","), a.combine.split(","), number_list(a.minibatch, "--minibatch"),
                number_list(a.comm_sms, "--comm-sms"), number_list(a.list_lag, "--list-lag"),
                a.source_order.split(",")):
            cfg = dict(dispatch=d, combine=c, minibatch=mb, comm_sms=cs, macrobatch=a.macrobatch,
                       capacity=a.capacity)
            tiles = ({"list_lag": lag} if lag != 1 else {}) | (
                {"source_order": so} if so != "rank" else {})     # as mok bench names them
            out.append(base | {"system": "mok", "config": cfg} | ({"tiles": tiles} if tiles else {}))
    return out


# what `mok bench --precision` runs (a record may also say mxfp8: published runs)
PRECISIONS = ("bf16", "fp8")
# The grid flags and their defaults (None in the parser, so that a flag given with --plan, or
# --ep with --gpus N, is seen and refused rather than dropped).
GRID = {"ep": "16", "pass_": "fwd", "precision": "bf16", "model": None, "tokens": None,
        "routing": "uniform", "seed": 0, "dispatch": "pull", "combine": "push",
        "minibatch": "4096", "comm_sms": "32", "macrobatch": 131072, "capacity": 1.0,
        "list_lag": "1", "source_order": "rank"}


def _flag(dest: str) -> str:
    return "--" + dest.rstrip("_").replace("_", "-")


def check_grid(a: argparse.Namespace) -> None:
    """Refuse what `mok bench` refuses for the same grid (mok_kernels/bench.py _check_args), and
    grid flags the run would drop; then fill the defaults of the flags not given."""
    given = [d for d in GRID if getattr(a, d) is not None]
    if a.plan is not None:
        if given:
            raise MokInputError(f"--plan {a.plan!r} with {', '.join(_flag(d) for d in given)}: a "
                                f"plan names every record itself; drop the grid flags")
        return
    if a.gpus and a.ep is not None:
        raise MokInputError(f"--ep {a.ep} with --gpus {a.gpus}: the EP is the number of real GPUs; "
                            f"--ep is for one GPU emulating its peers (--gpus 0)")
    for d, v in GRID.items():
        if getattr(a, d) is None:
            setattr(a, d, v)
    if a.model is None or a.tokens is None:
        raise MokInputError("--model and --tokens are required (or --plan FILE)")
    for flag in ("--model", "--routing", "--dispatch", "--combine", "--source-order"):
        value = getattr(a, flag[2:].replace("-", "_"))
        if any(not x.strip() for x in value.split(",")):
            raise MokInputError(f"{flag} {value!r}: a comma list with no empty elements is "
                                f"required")
    for flag in ("--model", "--ep", "--tokens", "--routing", "--dispatch", "--combine",
                 "--minibatch", "--comm-sms", "--list-lag", "--source-order"):  # as `mok bench`
        distinct(flag, str(getattr(a, flag[2:].replace("-", "_"))))
    for d in a.dispatch.split(","):
        if d not in ("pull", "push"):
            raise MokInputError(f"--dispatch {d!r}: allowed pull, push")
    for c in a.combine.split(","):
        if c not in ("push", "pull"):
            raise MokInputError(f"--combine {c!r}: allowed push, pull")
    check_source_orders(a.source_order, a.pass_)
    for flag in ("--tokens", "--minibatch", "--comm-sms", "--list-lag"):
        number_list(getattr(a, flag[2:].replace("-", "_")), flag)
    if not a.gpus:
        number_list(a.ep, "--ep")
    for name in a.model.split(","):
        shape = load_model(name)
        for r in a.routing.split(","):
            parse_routing(r, shape.top_k)        # hot:X is bounded by this model's 1/top_k
    for rec in grid_records(a):
        if rec["system"] == "mok":      # a workload's nccl-torch pass shares its MoK runs' rules
            check_run(rec, a.gpus)


def check_run(rec: dict, gpus: int = 0) -> None:
    """Refuse a planned MoK run that `mok bench` refuses (mok_kernels/bench.py _check_args), in
    its flags' words: every run of a grid (check_grid) and every --plan line (read_plan, whose
    fields' types validate_record has checked) is held to these rules, with --gpus `gpus`."""
    ep, pass_, precision, cfg = rec["ep"], rec["pass"], rec["precision"], rec["config"]
    missing = [k for k in KNOBS if k not in cfg]
    if missing:
        raise MokInputError(f"config={cfg!r} lacks {', '.join(missing)}: a planned run names every "
                            f"knob, as `mok bench` records them")
    if precision not in PRECISIONS:
        raise MokInputError(f"--precision {precision!r}: allowed {', '.join(PRECISIONS)}")
    if pass_ == "bwd" and precision != "bf16":
        raise MokInputError(f"--pass bwd with --precision {precision}: the backward megakernel "
                            f"is BF16 only")
    if gpus and ep != gpus:
        raise MokInputError(f"--ep {ep} with --gpus {gpus}: the EP is the number of real GPUs")
    if gpus and precision != "bf16":
        raise MokInputError(f"--precision {precision} with --gpus {gpus}: the FP8 megakernel "
                            f"runs on one GPU (rank emulation) only; real-GPU groups are bf16")
    if gpus and pass_ == "bwd":
        raise MokInputError(f"--pass bwd with --gpus {gpus}: the backward megakernel has no "
                            f"group mode yet; it runs one GPU emulating its peers (--gpus 0)")
    lag = (rec.get("tiles") or {}).get("list_lag", 1)
    if not 1 <= lag <= MAX_LIST_LAG:     # the model's words (mok_model.scenario.Scenario)
        bound = "at least 1" if lag < 1 else f"at most {MAX_LIST_LAG}"
        raise MokInputError(f"--list-lag {lag} must be {bound} (KernelConfig.list_lag)")
    if lag != 1 and pass_ == "bwd":
        raise MokInputError(f"--list-lag {lag} with --pass bwd: the backward kernel's list has no "
                            f"lag (leave it at 1)")
    if lag != 1 and gpus:
        raise MokInputError(f"--list-lag {lag} with --gpus {gpus}: the real-GPU bench does not "
                            f"sweep the lag yet (leave it at 1)")
    seed = rec["routing"].get("seed", 0)
    if seed > MAX_SEED:
        raise MokInputError(f"--seed {seed} must be at most {MAX_SEED} (torch's 64-bit seeds)")
    model = rec["model"]
    shape = load_model(model) if isinstance(model, str) else model_from_shape(model)
    parse_routing(routing_spec(rec), shape.top_k)   # hot:X is bounded by this model's 1/top_k
    if shape.routed_experts % ep:
        flag, what = (f"--gpus {ep}", "GPUs") if gpus else (f"--ep {ep}", "ranks")
        raise MokInputError(f"{flag}: {shape.name}'s {shape.routed_experts} experts do not "
                            f"divide over {ep} {what}")
    if cfg["macrobatch"] < cfg["minibatch"]:   # as mok bench refuses it (the kernel would
        # enlarge the ring without saying so)
        raise MokInputError(f"--macrobatch {cfg['macrobatch']} with --minibatch {cfg['minibatch']}: "
                            f"the ring must hold at least one minibatch (macrobatch >= minibatch), "
                            f"as `mok bench` requires")


def _repo_path(path: Path) -> str:
    """A parameters file's path as a registration line names it: from the repository root where
    the file lies inside it, else as given."""
    try:
        return str(path.resolve().relative_to(PARAMS_DIR.parent.parent))
    except ValueError:
        return str(path)


def register(a: argparse.Namespace) -> int:
    if check_output_file(a.out, "--out", ".jsonl").exists():
        raise MokInputError(f"--out {a.out} exists; a registration is written once (name a new file)")
    required_text(a.plan, "--plan")
    if a.hardware is None:
        a.hardware = "h200-hgx8" if a.gpus else "h200-1"
    check_grid(a)
    if a.params is None:
        params = shipped_params(a.hardware, other="--params FILE")
        params_path = PARAMS_DIR / f"{a.hardware}.json"
    else:       # another parameters file of the same hardware (e.g. a transfer registered
        params = params_file(a.params, "--params")   # beside the shipped fit)
        if params.hardware != a.hardware:
            raise MokInputError(f"--params {a.params!r} was fitted for hardware "
                                f"{params.hardware!r}, not --hardware {a.hardware!r}")
        params_path = Path(a.params)
    if load_hardware(a.hardware).emulated_ranks == bool(a.gpus):   # a run that never meets it
        raise MokInputError(
            f"--hardware {a.hardware!r} with --gpus {a.gpus}: " + (
                f"{a.hardware} is one GPU emulating its peers; --gpus N runs N real GPUs "
                f"(e.g. h200-hgx8)" if a.gpus else
                f"--gpus 0 runs one GPU emulating its peers, whose records name an emulated "
                f"preset (h200-1, h100-1), not {a.hardware}"))
    rows = []
    for i, rec in enumerate(planned_records(a)):
        scn, system = record_scenario(rec), rec["system"]
        cfg = record_config(rec) if system == "mok" else None
        p = params.with_design(**record_design(rec))    # a rotated source order's what-if
        for engine in ("analytic", "sim") if i % a.sim_every == 0 else ("analytic",):
            if engine == "analytic":
                pred = predict(scn, cfg, system, p)
            else:
                pred = simulate(scn, cfg, system, p)
            rows.append({"engine": engine, "system": system, "model": rec["model"],
                         "ep": rec["ep"], "tokens": rec["tokens"], "routing": rec["routing"],
                         "pass": rec["pass"], "precision": rec["precision"],
                         "config": rec["config"], "hardware": a.hardware,
                         **({"tiles": rec["tiles"]} if rec.get("tiles") else {}),
                         "params": _repo_path(params_path),
                         "predicted_ms": pred.latency_ms,
                         "registered": datetime.now(timezone.utc).isoformat(timespec="seconds")})
    with open(a.out, "x") as f:
        for r in rows:
            f.write(json.dumps(r, sort_keys=True) + "\n")
    print(f"registered {len(rows)} predictions in {a.out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = doc_parser("python -m calibration.register", __doc__)
    p.add_argument("--hardware", default=None, help="preset whose shipped parameters predict "
                   "(default h200-hgx8 with --gpus N, h200-1 with --gpus 0)")
    p.add_argument("--params", default=None, help="a parameters file of --hardware to predict "
                   "with instead of its shipped one (the lines name it)")
    p.add_argument("--gpus", type=int_at_least(0), default=0, help="real GPUs (EP = N); 0: one GPU emulating")
    p.add_argument("--ep", default=None, help="comma list of EP sizes emulated with --gpus 0 "
                   "(default 16)")
    p.add_argument("--pass", dest="pass_", default=None, choices=PASSES, help="default fwd")
    p.add_argument("--precision", default=None, choices=PRECISIONS, help="default bf16")
    p.add_argument("--plan", default=None, help="JSON lines of planned MoK records instead of a grid")
    p.add_argument("--sim-every", type=int_at_least(1), default=1,
                   help="simulate every K-th planned record only (the analytic model predicts all)")
    p.add_argument("--model")
    p.add_argument("--tokens")
    p.add_argument("--routing", default=None, help="default uniform")
    p.add_argument("--seed", type=int_at_least(0, MAX_SEED), default=None, help="default 0")
    p.add_argument("--dispatch", default=None, help="default pull")
    p.add_argument("--combine", default=None, help="default push")
    p.add_argument("--minibatch", default=None, help="default 4096")
    p.add_argument("--comm-sms", default=None, help="default 32")
    p.add_argument("--macrobatch", type=int_at_least(1), default=None, help="default 131072")
    p.add_argument("--capacity", type=capacity_arg, default=None, help="default 1.0")
    p.add_argument("--list-lag", default=None, help="comma list of the work list's lag (mok bench "
                   "--list-lag; a plan line may name it in its `tiles`)")
    p.add_argument("--source-order", default=None, help="comma list of rank|rotated (mok bench "
                   "--source-order; predicted with the parameter source_order_rotated; default "
                   "rank)")
    p.add_argument("--out", required=True)
    return run_tool(p, register, argv)


if __name__ == "__main__":
    sys.exit(main())
