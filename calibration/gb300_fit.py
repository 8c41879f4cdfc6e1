"""How the shipped GB300 NVL72 parameters are fitted to the published Table 1 rows (session 31).

The table publishes no knobs. The publication states default knobs (mok-system.md section 3) and
advises tuning them, so a published MoK row may have run at either; neither reading is known.
The fit therefore reads every MoK row both ways, each reading at half a row's weight
(READING_WEIGHT): at the tuner's choice under the parameters (`mok validate`'s reading) and at
the published defaults (mok_model.scenario.default_config). A baseline row (no knobs) enters
once, at weight 1. The free parameters are calibration.defaults.FREE, as before.

One mechanism is held at a value measured elsewhere instead of the Blackwell prior (HELD):
sm_scaling, how the GEMM rate grows with the SMs given to it, as fitted on the real 2-H200 runs
of our kernel (mok_model/params/h200-hgx8.json; the H200 -> GB300 transfer moves it with ratio
1 too). The prior (1: linear in the SMs, "until measured") is what made the model read the
published defaults (40 comm SMs forward, 28 backward) 10-22% slower than the tuner's 8-20;
the published rows alone cannot measure it (one knob set each).
"""

from __future__ import annotations

import copy
from pathlib import Path

from mok_model.errors import MokInputError
from mok_model.params import PARAMS_DIR, Params, read_params
from mok_model.records import record_scenario
from mok_model.scenario import default_config

from .cli import priors_for

READING_WEIGHT = 0.5   # each of a MoK row's two readings (tuned, published defaults)
HELD = {"sm_scaling": PARAMS_DIR / "h200-hgx8.json"}
DEFAULT_SUFFIX = "@published-defaults"


def at_default_knobs(records: list[dict]) -> list[dict]:
    """Copies of the records, each MoK record given the published default knobs."""
    out = []
    for rec in records:
        rec = copy.deepcopy(rec)
        if rec["system"] == "mok":
            rec["config"] = default_config(record_scenario(rec)).as_dict()
        out.append(rec)
    return out


def both_readings(records: list[dict]) -> tuple[list[dict], list[float]]:
    """(training records, weights): every MoK record as published (knobs open: the tuner's) and
    as run at the published defaults (its id suffixed DEFAULT_SUFFIX), READING_WEIGHT each;
    every other record once, weight 1."""
    train, weights = [], []
    for rec, dflt in zip(records, at_default_knobs(records)):
        if rec["system"] == "mok":
            dflt["id"] = rec["id"] + DEFAULT_SUFFIX
            train += [rec, dflt]
            weights += [READING_WEIGHT, READING_WEIGHT]
        else:
            train.append(rec)
            weights.append(1.0)
    return train, weights


def held_priors(hardware: str = "gb300-nvl72", held: dict[str, Path | str] | None = None,
                label: str = "held parameter") -> Params:
    """The priors for `hardware` (calibration.cli.priors_for) with each parameter of `held`
    (default HELD) taken from that parameters file: its value, and a source naming the file and
    its own source. `label` names the set in errors (gb300_knobs: "--prior")."""
    base = priors_for(hardware)
    values, sources = dict(base.values), dict(base.sources)
    for name, path in (HELD if held is None else held).items():
        if name not in values:
            raise MokInputError(f"{label} {name!r}: not a parameter (known: {sorted(values)})")
        other = read_params(path)
        values[name] = other[name]
        shown = Path(path).relative_to(PARAMS_DIR.parent.parent) if Path(path).is_absolute() \
            and Path(path).is_relative_to(PARAMS_DIR.parent.parent) else path
        sources[name] = (f"held from {shown} ({other.hardware}), not fitted to the published "
                         f"rows: {other.sources.get(name, 'no source')}")
    return Params(values, hardware, None, [], sources)
