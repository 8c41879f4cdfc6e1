"""The `mok` command line. It only parses, calls the library and prints.

Exit status: 0 success, 2 bad input (one line on stderr), 1 anything else.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import shlex
import sys

from .errors import ModelError, MokInputError, SimInvariantError
from .fileio import TRACE_KIND, check_output_file, deferred_warnings, drop_warnings, flush_warnings, warn
from .presets import hardware_names, load_hardware, load_model, model_names
from .scenario import (BWD_TILES, ENGINES, FP8_KERNELS, GLUON_KNOBS, KNOBS, MAX_SEED, MODES,
                       PASSES, PRECISIONS, SOURCE_ORDERS, SYSTEMS, Config, Scenario,
                       check_gluon_knobs, check_source_order)
from .sim.network import DEGRADE_HELP

SCHEDULES = ("published", "naive")


def _shown(value) -> str:
    """A flag's value as the command line gave it: a list (nargs) as its words, else repr."""
    return " ".join(map(str, value)) if isinstance(value, list) else repr(value)


class _StoreOnce(argparse._StoreAction):
    """argparse's store, refusing a flag given twice: plain argparse keeps the last value, so
    `--model a --model b` silently ran b. Flags that may repeat say so (action="append")."""

    def __call__(self, parser, namespace, values, option_string=None):
        given = getattr(parser, "_given", None)
        if given is not None:
            if self.dest in given:
                first, value = given[self.dest]
                again = f"{first} {_shown(value)}, then {option_string} {_shown(values)}"
                rule = ("give it once, with all its values after it" if isinstance(values, list)
                        else "it takes one value; give it once")
                raise argparse.ArgumentError(self, f"given twice ({again}): {rule}")
            given[self.dest] = (option_string, values)
        super().__call__(parser, namespace, values, option_string)


class MokParser(argparse.ArgumentParser):
    """argparse for every mok command and tool: bad input is a MokInputError (one line, exit 2)
    instead of a usage block; a single-value flag given twice is refused (_StoreOnce)."""

    def add_argument(self, *args, **kwargs):
        if args and str(args[0]).startswith("-") and kwargs.get("action", "store") == "store":
            kwargs["action"] = _StoreOnce
        return super().add_argument(*args, **kwargs)

    def parse_known_args(self, args=None, namespace=None):
        self._given: dict = {}      # dest -> (flag, value) of the single-value flags given
        try:
            return super().parse_known_args(args, namespace)
        finally:
            self._given = None

    def error(self, message: str):
        raise MokInputError(f"{message} (see `{self.prog} --help`)")



def run_tool(parser: argparse.ArgumentParser, body, argv: list[str] | None = None) -> int:
    """Entry of a `python -m` tool or a script: parse argv (default sys.argv[1:]) with `parser`
    (a MokParser: a tool without flags then refuses any argument instead of ignoring it), call
    body(args); bad input is one line `PROG: error: ...` on stderr and exit status 2."""
    from .progress import check_env

    try:
        check_env()
        args = parser.parse_args(sys.argv[1:] if argv is None else argv)
        with deferred_warnings():
            rc = body(args) or 0
            if rc == 2:                # a tool that printed its own error line
                drop_warnings()
            return rc
    except MokInputError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:   # the reader went away (`| head`): stop quietly, as the docs advise
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def doc_parser(prog: str, doc: str | None) -> MokParser:
    """A MokParser whose --help prints the tool's docstring as written."""
    return MokParser(prog=prog, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)


def _at_least(kind, low: float, noun: str, bounded_noun: str, high: float = math.inf,
              open_low: bool = False):
    """An argparse type: a finite `kind` value >= low (> low with open_low; and <= high), refused
    with the rule otherwise (`noun` names what unparsable text should be, `bounded_noun` what an
    out-of-range value should be)."""
    rule = (f"{'>' if open_low else '>='} {_num(low)}" if high == math.inf
            else f"in {'(' if open_low else '['}{_num(low)}, {_num(high)}]")

    def parse(text: str):
        try:
            v = kind(plain_number(text))
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} must be {noun} {rule}") from None
        if not ((kind is int or math.isfinite(v)) and (low < v if open_low else low <= v)
                and v <= high):
            raise argparse.ArgumentTypeError(f"{text} must be {bounded_noun} {rule}")
        return v
    parse.__name__ = f"{noun.split()[-1]} {rule}"
    return parse


def plain_number(text: str) -> str:
    """`text` as int() / float() may read it: ASCII with no surrounding space and no digit
    separator (they would also take "٦٤", " 64" or "6_4" as 64); a ValueError otherwise."""
    if not text.isascii() or text != text.strip() or "_" in text:
        raise ValueError(text)
    return text


def plain_int(text: str) -> int:
    """An argparse type: an integer written plainly (plain_number), its range the caller's to
    check (int would take "٥", " 5" or "1_0")."""
    try:
        return int(plain_number(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} must be an integer (ASCII digits, no spaces)") \
            from None


def _num(x: float) -> str:
    """A bound as a rule prints it: 2147483647, not 2.14748e+09; 0.5 as 0.5."""
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def int_at_least(low: int, high: int | None = None):
    """An argparse type: an integer >= low (and <= high, where a larger value could only be a
    mistake: a job that would never end, a count no buffer holds)."""
    return _at_least(int, low, "an integer", "an integer", math.inf if high is None else high)


def number_list(text: str, flag: str, kind=int, low: float = 1, high: float = math.inf,
                open_low: bool = False) -> list:
    """A comma list of `kind` values in [low, high] ((low, high] with open_low), e.g. --tokens
    1024,2048; an empty element ("1,,2", "") or a value out of range is refused naming the flag,
    never dropped."""
    what = "integers" if kind is int else "numbers"
    rule = (f"in {'(' if open_low else '['}{_num(low)}, {_num(high)}]" if high < math.inf
            else f"{'>' if open_low else '>='} {_num(low)}")
    out = []
    for item in text.split(","):
        try:
            v = kind(plain_number(item))
        except ValueError:
            raise MokInputError(f"{flag} {text!r}: {item!r} is not one of a comma list of {what} "
                                f"(ASCII, no spaces, no empty elements)") from None
        if not (low < v <= high if open_low else low <= v <= high):    # nan fails too
            raise MokInputError(f"{flag} {text!r}: {item} must be {rule}")
        out.append(v)
    return out


def _grid_value(item: str):
    """What a list item stands for: its parts (split at ':', as in MODEL:EP:TOKENS or zipf:S)
    each a number where it reads as one, else a model preset's name for its alias, else itself;
    so 0.5 and 0.50, 64 and 064, kimi-k2 and kimi-k2.7-code name the same value."""
    from .presets import MODEL_ALIASES

    def one(part: str):
        try:
            return float(part)
        except ValueError:
            return MODEL_ALIASES.get(part, part)
    return tuple(one(part) for part in item.split(":"))


def distinct(flag: str, text: str, sep: str = ",") -> list[str]:
    """The items of a `sep` list, refusing one named twice, also as another spelling of the same
    value (_grid_value): a repeated grid value would rerun the same points; a repeated name would
    count twice."""
    items = text.split(sep)
    first: dict = {}
    for x in items:
        if not x:                          # '' is the caller's to name
            continue
        seen = first.setdefault(_grid_value(x), x)
        if seen != x or items.count(x) > 1:
            again = repr(x) if seen == x else f"{seen!r} (and as {x!r})"
            raise MokInputError(f"{flag} {text!r} names {again} twice: each grid value once (a "
                                f"repeated value would rerun the same points)")
    return items


def number_at_least(low: float, high: float | None = None):
    """An argparse type: a finite number >= low (and <= high)."""
    return _at_least(float, low, "a number", "a finite number", math.inf if high is None else high)


# A job's --deadline-s: 0 ran nothing (a sweep stopped before its first point and exited 0), and
# past a week it is no deadline (faulthandler's watchdog, set at the deadline, overflows at 1e12)
MAX_DEADLINE_S = 7 * 86_400


def deadline_arg(text: str) -> float:
    """An argparse type: a job's deadline in seconds, in (0, MAX_DEADLINE_S]."""
    return _at_least(float, 0, "a number", "a finite number", MAX_DEADLINE_S, open_low=True)(text)


def local_processes(flag: str, n: int) -> int:
    """Refuse more local worker processes than 4 per core of this machine: a process pool of
    Python's fork start method starts every worker at once (`--jobs 100000` forked 100,000
    processes), and past the cores more processes only share them, each with its own memory."""
    cores = os.cpu_count() or 1
    if n > 4 * cores:
        raise MokInputError(f"{flag} {n} must be at most {4 * cores} (4 per core; this machine has "
                            f"{cores}): more processes only share the cores, each with its own "
                            f"copy of the model's data")
    return n


def capacity_arg(text: str) -> float:
    """An argparse type: a number in (0, 1]."""
    try:
        v = float(plain_number(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} must be a number in (0, 1]") from None
    if not (math.isfinite(v) and 0 < v <= 1):
        raise argparse.ArgumentTypeError(f"{text} must be a number in (0, 1]")
    return v


def choice(flag: str, allowed: tuple[str, ...], value: str) -> str:
    """Refuse a value that is not one of `allowed`, naming them."""
    if value not in allowed:
        raise MokInputError(f"{flag} {value!r} must be one of {', '.join(allowed)}")
    return value


def _workload_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--hardware", required=True, help="preset name or FILE.toml")
    p.add_argument("--model", required=True, help="preset name or FILE.toml")
    p.add_argument("--ep", required=True, type=int_at_least(1), help="EP degree (GPUs in the EP group)")
    p.add_argument("--tokens", required=True, type=int_at_least(1),
                   help="local tokens per GPU before dispatch")
    p.add_argument("--pass", dest="pass_", default="fwd", help=f"one of {PASSES}")
    p.add_argument("--precision", default="bf16", help=f"one of {PRECISIONS}")
    p.add_argument("--routing", default="uniform", help="uniform | zipf:S | hot:F | FILE")
    p.add_argument("--fp8-kernel", default="triton",
                   help="our megakernel's FP8 forward kernel: triton (default; the Triton "
                        "megakernel) or gluon (mok_kernels/gluon_fp8/mok.py; --precision fp8 "
                        "--pass fwd; it runs --dispatch pull --combine push --capacity 1.0 "
                        "and lag 1 only)")
    p.add_argument("--bwd-tiles", default=None,
                   help="our backward megakernel's tiles with --pass bwd: recompute (default; "
                        "BackwardTiles(), g and u recomputed: what `mok bench --pass bwd` times "
                        "as its default) or training (the tiles the layer trains with: g and u "
                        "saved by the forward, mok_kernels/backward.py TRAINING_TILES with "
                        "w_bf16=1; --precision bf16)")
    p.add_argument("--seed", type=int_at_least(0, MAX_SEED), default=0,
                   help="seed of the routing draw (token-to-expert assignment) the layer is "
                        "predicted on (default 0; the same seed, the same answer)")
    p.add_argument("--list-lag", type=int_at_least(1), default=None,
                   help="our megakernel's work-list lag (KernelConfig.list_lag, 1-8): minibatch "
                        "i's down items after minibatch i+lag's gate/up items. Unset: chosen "
                        "from 1-4 with the knobs the tuner picks (BF16 forward, ranks emulated "
                        "on one GPU, as MoKLayer); 1 with every knob given or elsewhere")
    p.add_argument("--params", default=None, help="parameters file (default: the hardware's own)")
    p.add_argument("--allow-params-mismatch", action="store_true",
                   help="use a parameters file fitted for other hardware")
    p.add_argument("--source-order", default=None,
                   help=f"what-if, one of {SOURCE_ORDERS}: the order of each expert's received "
                        "rows by source, rank (our kernel's schedule) or rotated (each GPU's "
                        "sources start after itself: parameter source_order_rotated, "
                        "docs/sim-study.md 'N'); default: the parameters file's")
    p.add_argument("--json", action="store_true", help="print one JSON document")


def _config_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dispatch", help=f"one of {MODES}")
    p.add_argument("--combine", help=f"one of {MODES}")
    p.add_argument("--minibatch", type=int_at_least(1), help="routed rows per pipeline step")
    p.add_argument("--comm-sms", dest="comm_sms", type=int_at_least(1), help="communication SMs")
    p.add_argument("--macrobatch", type=int_at_least(1), help="ring-buffer capacity in routed rows")
    p.add_argument("--capacity", type=capacity_arg, help="schedule capacity multiplier in (0, 1]")
    p.add_argument("--system", default="mok", help=f"one of {SYSTEMS}")


def _scenario(a) -> Scenario:
    """The Scenario of the flags, validated; warnings for legal but suspicious settings."""
    if a.routing == "robust":      # `mok tune` answers it before a scenario is made
        raise MokInputError("--routing robust is a question for `mok tune` (the knobs MoKLayer "
                            "picks when not told the routing); predict a routing (uniform, zipf:S, "
                            "hot:F or FILE) with the knobs it names")
    choice("--pass", PASSES, a.pass_)
    choice("--precision", PRECISIONS, a.precision)
    choice("--fp8-kernel", FP8_KERNELS, a.fp8_kernel)
    if a.bwd_tiles is not None:
        choice("--bwd-tiles", BWD_TILES, a.bwd_tiles)
        if a.pass_ != "bwd":
            raise MokInputError(f"--bwd-tiles {a.bwd_tiles} describes the backward pass; add "
                                f"--pass bwd (or drop --bwd-tiles)")
    if a.pass_ == "bwd" and a.list_lag not in (None, 1):
        raise MokInputError(f"--list-lag {a.list_lag} with --pass bwd: the work-list lag is the "
                            f"forward megakernel's, which the backward megakernel does not have (drop "
                            f"--list-lag)")
    if a.fp8_kernel == "gluon" and a.list_lag not in (None, 1):
        raise MokInputError(f"--list-lag {a.list_lag} with --fp8-kernel gluon: the Gluon FP8 pass "
                            f"runs lag 1 only (mok_kernels/gluon_fp8/mok.py)")
    if getattr(a, "source_order", None) is not None:
        check_source_order(choice("--source-order", SOURCE_ORDERS, a.source_order), a.pass_,
                           a.fp8_kernel)
    hw, model = load_hardware(a.hardware), load_model(a.model)
    _warn_shadowing(a.hardware, hw, hardware_names(), load_hardware, "hardware",
                    "its default parameters are that preset's fitted file "
                    f"(mok_model/params/{hw.name}.json); pass --params FILE fitted to your hardware "
                    "or rename it")
    _warn_shadowing(a.model, model, model_names(), load_model, "model", "rename it")
    scn = Scenario(hw, model, a.ep, a.tokens, a.pass_, a.precision, a.routing, a.seed,
                   list_lag=a.list_lag or 1, fp8_kernel=a.fp8_kernel,
                   bwd_tiles=a.bwd_tiles or "recompute")
    from .workload import parse_routing, routing_bytes

    if a.seed and parse_routing(scn.routing, model.top_k)[0] == "file":
        raise MokInputError(f"--seed {a.seed} seeds the routing generators; --routing {a.routing} "
                            f"is a file that fixes every token's experts (drop --seed)")
    if scn.domains > 1:
        warn(f"--ep {scn.ep} spans {scn.domains} scale-up domains of {hw.name} ({hw.domain_size} "
             f"GPUs each): rows between domains cross the scale-out link ({hw.scaleout_gbps:g} GB/s "
             f"per GPU vs {hw.link_gbps:g} GB/s NVLink); the breakdown shows it as scale_out")
    need = routing_bytes(scn.ep, scn.tokens, model.top_k)
    if need > 2e9 and parse_routing(scn.routing, model.top_k)[0] != "file":
        warn(f"--tokens {scn.tokens} at --ep {scn.ep}: drawing the routing takes about "
             f"{need / 1e9:.1f} GB of memory")
    return scn


def _healthy_links(a, hw, engine: str) -> None:
    """Refuse a hardware file's `degrade` where it would be ignored: the analytic engine (predict,
    tune) models every link healthy, and `simulate --degrade` would replace the file's."""
    spec = (hw.degrade or "").strip()
    if not spec:
        return
    if engine == "analytic":
        raise MokInputError(f"--hardware {a.hardware}: degrade {hw.degrade!r} is a simulator "
                            f"what-if, and the analytic engine models every link healthy: run "
                            f"`mok simulate` (or `mok tune --engine sim`), or drop degrade from "
                            f"the file")
    if getattr(a, "degrade", None):
        raise MokInputError(f"--degrade {a.degrade} and the degrade {hw.degrade!r} of --hardware "
                            f"{a.hardware}: give the degraded links once (one or the other)")


def _warn_shadowing(arg: str, obj, names: list[str], load, kind: str, advice: str) -> None:
    """Warn when a TOML file carries a preset's name but not that preset's numbers."""
    if not arg.endswith(".toml") or obj.name not in names:
        return
    preset = load(obj.name)
    differ = [f.name for f in dataclasses.fields(obj)
              if f.compare and f.name != "source" and getattr(obj, f.name) != getattr(preset, f.name)]
    if differ:
        warn(f"{kind} file {arg!r} is named {obj.name!r} like the preset but differs in {differ}; "
             f"{advice}")


def _warn_knobs(scn: Scenario, knobs: dict) -> None:
    """Warn about legal knob values far outside what the tuner searches."""
    mb, cc = knobs.get("minibatch"), knobs.get("comm_sms")
    if mb is not None and mb < 128:
        warn(f"--minibatch {mb} is below one 128-row GEMM tile: every minibatch runs padded tiles "
             f"and reloads its experts' weights (the tuner searches 256 and up)")
    ring = knobs.get("macrobatch")
    if ring is not None and ring < 128 and mb is None:
        warn(f"--macrobatch {ring} is below one 128-row GEMM tile: the tuner's minibatch is at "
             f"most the ring's {ring} rows, so every minibatch runs padded tiles and reloads its "
             f"experts' weights (the tuner's rings hold one of its minibatches or more: 256 rows and up)")
    if cc is not None and cc > scn.hardware.sms // 2:
        warn(f"--comm-sms {cc} leaves {scn.hardware.sms - cc} of {scn.hardware.sms} SMs to the "
             f"GEMMs (the tuner searches 4 to {min(64, scn.hardware.sms // 2)})")


def _knobs(a, scn: Scenario | None = None) -> dict:
    """The knobs given on the command line, each validated (against `scn`'s hardware when
    given), then warned about; the tuner picks the rest."""
    for knob in ("dispatch", "combine"):
        if getattr(a, knob) is not None:
            choice(f"--{knob}", MODES, getattr(a, knob))
    knobs = {k: getattr(a, k) for k in KNOBS if getattr(a, k) is not None}
    gluon = scn is not None and scn.fp8_kernel == "gluon"   # its fixed knobs, not Config's
    trial = {**Config().as_dict(), **(GLUON_KNOBS if gluon else {}), **knobs}
    if "macrobatch" not in knobs:  # the tuner sizes the ring; only a given one must hold a minibatch
        trial["macrobatch"] = max(trial["macrobatch"], trial["minibatch"])
    elif "minibatch" not in knobs:  # and the tuner picks a minibatch it holds
        trial["minibatch"] = min(trial["minibatch"], trial["macrobatch"])
    config = Config(**trial)
    if scn is not None:
        check_gluon_knobs(scn, knobs)
        if "comm_sms" in knobs:
            config.check_for(scn)
        _warn_knobs(scn, knobs)
    return knobs


def _inputs(a) -> list[tuple[str, str | None]]:
    """The files a predict / simulate / tune command reads (an output must not be one): its
    flags' files, and the shipped parameters and presets it reads without a flag (the
    hardware's default --params, its GEMM table and held-out errors, the preset TOML files)."""
    from .params import PARAMS_DIR
    from .presets import _DIR as PRESETS_DIR

    shipped = [("shipped model data", str(f)) for d in (PARAMS_DIR, PRESETS_DIR)
               for f in sorted(d.rglob("*")) if f.is_file()]
    return [("--params", a.params), ("--routing", a.routing), ("--hardware", a.hardware),
            ("--model", a.model), *shipped]


def _params_arg(a):
    """The scenario's parameters: --params (or the hardware's own), with --source-order's
    what-if applied (a design value the fit did not free: the band stays)."""
    from .predict import resolve_params

    order = getattr(a, "source_order", None)
    if order is not None:
        choice("--source-order", SOURCE_ORDERS, order)

    def params(scn):
        p = resolve_params(scn, a.params, a.allow_params_mismatch)
        return p if order is None else p.with_design(source_order_rotated=float(order == "rotated"))
    return params


def _what_if_notes(a) -> list[str]:
    """Notes on what-if flags that change the parameters (--source-order)."""
    order = getattr(a, "source_order", None)
    if order is None:
        return []
    how = ("each GPU's sources of an expert start after itself" if order == "rotated"
           else "each expert's rows by source rank")
    return [f"--source-order {order}: a what-if schedule ({how}; our kernel sorts by source rank; "
            f"docs/sim-study.md 'N')"]


def _print_prediction(pred, as_json: bool) -> None:
    if as_json:
        print(json.dumps(pred.as_json(), indent=1))
        return
    s = pred.scenario
    print(f"{pred.system} ({pred.engine}) on {s.hardware.name}, {s.model.name}, EP {s.ep}, "
          f"{s.tokens} tokens/GPU, {s.pass_}, {s.precision}, routing {s.routing}"
          + (f", work-list lag {s.list_lag}" if s.list_lag != 1 else "")
          + (f", fp8 kernel {s.fp8_kernel}" if s.fp8_kernel != "triton" else "")
          + (f", {s.bwd_tiles} tiles" if s.bwd_tiles != "recompute" else ""))
    if pred.config:
        c = pred.config
        chosen = f" (tuner chose: {', '.join(pred.tuned)})" if pred.tuned else ""
        print(f"knobs: dispatch={c.dispatch} combine={c.combine} minibatch={c.minibatch} "
              f"comm_sms={c.comm_sms} macrobatch={c.macrobatch} capacity={c.capacity}{chosen}")
    band = f"; {pred.band.text()}" if pred.band is not None else ""
    print(f"latency: {pred.latency_ms:.3f} ms (slowest GPU {pred.slowest_gpu}{band})")
    for note in pred.notes():
        print(f"note: {note}")
    for caveat in pred.band.caveats if pred.band is not None else ():
        print(f"note: band: {caveat}")
    if pred.heldout is not None:
        print(f"held-out: {pred.heldout.text()}")
    print("critical path (adds up to the latency):")
    for k, v in pred.breakdown_ms.items():
        print(f"  {k:<22} {v:9.4f} ms")
    print("resource busy time on the slowest GPU (these overlap):")
    for k, v in pred.work_ms.items():
        print(f"  {k:<22} {v:9.4f} ms")
    if pred.params:
        print(f"parameters: {pred.params}")


def cmd_presets(a) -> int:
    from .params import load_params, provenance

    hw = {n: _asdict(load_hardware(n)) for n in hardware_names()}
    models = {n: _asdict(load_model(n)) for n in model_names()}
    params = {n: provenance(load_params(None, n)) for n in hw}   # the shipped file of each
    if a.json:
        print(json.dumps({"hardware": hw, "models": models, "parameters": params}, indent=1))
        return 0
    print("hardware presets:")
    print(f"  {'name':<20}{'SMs':>5}{'bf16 TF':>9}{'fp8 TF':>8}{'HBM TB/s':>9}{'link GB/s':>10}"
          f"{'domain':>7}  {'host':<6} parameters")
    for n, h in hw.items():
        p = params[n]
        files = len(p["fitted_on"])
        own = len(p.get("own_runs", ()))
        said = {"fit": f"fit to {files} file{'s' * (files != 1)}", "priors": "priors, no record",
                "transfer": f"transferred from {p['from']}"
                            + (f" + {own} run file{'s' * (own != 1)}" if own else "")}[p["kind"]]
        print(f"  {n:<20}{h['sms']:>5}{h['bf16_tflops']:>9.0f}{h['fp8_tflops']:>8.0f}{h['hbm_tbps']:>9.2f}"
              f"{h['link_gbps']:>10.0f}{h['domain_size']:>7}  {h['host_cpu']:<6} {said}")
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
    from .predict import add_notes, predict

    choice("--system", SYSTEMS, a.system)
    if engine == "sim":
        choice("--schedule", SCHEDULES, a.schedule)
        if a.schedule != "published" and a.system != "mok":
            raise MokInputError(f"--schedule {a.schedule} orders MoK's work; --system {a.system} "
                                f"runs its own fixed sequence of kernels (drop --schedule)")
        if a.trace is not None:
            check_output_file(a.trace, "--trace", ".json", inputs=_inputs(a), replaces=(TRACE_KIND,))
        if a.degrade is not None and not a.degrade.strip():
            raise MokInputError(f"--degrade {a.degrade!r} is empty; {DEGRADE_HELP}")
    scn = _scenario(a)
    _healthy_links(a, scn.hardware, engine)
    if engine == "sim" and a.degrade:   # checked before the tuner runs (applied after it)
        scn.hardware.with_(degrade=a.degrade)
    if a.system != "mok" and (a.fp8_kernel != "triton" or a.list_lag is not None
                              or a.bwd_tiles is not None or a.source_order is not None):
        flag = (f"--fp8-kernel {a.fp8_kernel}" if a.fp8_kernel != "triton"
                else f"--bwd-tiles {a.bwd_tiles}" if a.bwd_tiles is not None
                else f"--list-lag {a.list_lag}" if a.list_lag is not None
                else f"--source-order {a.source_order}")
        raise MokInputError(f"{flag} applies to our megakernel (--system mok); --system {a.system} runs its "
                            f"own kernels (drop {flag.split()[0]})")
    if a.system != "mok" and any(getattr(a, k) is not None for k in KNOBS):
        raise MokInputError(f"--system {a.system} has no MoK knobs; drop "
                            f"{sorted(k for k in KNOBS if getattr(a, k) is not None)}")
    knobs = _knobs(a, scn)
    params = _params_arg(a)(scn)
    if engine == "sim":
        from .progress import busy
        from .sim import simulate

        degrade = a.degrade or scn.hardware.degrade   # the flag's or the hardware file's
        tuned = predict(scn.healthy("sim"), knobs, a.system, params, search_lag=a.list_lag is None,
                        layer_capacity=True, allow_other_hardware=a.allow_params_mismatch) \
            if a.system == "mok" else None
        scn = tuned.scenario if tuned else scn  # with the lag the tuner chose
        if degrade:  # links of the simulated network; knobs left unset are tuned on the healthy one
            scn = scn.with_(hardware=scn.hardware.with_(degrade=degrade))
        with busy(f"simulating {a.system} at EP {scn.ep}"):
            pred = simulate(scn, tuned.config if tuned else None, a.system, params, trace=a.trace,
                            allow_other_hardware=a.allow_params_mismatch,
                            schedule=a.schedule)
        pred.tuned = tuned.tuned if tuned else []
        pred.extra["knob_notes"] = tuned.extra.get("knob_notes", []) if tuned else []
        add_notes(pred, params)
    else:
        pred = predict(scn, knobs, a.system, params, engine, search_lag=a.list_lag is None,
                       layer_capacity=True, allow_other_hardware=a.allow_params_mismatch)
    pred.extra["notes"] = list(pred.extra.get("notes", [])) + _what_if_notes(a)
    pred.with_band(params).with_heldout(params)
    _print_prediction(pred, a.json)
    if engine == "sim" and a.trace and not a.json:
        kept = pred.extra.get("traced_gpus")
        print(f"wrote {a.trace} (GPUs {kept}; the slowest, {pred.slowest_gpu}, among them)")
    return 0


def cmd_tune_table(a) -> int:
    """`mok tune --table FILE.json`: the tuner's knobs per token bucket, written atomically."""
    from mok_kernels.knobs import DEFAULT_BUCKETS, TABLE_SCHEMA, build_table, write_table

    from .tuner import ROBUST
    from .workload import parse_routing

    if a.tokens is not None:
        raise MokInputError("--table tunes every bucket of --tokens-buckets; drop --tokens")
    check_output_file(a.table, "--table", ".json", inputs=_inputs(a), replaces=(TABLE_SCHEMA,))
    if a.top is not None:
        raise MokInputError(f"--top {a.top} lists the best configurations of one --tokens; --table "
                            f"keeps the best per bucket (drop --top)")
    off = [f"{flag} {value}" for flag, value, default in (
        ("--engine", a.engine, "analytic"), ("--pass", a.pass_, "fwd"), ("--precision", a.precision, "bf16"),
        ("--seed", a.seed, 0), ("--bwd-tiles", a.bwd_tiles, None),
        ("--fp8-kernel", a.fp8_kernel, "triton")) if value != default]
    if off:
        raise MokInputError(f"--table is the megakernel's choice: analytic engine, --pass fwd, "
                            f"--precision bf16, --seed 0 (the defaults; no --bwd-tiles, no "
                            f"--fp8-kernel); drop {', '.join(off)}")
    routing = a.routing or ROBUST      # a table holds what a layer picks without one: robust
    if routing != ROBUST:
        parse_routing(routing, load_model(a.model).top_k)
    try:          # plain numbers, as --tokens takes them (int() reads ' 64', '٦٤' and '6_4')
        buckets = ([int(plain_number(b)) for b in a.tokens_buckets.split(",")]
                   if a.tokens_buckets is not None else list(DEFAULT_BUCKETS))
    except ValueError:
        raise MokInputError(f"--tokens-buckets {a.tokens_buckets!r}: a comma list of token "
                            f"counts, e.g. 64,128,256") from None
    _healthy_links(a, load_hardware(a.hardware), "analytic")
    knobs = _knobs(a)
    words = ["mok", "tune", "--table", a.table, "--hardware", a.hardware, "--model", a.model,
             "--ep", str(a.ep), "--tokens-buckets", ",".join(str(b) for b in sorted(set(buckets)))]
    words += ["--params", a.params] if a.params else []
    words += ["--allow-params-mismatch"] if a.allow_params_mismatch else []
    for k, v in knobs.items():
        words += [f"--{k.replace('_', '-')}", str(v)]
    words += ["--list-lag", str(a.list_lag)] if a.list_lag is not None else []
    words += ["--routing", routing]
    command = " ".join(shlex.quote(w) for w in words)   # the command that rewrites this table
    doc = build_table(a.hardware, a.model, a.ep, buckets, a.params, a.allow_params_mismatch,
                      knobs, command, a.list_lag, routing)
    flush_warnings()          # every check passed: "will be replaced" is said before the write
    write_table(a.table, doc)
    if a.json:
        print(json.dumps({"table": a.table, **doc}, indent=1))
        return 0
    print(f"knob table {a.table}: {doc['hardware']} / {doc['model']} / EP {doc['ep']}, routing "
          f"{doc['routing']}, {len(doc['buckets'])} buckets in {doc['seconds']:.2f} s, params "
          f"{doc['params']}")
    print(f"  {'tokens':>7}{'latency ms':>11}  {KNOB_COLUMNS}")
    for b in doc["buckets"]:
        print(f"  {b['tokens']:>7}{b['predicted_ms']:>11.4f}  {_knob_row(b['config'], b['list_lag'])}")
    return 0


KNOB_COLUMNS = "dispatch combine minibatch comm_sms macrobatch capacity list_lag"


def _knob_row(c: dict, list_lag: int) -> str:
    """One setting under KNOB_COLUMNS (`mok tune`'s rows, its table's buckets)."""
    return (f"{c['dispatch']:<8} {c['combine']:<7} {c['minibatch']:>9} {c['comm_sms']:>8} "
            f"{c['macrobatch']:>10} {c['capacity']:>8} {list_lag:>8}")


def cmd_tune(a) -> int:
    from .capacity import layer_capacity
    from .predict import scenario_notes
    from .tuner import DEFAULT_MARGIN, ROBUST, lag_choices, tune

    choice("--engine", ENGINES, a.engine)
    if a.routing is not None and not a.routing.strip():   # absent means robust / uniform; '' is a slip
        raise MokInputError(f"--routing {a.routing!r} is empty; name uniform, zipf:S, hot:F, "
                            f"robust or a routing file (or leave --routing out)")
    if a.table is not None:
        if a.source_order is not None:
            raise MokInputError(f"--source-order {a.source_order} is a what-if of the schedule; a "
                                f"knob table is for the kernel as it runs (drop --source-order)")
        return cmd_tune_table(a)
    if a.tokens is None:
        raise MokInputError("the following arguments are required: --tokens (or --table FILE.json "
                            "with --tokens-buckets; see `mok tune --help`)")
    if a.tokens_buckets is not None:
        raise MokInputError("--tokens-buckets needs --table FILE.json")
    if a.routing == ROBUST:
        return cmd_tune_robust(a)
    a.routing = a.routing or "uniform"
    scn = _scenario(a)
    _healthy_links(a, scn.hardware, a.engine)
    knobs = _knobs(a, scn)
    params = _params_arg(a)(scn)
    r = tune(scn, params, fixed=knobs, top=5 if a.top is None else a.top, engine=a.engine,
             list_lags=lag_choices(scn) if a.list_lag is None else None)
    # the forward layer runs a capacity raised to the routing bounds (mok_model/capacity.py)
    layer_cap = (layer_capacity(scn, params)
                 if scn.pass_ == "fwd" and "capacity" not in knobs else None)

    risk = _order_risk(r, params, scn)

    def entry(s):
        return {"config": s.config.as_dict(), "latency_ms": s.latency_ms, "list_lag": s.list_lag}

    if a.json:
        print(json.dumps({"best": entry(r.best), "top": [entry(s) for s in r.top],
                          "evaluated": r.evaluated, "seconds": r.seconds, "engine": r.engine,
                          "simulated": r.simulated,
                          **scn.describe(), "domains": scn.domains,
                          "notes": scenario_notes(scn) + _what_if_notes(a),
                          "params": params.path, "layer_capacity": layer_cap,
                          "order_risk": risk, "default_kept_over":
                          None if r.fastest is None else entry(r.fastest)}, indent=1))
        return 0
    print(f"tuned {scn.hardware.name} / {scn.model.name} / EP {scn.ep} / {scn.tokens} tokens / "
          f"{scn.pass_} / {scn.precision}{' / gluon' if scn.fp8_kernel == 'gluon' else ''}"
          f"{' / training tiles' if scn.bwd_tiles == 'training' else ''}: "
          f"{r.evaluated} configurations in {r.seconds:.3f} s ({r.engine}"
          + (f": the analytic grid's fastest {r.simulated} simulated" if r.simulated else "") + ")")
    for note in scenario_notes(scn) + _what_if_notes(a):
        print(f"note: {note}")
    print(f"  {'rank':<5}{'latency ms':>11}  {KNOB_COLUMNS}")
    for i, s in enumerate(r.top, 1):
        print(f"  {i:<5}{s.latency_ms:>11.4f}  {_knob_row(s.config.as_dict(), s.list_lag)}")
    if r.fastest is not None:
        print(f"note: rank 1 is the published default knobs, kept: the fastest setting is "
              f"predicted {1 - r.fastest.latency_ms / r.best.latency_ms:.1%} faster, under the "
              f"{DEFAULT_MARGIN:.0%} the tuner asks (the model's error on held-out runs is "
              f"larger; mok_model/tuner.py DEFAULT_MARGIN)")
    if layer_cap is not None:
        print(f"note: MoKLayer runs capacity {layer_cap} here (the uniform and hot-expert "
              f"bounds, mok_model/capacity.py); `--capacity {layer_cap}` ranks at it")
    if risk is not None:
        apart = (f"over {risk['lo']:.0%}" if risk["hi"] is None else f"under {risk['hi']:.0%}"
                 if risk["lo"] == 0 else f"{risk['lo']:.0%}-{risk['hi']:.0%}")
        print(f"note: ranks 1 and 2 are predicted {risk['gap']:.1%} apart; on held-out runs "
              f"of {scn.hardware.name} the model ordered two settings predicted {apart} apart "
              f"the wrong way {risk['wrong']:.0%} of the time ({risk['n']} pairs; "
              f"{risk['command']}, {risk['made']}): time both where it matters")
    return 0


def _order_risk(r, params, scn) -> dict | None:
    """How sure the ranking of the first two settings is (mok_model.heldout.order_risk), for the
    analytic engine's ranking of two or more settings; None where the held-out file has none."""
    from .heldout import order_risk

    if r.engine != "analytic" or len(r.top) < 2:
        return None
    gap = abs(math.log(r.top[1].latency_ms / r.top[0].latency_ms))
    risk = order_risk(params, scn.hardware.name, gap)
    return None if risk is None else {"gap": math.exp(gap) - 1, **risk}


def cmd_tune_robust(a) -> int:
    """`mok tune --routing robust`: MoKLayer's pick when not told the routing (the least worst
    regret over tuner.robust_routings, at the capacity the layer runs)."""
    import time

    from .capacity import tune_as_layer
    from .predict import scenario_notes
    from .tuner import ROBUST, lag_choices, robust_routings

    for flag, value, default in (("--engine", a.engine, "analytic"), ("--top", a.top, None),
                                 ("--seed", a.seed, 0)):
        if value != default:
            raise MokInputError(f"--routing robust picks one setting with the analytic engine "
                                f"over routings drawn with seed 0; drop {flag} {value}")
    a.routing = "uniform"
    scn = _scenario(a)
    _healthy_links(a, scn.hardware, "analytic")
    knobs = _knobs(a, scn)
    params = _params_arg(a)(scn)
    routings = robust_routings(scn.model.top_k, scn.model.routed_experts)
    t0 = time.perf_counter()
    best, note = tune_as_layer(scn, params, knobs,
                               lag_choices(scn) if a.list_lag is None else None, robust=True)
    seconds = time.perf_counter() - t0
    if a.json:
        print(json.dumps({"best": {"config": best.config.as_dict(), "latency_ms": best.latency_ms,
                                   "list_lag": best.list_lag, "regret": best.regret},
                          "routing": ROBUST, "judged_under": list(best.regret),
                          "dropped": [r for r in routings if r not in best.regret],
                          "knob_note": note, "seconds": seconds, "engine": "analytic",
                          **scn.describe(), "domains": scn.domains, "notes": scenario_notes(scn),
                          "params": params.path}, indent=1))
        return 0
    print(f"tuned {scn.hardware.name} / {scn.model.name} / EP {scn.ep} / {scn.tokens} tokens / "
          f"{scn.pass_} / {scn.precision}, robust over {', '.join(routings)} (MoKLayer's "
          f"pick when not told the routing): {seconds:.3f} s (analytic)")
    for n in scenario_notes(scn):
        print(f"note: {n}")
    print(f"  {'latency ms (uniform)':>21}  {KNOB_COLUMNS}")
    print(f"  {best.latency_ms:>21.4f}  {_knob_row(best.config.as_dict(), best.list_lag)}")
    print("  regret against each routing's own best (`mok tune --routing R`): "
          + ", ".join(f"{r} {v:+.1%}" for r, v in best.regret.items()))
    print(f"note: {note}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    p = MokParser(prog="mok", description="Predict, tune and run MoE layers on scale-up GPU fabrics")
    p.add_argument("--version", action="version", version=f"mok {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=MokParser, metavar="COMMAND")
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
            sp.add_argument("--degrade", default=None,
                            help="degraded or failed links, e.g. gpu3:0.5 or gpu3.p0:0,tier:0.5 "
                                 "(README, 'The simulator')")
    sp = sub.add_parser("tune", help="pick the knobs")
    _workload_flags(sp)
    for flag in ("--dispatch", "--combine"):
        sp.add_argument(flag, help=f"fix this knob: one of {MODES}")
    sp.add_argument("--minibatch", type=int_at_least(1))
    sp.add_argument("--comm-sms", dest="comm_sms", type=int_at_least(1))
    sp.add_argument("--macrobatch", type=int_at_least(1))
    sp.add_argument("--capacity", type=capacity_arg)
    sp.add_argument("--engine", default="analytic", help=f"one of {ENGINES}")
    sp.add_argument("--top", type=int_at_least(1), default=None,
                    help="configurations to list (default 5)")
    sp.add_argument("--table", help="write a knob table FILE.json per token bucket (MoKLayer's "
                                    "knob_table); replaces --tokens")
    sp.add_argument("--tokens-buckets", dest="tokens_buckets",
                    help="token buckets of --table (default 64,128,...,8192)")
    sp._option_string_actions["--tokens"].required = False  # --table tunes buckets instead
    sp._option_string_actions["--routing"].help = (
        "uniform | zipf:S | hot:F | FILE | robust: the knobs for that routing, or robust: the "
        "least worst regret over uniform, zipf:1.2 and hot:0.1 (MoKLayer's pick when not told "
        "the routing). Default: uniform; with --table robust")
    sp.set_defaults(routing=None)          # resolved by cmd_tune: uniform, or robust for --table
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
    from .progress import check_env, debug

    argv = sys.argv[1:] if argv is None else argv
    try:
        check_env()
        if argv and argv[0] in ("calibrate", "validate", "study", "bench"):
            with deferred_warnings():
                rc = _forward(argv[0], argv[1:])
                if rc == 2:            # bad input, its line printed: no warnings beside it
                    drop_warnings()
                return rc
        a, extra = build_parser().parse_known_args(argv)
        if extra:
            raise MokInputError(f"unrecognized arguments: {' '.join(extra)} (see `mok {a.cmd} --help`)")
        with deferred_warnings():
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
    except ModelError as exc:  # a model bug: one line, never a number, never a traceback
        print(f"mok: internal error: {exc}; please report it", file=sys.stderr)
        return 1
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    except BrokenPipeError:  # output piped into `head`
        sys.stdout = None
        return 0
    except KeyboardInterrupt:
        print("mok: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - a bug or the system, not the input: one line, exit 1
        if debug():
            raise
        print(f"mok: internal error: {type(exc).__name__}: {exc} (rerun with MOK_DEBUG=1 for the "
              f"traceback, and please report it)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
