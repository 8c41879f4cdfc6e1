"""The backward megakernel's and the FP8 forward's terms, fitted to their own runs.

Two groups of MoK records, each fitted with everything else held (the BF16 forward's values,
fitted to the forward sweeps, stay as they are):

- "bwd": backward passes (BF16) of the backward megakernel (mok_kernels/backward.py). Free:
  bwd_gemm_eff_scale (its tiles' rate relative to the forward's gemm_eff) and wgrad_tile_us
  (fixed time per 128x128 weight-gradient block of every expert a GPU holds: rows-independent,
  so the token counts tell it from the rate). wgrad_eff_scale (the weight-gradient tiles' own
  rate) stays at its prior 1: the weight and data gradients' FLOPs stand in one ratio (6HI to
  10HI per row) in every workload, so the records cannot tell the two rates apart.
- "bwd-train": backward passes (BF16) of the same kernel on the tiles the layer trains with
  (mok_model.records.training_variant: TRAINING_BWD, or TRAINING_BWD_NARROW where 256 does not
  divide the padded expert width; w_bf16=1, as autograd runs bf16 parameters). Free:
  bwd_train_eff_scale and bwd_train_wgrad_tile_us (the "bwd" group's two terms, for these
  tiles; the token counts tell them apart as there). No recomputed gate/up (the tiles read the
  g and u the forward saved: analytic.training_bwd); wgrad_eff_scale held at 1 as in "bwd".
- "fp8": FP8 forward passes of the Triton megakernel. Free: fp8_gemm_eff (the FP8 tiles'
  fraction of the FP8 peak).
- "fp8-gluon": FP8 forward passes of the Gluon kernel (records whose tiles say fp8_kernel
  "gluon": mok_kernels/gluon_fp8/mok.py). Free: fp8_gluon_gemm_eff, fp8_gluon_copy_scale
  (its comm programs' quantizing copy rate relative to copy_gbps_per_sm: the 24 / 32 comm-SM
  pairs and the models' widths tell it from the tiles' rate), fp8_gluon_fixed_us and
  fp8_gluon_stream_scale (a pass's fixed time and its weight stream: the 128 / 512-token
  runs; session 27), with fp8_gluon_copy_exp as measured (calibration/priors.py OUR_PASSES:
  how the copy rate grows with the programs); its design values
  (fp8_gluon_tile_m, fp8_gluon_scale_cost) are mok_model/params.py ADDED's, fp8_quant_in_copy
  the Triton FP8 kernel's (docs/calibration.md, "The Gluon FP8 kernel (session 26)").

Design values (bwd_recompute, bwd_dispatch_rows, fp8_tile_m, fp8_quant_in_copy) and derived
priors (fp8_scale_cost, fp8_quant_copy_scale) are not fitted: calibration/priors.py OUR_PASSES.
Only records of the default kernel variants (mok_model.records.default_variant; for
"bwd-train" the training tiles, records.training_variant) enter, on
routings the model reproduces (records.routing_reproduced); the others are skipped with a note
that counts them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from mok_model.errors import MokInputError
from mok_model.params import Params
from mok_model.records import (record_fp8_kernel, routing_reproduced, split_default_variant,
                               training_variant)

from .fit import fit
from .scoring import predict_records
from .validate import spearman

PASS_FREE: dict[str, list[str]] = {
    "bwd": ["bwd_gemm_eff_scale", "wgrad_tile_us"],
    "bwd-train": ["bwd_train_eff_scale", "bwd_train_wgrad_tile_us"],
    "fp8": ["fp8_gemm_eff"],
    "fp8-gluon": ["fp8_gluon_gemm_eff", "fp8_gluon_copy_scale", "fp8_gluon_fixed_us",
                  "fp8_gluon_stream_scale"],
}
# group -> (record key, values): records left out of the shipped fit, held out to judge it.
# Session 26 first held qwen3-235b-a22b's 12 Gluon FP8 records out; since the refit with
# fp8_gluon_copy_scale (2026-12-02) the group fits all three models' 36 records and is judged by
# leave-one-model-out (report_passes) and the registrations (docs/calibration.md).
FIT_HELD_OUT: dict[str, tuple[str, tuple]] = {}
GROUPS = tuple(PASS_FREE)


def pass_group(rec: dict) -> str | None:
    """"bwd", "bwd-train", "fp8" or "fp8-gluon" for a MoK record whose time the pass terms set,
    else None."""
    if rec["system"] != "mok":
        return None
    if rec["pass"] == "bwd" and rec["precision"] == "bf16":
        return "bwd-train" if training_variant(rec) else "bwd"
    if rec["pass"] == "fwd" and rec["precision"] == "fp8":
        return "fp8-gluon" if record_fp8_kernel(rec) == "gluon" else "fp8"
    return None


def pass_records(records: list[dict], old: bool = False) -> tuple[dict[str, list[dict]], list[str]]:
    """The default-variant records of each group whose routing the model reproduces, and notes
    (what was skipped); `old`: the variants that were the defaults before 2026-12-01 (a study of
    the older records only). Zipf records drawn before the kernels took the model's popularity
    order are read in the order they drew where the table of those orders holds it, else skipped
    (mok_model.records.routing_reproduced)."""
    mine = [r for r in records if pass_group(r)]
    # the training tiles are their own group's variant (the old defaults' study skips them too)
    train = [] if old else [r for r in mine if pass_group(r) == "bwd-train"]
    kept, note = split_default_variant([r for r in mine if r not in train], old)
    kept += train
    notes = [note] if note else []
    drop = [r for r in kept if not routing_reproduced(r)]
    if drop:
        kept = [r for r in kept if routing_reproduced(r)]
        notes.append(f"skipped {len(drop)} zipf record(s) whose expert popularity order the model "
                     f"cannot draw (torch.randperm on the GPU before 2026-12-01 03:40 UTC, not "
                     f"in its table of those orders; records.routing_reproduced)")
    groups = {g: [r for r in kept if pass_group(r) == g] for g in GROUPS}
    return groups, notes


def fit_records(groups: dict[str, list[dict]]) -> tuple[dict[str, list[dict]], list[str]]:
    """Each group's records the shipped fit takes (FIT_HELD_OUT's left out), and notes naming
    what was held out."""
    out, notes = dict(groups), []
    for g, (key, values) in FIT_HELD_OUT.items():
        held = [r for r in groups.get(g, []) if record_value(r, key) in values]
        if held:
            out[g] = [r for r in groups[g] if record_value(r, key) not in values]
            notes.append(f"{g}: {len(held)} record(s) of {key} {', '.join(map(str, values))} "
                         f"held out (not fitted; calibration/passes.py FIT_HELD_OUT)")
    return out, notes


@dataclass
class PassFit:
    params: Params
    residuals: dict[str, list[dict]]  # group -> rows (id, measured_ms, predicted_ms, rel_error)
    fitted: dict[str, list[str]]  # group -> the parameters fitted (groups without records: none)
    uncertainty: dict[str, dict | None] = field(default_factory=dict)  # group -> bootstrap block
    notes: list[str] = field(default_factory=list)


def fit_passes(records: list[dict], base: Params, band: str = "none",
               free: dict[str, list[str]] | None = None, old: bool = False,
               only: tuple[str, ...] | None = None) -> PassFit:
    """Fit each group's free parameters to its default-variant records, one group after the
    other (they share no parameter), every other value held at `base`'s. A group without
    records keeps its values (a note says so). `only`: these groups alone (the others' values
    held at `base`'s, no notes of theirs)."""
    free = free or PASS_FREE
    groups, notes = pass_records(records, old)
    groups, held_notes = fit_records(groups)
    notes += held_notes
    p, residuals, fitted, blocks = base, {}, {}, {}
    for g in (GROUPS if only is None else [g for g in GROUPS if g in only]):
        recs = groups[g]
        if not recs:
            notes.append(f"{g}: no default-variant records; {', '.join(free[g])} kept at "
                         f"{', '.join(f'{base[f]:g}' for f in free[g])}")
            fitted[g] = []
            continue
        res = fit(recs, p, free[g], band=band)
        p = res.params.with_values()  # drop the block: it is kept per group below
        residuals[g], fitted[g], blocks[g] = res.residuals, list(free[g]), res.uncertainty
        notes += res.notes
    return PassFit(p, residuals, fitted, blocks, notes)


def merge_uncertainty(block: dict | None, extra: dict[str, dict | None]) -> dict | None:
    """A parameters file's uncertainty block with the pass fits' bootstrap columns added: each
    group's samples are its own bootstrap (its workloads resampled), paired with the other
    blocks' samples by index (the fits share no parameter, so the draws are independent)."""
    parts = [b for b in [block, *extra.values()] if b]
    if not parts:
        return None
    n = min(b["n"] for b in parts)
    out = {**parts[0], "n": n, "free": [], "summary": {}, "samples": [[] for _ in range(n)],
           "groups": sum(b["groups"] for b in parts), "records": sum(b["records"] for b in parts)}
    for b in parts:
        out["free"] += b["free"]
        out["summary"].update(b["summary"])
        for row, s in zip(out["samples"], b["samples"][:n]):
            row += s
    out["by_group"] = {g: _counts(b) for g, b in extra.items() if b}
    if len(parts) > 1:
        out["held"] += ("; the backward and FP8 columns come from their own bootstraps "
                        "(calibration/passes.py), paired by index")
    return out


def _counts(b: dict) -> dict:
    """What a pass group's bootstrap block added to a merged block (by_group: drop_uncertainty
    takes it out again)."""
    return {"groups": b["groups"], "records": b["records"], "free": list(b["free"])}


def add_uncertainty(block: dict, extra: dict[str, dict | None]) -> dict:
    """An uncertainty block already merged by merge_uncertainty with more pass groups' bootstrap
    columns appended, as merge_uncertainty would have merged them all at once (same columns,
    samples, counts and words)."""
    parts = [b for b in extra.values() if b]
    if not parts:
        return block
    n = min([block["n"]] + [b["n"] for b in parts])
    out = {**block, "n": n, "free": list(block["free"]), "summary": dict(block["summary"]),
           "samples": [list(row) for row in block["samples"][:n]],
           "groups": block["groups"] + sum(b["groups"] for b in parts),
           "records": block["records"] + sum(b["records"] for b in parts),
           "by_group": {**block.get("by_group", {}),
                        **{g: _counts(b) for g, b in extra.items() if b}}}
    for b in parts:
        out["free"] += b["free"]
        out["summary"].update(b["summary"])
        for row, s in zip(out["samples"], b["samples"][:n]):
            row += s
    return out


def drop_uncertainty(block: dict, group: str) -> dict:
    """A merged uncertainty block without pass group `group`'s bootstrap columns and counts
    (its by_group entry says which); MokInputError where the block does not record them."""
    mine = block.get("by_group", {}).get(group)
    if mine is None:
        raise MokInputError(f"pass group {group}: the uncertainty block does not record its "
                            f"columns (by_group); refit every group (python -m "
                            f"calibration.defaults)")
    keep = [i for i, name in enumerate(block["free"]) if name not in mine["free"]]
    return {**block, "free": [block["free"][i] for i in keep],
            "summary": {k: v for k, v in block["summary"].items() if k not in mine["free"]},
            "samples": [[row[i] for i in keep] for row in block["samples"]],
            "groups": block["groups"] - mine["groups"],
            "records": block["records"] - mine["records"],
            "by_group": {g: v for g, v in block["by_group"].items() if g != group}}


# ---- held out: refit without one model / one token count, predict it ----

@dataclass
class HeldOut:
    group: str  # "bwd", "bwd-train", "fp8" or "fp8-gluon"
    key: str  # "model" or "tokens"
    n: int
    mape: float
    max_ape: float
    signed: float  # mean signed error
    spearman: float  # over every held-out record of the group (pooled)
    folds: list[dict]  # per held-out value: value, n, mape, max, fitted values
    rows: list[dict]  # per record: id, value, measured_ms, predicted_ms, rel_error


def held_out(records: list[dict], base: Params, group: str, key: str,
             free: dict[str, list[str]] | None = None, old: bool = False) -> HeldOut:
    """Leave each value of `key` ("model", "tokens", or any record field) out in turn: fit the
    group's parameters to the other values' default-variant records, predict the held-out
    ones. Pooled MAPE, max error, mean signed error and Spearman."""
    free = free or PASS_FREE
    groups, _ = pass_records(records, old)
    recs = groups[group]
    values = sorted({record_value(r, key) for r in recs}, key=str)
    if len(values) < 2:
        raise MokInputError(f"{group}: holding out by {key} needs records of two or more values "
                            f"(have {values})")
    rows, folds = [], []
    for v in values:
        train = [r for r in recs if record_value(r, key) != v]
        test = [r for r in recs if record_value(r, key) == v]
        res = fit(train, base, free[group])
        pred = predict_records(test, res.params)
        meas = np.array([r["latency_ms"]["median"] for r in test])
        err = pred / meas - 1.0
        folds.append({"value": v, "n": len(test), "mape": float(np.abs(err).mean()),
                      "max_ape": float(np.abs(err).max()),
                      "fitted": {f: res.params[f] for f in free[group]}})
        rows += [{"id": r["id"], "value": v, "measured_ms": float(m), "predicted_ms": float(q),
                  "rel_error": float(e)} for r, m, q, e in zip(test, meas, pred, err)]
    err = np.array([r["rel_error"] for r in rows])
    rho = spearman([r["measured_ms"] for r in rows], [r["predicted_ms"] for r in rows])
    return HeldOut(group, key, len(rows), float(np.abs(err).mean()), float(np.abs(err).max()),
                   float(err.mean()), rho, folds, rows)


def record_value(rec: dict, key: str):
    """A record's value of a hold-out key: routing as KIND[:ARG], a knob, or a record field."""
    if key == "routing":
        r = rec["routing"]
        return r.get("kind", "uniform") + (f":{r['arg']}" if "arg" in r else "")
    if key in rec.get("config", {}):
        return rec["config"][key]
    return rec[key]
