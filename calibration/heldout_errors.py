"""The shipped parameters' errors on run records no fit reads, as the quantiles a prediction's
held-out range is made of (mok_model/heldout.py).

    python -m calibration.heldout_errors [--hardware h200-1] [--sim-every 3] [--out FILE] [RUNS ...]

RUNS default to HELDOUT_RUNS[hardware] (the records of the held-out tests: drawn shapes, unseen
shapes, the automatic-pick and decode runs; none is read by calibration/defaults.py). Each MoK
record the model can predict is predicted with the shipped parameters (analytic; the simulator
on every `--sim-every`-th record of each file, in record-id order), and the signed errors
pred / measured - 1 are summarised per engine, pass, precision and token regime (n, MAPE,
5%/50%/95% quantiles). The
output (default mok_model/params/heldout/HARDWARE.json, written atomically) names the files, the
command, the date and the parameters' fingerprint. Rerun it after every refit. Forward
push/push records of the kernel with runtime mode words and the pull-combine records of the
dn_blocks kernel's first form (records.superseded_kernel) are left out: they time a kernel that
no longer runs.

    python -m calibration.heldout_errors --coverage [RUNS ...]

writes nothing: it leaves each file out in turn and prints how many of its runs fall inside the
90% range of the other files' errors (same group): whether the range holds for runs it was not
made from.

Held out from every fit, not from every look: some of these runs pointed at model changes
(docs/calibration.md says which), so the range is a fair guide, not a blind test; the registered
reports (calibration.registered) are the blind ones.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import re
import sys
from pathlib import Path

import numpy as np

from mok_model.cli import MokParser, int_at_least
from mok_model.errors import MokInputError
from mok_model.fileio import (atomic_write_text, check_output_file, deferred_warnings,
                              flush_warnings, warn)
from mok_model.heldout import HELDOUT_DIR, MIN_RUNS, ORDER_GAPS, SCHEMA, fingerprint, group_key
from mok_model.records import (in_id_order, predictable, read_records, record_bwd_tiles,
                               record_files, record_fp8_kernel, superseded_kernel,
                               workload_key)

from .checks import required_text, shipped_params
from .defaults import H200_GEMM_TABLE, H200_PASS_RUNS, H200_RUNS
from .scoring import predict_records
from .transfer import HOPPER_PASS_RUNS, HOPPER_PHASES

ROOT = Path(__file__).resolve().parents[1]


def table_read(files: set[str]) -> set[str]:
    """Of `files`, those h200-1's GEMM table reads (h100-1's is that table transferred): its
    record files, and the pass runs of every drawn seed whose GEMM phases it holds (session 70:
    a pass file of such a seed no longer tests a shape the model has not seen)."""
    records = set(json.loads(H200_GEMM_TABLE.read_text())["records"])
    seeds = {m[1] for f in records if (m := re.search(r"gemm_phases_drawn(\d+)\.jsonl", f))}
    return {f for f in files if f in records
            or ((m := re.search(r"(?:^|/)drawn(\d+)(?:_[^/]*)?\.jsonl", f)) and m[1] in seeds)}


HELDOUT_RUNS = {"h200-1": sorted(
    ({str(p.relative_to(ROOT)) for d in ("h200_drawn", "h200_unseen")
     for p in record_files(ROOT / "calibration" / "runs" / d)}
    # the Gluon FP8 pass on the seed-9 and seed-10 shapes (sessions 27, 29; the fp8-gluon fit
    # reads the other h200_gluon files, calibration/defaults.py PASS_GLUON_RUNS)
    | {"calibration/runs/h200_gluon/drawn9.jsonl.gz",
       "calibration/runs/h200_gluon/drawn10.jsonl.gz",
       # the presets at EP 16 zipf and mixtral at EP 8 on the "runs" loop (session 41)
       "calibration/runs/h200_space/presets_zipf_ep16_s41.jsonl.gz",
       "calibration/runs/h200_space/mixtral_ep8_s41.jsonl"})
    # minus what h200-1's fit reads (session 41: seed 14's "pipe" runs joined it; session 74:
    # today's kernel's seeds 28-33, H200_PASS_RUNS) and its table
    - {str(p.resolve().relative_to(ROOT)) for p in [*H200_RUNS, *H200_PASS_RUNS]}),
    # the H100 records no fit reads: h100-1 is h200-1 transferred (session 28), its GEMM lookup
    # fitted to GEMM phases (session 57), its stage-2 terms to pass runs (session 59)
    "h100-1": sorted({str(p.relative_to(ROOT))
                      for p in record_files(ROOT / "calibration" / "runs" / "h100")}
                     - set(HOPPER_PHASES) - set(HOPPER_PASS_RUNS))}
HELDOUT_RUNS = {hw: sorted(set(files) - table_read(set(files))) for hw, files in HELDOUT_RUNS.items()}


def summarise(errors: list[float]) -> dict:
    e = np.asarray(errors, dtype=np.float64)
    q05, q50, q95 = np.quantile(e, [0.05, 0.5, 0.95])
    return {"n": int(e.size), "mape": float(np.abs(e).mean()), "q05": float(q05),
            "q50": float(q50), "q95": float(q95)}


def _named(path: str) -> str:
    """A file as the output names it: relative to the repository where it lies in it."""
    p = Path(path)
    return str(p.relative_to(ROOT)) if p.is_absolute() and p.is_relative_to(ROOT) else path


def signed_errors(params, runs: list[str], sim_every: int, progress=None,
                  analytic: list | None = None) -> list[tuple]:
    """(file, group key, pred / measured - 1) of every MoK record of `runs` the model predicts,
    analytic, and simulated on every `sim_every`-th record of each file in record-id order (not
    the file's line order, so the same records in another order give the same sample). Given a
    list `analytic`, each analytic prediction is also appended to it as (file, workload, knobs,
    pred ms, measured ms), for misordered()."""
    out, others = [], 0
    for f in runs:
        mine = [r for r in in_id_order(read_records([f]))
                if r["system"] == "mok" and r["source"] == "measured"]
        recs = [r for r in mine if r["hardware"]["preset"] == params.hardware and predictable(r)
                and not superseded_kernel(r)]   # a kernel that no longer runs
        others += sum(r["hardware"]["preset"] != params.hardware for r in mine)
        for engine, part in (("analytic", recs), ("sim", recs[::sim_every])):
            for r, p in zip(part, predict_records(part, params, engine)):
                key = group_key(engine, r["pass"], r["precision"], r["tokens"],
                                record_fp8_kernel(r), record_bwd_tiles(r))
                out.append((f, key, p / r["latency_ms"]["median"] - 1.0))
                if engine == "analytic" and analytic is not None:
                    analytic.append((f, workload_key(r), json.dumps(r["config"], sort_keys=True),
                                     float(p), r["latency_ms"]["median"]))
        if progress:
            progress(f"{_named(f)}: {len(recs)} MoK records")
    if not out:  # one line naming the files (main prints no count before it)
        raise MokInputError(f"no MoK records of {params.hardware} the model predicts in "
                            f"{', '.join(map(_named, runs))}"
                            + (f" ({others} of other hardware)" if others else ""))
    if others:   # each hardware's errors are its own
        warn(f"{others} MoK records of other hardware than {params.hardware} left out")
    return out


def misordered(analytic: list[tuple]) -> list[dict]:
    """How often the model orders two settings of one workload wrongly, by how far apart it
    predicts them: every pair of MoK records of one workload in one file with other knobs
    (analytic: (file, workload, knobs, pred, measured); a setting timed twice is no pair), filed
    by the predicted gap |log(pred a / pred b)| under ORDER_GAPS; `wrong` the share whose
    measured order is the other way (mok tune's note)."""
    by: dict[tuple, list[tuple[str, float, float]]] = {}
    for f, w, knobs, p, m in analytic:
        by.setdefault((f, w), []).append((knobs, p, m))
    edges = [0.0, *ORDER_GAPS, None]
    counts = [[0, 0] for _ in ORDER_GAPS] + [[0, 0]]
    for runs in by.values():
        for i, (ka, pa, ma) in enumerate(runs):
            for kb, pb, mb in runs[i + 1:]:
                if ka == kb:
                    continue
                gap = abs(math.log(pa / pb))
                b = sum(gap >= g for g in ORDER_GAPS)
                counts[b][0] += 1
                counts[b][1] += (pa - pb) * (ma - mb) < 0
    return [{"lo": lo, "hi": hi, "n": n, "wrong": w / n if n else None}
            for lo, hi, (n, w) in zip(edges, edges[1:], counts)]


def measure(hardware: str, runs: list[str], sim_every: int, progress=None) -> dict:
    """{group key: summary} of the shipped parameters' signed errors on `runs`, how often they
    order two settings wrongly (misordered), and the fingerprint."""
    params = shipped_params(hardware)
    errors: dict[str, list[float]] = {}
    analytic: list[tuple] = []
    for _, key, e in signed_errors(params, runs, sim_every, progress, analytic):
        errors.setdefault(key, []).append(e)
    return {"groups": {k: summarise(v) for k, v in sorted(errors.items())},
            "order": misordered(analytic),
            "fingerprint": fingerprint(params), "params": _named(params.path)}


def coverage(errors: list[tuple]) -> list[tuple[str, int, int]]:
    """Per file: (file, its predictions' errors (a run's analytic one and, for some runs, the
    simulator's: one per engine), how many fall inside the 5%-95% range of the other files'
    errors of the same group): whether the range holds for a set of runs it was not made from."""
    out = []
    for f in sorted({f for f, _, _ in errors}):
        rest: dict[str, list[float]] = {}
        for g, key, e in errors:
            if g != f:
                rest.setdefault(key, []).append(e)
        mine = [(key, e) for g, key, e in errors if g == f and len(rest.get(key, ())) >= MIN_RUNS]
        q = {key: np.quantile(rest[key], [0.05, 0.95]) for key in {key for key, _ in mine}}
        out.append((f, len(mine), sum(1 for key, e in mine if q[key][0] <= e <= q[key][1])))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = MokParser(prog="python -m calibration.heldout_errors", description=__doc__,
                   formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="*", help="held-out run-record files (default: HELDOUT_RUNS)")
    ap.add_argument("--hardware", default="h200-1")
    ap.add_argument("--sim-every", type=int_at_least(1), default=3)
    ap.add_argument("--out", default=None, help="default mok_model/params/heldout/HARDWARE.json")
    ap.add_argument("--coverage", action="store_true",
                    help="write nothing; print, leaving out each file in turn, the share of its "
                         "runs' predictions (analytic, and the simulator's of every --sim-every-th "
                         "run) inside the other files' range")
    from mok_model.progress import check_env

    try:
        with deferred_warnings():   # a warning waits until the input passed (one error line)
            check_env()                 # MOK_DEBUG / MOK_PROGRESS, as run_tool checks them
            a = ap.parse_args(argv)
            shipped_params(a.hardware)      # a hardware without shipped parameters, named first
            # the default files are the repository's, read from any folder (named as listed)
            runs = a.runs or [str(ROOT / f) for f in HELDOUT_RUNS.get(a.hardware, ())]
            if not runs:
                raise MokInputError(f"no held-out runs named for --hardware {a.hardware!r}; give the "
                                    f"files (known: {sorted(HELDOUT_RUNS)})")
            if a.coverage:
                if a.out is not None:
                    raise MokInputError("--coverage writes nothing; drop --out")
                read_records(list(runs))    # every file readable before the first prediction
                errors = signed_errors(shipped_params(a.hardware), list(runs), a.sim_every)
                rows = coverage(errors)
                if not sum(n for _, n, _ in rows):
                    raise MokInputError("--coverage: no run of these files has a group (pass, "
                                        f"precision, tokens) with {MIN_RUNS} or more runs in the "
                                        f"other files; give two or more files with runs of one group")
            else:
                if a.out is None:       # the default, only when --out is not given ("" is refused)
                    HELDOUT_DIR.mkdir(exist_ok=True)
                out = Path(required_text(a.out, "--out")) if a.out is not None \
                    else HELDOUT_DIR / f"{a.hardware}.json"
                if out.resolve().parent == HELDOUT_DIR.resolve() and out.stem != a.hardware:
                    raise MokInputError(f"--out {a.out!r} is the held-out file of {out.stem}, and "
                                        f"these are {a.hardware}'s errors: name "
                                        f"{a.hardware}.json or a file outside "
                                        f"{HELDOUT_DIR.name}/")
                params = shipped_params(a.hardware)
                table = params.gemm_table.path if params.gemm_table is not None else None
                check_output_file(out if a.out is None else a.out,  # as given: 'x/' a folder
                                  "--out", ".json",  # never a file the command reads
                                  inputs=[("(the parameters)", params.path),
                                          ("(their GEMM table)", table),
                                          *(("(a run file)", f) for f in runs)],
                                  replaces=(SCHEMA,) if a.out is not None else ())  # the default: by design
                read_records(list(runs))    # every file readable before the first prediction
                flush_warnings()            # the input passed: say it before the work
                empty: list[str] = []  # files without records: said after the work, so a
                made = measure(a.hardware, list(runs), a.sim_every,  # refusal stays one line
                               progress=lambda s: empty.append(s) if s.endswith(": 0 MoK records")
                               else print(s, file=sys.stderr))
                for line in empty:
                    print(line, file=sys.stderr)
    except MokInputError as exc:
        print(f"{ap.prog}: error: {exc}", file=sys.stderr)
        return 2
    if a.coverage:
        for f, n, inside in rows:
            print(f"{f}: {inside} of {n} predictions (each run's analytic one, and the simulator's "
                  f"of every --sim-every-th) inside the other files' 90% range"
                  + (f" ({inside / n:.0%})" if n else ""))
        n, inside = sum(r[1] for r in rows), sum(r[2] for r in rows)
        print(f"all: {inside} of {n} ({inside / max(n, 1):.1%})")
        return 0
    command = "python -m calibration.heldout_errors" + (
        f" --hardware {a.hardware}" if a.hardware != "h200-1" else "")
    doc = {"schema": SCHEMA, "hardware": a.hardware, "made": datetime.date.today().isoformat(),
           "command": command, "files": [_named(f) for f in runs], "sim_every": a.sim_every,
           **made}
    atomic_write_text(out, json.dumps(doc, indent=1) + "\n")
    for k, g in doc["groups"].items():
        print(f"{k:<28} n {g['n']:5d} MAPE {100 * g['mape']:5.1f}%  5% {100 * g['q05']:+6.1f}%  "
              f"median {100 * g['q50']:+6.1f}%  95% {100 * g['q95']:+6.1f}%")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
