"""Registered predictions against the runs they were registered for (before any refit).

    python -m calibration.registered calibration/predictions/h100_drawn25_2026-12-05.jsonl \\
        calibration/runs/h100/drawn25.jsonl.gz [--by model,ep,tokens,routing] [--worst 5]

A prediction (calibration.register, committed before the runs) meets the record of its run by
system, model, EP, tokens, routing (with its seed), pass, precision, the four knobs, the work list's lag and the
FP8 kernel (tiles.fp8_kernel "gluon" or not), made after it on the hardware it names (a line
naming none meets a run of any; runs of hardware the registration never names are counted in
one warning, and so are prediction lines that meet no run, by why: none of their run, only runs
made before the registration, or more than one after it). Per engine
and system: matched count, MAPE, max error, signed range, Spearman within workloads (MoK), and
the regret of the registered pick among each workload's measured MoK configurations; ``--by``
adds a line per value of each named field (a record field or a knob of its config); ``--worst N``
lists the N predictions furthest from their runs (signed error, workload, knobs, both times).
``--drift-from FILES`` (run records holding MoK runs measured twice, e.g. a sweep and its
re-run, on the registration's hardware: another card's are refused) adds the regret a perfect
model would still show on the met runs from run-to-run drift alone (calibration/noise.py
`drift_regret`, the drift SD of each token band from those files): the floor under the regret
line.
"""

from __future__ import annotations

import argparse
import collections
import sys
from datetime import datetime
from pathlib import Path

from mok_model.cli import doc_parser, int_at_least, run_tool
from mok_model.errors import MokInputError
from mok_model.fileio import read_json_lines, warn
from mok_model.records import (LATENCY_MS, SCHEMA, model_key, read_records, record_bwd_tiles,
                               record_fp8_kernel, record_list_lag, record_source_order,
                               record_where, slowed, SLOWED_WHY, validate_record)

from .fit import workload_key
from .noise import drift_regret, drift_sd, pick_key
from .validate import evaluate

_KNOBS = ("dispatch", "combine", "minibatch", "comm_sms")
BY_FIELDS = ("model", "ep", "tokens", "routing", "pass", "precision", "system") + _KNOBS
ENGINES = ("analytic", "sim")


# the fields of a run record that a registration line does not hold (its run is still to be
# made), so that validate_record checks the fields it does hold as a record's
_PREDICTION_AS_RECORD = {"schema": SCHEMA, "id": "registered", "date": "2026-01-01T00:00:00+00:00",
                         "hardware": {"preset": "unnamed"}, "software": {},
                         "emulated_peers": True, "pass": "fwd", "precision": "bf16",
                         "config": {}, "routing": {"kind": "uniform"}, "latency_ms": {"median": 1.0},
                         "source": "measured"}


def _moment(text, name: str) -> datetime:
    """A date and time with its time zone (ISO 8601, as records.validate_record reads a record's
    date): "made after the registration" compares instants, which a time without its zone is
    not."""
    try:
        when = datetime.fromisoformat(text) if isinstance(text, str) else None
    except ValueError:
        when = None
    if when is None or when.tzinfo is None:
        raise MokInputError(f"{name} {text!r} must be an ISO 8601 date and time with its time "
                            f"zone (e.g. 2026-12-05T04:05:14+00:00)")
    return when


def _check_prediction(p) -> None:
    """Raise MokInputError naming the first field of a registration line that is wrong: its
    engine, time of registration and prediction, then every field of the run it predicts as a
    record's (validate_record)."""
    if not isinstance(p, dict):
        raise MokInputError("a registered prediction must be a JSON object")
    if p.get("engine") not in ENGINES:
        raise MokInputError(f"engine={p.get('engine')!r} must be one of {ENGINES}")
    _moment(p.get("registered"), "registered")
    v = p.get("predicted_ms")      # the records' plausible times: beyond is a unit or parse error
    if (isinstance(v, bool) or not isinstance(v, (int, float))
            or not LATENCY_MS[0] <= v <= LATENCY_MS[1]):
        raise MokInputError(f"predicted_ms={v!r} must be a time in [{LATENCY_MS[0]:g}, "
                            f"{LATENCY_MS[1]:g}] ms (records.LATENCY_MS)")
    routing = p.get("routing", {"kind": "uniform"})    # registrations before routings: uniform
    if not isinstance(routing, dict) or not isinstance(routing.get("kind"), str):
        raise MokInputError(f"routing={routing!r} must be an object naming its kind")
    hardware = p.get("hardware", "unnamed")     # registrations name the preset they predict
    validate_record(_PREDICTION_AS_RECORD | p | {"hardware": {"preset": hardware}})


def read_predictions(*paths: str | Path) -> list[dict]:
    """The lines of one or more registration files, each checked; a bad line stops the reader
    with its file and line (never skipped), and so does a second prediction of one run by one
    engine on one hardware, in one file or another (it would count that run twice in every
    figure, or let the later file's silently win)."""
    preds, first = [], {}
    for path in paths:
        for where, lineno, pred in read_json_lines(path, "registration", "registered predictions",
                                                   _check_prediction):
            key = (pred["engine"], pred.get("hardware"), _run_key(pred))
            if key in first:
                raise MokInputError(f"{where}: predicts the same {pred['engine']} run as "
                                    f"{first[key]}; each run is predicted once")
            first[key] = where
            pred["_file"], pred["_line"] = str(Path(path)), lineno     # as a record's (record_where)
            preds.append(pred)
    return preds


def _run_key(p: dict) -> tuple:
    """What identifies a run, read the same from a prediction line and from a record (the knobs
    for MoK only: the baselines' records carry knobs they do not use)."""
    routing = p.get("routing") or {}      # a record may leave uniform unnamed (routing_spec)
    cfg = (p.get("config") or {}) if p["system"] == "mok" else {}
    return (p["system"], model_key(p), p["ep"], p["tokens"], routing.get("kind", "uniform"),
            routing.get("arg"), routing.get("seed", 0), p.get("pass", "fwd"),
            p.get("precision", "bf16"), *(cfg.get(k) for k in _KNOBS),
            record_list_lag(p | {"pass": p.get("pass", "fwd")}),
            record_source_order(p | {"pass": p.get("pass", "fwd")}),
            record_fp8_kernel(p | {"pass": p.get("pass", "fwd"),
                                   "precision": p.get("precision", "bf16")}),
            record_bwd_tiles(p | {"pass": p.get("pass", "fwd"),
                                  "precision": p.get("precision", "bf16")}))


def _by_key(runs: list[dict]) -> dict[tuple, list[dict]]:
    by_key: dict[tuple, list[dict]] = collections.defaultdict(list)
    for r in runs:
        by_key[_run_key(r)].append(r)
    return by_key


def _its_runs(p: dict, by_key: dict[tuple, list[dict]]) -> tuple[list[dict], list[dict]]:
    """The runs of a prediction's workload and knobs on the hardware it names (a line naming none:
    any), and those of them made after its registration (instants, whatever their time zones)."""
    runs = [r for r in by_key.get(_run_key(p), ())
            if p.get("hardware", r["hardware"]["preset"]) == r["hardware"]["preset"]]
    after = _moment(p["registered"], "registered")
    return runs, [r for r in runs if _moment(r["date"], f"{record_where(r)}: date") >= after]


def match(preds: list[dict], runs: list[dict]) -> list[tuple[dict, dict]]:
    """(prediction, record) pairs: the one record of each predicted run made after it on the
    hardware the prediction names (an h200-1 registration never meets an h100-1 run of the same
    workload); runs measured more than once are left out (ambiguous)."""
    by_key = _by_key(runs)
    pairs = []
    for p in preds:
        after = _its_runs(p, by_key)[1]
        if len(after) == 1:
            pairs.append((p, after[0]))
    return pairs


def unmet_note(preds: list[dict], met: list[dict], runs: list[dict]) -> str | None:
    """One sentence on the prediction lines of `preds` not in `met` (None where every line met its
    run), by why: no run of theirs, registered after every run of theirs (a prediction registered
    after its run is not a registered prediction), or more than one run after them."""
    seen = {id(p) for p in met}
    left = [p for p in preds if id(p) not in seen]
    if not left:
        return None
    by_key = _by_key(runs)
    why: dict[str, list[tuple[dict, list[dict]]]] = collections.defaultdict(list)
    for p in left:
        its, after = _its_runs(p, by_key)
        kind = "none" if not its else "late" if not after else "twice"
        why[kind].append((p, its))
    parts = []
    if why["late"]:
        (p, its), n = why["late"][0], len(why["late"])
        last = max(its, key=lambda r: _moment(r["date"], "date"))
        parts.append(f"{n} registered after every run of {'its' if n == 1 else 'their'} "
                     f"workload (first: {record_where(p)}, registered {p['registered']}, after "
                     f"{record_where(last)} made {last['date']}): a prediction registered after "
                     f"its run is not a registered prediction")
    if why["none"]:
        parts.append(f"{len(why['none'])} with no run of the same hardware, system, model, EP, "
                     f"tokens, routing, pass, precision and knobs (first: "
                     f"{record_where(why['none'][0][0])})")
    if why["twice"]:
        parts.append(f"{len(why['twice'])} with more than one run made after the registration "
                     f"(ambiguous; first: {record_where(why['twice'][0][0])})")
    return (f"{len(left)} of the {len(preds)} prediction lines "
            f"{'meets' if len(left) == 1 else 'meet'} no run, left out of the figures: "
            + "; ".join(parts))


def pick_regrets(recs: list[dict], pred) -> list[float]:
    """Per workload of 2+ measured configurations: the measured time of the one `pred` picks
    (noise.pick_key) over the best measured, minus 1."""
    per = collections.defaultdict(list)
    for q, r in zip(pred, recs):
        per[workload_key(r)].append((pick_key(r, q), r["latency_ms"]["median"]))
    return [min(rows, key=lambda x: x[0])[1] / min(m for _, m in rows) - 1
            for rows in per.values() if len(rows) > 1]


def figures(recs: list[dict], pred: list[float], ranking: bool = True) -> str:
    """One line of figures of predictions `pred` against records `recs`: count, MAPE, max and
    signed error; with `ranking` (MoK) also Spearman within workloads and the regret of the pick
    among each workload's measured configurations."""
    errs = [q / r["latency_ms"]["median"] - 1 for q, r in zip(pred, recs)]
    line = (f"n {len(errs):3d} MAPE {100 * sum(map(abs, errs)) / len(errs):5.1f}% max "
            f"{100 * max(map(abs, errs)):5.1f}% (signed {100 * min(errs):+.0f}% .. "
            f"{100 * max(errs):+.0f}%)")
    if not ranking:
        return line
    ev = evaluate(recs, [r["latency_ms"]["median"] for r in recs], list(pred))
    reg = pick_regrets(recs, pred)
    rho = "n/a" if ev.spearman is None else f"{ev.spearman:.2f}"
    line += f"; Spearman {rho}"
    if reg:
        line += (f"; regret mean {100 * sum(reg) / len(reg):.1f}% max {100 * max(reg):.1f}% "
                 f"over {len(reg)} workloads")
    return line


def summary(pairs: list[tuple[dict, dict]], system: str) -> str:
    """One line of figures for matched pairs of one engine and system."""
    return figures([r for _, r in pairs], [p["predicted_ms"] for p, _ in pairs], system == "mok")


def _field(r: dict, name: str) -> str:
    v = (r.get("config") or {}).get(name) if name in _KNOBS else r.get(name)
    if isinstance(v, dict) and "name" in v:     # a model given by its shape
        return v["name"]
    if isinstance(v, dict):     # routing
        return v["kind"] + (f":{v['arg']}" if "arg" in v else "")
    return str(v)


def worst_lines(pairs: list[tuple[dict, dict]], n: int) -> list[str]:
    """The `n` pairs whose prediction is furthest from its run (relative), one line each, the
    largest first (ties in the records' order)."""
    def err(pair):
        return pair[0]["predicted_ms"] / pair[1]["latency_ms"]["median"] - 1
    lines = []
    for p, r in sorted(pairs, key=lambda pair: -abs(err(pair)))[:n]:
        c = r.get("config") or {}
        knobs = (f" {c['dispatch']}/{c['combine']} minibatch {c['minibatch']} comm_sms "
                 f"{c['comm_sms']}" if r["system"] == "mok" else "")
        lines.append(f"    worst {100 * err((p, r)):+6.1f}% {_field(r, 'model')} EP {r['ep']} x "
                     f"{r['tokens']} {_field(r, 'routing')}{knobs}: predicted "
                     f"{p['predicted_ms']:.3f} ms, measured {r['latency_ms']['median']:.3f} ms")
    return lines


def floor_line(runs: list[dict], sd: dict) -> str:
    """The drift regret floor (noise.drift_regret, workloads of 2+ configurations) of the MoK
    runs `runs` under the per-band drift `sd` (noise.drift_sd's)."""
    out = drift_regret(runs, sd, min_configs=2)      # it takes the MoK runs among them
    if not out["workloads"]:
        return (f"drift regret floor: no workload of 3+ MoK runs in a band with a drift SD "
                f"({out['no_sd']} without one)")
    line = (f"drift regret floor (a perfect model, run-to-run drift alone): mean "
            f"{100 * out['mean']:.2f}%, expected max {100 * out['max']:.1f}% over "
            f"{out['workloads']} workloads")
    return line + (f"; {out['no_sd']} workloads of a band without a drift SD left out"
                   if out["no_sd"] else "")


def report(pred_paths: list[str], runs: list[dict], by: list[str] = (), worst: int = 0,
           sd: dict | None = None) -> int:
    """Print the figures of each registration file against ``runs`` (and the `worst`
    predictions furthest from their runs; with `sd`, noise.drift_sd's bands, the drift regret
    floor of the met runs); return how many predictions met their run."""
    met = 0
    for path in pred_paths:
        preds = read_predictions(path)
        systems = sorted({p["system"] for p in preds}, key=lambda s: (s != "mok", s))
        paired, met_runs = [], []
        for engine in ENGINES:
            for system in systems:
                pairs = match([p for p in preds if p["engine"] == engine and p["system"] == system],
                              runs)
                if not pairs:
                    continue
                met += len(pairs)
                paired += [p for p, _ in pairs]
                met_runs += [r for _, r in pairs]
                print(f"registered {Path(path).name} {engine:8s} {system:10s}: "
                      f"{summary(pairs, system)}")
                for name in by:
                    groups = collections.defaultdict(list)
                    for p, r in pairs:
                        groups[_field(r, name)].append((p, r))
                    for value in sorted(groups, key=lambda v: (len(v), v)):
                        print(f"    {name} {value:18s} {summary(groups[value], system)}")
                for line in worst_lines(pairs, worst):
                    print(line)
        if paired and (note := unmet_note(preds, paired, runs)):
            warn(f"{Path(path).name}: {note}")
        once = {id(r): r for r in met_runs}.values()   # both engines meet each run
        if sd is not None and once:
            print(f"    {floor_line(list(once), sd)}")
        if held := sum(map(slowed, once)):
            print(f"note: {held} of the {len(once)} runs met were timed with the SMs held below "
                  f"their clock ({SLOWED_WHY})")
    return met


def main(argv: list[str] | None = None) -> int:
    p = doc_parser("python -m calibration.registered", __doc__)
    p.add_argument("predictions", help="a registration file (calibration/predictions/*.jsonl)")
    p.add_argument("runs", nargs="+", help="run-record files")
    p.add_argument("--by", default=None, help="comma list of record fields to break down by")
    p.add_argument("--worst", type=int_at_least(0), default=0,
                   help="list the N predictions furthest from their runs (default 0)")
    p.add_argument("--drift-from", nargs="+", default=None, metavar="FILE",
                   help="run records with MoK runs measured twice: print the drift regret floor")
    return run_tool(p, _run, argv)


def _run(a: argparse.Namespace) -> int:
    by = a.by.split(",") if a.by is not None else []
    if any(b not in BY_FIELDS for b in by):
        raise MokInputError(f"--by {a.by!r}: a comma list of {', '.join(BY_FIELDS)}")
    if len(set(by)) < len(by):
        raise MokInputError(f"--by {a.by!r}: names a field twice (each field once)")
    preds = read_predictions(a.predictions)  # a bad registration stops before the records are read
    runs = read_records(a.runs)
    named = {p.get("hardware") for p in preds}
    sd = None
    if a.drift_from is not None:
        from .rerun import repeated   # rerun imports this module: imported here
        pairs = repeated([r for r in read_records(a.drift_from) if r["system"] == "mok"])
        if not pairs:
            raise MokInputError(f"--drift-from {' '.join(a.drift_from)}: no MoK run measured twice "
                                f"(same workload, knobs and tiles: calibration/rerun.py run_key)")
        cards = {r["hardware"]["preset"] for pair in pairs for r in pair}
        if None not in named and not cards <= named:   # another card's drift is not this one's
            raise MokInputError(f"--drift-from {' '.join(a.drift_from)}: runs of "
                                f"{', '.join(sorted(cards - named))}, but {Path(a.predictions).name} "
                                f"registers {', '.join(sorted(named))}: the drift floor needs re-runs "
                                f"of the same hardware")
        sd = drift_sd(pairs)
    if None not in named:       # every prediction names its hardware: runs of any other meet none
        other = collections.Counter(r["hardware"]["preset"] for r in runs
                                    if r["hardware"]["preset"] not in named)
        if other:
            which = ", ".join(f"{n} of {h}" for h, n in sorted(other.items()))
            warn(f"run records of other hardware meet no prediction ({which}): "
                 f"{Path(a.predictions).name} registers {', '.join(sorted(named))}")
    if not report([a.predictions], runs, by, a.worst, sd):
        raise MokInputError(f"{a.predictions}: none of its {len(preds)} predictions meets exactly "
                            f"one run in {', '.join(a.runs)} (same hardware, system, model, EP, "
                            f"tokens, routing, pass, precision and knobs, made after the "
                            f"registration)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
