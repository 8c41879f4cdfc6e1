"""The `mok` command line. It only parses, calls the library and prints.

Exit status: 0 success, 2 bad input (one line on stderr), 1 anything else.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys

from .errors import MokInputError
from .presets import hardware_names, load_hardware, load_model, model_names
from .scenario import ENGINES, MODES, PASSES, PRECISIONS, SYSTEMS, Config, Scenario
from .sim.fabric import SimInvariantError

KNOBS = ("dispatch", "combine", "minibatch", "comm_sms", "macrobatch", "capacity")
SCHEDULES = ("published", "naive")


class _Parser(argparse.ArgumentParser):
    """argparse that reports bad input as MokInputError (one line, exit 2)."""

    def error(self, message: str):
        raise MokInputError(f"{self.prog}: {message}")


def _workload_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--hardware", required=True, help="preset name or FILE.toml")
    p.add_argument("--model", required=True, help="preset name or FILE.toml")
    p.add_argument("--ep", required=True, type=int, help="EP degree (GPUs in the EP group)")
    p.add_argument("--tokens", required=True, type=int, help="local tokens per GPU before dispatch")
    p.add_argument("--pass", dest="pass_", default="fwd", help=f"one of {PASSES}")
    p.add_argument("--precision", default="bf16", help=f"one of {PRECISIONS}")
    p.add_argument("--routing", default="uniform", help="uniform | zipf:S | hot:F | FILE")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--params", default=None, help="parameters file (default: the hardware's own)")
    p.add_argument("--allow-params-mismatch", action="store_true",
                   help="use a parameters file fitted for other hardware")
    p.add_argument("--json", action="store_true", help="print one JSON document")


def _config_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dispatch", help=f"one of {MODES}")
    p.add_argument("--combine", help=f"one of {MODES}")
    p.add_argument("--minibatch", type=int, help="routed rows per pipeline step")
    p.add_argument("--comm-sms", dest="comm_sms", type=int, help="communication SMs")
    p.add_argument("--macrobatch", type=int, help="ring-buffer capacity in routed rows")
    p.add_argument("--capacity", type=float, help="schedule capacity multiplier in (0, 1]")
    p.add_argument("--system", default="mok", help=f"one of {SYSTEMS}")


def _scenario(a) -> Scenario:
    return Scenario(load_hardware(a.hardware), load_model(a.model), a.ep, a.tokens, a.pass_,
                    a.precision, a.routing, a.seed)


def _knobs(a) -> dict:
    """The knobs given on the command line, each validated; the tuner picks the rest."""
    knobs = {k: getattr(a, k) for k in KNOBS if getattr(a, k) is not None}
    trial = {**Config().as_dict(), **knobs}
    if "macrobatch" not in knobs:  # the tuner sizes the ring; only a given one must hold a minibatch
        trial["macrobatch"] = max(trial["macrobatch"], trial["minibatch"])
    Config(**trial)
    return knobs


def _params_arg(a):
    from .predict import resolve_params

    return lambda scn: resolve_params(scn, a.params, a.allow_params_mismatch)


def _print_prediction(pred, as_json: bool) -> None:
    if as_json:
        print(json.dumps(pred.as_json(), indent=1))
        return
    s = pred.scenario
    print(f"{pred.system} ({pred.engine}) on {s.hardware.name}, {s.model.name}, EP {s.ep}, "
          f"{s.tokens} tokens/GPU, {s.pass_}, {s.precision}, routing {s.routing}")
    if pred.config:
        c = pred.config
        chosen = f" (tuner chose: {', '.join(pred.tuned)})" if pred.tuned else ""
        print(f"knobs: dispatch={c.dispatch} combine={c.combine} minibatch={c.minibatch} "
              f"comm_sms={c.comm_sms} macrobatch={c.macrobatch} capacity={c.capacity}{chosen}")
    print(f"latency: {pred.latency_ms:.3f} ms (slowest GPU {pred.slowest_gpu})")
    print("critical path (adds up to the latency):")
    for k, v in pred.breakdown_ms.items():
        print(f"  {k:<22} {v:9.4f} ms")
    print("resource busy time on the slowest GPU (these overlap):")
    for k, v in pred.work_ms.items():
        print(f"  {k:<22} {v:9.4f} ms")
    if pred.params:
        print(f"parameters: {pred.params}")


def cmd_presets(a) -> int:
    hw = {n: _asdict(load_hardware(n)) for n in hardware_names()}
    models = {n: _asdict(load_model(n)) for n in model_names()}
    if a.json:
        print(json.dumps({"hardware": hw, "models": models}, indent=1))
        return 0
    print("hardware presets:")
    print(f"  {'name':<20}{'SMs':>5}{'bf16 TF':>9}{'fp8 TF':>8}{'HBM TB/s':>9}{'link GB/s':>10}{'domain':>7}  host")
    for n, h in hw.items():
        print(f"  {n:<20}{h['sms']:>5}{h['bf16_tflops']:>9.0f}{h['fp8_tflops']:>8.0f}{h['hbm_tbps']:>9.2f}"
              f"{h['link_gbps']:>10.0f}{h['domain_size']:>7}  {h['host_cpu']}")
    print("model presets:")
    print(f"  {'name':<20}{'hidden':>7}{'width':>7}{'experts':>8}{'top-k':>6}{'shared':>7}")
    for n, m in models.items():
        print(f"  {n:<20}{m['hidden']:>7}{m['expert_width']:>7}{m['routed_experts']:>8}{m['top_k']:>6}"
              f"{m['shared_width'] if m['shared_experts'] else 0:>7}")
    print("aliases: kimi-k2.7-code -> kimi-k2, glm-5.2 -> glm-5; any FILE.toml with the same fields")
    return 0


def _asdict(obj) -> dict:
    import dataclasses

    return dataclasses.asdict(obj)


def cmd_predict(a, engine: str) -> int:
    from .predict import predict

    scn = _scenario(a)
    knobs = _knobs(a)
    if a.system != "mok" and knobs:
        raise MokInputError(f"--system {a.system} has no MoK knobs; drop {sorted(knobs)}")
    params = _params_arg(a)(scn)
    if engine == "sim":
        from .sim import simulate

        if a.schedule not in SCHEDULES:
            raise MokInputError(f"--schedule {a.schedule!r} must be one of {SCHEDULES}")
        tuned = predict(scn, knobs, a.system, params) if a.system == "mok" else None
        if a.degrade:  # links of the simulated network; knobs left unset are tuned on the healthy one
            scn = scn.with_(hardware=scn.hardware.with_(degrade=a.degrade))
        pred = simulate(scn, tuned.config if tuned else None, a.system, params, trace=a.trace,
                        schedule=a.schedule)
        pred.tuned = tuned.tuned if tuned else []
    else:
        pred = predict(scn, knobs, a.system, params, engine)
    _print_prediction(pred, a.json)
    return 0


def cmd_tune_table(a) -> int:
    """`mok tune --table FILE.json`: the tuner's knobs per token bucket, written atomically."""
    from mok_kernels.knobs import DEFAULT_BUCKETS, build_table, write_table

    if a.tokens is not None:
        raise MokInputError("--table tunes every bucket of --tokens-buckets; drop --tokens")
    if a.engine != "analytic" or a.pass_ != "fwd" or a.precision != "bf16" or a.routing != "uniform" \
            or a.seed != 0:
        raise MokInputError("--table is the megakernel's choice: analytic engine, --pass fwd, "
                            "--precision bf16, --routing uniform, --seed 0 (the defaults)")
    try:
        buckets = ([int(b) for b in a.tokens_buckets.split(",")] if a.tokens_buckets
                   else list(DEFAULT_BUCKETS))
    except ValueError:
        raise MokInputError(f"--tokens-buckets {a.tokens_buckets!r}: a comma list of token "
                            f"counts, e.g. 64,128,256") from None
    knobs = _knobs(a)
    words = ["mok", "tune", "--table", a.table, "--hardware", a.hardware, "--model", a.model,
             "--ep", str(a.ep), "--tokens-buckets", ",".join(str(b) for b in sorted(set(buckets)))]
    words += ["--params", a.params] if a.params else []
    words += ["--allow-params-mismatch"] if a.allow_params_mismatch else []
    for k, v in knobs.items():
        words += [f"--{k.replace('_', '-')}", str(v)]
    command = " ".join(shlex.quote(w) for w in words)   # the command that rewrites this table
    doc = build_table(a.hardware, a.model, a.ep, buckets, a.params, a.allow_params_mismatch,
                      knobs, command)
    write_table(a.table, doc)
    if a.json:
        print(json.dumps({"table": a.table, **doc}, indent=1))
        return 0
    print(f"knob table {a.table}: {doc['hardware']} / {doc['model']} / EP {doc['ep']}, "
          f"{len(doc['buckets'])} buckets in {doc['seconds']:.2f} s, params {doc['params']}")
    print(f"  {'tokens':>7}{'latency ms':>11}  dispatch combine minibatch comm_sms macrobatch capacity")
    for b in doc["buckets"]:
        c = b["config"]
        print(f"  {b['tokens']:>7}{b['predicted_ms']:>11.4f}  {c['dispatch']:<8} {c['combine']:<7} "
              f"{c['minibatch']:>9} {c['comm_sms']:>8} {c['macrobatch']:>10} {c['capacity']:>8}")
    return 0


def cmd_tune(a) -> int:
    from .tuner import tune

    if a.table:
        return cmd_tune_table(a)
    if a.tokens is None:
        raise MokInputError("mok tune: the following arguments are required: --tokens "
                            "(or --table FILE.json with --tokens-buckets)")
    if a.tokens_buckets:
        raise MokInputError("--tokens-buckets needs --table FILE.json")
    scn = _scenario(a)
    if a.engine not in ENGINES:
        raise MokInputError(f"--engine {a.engine!r} must be one of {ENGINES}")
    if a.top < 1:
        raise MokInputError(f"--top {a.top} must be >= 1")
    params = _params_arg(a)(scn)
    r = tune(scn, params, fixed=_knobs(a), top=a.top, engine=a.engine)
    if a.json:
        print(json.dumps({"best": {"config": r.best.config.as_dict(), "latency_ms": r.best.latency_ms},
                          "top": [{"config": s.config.as_dict(), "latency_ms": s.latency_ms} for s in r.top],
                          "evaluated": r.evaluated, "seconds": r.seconds, "engine": r.engine,
                          **scn.describe(), "params": params.path}, indent=1))
        return 0
    print(f"tuned {scn.hardware.name} / {scn.model.name} / EP {scn.ep} / {scn.tokens} tokens / "
          f"{scn.pass_} / {scn.precision}: {r.evaluated} configurations in {r.seconds:.3f} s ({r.engine})")
    print(f"  {'rank':<5}{'latency ms':>11}  dispatch combine minibatch comm_sms macrobatch capacity")
    for i, s in enumerate(r.top, 1):
        c = s.config
        print(f"  {i:<5}{s.latency_ms:>11.4f}  {c.dispatch:<8} {c.combine:<7} {c.minibatch:>9} "
              f"{c.comm_sms:>8} {c.macrobatch:>10} {c.capacity:>8}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="mok", description="Predict, tune and run MoE layers on scale-up GPU fabrics")
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    sp = sub.add_parser("presets", help="hardware and model presets")
    sp.add_argument("--json", action="store_true")
    for name in ("predict", "simulate"):
        sp = sub.add_parser(name, help=f"{name} one layer pass")
        _workload_flags(sp)
        _config_flags(sp)
        if name == "simulate":
            sp.add_argument("--trace", help="write a Chrome trace-event JSON file")
            sp.add_argument("--schedule", default="published",
                            help=f"one of {SCHEDULES}: the published overlap order or in-order")
            sp.add_argument("--degrade", default="",
                            help="degraded or failed links, e.g. gpu3:0.5 or gpu3.p0:0,tier:0.5 "
                                 "(README, 'The simulator')")
    sp = sub.add_parser("tune", help="pick the knobs")
    _workload_flags(sp)
    for flag in ("--dispatch", "--combine"):
        sp.add_argument(flag, help=f"fix this knob: one of {MODES}")
    sp.add_argument("--minibatch", type=int)
    sp.add_argument("--comm-sms", dest="comm_sms", type=int)
    sp.add_argument("--macrobatch", type=int)
    sp.add_argument("--capacity", type=float)
    sp.add_argument("--engine", default="analytic", help=f"one of {ENGINES}")
    sp.add_argument("--top", type=int, default=5)
    sp.add_argument("--table", help="write a knob table FILE.json per token bucket (MoKLayer's "
                                    "knob_table); replaces --tokens")
    sp.add_argument("--tokens-buckets", dest="tokens_buckets",
                    help="token buckets of --table (default 64,128,...,8192)")
    sp._option_string_actions["--tokens"].required = False  # --table tunes buckets instead
    for name in ("calibrate", "validate", "study", "bench"):
        sp = sub.add_parser(name, add_help=False, help=f"see `mok {name} --help`")
        sp.add_argument("rest", nargs=argparse.REMAINDER)
    return p


def _forward(cmd: str, rest: list[str]) -> int:
    """calibrate, validate, study and bench live with their packages and parse their own flags."""
    if cmd == "bench":
        from mok_kernels.bench import cli
    elif cmd == "study":
        from studies.cli import cli
    elif cmd == "calibrate":
        from calibration.cli import calibrate_cli as cli
    else:
        from calibration.cli import validate_cli as cli
    return cli(rest)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        if argv and argv[0] in ("calibrate", "validate", "study", "bench"):
            return _forward(argv[0], argv[1:])
        a = build_parser().parse_args(argv)
        if a.cmd == "presets":
            return cmd_presets(a)
        if a.cmd in ("predict", "simulate"):
            return cmd_predict(a, "analytic" if a.cmd == "predict" else "sim")
        return cmd_tune(a)
    except MokInputError as exc:
        print(f"mok: error: {exc}", file=sys.stderr)
        return 2
    except SimInvariantError as exc:  # a simulator bug: one line, never a traceback
        print(f"mok: internal error: the simulation broke an invariant ({exc}); please report it",
              file=sys.stderr)
        return 1
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    except BrokenPipeError:  # output piped into `head`
        sys.stdout = None
        return 0


if __name__ == "__main__":
    sys.exit(main())
