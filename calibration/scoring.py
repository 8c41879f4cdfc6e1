"""Predicted latency of run records, batched: records that share a workload (hardware, model,
EP, tokens, pass, precision, routing) and name every knob are scored in one vectorized call of the
analytic model; the tuner runs only for records whose config is incomplete. Fitting and
validation both score records through this module.
"""

from __future__ import annotations

import numpy as np

from mok_model.analytic import mok_terms
from mok_model.errors import MokInputError
from mok_model.params import Params, load_params
from mok_model.predict import predict
from mok_model.records import (predictable, record_config, record_scenario, record_where,
                               workload_key, workload_scenario)
from mok_model.scenario import Config
from mok_model.tuner import tune


def predict_record(rec: dict, params: Params, engine: str = "analytic") -> float:
    """Predicted latency (ms) of the run a record describes."""
    return float(predict_records([rec], params, engine)[0])


def predict_shipped(records: list[dict], params_path: str | None = None,
                    engine: str = "analytic") -> np.ndarray:
    """Predicted latency (ms) of every record with the shipped parameters of its hardware preset
    (or `params_path`, refused for hardware it was not fitted for); nan where not modelled."""
    out = np.full(len(records), np.nan)
    for hw in sorted({r["hardware"]["preset"] for r in records}):
        ix = [i for i, r in enumerate(records) if r["hardware"]["preset"] == hw]
        out[ix] = predict_records([records[i] for i in ix], load_params(params_path, hw), engine)
    return out


def resolve_configs(records: list[dict], params: Params) -> list[Config | None]:
    """The tuner's config (under `params`) for each MoK record that leaves knobs open, else None."""
    out: list[Config | None] = []
    for rec in records:
        cfg = record_config(rec) if predictable(rec) and rec["system"] == "mok" else None
        if isinstance(cfg, dict):
            out.append(tune(record_scenario(rec), params, fixed=cfg, top=1).best.config)
        else:
            out.append(None)
    return out


def predict_records(records: list[dict], params: Params, engine: str = "analytic",
                    resolved: list[Config | None] | None = None) -> np.ndarray:
    """Predicted latency (ms) of every record, batched per workload (nan: system not modelled).

    A run that happened did not overflow its schedule, so a full-config MoK record is scored
    without the model's capacity-headroom refusal (the tuner keeps that rule for its choices).
    `resolved` (from resolve_configs) fixes the knobs the records leave open; without it the
    tuner chooses them under `params`.
    """
    out = np.full(len(records), np.nan)
    batches: dict[tuple, list[tuple[int, Config]]] = {}
    for i, rec in enumerate(records):
        if not predictable(rec):
            continue
        try:
            scn = record_scenario(rec)
            cfg = record_config(rec)
            if resolved is not None and resolved[i] is not None:
                cfg = resolved[i]
            if rec["system"] == "mok" and isinstance(cfg, Config) and engine == "analytic":
                cfg.check_for(scn)
                batches.setdefault(workload_key(rec), []).append((i, cfg))
            else:
                system = rec["system"]
                out[i] = predict(scn, cfg if system == "mok" else None, system, params,
                                 engine, refuse_overflow=False).latency_ms
        except MokInputError as exc:  # name the record that the model cannot take
            raise MokInputError(f"{record_where(rec)}: {exc}") from None
    for key, items in batches.items():
        scn = workload_scenario(*key)
        cfgs = [c for _, c in items]
        r = mok_terms(scn, params,
                      np.array([c.dispatch == "push" for c in cfgs]),
                      np.array([c.combine == "push" for c in cfgs]),
                      np.array([c.minibatch for c in cfgs]), np.array([c.comm_sms for c in cfgs]),
                      np.array([c.macrobatch for c in cfgs]), np.array([c.capacity for c in cfgs]))
        total = sum(np.asarray(v, float) for v in r["terms"].values()) * 1e3
        for (i, _), v in zip(items, total):
            out[i] = v
    return out
