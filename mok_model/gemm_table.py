"""GEMM efficiency from a measured table of the megakernel's own GEMM phases.

One `gemm_eff` says how fast a full 128 x 128 tile runs on every shape. The kernel's GEMM phases
measured alone (system `gemm-only` records of the kernel's own GEMMs: same kernel, no
communication) say it per shape instead. A table holds one point per such record:

    eff = ideal / measured

where `ideal` is the record's tile-quantized GEMM FLOPs (routed experts of the measured rank,
each expert's rows in whole row tiles, plus the shared expert) at the preset's peak tensor rate
on all of its SMs (`ideal_seconds`), and `measured` the record's median. So a point is the
fraction of peak that the model's own tile formula needs to reproduce that measurement; it
includes what one gemm_eff cannot say: weight reads at few rows per expert, short K or N loops of
narrow experts, per-expert set-up.

A point's coordinates are its shape: rows per active expert (the measured rank's), the expert
width I, the hidden size H and the local experts L. A point also holds its occupancy
(`occupancy`): where a GEMM phase has fewer tiles than the GPU has SMs, only that many SMs work,
so the phase takes its FLOPs at peak on all SMs divided by tiles / SMs; occupancy is the ideal's
share of that occupancy-bound time (1 when every phase has a tile per SM). What is interpolated
is eff / occupancy, the rate of the SMs that have a tile; the query's own occupancy multiplies
it back (held out by model, the kernel's GEMM-phase times are predicted with 9.3% mean error
this way against 11.1% interpolating eff itself: docs/calibration.md). Lookup (`GemmTable.eff`):

1. for every shape (I, H, L) in the table, the efficiency per occupied SM at the queried rows
   per expert, linear in log2(rows) between that shape's points (flat beyond its first and last);
2. the shape itself when the table has it; otherwise the inverse-square-distance mean of the
   `NEIGHBOURS` nearest shapes, distance measured in log2 I, log2 H and log2 L;
3. times the query's occupancy (a table point's own occupancy at its own shape and rows, so a
   point is reproduced exactly).

Hardware without a table keeps gemm_eff. A table is for the hardware it was measured on; for
other hardware it transfers as a ratio (docs/calibration.md, "GEMM efficiency table"): the same
fraction of that hardware's own peak at the same shape, times the ratio of the two presets'
gemm_eff (1 where both come from one kernel design), the same rule calibration/transfer.py
states for gemm_eff. The table file names the record files it was read from.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from .errors import MokInputError
from .fileio import atomic_write_text

SCHEMA = "mok-gemm-table/1"
NEIGHBOURS = 4
# the tile of the kernel's defaults (mok_kernels/megakernel.py KernelConfig): a point made from
# a record without a `tiles` field ran with it
DEFAULT_TILE = {"block_m": 128, "bn_gu": 128, "bn_dn": 256}
LEVELS = ("absolute", "relative")


@dataclass(frozen=True, eq=False)  # hashed by identity: scenario_eff caches per table
class GemmTable:
    """Measured GEMM efficiencies by shape; `points` as in the file (see module docstring)."""

    hardware: str
    points: tuple  # of dicts: rows_per_expert, expert_width, hidden, local_experts, eff, ...
    records: tuple = ()  # the run-record files the points were read from
    path: str | None = None
    notes: str = ""
    # "absolute": the points are the megakernel's own GEMM phases, eff is used as is;
    # "relative": another GEMM implementation's (the library's grouped GEMM), so only its shape
    # trend is used: gemm_eff x eff / the points' median eff (`scale`)
    level: str = "absolute"
    _curves: dict = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.points:
            raise MokInputError(f"GEMM table {self.path or '(given)'} has no points")
        if self.level not in LEVELS:
            raise MokInputError(f"GEMM table {self.path or '(given)'}: level {self.level!r} must "
                                f"be one of {LEVELS}")
        by: dict[tuple, list[tuple[float, float]]] = {}
        for pt in self.points:
            shape = (float(pt["expert_width"]), float(pt["hidden"]), float(pt["local_experts"]))
            by.setdefault(shape, []).append((math.log2(pt["rows_per_expert"]),
                                             float(pt["eff"]) / float(pt.get("occupancy", 1.0))))
        for shape, xy in by.items():
            xs = sorted({x for x, _ in xy})  # points at one rows value are averaged
            ys = [float(np.mean([y for x2, y in xy if x2 == x])) for x in xs]
            self._curves[shape] = (np.array(xs), np.array(ys))

    @property
    def median(self) -> float:
        """The points' median efficiency (a relative table's unit)."""
        return float(np.median([float(p["eff"]) for p in self.points]))

    def covers(self, scn) -> bool:
        """Whether the table measured this scenario's pass and precision (else gemm_eff holds)."""
        return any(p.get("pass", "fwd") == scn.pass_ and p.get("precision", "bf16") == scn.precision
                   for p in self.points)

    @property
    def shapes(self) -> list[tuple[float, float, float]]:
        return list(self._curves)

    def eff(self, rows_per_expert: float, expert_width: int, hidden: int, local_experts: int,
            occupancy: float = 1.0) -> float:
        """Fraction of peak tensor rate at this shape and occupancy (see the module docstring)."""
        return occupancy * self._eff(rows_per_expert, expert_width, hidden, local_experts)

    def _eff(self, rows_per_expert: float, expert_width: int, hidden: int, local_experts: int) -> float:
        lr = math.log2(max(float(rows_per_expert), 1.0))
        q = np.log2([expert_width, hidden, local_experts])
        shapes = np.array(self.shapes)
        at = np.array([float(np.interp(lr, *self._curves[s])) for s in self._curves])
        d2 = ((np.log2(shapes) - q) ** 2).sum(axis=1)
        exact = d2 < 1e-12
        if exact.any():
            return float(at[exact][0])
        near = np.argsort(d2, kind="stable")[:NEIGHBOURS]
        w = 1.0 / d2[near]
        return float((w * at[near]).sum() / w.sum())

    def to_json(self) -> dict:
        return {"schema": SCHEMA, "hardware": self.hardware, "notes": self.notes,
                "level": self.level, "records": list(self.records), "neighbours": NEIGHBOURS,
                "points": [dict(p) for p in self.points]}


def read_table(path: str | Path) -> GemmTable:
    """Read and validate a GEMM table file."""
    path = Path(path)
    where = f"GEMM table {str(path)!r}"
    if not path.is_file():
        raise MokInputError(f"{where}: no such file")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise MokInputError(f"{where}: not JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise MokInputError(f"{where}: schema must be {SCHEMA!r}")
    points = doc.get("points")
    if not isinstance(points, list) or not points:
        raise MokInputError(f"{where}: needs a non-empty list of points")
    for i, pt in enumerate(points):
        for key in ("rows_per_expert", "expert_width", "hidden", "local_experts", "eff"):
            v = pt.get(key) if isinstance(pt, dict) else None
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < math.inf:
                raise MokInputError(f"{where}: point {i}: {key}={v!r} must be a positive number")
        occ = pt.get("occupancy", 1.0)
        if isinstance(occ, bool) or not isinstance(occ, (int, float)) or not 0 < occ <= 1:
            raise MokInputError(f"{where}: point {i}: occupancy={occ!r} must be in (0, 1]")
        if pt["eff"] > 1.5:
            raise MokInputError(f"{where}: point {i}: eff={pt['eff']} is above 1.5 of peak")
    return GemmTable(str(doc.get("hardware", "")), tuple(points), tuple(doc.get("records", [])),
                     str(path), str(doc.get("notes", "")), str(doc.get("level", "absolute")))


def write_table(path: str | Path, table: GemmTable) -> None:
    atomic_write_text(path, json.dumps(table.to_json(), indent=1) + "\n")


def measured_gpu(scn) -> int:
    """The GPU whose GEMMs a record of the scenario timed: rank 0 on emulated hardware (the one
    GPU runs rank 0), else the busiest (a real run's time is the slowest rank's)."""
    from .analytic import loads

    return 0 if scn.hardware.emulated_ranks else int(np.argmax(loads(scn).rows))


def occupancy(scn, tile: dict | None = None) -> float:
    """The measured GPU's GEMM FLOPs at peak on all SMs, over the same with each phase (gate/up,
    down: routed and shared tiles together, in the kernel's tile: `tile`, else DEFAULT_TILE)
    on min(its tiles, SMs) SMs: 1 when every phase has a tile per SM, less with fewer tiles."""
    from .analytic import loads

    t = {**DEFAULT_TILE, **(tile or {})}
    bm, m, sms = t["block_m"], scn.model, scn.hardware.sms
    er = loads(scn).expert_rows[measured_gpu(scn)]
    H = m.hidden
    blocks = [(float(np.ceil(er / bm).sum()), m.expert_width)]
    if m.shared_experts:
        blocks.append((float(np.ceil(scn.tokens / bm)) * m.shared_experts, m.shared_width))
    gu_tiles = sum(r * math.ceil(2 * w / t["bn_gu"]) for r, w in blocks)
    dn_tiles = sum(r * math.ceil(H / t["bn_dn"]) for r, w in blocks)
    gu_flops = sum(r * 2 * w * H for r, w in blocks)
    dn_flops = sum(r * w * H for r, w in blocks)
    if gu_tiles <= 0:
        return 1.0
    bound = gu_flops / min(1.0, gu_tiles / sms) + dn_flops / min(1.0, dn_tiles / sms)
    return float((gu_flops + dn_flops) / bound)


def shape_of(scn, gpu: int | None = None) -> tuple[float, int, int, int]:
    """(rows per active expert, I, H, local experts) of a scenario's measured GPU."""
    from .analytic import loads

    g = measured_gpu(scn) if gpu is None else gpu
    er = loads(scn).expert_rows[g]
    active = max(int((er > 0).sum()), 1)
    return float(er.sum()) / active, scn.model.expert_width, scn.model.hidden, scn.local_experts


def ideal_seconds(scn, tile_m: int, tile_n: int) -> float:
    """The measured GPU's routed (whole row tiles per expert) and shared-expert GEMM FLOPs at the
    preset's peak tensor rate on all SMs: what a table point's efficiency is relative to."""
    from .analytic import loads

    hw, m = scn.hardware, scn.model
    er = loads(scn).expert_rows[measured_gpu(scn)]
    H = m.hidden

    def flops(row_tiles, width):  # gate/up (H -> 2I) and down (I -> H), whole column tiles
        return 2.0 * tile_m * tile_n * row_tiles * H * (np.ceil(2 * width / tile_n)
                                                         + np.ceil(H / tile_n) * width / H)
    total = flops(float(np.ceil(er / tile_m).sum()), m.expert_width)
    if m.shared_experts:
        total += flops(np.ceil(scn.tokens / tile_m) * m.shared_experts, m.shared_width)
    passes = 1.0 if scn.pass_ == "fwd" else 2.0
    return passes * total / (hw.tflops(scn.precision) * 1e12)


@lru_cache(maxsize=4096)
def scenario_eff(table: GemmTable, scn) -> float | None:
    """The table's efficiency for a scenario (its measured GPU's shape), None where the table
    did not measure the scenario's pass and precision; cached per scenario. A relative table's
    value is divided by its median (multiply by gemm_eff: gemm_efficiency)."""
    if not table.covers(scn):
        return None
    e = table.eff(*shape_of(scn), occupancy(scn))
    return e if table.level == "absolute" else e / table.median


def gemm_efficiency(p, scn) -> tuple[float, bool]:
    """(the megakernel's GEMM efficiency for a scenario, whether a table measured it):
    gemm_eff without a table (or outside its pass and precision), the table's value with an
    absolute one, gemm_eff x the table's shape factor with a relative one."""
    t = p.gemm_table
    e = None if t is None else scenario_eff(t, scn)
    if e is None:
        return p["gemm_eff"], False
    return (e if t.level == "absolute" else p["gemm_eff"] * e), True


def replaces_gemm_eff(table) -> bool:
    """Whether a table takes gemm_eff's place (absolute), so that gemm_eff is not fitted."""
    return table is not None and table.level == "absolute"


def table_point(rec: dict, scn, tile_m: int, tile_n: int) -> dict:
    """One table point from a record of the kernel's GEMM phases alone."""
    rows, width, hidden, local = shape_of(scn)
    ideal = ideal_seconds(scn, tile_m, tile_n)
    ms = float(rec["latency_ms"]["median"])
    model = rec["model"] if isinstance(rec["model"], str) else rec["model"].get("name", "shape")
    return {"id": rec["id"], "model": model, "ep": scn.ep, "tokens": scn.tokens,
            "routing": scn.routing, "pass": scn.pass_, "precision": scn.precision,
            "rows_per_expert": rows, "expert_width": width,
            "hidden": hidden, "local_experts": local,
            "tile": rec.get("tiles") or dict(DEFAULT_TILE),
            "occupancy": occupancy(scn, rec.get("tiles")), "measured_ms": ms,
            "ideal_ms": ideal * 1e3, "eff": ideal * 1e3 / ms}
