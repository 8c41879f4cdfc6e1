"""GEMM efficiency from a measured table of the megakernel's own GEMM phases.

One `gemm_eff` says how fast a full 128 x 128 tile runs on every shape. The kernel's GEMM phases
measured alone (system `gemm-only` records of the kernel's own GEMMs: same kernel, no
communication) say it per shape instead. A table holds one point per such record:

    eff = ideal / measured

where `ideal` is the record's tile-quantized GEMM FLOPs (routed experts of the measured rank,
each expert's rows in whole row tiles, plus the shared expert: in the megakernel's own GEMM
phases of a model without one recorded before 2026-12-01, the zero shared slot that kernel ran,
analytic.shared_section) at the preset's
peak tensor rate on all of its SMs (`ideal_seconds`), and `measured` the record's median. So a
point is the fraction of peak that the model's own tile formula needs to reproduce that
measurement; it includes what one gemm_eff cannot say: weight reads at few rows per expert,
short K or N loops of narrow experts, per-expert set-up.

A point's coordinates are its shape: rows per active expert (the measured rank's), the expert
width I, the hidden size H and the local experts L. A point also holds its occupancy
(`occupancy`): where a GEMM phase has fewer tiles than the GPU has SMs, only that many SMs work,
so the phase takes its FLOPs at peak on all SMs divided by tiles / SMs; occupancy is the ideal's
share of that occupancy-bound time (1 when every phase has a tile per SM). What is interpolated
is eff / occupancy, the rate of the SMs that have a tile; the query's own occupancy multiplies
it back (held out by model, the kernel's GEMM-phase times are predicted with 9.3% mean error
this way against 11.1% interpolating eff itself: docs/calibration.md). Lookup (`GemmTable.eff`):

1. for every shape (I, H, L) in the table, the efficiency per occupied SM at the queried rows
   per expert, linear in log2(rows) between that shape's points (flat beyond its first and last),
   each point but the first and last taken as the median of itself and its two neighbours (one
   point off its neighbours, a run's outlier, is not a trend: session 21's mixtral point); with
   the phase mechanism (below), the shape's measured times are first made non-decreasing in the
   mechanism's time (`monotone_in_work`: more work at one shape never takes less time);
2. the shape itself when the table has it; otherwise the inverse-square-distance mean of the
   `NEIGHBOURS` nearest shapes, distance measured in log2 I, log2 H and log2 L;
3. times the query's occupancy (a table point's own occupancy at its own shape and rows, so a
   point the median keeps is reproduced exactly).

**Phase mechanism** (`phase_features`, `mechanism_seconds`; a table whose points carry their
features and whose file carries the fitted `mechanism`). Across shapes, what is interpolated is
then not eff / occupancy but the ratio measured / mechanism, where the mechanism is how the
kernel runs its GEMM phases (mok_kernels/megakernel.py): work items of one row tile x one column
block (gate/up: 128 x 2*bn_gu over K = H; down: 128 x bn_dn over K = I, padded, or dn_blocks such
blocks walked in one K loop since 2026-12-04: `dn_blocks`) taken from one
counter by all SMs, each costing `item_us` plus its FLOPs at `tensor_eff` of an SM's peak; the
phases take the larger of the items' total over the SMs and the chain of one pass: the gate/up
items in waves of one per SM then a down item, or a gate/up item then the down items in waves (a
down item waits for its row tile's gate/up items; a phase of a few more items than SMs takes two
item times, not 1.01: held out by model, the kernel's GEMM-phase times go from 5.05% to 4.75%
mean error, max 64% to 53%: docs/calibration.md "Drawn shapes"; the last wave's few items run at
an SM's tensor peak or their share of HBM for their weight blocks, whichever is slower, never
slower than a full wave's: 4.75% to 4.62%, "The chain's last wave"); floored by the expert weights
streamed from HBM at `hbm_gbps` (an expert's weight column block is read once per group of row
tiles that run at the same time: group_m, else the SMs over the column blocks), plus
`launch_us` per launch. A table fitted with the long-phase term (`sustained`, SUSTAIN:
calibration/gemm_table.py --sustain) also slows the compute part of a phase by `sustain_loss`
of its time for each doubling past `sustain_ms`: in long dense phases the GPU's clock settles
under its power cap.
The launch is the GEMM-phase record's own (one graph-replayed kernel: its start and the ramp of
its programs), not a GEMM's: a MoK pass pays its launch in its own terms (`launch`, `fixed`), so
the table's GEMM time leaves it out (ratio = (measured - launch) / (mechanism - launch)); with it
left in, a 64-token pass paid about 34 us twice. Its constants are fitted to the table's
own points (calibration/gemm_table.py fit_mechanism). A held-out shape then gets its tile
counts, waves, K-loop lengths and weight bytes from the mechanism and only the mechanism's
residual from its neighbours: held out by model, the kernel's GEMM-phase times are predicted
with 8.1% mean error this way against 9.7% interpolating eff / occupancy (docs/calibration.md).
A point that the monotone step and the median keep is reproduced exactly, less the launch: its
efficiency in use is ideal / (measured - launch_us), its `eff` field ideal / measured.

**A table transferred to another GPU** (a file with `transferred_from`: calibration/transfer.py
writes h100-1's from h200-1's): the source's points and residuals, measured against the source's
mechanism, applied to the target's mechanism (`lookup`): the same tile counts, waves and K loops
at the target's own peak, and the constants that are fractions of a spec moved with it (the
weight stream's hbm_gbps by the two presets' HBM bandwidths). The file holds only the target's
constants and why; the points stay in the source's file.

Hardware without a table keeps gemm_eff. A table is for the hardware it was measured on; for
other hardware it transfers as a ratio (docs/calibration.md, "GEMM efficiency table"): the same
fraction of that hardware's own peak at the same shape, times the ratio of the two presets'
gemm_eff (1 where both come from one kernel design), the same rule calibration/transfer.py
states for gemm_eff. The table file names the record files it was read from.

**Files** (`write_table`, `read_table`): a table file holds what lookups read, the curves of
step 1 (`curves_of` the points, written with them), and names its points file (points/NAME beside
it), which a prediction never reads: calibration and reports read it when they ask for the
points. A file of schema mok-gemm-table/1 holds its points itself; its curves are made on reading.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from .errors import MokInputError
from .fileio import JSON_INT_MAX, atomic_write_text, loads_json

SCHEMA = "mok-gemm-table/2"
# schema 1: the points in the table file, the curves made of them when it is read
SCHEMAS = ("mok-gemm-table/1", SCHEMA)
POINTS_SCHEMA = "mok-gemm-points/1"
NEIGHBOURS = 4
# the tile of the kernel's defaults (mok_kernels/megakernel.py KernelConfig): a point made from
# a record without a `tiles` field ran with it
DEFAULT_TILE = {"block_m": 128, "bn_gu": 128, "bn_dn": 256}
LEVELS = ("absolute", "relative")
# the tile a point's ideal FLOPs are counted in (the parameters' gemm_tile_m and gemm_tile_n)
IDEAL_TILE = 128
# the phase mechanism's constants (module docstring), fitted by calibration/gemm_table.py
MECHANISM = ("tensor_eff", "item_us", "hbm_gbps", "launch_us")
# the optional long-phase term (`sustained`): a table fitted with it holds both, one without neither
SUSTAIN = ("sustain_loss", "sustain_ms")
# the range a file's mechanism constant may take (a plausible range for any real or future GPU,
# wide around calibration/gemm_table.py's fit bounds): a tile at 1% to 150% of an SM's peak,
# HBM as presets.HARDWARE_MIN / HARDWARE_MAX's 0.01 to 10^4 TB/s, times up to 10^4 us (presets'
# launch_us), a loss of at most the whole time per doubling past 0.01 ms or more. Outside it a
# value is a slip: sustain_loss 1e300 printed a latency of 10^302 ms, launch_us 1e300 divided by 0
MECHANISM_RANGE = {"tensor_eff": (0.01, 1.5), "item_us": (0.0, 1e4), "hbm_gbps": (10.0, 1e7),
                   "launch_us": (0.0, 1e4), "sustain_loss": (0.0, 1.0), "sustain_ms": (0.01, 1e6)}
# ... and a curve's values (a shape's measured / mechanism time ratios, or its efficiencies per
# occupied SM): 0.15 to 1.5 in the shipped tables; 1e300 printed a latency of 10^300 ms, 1e-300
# overflowed to a wrong one
CURVE_RANGE = (1e-3, 100.0)
# the system of records of the megakernel's own GEMM phases (mok_kernels/bench.py run_mok_gemm)
KERNEL_SYSTEM = "mok-gemm"


@dataclass(frozen=True)
class Curves:
    """What a lookup reads of a table's points (`curves_of`): per measured shape (I, H, local
    experts), in the points' order, the value a lookup interpolates at each log2 rows per expert
    (eff / occupancy, or measured / mechanism with a mechanism); the (pass, precision) pairs the
    points measured; whether lookups go through the mechanism; the points' median eff."""

    by_shape: dict  # (I, H, L) floats -> (log2 rows ascending, values), numpy arrays
    measured: frozenset
    uses_mechanism: bool
    median_eff: float

    def as_json(self) -> dict:
        return {"measured": sorted(list(m) for m in self.measured),
                "uses_mechanism": self.uses_mechanism, "median_eff": self.median_eff,
                "shapes": [{"shape": list(s), "log2_rows": xs.tolist(), "values": ys.tolist()}
                           for s, (xs, ys) in self.by_shape.items()]}

    @staticmethod
    def from_json(doc, where: str) -> "Curves":
        """A table file's curves, checked: shapes of three positive whole sizes, each with log2_rows
        strictly ascending and as many values (finite positive numbers); uses_mechanism a boolean;
        median_eff a finite positive number; measured a list of [pass, precision]."""
        shapes = doc.get("shapes") if isinstance(doc, dict) else None
        if not isinstance(shapes, list) or not shapes:
            raise MokInputError(f"{where}: curves must hold measured, uses_mechanism, median_eff "
                                f"and a non-empty list of shapes")
        if not isinstance(doc.get("uses_mechanism"), bool):
            raise MokInputError(f"{where}: curves uses_mechanism={doc.get('uses_mechanism')!r} "
                                f"must be true or false")
        if not _positive(doc.get("median_eff")):
            raise MokInputError(f"{where}: curves median_eff={doc.get('median_eff')!r} must be a "
                                f"finite positive number")
        measured = doc.get("measured")
        if not isinstance(measured, list) or not all(
                isinstance(m, list) and len(m) == 2 and all(isinstance(v, str) for v in m)
                for m in measured):
            raise MokInputError(f"{where}: curves measured={measured!r} must be a list of "
                                f"[pass, precision]")
        by_shape = {}
        for i, c in enumerate(shapes):
            at = f"{where}: curves shape {i}"
            s, xs, ys = (c.get(k) if isinstance(c, dict) else None
                         for k in ("shape", "log2_rows", "values"))
            if not isinstance(s, list) or len(s) != 3 or not all(
                    _positive(v) and float(v).is_integer() for v in s):
                raise MokInputError(f"{at}: shape={s!r} must be three positive whole numbers "
                                    f"(I, H, local experts)")
            if not isinstance(xs, list) or not isinstance(ys, list) or not xs or len(xs) != len(ys):
                raise MokInputError(f"{at}: needs log2_rows and values, lists of one length (at "
                                    f"least one)")
            for j, x in enumerate(xs):
                if not _number(x) or (j and not x > xs[j - 1]):
                    raise MokInputError(f"{at}: log2_rows[{j}]={x!r} must be a finite number "
                                        f"above the one before (strictly ascending)")
            check_curve_values(ys, at)
            by_shape[tuple(float(v) for v in s)] = (np.array(xs, dtype=float),
                                                    np.array(ys, dtype=float))
        return Curves(by_shape, frozenset(tuple(m) for m in measured), doc["uses_mechanism"],
                      float(doc["median_eff"]))


def check_curve_values(ys, at: str) -> None:
    """A curve's values, checked: finite positive numbers in CURVE_RANGE (`at` names the curve)."""
    for j, v in enumerate(ys):
        v = float(v) if isinstance(v, np.floating) else v
        if not _positive(v):
            raise MokInputError(f"{at}: values[{j}]={v!r} must be a finite positive number")
        if not CURVE_RANGE[0] <= v <= CURVE_RANGE[1]:
            raise MokInputError(f"{at}: values[{j}]={v!r} must be in [{CURVE_RANGE[0]:g}, "
                                f"{CURVE_RANGE[1]:g}] (a measured / mechanism time ratio or an "
                                f"efficiency per occupied SM)")


def _number(v) -> bool:
    """Whether `v` is a finite JSON number (not a boolean, not a string; nan fails the bounds,
    an integer beyond the largest float too)."""
    return not isinstance(v, bool) and isinstance(v, (int, float)) and abs(v) <= JSON_INT_MAX


def _positive(v) -> bool:
    """Whether `v` is a finite JSON number above 0."""
    return _number(v) and v > 0


def curves_of(points: tuple, mechanism: dict | None) -> Curves:
    """A table's curves (module docstring, lookup step 1) from its points: each shape's points at
    one rows value averaged, then a 3-point running median; with a mechanism, each shape's
    measured times are first made non-decreasing in the mechanism's (monotone_in_work)."""
    uses_mechanism = mechanism is not None and all("mech" in p and "measured_ms" in p
                                                   for p in points)
    if uses_mechanism:  # measured / mechanism, both less the launch
        launch = mechanism["launch_us"] * 1e-6
        measured = np.array([float(pt["measured_ms"]) for pt in points]) * 1e-3 - launch
        mech_s = np.array(points_mechanism_seconds([pt["mech"] for pt in points], mechanism)) - launch
        values = (monotone_in_work(points, measured, mech_s) / mech_s).tolist()
    else:               # efficiency per occupied SM
        values = [float(pt["eff"]) / float(pt.get("occupancy", 1.0)) for pt in points]
    by: dict[tuple, dict[float, list[float]]] = {}
    for pt, v in zip(points, values):
        shape = (float(pt["expert_width"]), float(pt["hidden"]), float(pt["local_experts"]))
        by.setdefault(shape, {}).setdefault(math.log2(pt["rows_per_expert"]), []).append(v)
    by_shape = {}
    for shape, at in by.items():
        xs = sorted(at)  # points at one rows value are averaged (one alone is its own mean)
        ys = np.array([at[x][0] if len(at[x]) == 1 else float(np.mean(at[x])) for x in xs])
        if len(ys) >= 3:  # a 3-point running median: one point off its neighbours is not a trend
            # the middle of three by a sort: np.median's first call imports numpy.ma (35 ms)
            ys[1:-1] = np.sort(np.stack([ys[:-2], ys[1:-1], ys[2:]]), axis=0)[1]
        by_shape[shape] = (np.array(xs), ys)
    effs = np.sort([float(p["eff"]) for p in points])
    half = len(effs) // 2  # the median without np.median (see above)
    median = float(effs[half]) if len(effs) % 2 else float((effs[half - 1] + effs[half]) / 2)
    measured = frozenset((p.get("pass", "fwd"), p.get("precision", "bf16")) for p in points)
    return Curves(by_shape, measured, uses_mechanism, median)


def monotone_in_work(points: tuple, seconds: np.ndarray, mech_s: np.ndarray) -> np.ndarray:
    """The points' measured `seconds` made non-decreasing, shape by shape, in the mechanism's
    seconds `mech_s` (ties in rows per expert): an isotonic regression (scipy's pool adjacent
    violators). At one shape (I, H, local experts) more work by the mechanism (row tiles, shared
    tiles, weight bytes) never takes less time; two points that say otherwise (run-to-run drift,
    runs of different days, or routings whose rows per expert cross) are pooled to their mean
    instead of letting the curve dip, which read as a pass faster with more tokens (h200-1,
    glm-4.5 EP 32, 96 then 128 tokens: 0.213 then 0.188 ms before; docs/calibration.md
    "Session 72")."""
    from scipy.optimize import isotonic_regression  # at build time only: files hold the curves

    out = np.asarray(seconds, dtype=np.float64).copy()
    by: dict[tuple, list[int]] = {}
    for i, pt in enumerate(points):
        by.setdefault((pt["expert_width"], pt["hidden"], pt["local_experts"]), []).append(i)
    rows = np.array([float(pt["rows_per_expert"]) for pt in points])
    for idx in by.values():
        idx = np.array(idx)
        order = idx[np.lexsort((rows[idx], mech_s[idx]))]
        out[order] = isotonic_regression(out[order]).x
    return out


@dataclass(frozen=True, eq=False)  # hashed by identity: scenario_eff caches per table
class GemmTable:
    """Measured GEMM efficiencies by shape: `points` as measured (see module docstring) and the
    curves lookups read (`curves_of` them). A table read from a file holds its curves; its
    points are in a file of their own (`points_file`), read when first asked for."""

    hardware: str
    _points: tuple | None  # of dicts: rows_per_expert, expert_width, hidden, local_experts, eff, ...
    records: tuple = ()  # the run-record files the points were read from
    path: str | None = None
    notes: str = ""
    # "absolute": the points are the megakernel's own GEMM phases, eff is used as is;
    # "relative": another GEMM implementation's (the library's grouped GEMM), so only its shape
    # trend is used: gemm_eff x eff / the points' median eff (`scale`)
    level: str = "absolute"
    # fitted phase mechanism {"tensor_eff", "item_us", "hbm_gbps", "launch_us"} (module
    # docstring); used where every point carries its features ("mech"), else None
    mechanism: dict | None = None
    # a transferred table (module docstring): the target GPU's mechanism, which lookups use, and
    # the source table's file; None for a table measured on its own hardware
    target_mechanism: dict | None = None
    transferred_from: str | None = None
    # the curves (None: made from the points) and, for a table read from a file, its points file
    curves: Curves | None = None
    points_file: str | None = None

    def __post_init__(self) -> None:
        where = f"GEMM table {self.path or '(given)'}"
        if self.level not in LEVELS:
            raise MokInputError(f"{where}: level {self.level!r} must be one of {LEVELS}")
        if self.curves is None:
            if not self._points:
                raise MokInputError(f"{where} has no points")
            object.__setattr__(self, "curves", curves_of(self._points, self.mechanism))
        elif self._points is None and self.points_file is None:
            raise MokInputError(f"{where}: curves without points or a points file")

    @property
    def points(self) -> tuple:
        """The measured points (read from the points file the first time for a table read from
        a file: predictions never need them)."""
        if self._points is None:
            object.__setattr__(self, "_points", read_points(self.points_file))
        return self._points

    @property
    def uses_mechanism(self) -> bool:
        """Whether lookups go through the phase mechanism (see the module docstring)."""
        return self.curves.uses_mechanism

    @property
    def lookup(self) -> dict | None:
        """The mechanism lookups use: the target's in a transferred table, else the fitted one
        (the points' residuals are always against `mechanism`, the one they were measured on)."""
        return self.target_mechanism if self.target_mechanism is not None else self.mechanism

    @property
    def median(self) -> float:
        """The points' median efficiency (a relative table's unit)."""
        return self.curves.median_eff

    def covers(self, scn) -> bool:
        """Whether the table measured this scenario's pass and precision (else gemm_eff holds)."""
        return (scn.pass_, scn.precision) in self.curves.measured

    def mechanism_covers(self, scn) -> bool:
        """Whether the phase mechanism times this scenario's GEMMs (it has one, and the table
        measured the scenario's pass and precision)."""
        return self.uses_mechanism and self.covers(scn)

    @property
    def shapes(self) -> list[tuple[float, float, float]]:
        return list(self.curves.by_shape)

    def eff(self, rows_per_expert: float, expert_width: int, hidden: int, local_experts: int,
            occupancy: float = 1.0) -> float:
        """Fraction of peak tensor rate at this shape and occupancy (see the module docstring)."""
        return occupancy * self._eff(rows_per_expert, expert_width, hidden, local_experts)

    def scenario_seconds(self, scn, sms=None, scaling: float = 1.0):
        """A scenario's GEMM phases without the launch, on all SMs or on `sms` (mechanism_seconds:
        a number or an array): the mechanism's phases times the interpolated residual (tables
        with a mechanism only)."""
        features, residual = _mechanism_inputs(self, scn)
        launch = self.lookup["launch_us"] * 1e-6
        return (mechanism_seconds(features, self.lookup, sms, scaling) - launch) * residual

    def _eff(self, rows_per_expert: float, expert_width: int, hidden: int, local_experts: int) -> float:
        lr = math.log2(max(float(rows_per_expert), 1.0))
        curves = self.curves.by_shape
        at = np.array([float(np.interp(lr, *curves[s])) for s in curves])
        d2 = self._distances(expert_width, hidden, local_experts)
        exact = d2 < 1e-12
        if exact.any():
            return float(at[exact][0])
        near = np.argsort(d2, kind="stable")[:NEIGHBOURS]
        w = 1.0 / d2[near]
        return float((w * at[near]).sum() / w.sum())

    def _distances(self, expert_width: int, hidden: int, local_experts: int) -> np.ndarray:
        """Squared distance of every measured shape from this one, in log2 I, H, local experts."""
        q = np.log2([expert_width, hidden, local_experts])
        return ((np.log2(np.array(self.shapes)) - q) ** 2).sum(axis=1)

    def neighbours(self, expert_width: int, hidden: int, local_experts: int) -> list[tuple]:
        """The measured shapes (I, H, local experts) a lookup at this shape reads: the shape
        itself when the table has it, else its NEIGHBOURS nearest (as _eff weighs them)."""
        shapes = np.array(self.shapes)
        d2 = self._distances(expert_width, hidden, local_experts)
        if (d2 < 1e-12).any():
            return [tuple(int(v) for v in shapes[int(np.argmin(d2))])]
        return [tuple(int(v) for v in shapes[i])
                for i in np.argsort(d2, kind="stable")[:NEIGHBOURS]]

    def to_json(self) -> dict:
        """The table as one document: its fields, curves and points (write_table puts the points
        in a file of their own)."""
        if self.transferred_from is not None:
            return {"schema": SCHEMA, "hardware": self.hardware, "notes": self.notes,
                    "transferred_from": self.transferred_from,
                    "mechanism": dict(self.target_mechanism)}
        doc = {"schema": SCHEMA, "hardware": self.hardware, "notes": self.notes,
               "level": self.level, "records": list(self.records), "neighbours": NEIGHBOURS}
        if self.mechanism is not None:
            doc["mechanism"] = dict(self.mechanism)
        return {**doc, "curves": self.curves.as_json(), "points": [dict(p) for p in self.points]}


def points_path(path: str | Path) -> Path:
    """Where a table file's points go: points/NAME in the table's folder."""
    path = Path(path)
    return path.parent / "points" / path.name


def read_table(path: str | Path) -> GemmTable:
    """Read and validate a GEMM table file: its curves (a file of schema mok-gemm-table/1 holds
    its points instead, and the curves are made of them); the points file is read only when
    the table's points are asked for."""
    path = Path(path)
    return _table_of(path, _read_json(path, f"GEMM table {str(path)!r}"))


def _table_of(path: Path, doc: dict) -> GemmTable:
    """read_table of the document read from `path`."""
    where = f"GEMM table {str(path)!r}"
    if doc.get("schema") not in SCHEMAS:
        raise MokInputError(f"{where}: schema must be one of {SCHEMAS}")
    if "transferred_from" in doc:
        return _read_transferred(path, doc)
    mech = doc.get("mechanism")
    if mech is not None:
        mech = _mechanism(mech, where)
    records = doc.get("records", [])
    if not isinstance(records, list) or not all(isinstance(r, str) for r in records):
        raise MokInputError(f"{where}: records={records!r} must be a list of run-record files")
    meta = (str(doc.get("hardware", "")), tuple(records), str(path),
            str(doc.get("notes", "")), str(doc.get("level", "absolute")), mech)
    if doc["schema"] == SCHEMA:
        ref = doc.get("points_file")
        if not isinstance(ref, str) or not ref:
            raise MokInputError(f"{where}: points_file must name the points' file")
        curves = Curves.from_json(doc.get("curves"), where)
        if curves.uses_mechanism and mech is None:
            raise MokInputError(f"{where}: curves uses_mechanism is true but the file has no "
                                f"mechanism")
        return GemmTable(meta[0], None, *meta[1:], curves=curves, points_file=str(path.parent / ref))
    table = GemmTable(meta[0], _checked_points(doc.get("points"), where), *meta[1:])
    # the curves made of the points, held to a schema-2 file's values (a point's measured time far
    # from its mechanism's made a curve of 10^300 and a latency of 10^300 ms)
    for i, (_, ys) in enumerate(table.curves.by_shape.values()):
        check_curve_values(ys, f"{where} (made of its points): curves shape {i}")
    return table


def read_points(path: str | Path) -> tuple:
    """The points of a table's points file (write_table), checked."""
    path = Path(path)
    where = f"GEMM table points {str(path)!r}"
    doc = _read_json(path, where)
    if doc.get("schema") != POINTS_SCHEMA:
        raise MokInputError(f"{where}: schema must be {POINTS_SCHEMA!r}")
    return _checked_points(doc.get("points"), where)


def _read_json(path: Path, where: str) -> dict:
    if not path.is_file():
        raise MokInputError(f"{where}: no such file" + (" (it is a folder)" if path.is_dir() else ""))
    try:
        doc = loads_json(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise MokInputError(f"{where}: not JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise MokInputError(f"{where}: must be a JSON object")
    return doc


def _checked_points(points, where: str) -> tuple:
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
        ms = pt.get("measured_ms")
        if ms is not None and not (_number(ms) and MEASURED_MS[0] <= ms <= MEASURED_MS[1]):
            raise MokInputError(f"{where}: point {i}: measured_ms={ms!r} must be a time in "
                                f"[{MEASURED_MS[0]:g}, {MEASURED_MS[1]:g}] ms")
        if "mech" in pt:
            _checked_features(pt["mech"], f"{where}: point {i}")
    return tuple(points)


# a point's measured time: a run record's (records.LATENCY_MS)
MEASURED_MS = (1e-4, 1e6)


def _checked_features(f, at: str) -> None:
    """A point's phase features (phase_features), checked: gu and dn lists of [items, FLOPs per
    item] (numbers >= 0), weight bytes (and bytes per FLOP, if given) >= 0, the SMs a whole number
    in [1, 16384] and the peak in [1, 10^6] TFLOP/s (presets.HARDWARE_MIN / HARDWARE_MAX): an SM
    count of 0 divided by zero, a string among the items ended in a TypeError."""
    if not isinstance(f, dict):
        raise MokInputError(f"{at}: mech={f!r} must be an object of its phase features")
    for phase in ("gu", "dn"):
        blocks = f.get(phase)
        if not isinstance(blocks, list) or not all(
                isinstance(b, list) and len(b) == 2 and all(_number(v) and v >= 0 for v in b)
                for b in blocks):
            raise MokInputError(f"{at}: mech {phase}={blocks!r} must be a list of [items, FLOPs "
                                f"per item] pairs of numbers >= 0")
    for key, lo, hi in (("weight_bytes", 0, math.inf), ("weight_bytes_per_flop", 0, math.inf),
                        ("sms", 1, 16_384), ("peak_tflops", 1, 1e6)):
        v = f.get(key, 0 if key == "weight_bytes_per_flop" else None)
        if not (_number(v) and lo <= v <= hi) or key == "sms" and not float(v).is_integer():
            raise MokInputError(f"{at}: mech {key}={v!r} must be a"
                                + (" whole number" if key == "sms" else " number")
                                + (f" >= {lo}" if hi == math.inf else f" in [{lo:g}, {hi:g}]"))


def _mechanism(mech, where: str) -> dict:
    """A file's mechanism constants, checked: exactly MECHANISM (with both of SUSTAIN or neither),
    each a finite number, above 0 where it divides (tensor_eff, hbm_gbps, sustain_ms), else >= 0."""
    if not isinstance(mech, dict):
        raise MokInputError(f"{where}: mechanism must be an object of {', '.join(MECHANISM)}")
    allowed = MECHANISM + (SUSTAIN if any(k in mech for k in SUSTAIN) else ())
    missing, unknown = [k for k in allowed if k not in mech], sorted(set(mech) - set(allowed))
    if missing or unknown:
        why = " and ".join(w for w in (missing and f"lacks {', '.join(missing)}",
                                       unknown and f"has unknown {', '.join(unknown)}") if w)
        raise MokInputError(f"{where}: mechanism must hold exactly {', '.join(MECHANISM)} (and "
                            f"{' and '.join(SUSTAIN)} together, or neither): it {why}")
    for k in allowed:
        v, divides = mech[k], k in ("tensor_eff", "hbm_gbps", "sustain_ms")
        if not _number(v) or not (v > 0 if divides else v >= 0):
            raise MokInputError(f"{where}: mechanism {k}={v!r} must be a number "
                                + ("> 0 (it divides)" if divides else ">= 0"))
        lo, hi = MECHANISM_RANGE[k]
        if not lo <= v <= hi:
            raise MokInputError(f"{where}: mechanism {k}={v!r} must be in [{lo:g}, {hi:g}] (a "
                                f"plausible range for any real or future GPU)")
    return {k: float(mech[k]) for k in allowed}


def _read_transferred(path: Path, doc: dict) -> GemmTable:
    """A transferred table file (module docstring): the source file's points, this file's
    hardware and target mechanism."""
    where = f"GEMM table {str(path)!r}"
    ref = doc["transferred_from"]
    if not isinstance(ref, str) or not ref:
        raise MokInputError(f"{where}: transferred_from must be the source table's file name")
    src_path = path.parent / ref
    src_doc = _read_json(src_path, f"GEMM table {str(src_path)!r} (transferred_from of "
                                   f"{str(path)!r})")
    if "transferred_from" in src_doc:  # read on, a table naming itself (or a cycle) never ends
        raise MokInputError(f"{where}: transferred_from {ref!r} must be a measured table (not "
                            f"itself transferred): it is transferred from "
                            f"{src_doc['transferred_from']!r}")
    src = _table_of(src_path, src_doc)
    if not src.uses_mechanism:
        raise MokInputError(f"{where}: transferred_from {ref!r} must be a measured table with a "
                            f"phase mechanism")
    return transferred_table(src, str(doc.get("hardware", "")), path,
                             _mechanism(doc.get("mechanism"), where), str(doc.get("notes", "")))


def transferred_table(src: GemmTable, hardware: str, path: str | Path, mechanism: dict,
                      notes: str) -> GemmTable:
    """`src` (a measured table) transferred to `hardware` (module docstring): its points and
    curves, looked up on `mechanism`; the file at `path` names src's file (relative to it)."""
    ref = os.path.relpath(src.path, Path(path).parent)
    return GemmTable(hardware, src._points, src.records, str(path), notes, src.level,
                     src.mechanism, mechanism, ref, src.curves, src.points_file)


def write_table(path: str | Path, table: GemmTable) -> None:
    """Write a table file and, unless the table is transferred, its points file (points/NAME
    beside it, which the table file names)."""
    doc = table.to_json()
    points = doc.pop("points", None)
    if points is not None:
        where = points_path(path)
        where.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(where, json.dumps({"schema": POINTS_SCHEMA, "hardware": table.hardware,
                                             "points": points}, indent=1) + "\n")
        doc["points_file"] = f"{where.parent.name}/{where.name}"
    atomic_write_text(path, json.dumps(doc, indent=1) + "\n")


def measured_gpu(scn) -> int:
    """The GPU whose GEMMs a record of the scenario timed: rank 0 on emulated hardware (the one
    GPU runs rank 0), else the busiest (a real run's time is the slowest rank's)."""
    from .analytic import loads

    return 0 if scn.hardware.emulated_ranks else int(np.argmax(loads(scn).rows))


def split_dn(scn, tile: dict | None = None) -> int:
    """K slices of the megakernel's down items: the tile's `split_dn` where it names one (a
    record's), else the scenario's (a record that ran other than today's choice:
    records.record_split_dn), else the layer's choice for the scenario (mok_kernels/tiles.py
    forward_split_dn, one GPU only; 1 across real GPUs)."""
    from mok_kernels.tiles import forward_split_dn

    if tile and tile.get("split_dn"):
        return int(tile["split_dn"])
    if scn.split_dn:
        return scn.split_dn
    if not scn.hardware.emulated_ranks:
        return 1
    t, m = {**DEFAULT_TILE, **(tile or {})}, scn.model
    return forward_split_dn(scn.tokens, m.top_k, m.routed_experts, scn.ep, m.hidden,
                            m.expert_width, t["block_m"], t["bn_dn"], scn.precision)


def dn_blocks(scn, tile: dict | None = None) -> int:
    """Column blocks a down work item of the megakernel walks in one K loop: the tile's
    `dn_blocks` where it names one (a record's), else the scenario's (a record that ran other
    than today's choice: records.record_dn_blocks), else the layer's choice for the scenario
    (mok_kernels/tiles.py forward_dn_blocks: BF16 on one GPU with the down GEMM not split; 1
    elsewhere). A tile of a record that does not name it ran 1 (records before 2026-12-04)."""
    from mok_kernels.tiles import forward_dn_blocks

    if tile and tile.get("dn_blocks"):
        return int(tile["dn_blocks"])
    if scn.dn_blocks:
        return scn.dn_blocks
    if not scn.hardware.emulated_ranks or scn.pass_ != "fwd":
        return 1
    t, m = {**DEFAULT_TILE, "block_k": 64, **(tile or {})}, scn.model
    return forward_dn_blocks(scn.tokens, m.top_k, m.routed_experts, scn.ep, m.hidden,
                             m.expert_width, scn.hardware.sms, t["block_m"], t["bn_dn"],
                             t["block_k"], t["bn_gu"], scn.precision, split_dn(scn, tile))


def occupancy(scn, tile: dict | None = None, kernel: bool = True) -> float:
    """The measured GPU's GEMM FLOPs at peak on all SMs, over the same with each phase (gate/up,
    down: routed and shared tiles together, in the kernel's tile: `tile`, else DEFAULT_TILE)
    on min(its tiles, SMs) SMs: 1 when every phase has a tile per SM, less with fewer tiles.
    `kernel`: the GEMMs are the megakernel's (with the zero shared expert of a record made before
    2026-12-01: analytic.shared_section); False for the library's."""
    from .analytic import loads, shared_section

    t = {**DEFAULT_TILE, **(tile or {})}
    bm, m, sms = t["block_m"], scn.model, scn.hardware.sms
    er = loads(scn).expert_rows[measured_gpu(scn)]
    H = m.hidden
    blocks = [(float(np.ceil(er / bm).sum()), m.expert_width)]
    ns, sw = shared_section(scn, kernel)
    if ns:
        blocks.append((float(np.ceil(scn.tokens / bm)) * ns, sw))
    gu_tiles = sum(r * math.ceil(2 * w / t["bn_gu"]) for r, w in blocks)
    per_row = (math.ceil(math.ceil(H / t["bn_dn"]) / dn_blocks(scn, tile)) * split_dn(scn, tile)
               if kernel else math.ceil(H / t["bn_dn"]))
    dn_tiles = sum(r * per_row for r, w in blocks)
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


def ideal_seconds(scn, tile_m: int, tile_n: int, kernel: bool = True) -> float:
    """The measured GPU's routed (whole row tiles per expert) and shared-expert GEMM FLOPs at the
    preset's peak tensor rate on all SMs: what a table point's efficiency is relative to;
    `kernel` as in occupancy."""
    from .analytic import loads, shared_section

    hw, m = scn.hardware, scn.model
    er = loads(scn).expert_rows[measured_gpu(scn)]
    H = m.hidden

    def flops(row_tiles, width):  # gate/up (H -> 2I) and down (I -> H), whole column tiles
        return 2.0 * tile_m * tile_n * row_tiles * H * (np.ceil(2 * width / tile_n)
                                                         + np.ceil(H / tile_n) * width / H)
    total = flops(float(np.ceil(er / tile_m).sum()), m.expert_width)
    ns, sw = shared_section(scn, kernel)
    if ns:
        total += flops(np.ceil(scn.tokens / tile_m) * ns, sw)
    passes = 1.0 if scn.pass_ == "fwd" else 2.0
    return passes * total / (hw.tflops(scn.precision) * 1e12)


@lru_cache(maxsize=4096)
def scenario_eff(table: GemmTable, scn) -> float | None:
    """The table's efficiency for a scenario (its measured GPU's shape) on all SMs, None where
    the table did not measure the scenario's pass and precision; cached per scenario. A relative
    table's value is divided by its median (multiply by gemm_eff: gemm_efficiency)."""
    if not table.covers(scn):
        return None
    kernel = table.level == "absolute"  # the megakernel's GEMM phases
    if table.uses_mechanism and _ideal(scn) == 0.0:
        # the measured GPU has no GEMM work (no rows routed to it, no shared expert): any
        # efficiency times no work is no time; the points' median keeps the ratio finite
        e = table.median
    elif table.uses_mechanism:
        e = _ideal(scn) / table.scenario_seconds(scn)
    else:
        e = table.eff(*shape_of(scn), occupancy(scn, kernel=kernel))
    return e if table.level == "absolute" else e / table.median


@lru_cache(maxsize=4096)
def _mechanism_inputs(table: GemmTable, scn) -> tuple[dict, float]:
    """A scenario's phase features and the table's residual at its shape (cached: the analytic
    model asks for them for every configuration)."""
    return phase_features(scn), table._eff(*shape_of(scn))


@lru_cache(maxsize=4096)
def _ideal(scn) -> float:
    return ideal_seconds(scn, IDEAL_TILE, IDEAL_TILE)


def eff_on(table: GemmTable, scn, sms, scaling: float):
    """A mechanism table's efficiency for a scenario's GEMMs run on `sms` SMs (a number or an
    array), as the analytic model uses it: its tiles spread over those SMs, each faster by
    (all / sms)^(1 - scaling), take the mechanism's time on them. So the items' total scales with
    the SMs as the analytic model scales any GEMM, while a chain of a few items (fewer than the
    SMs) takes as long on fewer SMs as on all: a 96-token pass with 64 comm SMs is not 1.6x
    slower in its GEMMs than with 32 (docs/calibration.md "Drawn shapes")."""
    S = scn.hardware.sms
    used = np.asarray(sms, dtype=np.float64)
    if _ideal(scn) == 0.0:  # no GEMM work on the measured GPU (scenario_eff)
        return np.full_like(used, table.median)
    return _ideal(scn) * (S / used) ** scaling / table.scenario_seconds(scn, used, scaling)


def unmeasured_shape_note(table: GemmTable | None, scn) -> str | None:
    """A note for a scenario whose GEMM shape the table never measured (None where it did, or
    where no table applies): its GEMM time is read off the nearest measured shapes."""
    if table is None or not table.covers(scn):
        return None
    _, width, hidden, local = shape_of(scn)
    near = table.neighbours(width, hidden, local)
    if near == [(width, hidden, local)]:
        return None
    how = ("the phase mechanism's time times the residual of" if table.uses_mechanism
           else "the efficiency of")
    named = "; ".join(f"I {i}, H {h}, {e} local" for i, h, e in near)
    where = table.hardware if table.transferred_from is None else \
        f"{Path(table.transferred_from).stem}, whose table {table.hardware} reads transferred"
    return (f"GEMM phases at this shape (I {width}, H {hidden}, {local} local experts) were never "
            f"measured on {where}: {how} the {len(near)} nearest measured shapes ({named}); "
            f"shapes never measured are predicted less well (docs/calibration.md, \"Unseen shapes\")")


def gemm_efficiency(p, scn, sms=None) -> tuple[float, bool]:
    """(the megakernel's GEMM efficiency for a scenario, whether a table measured it):
    gemm_eff without a table (or outside its pass and precision), the table's value with an
    absolute one (a mechanism table's on `sms` SMs where given: eff_on), gemm_eff x the table's
    shape factor with a relative one."""
    t = p.gemm_table
    e = None if t is None else scenario_eff(t, scn)
    if e is None:
        return p["gemm_eff"], False
    if t.level != "absolute":
        return p["gemm_eff"] * e, True
    if sms is not None and t.uses_mechanism:
        return eff_on(t, scn, sms, p["sm_scaling"]), True
    return e, True


def replaces_gemm_eff(table) -> bool:
    """Whether a table takes gemm_eff's place (absolute), so that gemm_eff is not fitted."""
    return table is not None and table.level == "absolute"


def table_point(rec: dict, scn, tile_m: int, tile_n: int) -> dict:
    """One table point from a record of GEMM phases alone: the megakernel's (system
    KERNEL_SYSTEM, with a zero shared slot where the record's kernel ran one) or the library's."""
    rows, width, hidden, local = shape_of(scn)
    kernel = rec["system"] == KERNEL_SYSTEM
    ideal = ideal_seconds(scn, tile_m, tile_n, kernel)
    ms = float(rec["latency_ms"]["median"])
    model = rec["model"] if isinstance(rec["model"], str) else rec["model"].get("name", "shape")
    return {"id": rec["id"], "model": model, "ep": scn.ep, "tokens": scn.tokens,
            "mech": phase_features(scn, rec.get("tiles")),
            "routing": scn.routing, "pass": scn.pass_, "precision": scn.precision,
            "rows_per_expert": rows, "expert_width": width,
            "hidden": hidden, "local_experts": local,
            "tile": rec.get("tiles") or dict(DEFAULT_TILE),
            "occupancy": occupancy(scn, rec.get("tiles"), kernel), "measured_ms": ms,
            "ideal_ms": ideal * 1e3, "eff": ideal * 1e3 / ms}


def phase_features(scn, tile: dict | None = None) -> dict:
    """What the phase mechanism needs of the measured GPU's GEMM phases (module docstring):
    work items {"gu", "dn"} as [count, FLOPs per item] per block (routed experts, shared
    experts or an old record's zero shared slot: analytic.shared_section), the expert weight bytes
    streamed from HBM, the SMs and the peak tensor TFLOP/s. `tile`: the kernel's tile (block_m,
    bn_gu, bn_dn, block_k, group_m, split_dn), else its defaults with group_m and split_dn as
    MoKLayer picks them (mok_kernels/tiles.py)."""
    from mok_kernels.tiles import forward_group_m

    from .analytic import loads, shared_section

    t = {**DEFAULT_TILE, "block_k": 64, **(tile or {})}
    bm, bn_gu, bn_dn, bk = t["block_m"], t["bn_gu"], t["bn_dn"], t["block_k"]
    hw, m = scn.hardware, scn.model
    H, S = m.hidden, hw.sms
    gm = t.get("group_m") or forward_group_m(m.expert_width, H, bn_gu, bk)
    er = loads(scn).expert_rows[measured_gpu(scn)]
    blocks = [(np.ceil(er[er > 0] / bm), m.expert_width)]
    ns, sw = shared_section(scn)
    if ns:
        blocks.append((np.full(ns, math.ceil(scn.tokens / bm)), sw))
    gu, dn, wbytes = [], [], 0.0
    for rt, width in blocks:
        (nb_gu, f_gu), (n_dn, f_dn) = row_tile_items(scn, width, tile)  # a down item: one K slice
        nb_dn = math.ceil(H / bn_dn)
        gu.append([float(rt.sum() * nb_gu), f_gu])
        dn.append([float(rt.sum() * n_dn), f_dn])
        # row tiles of one expert running at once share a weight column block's HBM read:
        # group_m of them, or as many as the SMs hold row tiles of all column blocks
        reuse_gu, reuse_dn = max(gm, S / nb_gu), max(1.0, S / nb_dn)
        wbytes += 2.0 * (np.ceil(rt / reuse_gu).sum() * 2 * H * width
                         + np.ceil(rt / reuse_dn).sum() * H * width)
    return {"gu": gu, "dn": dn, "weight_bytes": float(wbytes), "sms": S,
            "peak_tflops": hw.tflops(scn.precision),
            # an item's weight block: FLOPs / (2 block_m) elements of 2 bytes (BF16) or 1 (FP8)
            "weight_bytes_per_flop": (1.0 if scn.precision == "fp8" else 2.0) / (2.0 * bm)}


def row_tile_items(scn, width: int, tile: dict | None = None) -> tuple:
    """((gate/up items, FLOPs each), (down items, FLOPs each)) of one row tile of an expert
    `width` wide in the kernel's tile (phase_features' `tile`): gate/up items of 128 x 2*bn_gu
    over K = H; down items of 128 x bn_dn over one K slice of the padded width (split_dn), or of
    dn_blocks such blocks walked in one K loop (their mean FLOPs where the last item of a row
    tile has fewer)."""
    from mok_kernels.tiles import padded_width

    t = {**DEFAULT_TILE, "block_k": 64, **(tile or {})}
    bm, bn_gu, bn_dn = t["block_m"], t["bn_gu"], t["bn_dn"]
    H, split = scn.model.hidden, split_dn(scn, tile)
    wp = padded_width(width, bn_gu, t["block_k"])
    nb_dn = math.ceil(H / bn_dn)
    n_dn = math.ceil(nb_dn / dn_blocks(scn, tile)) * split
    return ((wp // bn_gu, 2.0 * bm * 2 * bn_gu * H),
            (n_dn, 2.0 * bm * bn_dn * wp * nb_dn / n_dn))


def list_period(table: GemmTable, scn, row_tiles, sms, scaling: float = 1.0, lag=None):
    """Seconds per minibatch that the kernel's in-order work list allows where it binds (0
    elsewhere): `row_tiles` routed row tiles per minibatch on `sms` compute SMs (numbers or
    arrays; the result has their broadcast shape), the work-list lag `lag` (a number or an
    array; None: scn.list_lag).

    The list (mok_kernels/megakernel.py) puts minibatch i+1's g gate/up items before minibatch
    i's d down items, and a program that takes a down item holds its SM until its row tile's
    gate/up items are done. Where every SM holds an item, SM time balances over a period p: the
    S SMs give S p to g gate/up items of T_g and d down items, each taken between the next two
    minibatches' gate/up items (1.5 p after its own, on average) and held T_g - 1.5 p + T_d:
    p = (g T_g + d (T_g + T_d)) / (S + 1.5 d); with the kernel's list_lag L (the down items after
    minibatch i+L's gate/up items, scn.list_lag) they are taken (L + 0.5) p after their own:
    S + (L + 0.5) d. It binds where it exceeds the items' plain total
    over the SMs, (g T_g + d T_d) / S: few long gate/up items ahead of many short down items,
    narrow experts under a large H. Against an item-level simulation of the list on 300 drawn
    kernel shapes where it binds (`python -m calibration.list_check`) it is off by 6.2% on
    average, 17.3% at most; the plain total by 36.6% and 84.4% (docs/calibration.md "The
    in-order list"). Item times are the mechanism's on `sms` SMs times the table's residual at
    the shape; a table without a mechanism, or outside its pass and precision, gives 0."""
    if not table.mechanism_covers(scn):
        return np.zeros(np.broadcast(row_tiles, sms).shape)
    mech = table.lookup
    return (items_period(scn, row_tiles, sms, mech["tensor_eff"], scaling, mech["item_us"] * 1e-6,
                         lag) * _mechanism_inputs(table, scn)[1])


def items_period(scn, row_tiles, sms, eff: float, scaling: float, item_s: float = 0.0, lag=None):
    """held_period for the routed row tiles of a minibatch on `sms` SMs, each item costing
    `item_s` plus its FLOPs at `eff` of an SM's peak, (all / sms)^(1 - scaling) faster on fewer
    SMs (list_period's mechanism rates, or the analytic model's gemm_eff), at the work-list lag
    `lag` (None: scn.list_lag)."""
    S = scn.hardware.sms
    used = np.asarray(sms, dtype=np.float64)
    rate = eff * scn.hardware.tflops(scn.precision) * 1e12 / S * (S / used) ** (1.0 - scaling)
    (n_gu, f_gu), (n_dn, f_dn) = row_tile_items(scn, scn.model.expert_width)
    rt = np.asarray(row_tiles, dtype=np.float64)
    return held_period(rt * n_gu, rt * n_dn, item_s + f_gu / rate, item_s + f_dn / rate, used,
                       scn.list_lag if lag is None else lag)


def held_period(g, d, t_gu, t_dn, sms, lag: int = 1):
    """list_period's balance for g gate/up items of t_gu and d down items of t_dn per minibatch
    on `sms` SMs, the down items of a minibatch taken after the gate/up items of the minibatch
    `lag` later: (g t_gu + d (t_gu + t_dn)) / (sms + (lag + 0.5) d) where it exceeds the items'
    plain total (g t_gu + d t_dn) / sms, else 0 (arrays broadcast)."""
    g, d, sms = (np.asarray(x, dtype=np.float64) for x in (g, d, sms))
    held = (g * t_gu + d * (t_gu + t_dn)) / (sms + (lag + 0.5) * d)
    plain = (g * t_gu + d * t_dn) / sms
    return np.where(held > plain, held, 0.0)


def points_mechanism_seconds(features: list[dict], mech: dict) -> list[float]:
    """mechanism_seconds(f, mech) of each of `features` (a table's points') on all of its SMs,
    all at once: the same operations, feature by feature, on arrays (a table's 800 points cost
    30 ms one by one). Phases of fewer blocks than the longest are padded with blocks that
    leave the sums as they are."""
    S = np.array([f["sms"] for f in features], dtype=np.float64)
    peak = np.array([f["peak_tflops"] for f in features], dtype=np.float64) * 1e12 / S
    rate = mech["tensor_eff"] * peak
    item = mech["item_us"] * 1e-6
    per_flop = np.array([f.get("weight_bytes_per_flop", 1.0 / DEFAULT_TILE["block_m"])
                         for f in features], dtype=np.float64)
    total, phases = 0.0, []
    for phase in ("gu", "dn"):
        blocks = [f[phase] for f in features]
        width = max(map(len, blocks))
        has = np.arange(width)[:, None] < np.array([len(b) for b in blocks])[None, :]
        # (block, point) counts and FLOPs per item (from a flat list: numpy reads nested lists slowly)
        pad = [[0.0, 0.0]] * width
        k, fl = np.array([v for b in blocks for pair in b + pad[len(b):] for v in pair],
                         dtype=np.float64).reshape(len(blocks), width, 2).T
        part, n, flops = 0, 0, np.full(len(features), -np.inf)
        for i in range(width):  # in block order, as mechanism_seconds' sums
            part = np.where(has[i], part + k[i] * (item + fl[i] / rate), part)
            n = np.where(has[i], n + k[i], n)
            flops = np.where(has[i] & (k[i] > 0), np.maximum(flops, fl[i]), flops)
        total += part
        phases.append((n, np.where(n > 0, flops, 0.0)))
    weight_bytes = np.array([f["weight_bytes"] for f in features], dtype=np.float64)
    return _mechanism_time(total, phases, S, S, peak, rate, item, per_flop, weight_bytes, mech,
                           1.0).tolist()


def mechanism_seconds(f: dict, mech: dict, sms=None, scaling: float = 1.0):
    """The phase mechanism's time of `f` (phase_features) with constants `mech` (MECHANISM), on
    all of the GPU's SMs, or on `sms` (a number or an array of them: the result has its shape):
    the items' total then spreads over those SMs, each faster by (all / sms)^(1 - scaling), and
    the chain counts its waves in them, the last wave's items at an SM's tensor peak or their
    share of HBM, whichever is slower."""
    S = f["sms"]
    used = S if sms is None else np.asarray(sms, dtype=np.float64)
    peak = f["peak_tflops"] * 1e12 / S     # FLOP/s of one SM at its tensor peak
    rate = mech["tensor_eff"] * peak
    item = mech["item_us"] * 1e-6
    per_flop = f.get("weight_bytes_per_flop", 1.0 / DEFAULT_TILE["block_m"])  # BF16, 128 rows
    total, phases = 0.0, []
    for phase in ("gu", "dn"):
        total += sum(n * (item + flops / rate) for n, flops in f[phase])
        phases.append((sum(k for k, _ in f[phase]),
                       max((fl for k, fl in f[phase] if k > 0), default=0.0)))
    out = _mechanism_time(total, phases, S, used, peak, rate, item, per_flop, f["weight_bytes"],
                          mech, scaling)
    return float(out) if np.ndim(out) == 0 else out


def _mechanism_time(total, phases, S, used, peak, rate, item, per_flop, weight_bytes, mech: dict,
                    scaling: float):
    """mechanism_seconds once its phases are counted, for one point or arrays of them: `total`
    the items' seconds on one SM, `phases` each phase's (items, largest FLOPs of an item; 0
    where it has none), on `used` of the `S` SMs."""
    bw = mech["hbm_gbps"] * 1e9 if mech["hbm_gbps"] > 0 else np.inf
    times = []
    for n, flops in phases:
        busy = n > 0
        waves = np.ceil(n / used)
        tail = n - (waves - 1) * used
        full = item + flops / rate
        # the last wave's `tail` items run beside few others: at an SM's tensor peak or their
        # share of HBM for their weight blocks, whichever is slower (never slower than a full
        # wave's item)
        alone = np.maximum(item + flops / peak, tail * flops * per_flop / bw)
        times.append((np.where(busy, full, 0.0), np.where(busy, np.minimum(full, alone), 0.0),
                      np.where(busy, waves, 0.0)))
    (full_gu, last_gu, waves_gu), (full_dn, last_dn, waves_dn) = times
    chain = np.maximum((waves_gu - 1) * full_gu + last_gu + last_dn,
                       last_gu + (waves_dn - 1) * full_dn + last_dn)
    compute = sustained(np.maximum(total / S * (S / used) ** scaling, chain), mech)
    stream = weight_bytes / (mech["hbm_gbps"] * 1e9) if mech["hbm_gbps"] > 0 else 0.0
    return np.maximum(compute, stream) + mech["launch_us"] * 1e-6


def sustained(seconds, mech: dict):
    """A phase's compute time with the mechanism's long-phase term, where it has one (SUSTAIN):
    beyond `sustain_ms` each doubling of the time adds `sustain_loss` of it,
    t (1 + loss max(0, log2(t / sustain_ms))). A GPU holds its clock for a few milliseconds of
    dense tensor work, then settles under its power cap: the phases of 15 ms and more on both
    Hopper cards ran 5-14% slower than a table of mostly shorter phases said, with the SM clock
    below its maximum (docs/calibration.md "Session 68"). Without SUSTAIN, `seconds` as given."""
    if "sustain_loss" not in mech:
        return seconds
    t0 = mech["sustain_ms"] * 1e-3
    over = np.log2(np.maximum(np.asarray(seconds, dtype=np.float64), t0) / t0)
    return seconds * (1.0 + mech["sustain_loss"] * over)
