"""`mok tune`: pick the knobs before launch by evaluating the whole knob grid at once.

The analytic engine scores every configuration of the grid in vectorized batches; the sim engine
re-ranks the analytic top candidates by simulation.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from .analytic import list_binds, mok_terms
from .errors import ModelError, MokInputError, is_whole
from .params import Params
from .scenario import (ENGINES, GLUON_COMM_SMS, GLUON_KNOBS, GLUON_MINIBATCHES, MODES,
                       Config, Scenario, check_gluon_knobs, check_knob, plain)
from .workload import hot_fits

MINIBATCHES = (256, 512, 1024, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768)
CAPACITIES = (0.125, 0.25, 0.5, 0.75, 1.0)
MACRO_FRACTIONS = (0.25, 0.5, 1.0)  # ring buffer as a share of the rows the busiest GPU's ring must hold
BUFFER_SHARE_OF_HBM = 0.5  # policy: MoK's buffers may take at most half the HBM


# work-list lags the tuner tries for our kernel (KernelConfig.list_lag) where none is given:
# measured on one H200, lags 3 and 4 within 2% of each other everywhere, a lag near the
# minibatch count slower with pull combine (calibration/runs/h200_drawn/lag_sweep.jsonl.gz)
LIST_LAGS = (1, 2, 3, 4)

# The tuner keeps the published default knobs (default_knobs) unless another setting is
# predicted at least DEFAULT_MARGIN faster: a small predicted gain is within the model's
# held-out error (6-7 % MAPE on one GPU). Regret among each workload's measured settings
# (mok_kernels/logs_s64/margin_ties.py; docs/knobs.md "Keeping the published default"): chosen
# on H200 seeds 18-27 (mean 0.87 % -> 0.63 %, max 22.8 % -> 12.5 %) and H100 seeds 25-31 (1.02 %
# -> 0.79 %); held out on H100 seed 32, the robust pick 1.23 % -> 0.86 %, told the routing even.
DEFAULT_MARGIN = 0.02

# Predictions equal to TIE_DIGITS significant digits are one: the model gives two settings the
# same time summed in another order (a hidden copy, a minibatch count that leaves the GEMMs
# alone) and float rounding leaves them apart in the last bits, which would otherwise order them
# (and could order them differently on another machine's numpy). Ties go to the grid order.
TIE_DIGITS = 12


def tie_rounded(values) -> np.ndarray:
    """`values` rounded to TIE_DIGITS significant digits (inf, nan and 0 kept): the key every
    ranking of predictions sorts by, here and in calibration's held-out figures."""
    x = np.asarray(values, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = 10.0 ** (np.floor(np.log10(np.abs(x))) - (TIE_DIGITS - 1))
        return np.where(np.isfinite(x) & (x != 0), np.round(x / q) * q, x)


def default_knobs(sms: int) -> dict:
    """The published default knobs (mok-system.md section 3): pull dispatch, push combine,
    minibatch 4,096 and 40 comm SMs on a 148-SM GPU, scaled to `sms` and rounded down to a
    multiple of 4 (32 on a 132-SM Hopper, the setting every drawn-seed sweep times)."""
    return {"dispatch": "pull", "combine": "push", "minibatch": 4096,
            "comm_sms": 4 * (10 * sms // 148)}


def lag_choices(scenario: Scenario) -> tuple[int, ...] | None:
    """The lags searched with the knobs where none is given: LIST_LAGS for our kernel's BF16
    forward with its ranks on one GPU (emulated or virtual: where lags were tested and
    measured), else None (the scenario's lag; MoKLayer runs lag 1 across GPUs and in FP8)."""
    one_gpu = scenario.hardware.emulated_ranks
    return LIST_LAGS if one_gpu and scenario.pass_ == "fwd" and scenario.precision == "bf16" else None


@dataclass(frozen=True)
class Scored:
    config: Config
    latency_ms: float
    list_lag: int = 1  # the kernel's work-list lag the latency is for (Scenario.list_lag)
    regret: dict | None = None  # tune_robust: per routing judged, latency / its best - 1


@dataclass(frozen=True)
class TuneResult:
    """`best` (also `top[0]`), then the fastest others; `fastest`: the fastest setting where
    the default knobs were kept because it was predicted less than the margin faster, else None;
    `simulated`: how many of the analytic grid's fastest the sim engine re-timed (0: analytic)."""
    best: Scored
    top: list[Scored]
    evaluated: int
    seconds: float
    engine: str
    fastest: Scored | None = None
    simulated: int = 0


def comm_sms_choices(sms: int) -> list[int]:
    """The comm SM counts the tuner searches: 4, 8, ... up to half the SMs (at most 64); on a
    GPU of under 8 SMs every count up to half of them."""
    return list(range(4, min(64, sms // 2) + 1, 4)) if sms >= 8 else list(range(1, sms // 2 + 1))


def knob_grid(scenario: Scenario, fixed: dict | None = None) -> dict[str, np.ndarray]:
    """All knob combinations to search, as parallel arrays; fixed knobs keep their value."""
    fixed = dict(fixed or {})
    sms = scenario.hardware.sms
    busiest = int(np.ceil(_ring_rows(scenario)))
    gluon = scenario.fp8_kernel == "gluon"
    comm = [c for c in GLUON_COMM_SMS if c < sms] if gluon else comm_sms_choices(sms)
    if not comm and "comm_sms" not in fixed:
        raise MokInputError(f"the Gluon FP8 pass runs {', '.join(map(str, GLUON_COMM_SMS))} comm "
                            f"SMs; hardware {scenario.hardware.name!r} has {sms} SMs")
    axes = {
        "dispatch": [fixed["dispatch"]] if "dispatch" in fixed else list(MODES),
        # on ties the published choice wins: pull dispatch, push combine
        "combine": [fixed["combine"]] if "combine" in fixed else list(reversed(MODES)),
        "minibatch": ([fixed["minibatch"]] if "minibatch" in fixed else
                      _minibatches(GLUON_MINIBATCHES if gluon else MINIBATCHES,
                                   fixed.get("macrobatch"))),
        "comm_sms": [fixed["comm_sms"]] if "comm_sms" in fixed else list(comm),
        # the Gluon FP8 pass's ring holds every routed row: one macrobatch, all of them
        "macro": [None] if "macrobatch" in fixed else [1.0] if gluon else list(MACRO_FRACTIONS),
        "capacity": [fixed["capacity"]] if "capacity" in fixed else list(CAPACITIES),
    }
    # every combination of the axes' values, in itertools.product's order (no Python tuples:
    # numpy's multi-indices in C order are the same); each axis's values are converted first
    shape = [len(v) for v in axes.values()]
    ix = dict(zip(axes, np.indices(shape).reshape(len(axes), -1)))
    vals = {name: np.asarray(v, dtype=object) for name, v in axes.items()}
    mb = vals["minibatch"].astype(np.int64)[ix["minibatch"]]
    if "macrobatch" in fixed:
        macro = np.full(len(mb), int(fixed["macrobatch"]), dtype=np.int64)
    else:  # a share of the busiest GPU's rows, rounded up to whole minibatches
        want = np.ceil(vals["macro"].astype(float) * max(busiest, 1))[ix["macro"]]
        macro = (np.maximum(np.ceil(want / mb), 1) * mb).astype(np.int64)
    out = {"dispatch_push": (vals["dispatch"] == "push")[ix["dispatch"]],
           "combine_push": (vals["combine"] == "push")[ix["combine"]],
           "minibatch": mb, "comm_sms": vals["comm_sms"].astype(np.int64)[ix["comm_sms"]],
           "macrobatch": macro, "capacity": vals["capacity"].astype(float)[ix["capacity"]]}
    # drop duplicates created by the macrobatch rounding: the other axes' values are distinct and
    # the rounded macrobatch grows with the share (the shares ascend), so a duplicate repeats the
    # macrobatch of the share before it, every other knob the same
    m = macro.reshape(shape)
    repeat = np.zeros(shape, dtype=bool)
    repeat[:, :, :, :, 1:] = m[:, :, :, :, 1:] == m[:, :, :, :, :-1]
    keep = np.flatnonzero(~repeat.ravel())
    return {k: v[keep] for k, v in out.items()}


def _minibatches(choices: tuple[int, ...], macrobatch: int | None) -> list[int]:
    """The minibatches searched: those a given ring (`macrobatch`) holds, or the ring itself
    where it holds none of them."""
    if macrobatch is None:
        return list(choices)
    return [m for m in choices if m <= macrobatch] or [int(macrobatch)]


def _ring_rows(scenario: Scenario) -> float:
    """Rows the busiest GPU's ring must hold in a timed iteration (analytic.iteration_rows):
    the ring sizes the tuner tries are shares of it."""
    from .analytic import iteration_rows, loads

    return float(iteration_rows(scenario, loads(scenario)).max())


def _busiest_rows(scenario: Scenario) -> float:
    from .analytic import loads

    return float(loads(scenario).rows.max())


def buffer_bytes(scenario: Scenario, minibatch, macrobatch, capacity, combine_push=True):
    """Bytes of MoK's buffers on one GPU: what MoKLayer allocates for this shape, EP, token count
    and knobs (mok_kernels/buffers.py, tested against the layer's tensors): the ring, h over
    every row a rank may serve, the combine slots (every rank's where the peers are emulated in
    one GPU's memory), pull combine's staging rows, the schedule and split_dn's workspace. Our
    kernel's layout stands for the published one's, whose buffers are not published."""
    from mok_kernels.buffers import layer_bytes
    from mok_kernels.tiles import padded_width

    from .gemm_table import split_dn

    m, p, n = scenario.model, scenario.ep, scenario.tokens
    cap_rows = np.maximum(1, np.ceil(np.asarray(capacity) * p * n
                                     * min(m.top_k, scenario.local_experts)))
    return layer_bytes(ep=p, tokens=n, top_k=m.top_k, experts=m.routed_experts, hidden=m.hidden,
                       width_padded=padded_width(m.expert_width), capacity_rows=cap_rows,
                       minibatch=np.asarray(minibatch), macrobatch=np.asarray(macrobatch),
                       pull_combine=~np.asarray(combine_push, dtype=bool),
                       precision=scenario.precision, group=not scenario.hardware.emulated_ranks,
                       split=split_dn(scenario))


def _schedule_need(scenario: Scenario, params: Params) -> tuple[float, int]:
    """(rows the schedule must hold: the busiest GPU's x capacity_headroom, at most every route;
    rows per unit of capacity), as analytic.mok_terms' overflow rule reads them."""
    per_unit = scenario.ep * scenario.tokens * min(scenario.model.top_k, scenario.local_experts)
    return min(_busiest_rows(scenario) * params["capacity_headroom"], per_unit), per_unit


def min_capacity(scenario: Scenario, params: Params) -> float:
    """The smallest --capacity whose schedule holds the rows it must (capacity 1.0 always fits)."""
    need, per_unit = _schedule_need(scenario, params)
    return float(need / per_unit)


def least_capacity(scenario: Scenario, params: Params) -> float:
    """The smallest of CAPACITIES that does not overflow. The capacity enters a pass only through
    its overflow rule and the schedule's size (a term of its own, growing with it) and the
    buffers only as smaller-is-smaller, so for every other knob setting this one is the best:
    the tuner scores the grid at it rather than at every capacity."""
    need, per_unit = _schedule_need(scenario, params)
    return min(c for c in CAPACITIES if np.ceil(c * per_unit) >= need)  # ceil: the kernel's rows


def _infeasible(scn: Scenario, params: Params, fixed: dict, overflow, mem, limit: float) -> str:
    """Why no knob setting fits: the capacity that overflows or the buffers that exceed the HBM."""
    if overflow.all():
        least = np.ceil(min_capacity(scn, params) * 1000) / 1000
        use = "1 (every routed row)" if least >= 1 else f"{least:g} to 1"
        return (f"--capacity {fixed.get('capacity')} overflows: the busiest GPU receives "
                f"{int(_busiest_rows(scn))} routed rows and the schedule must hold them x headroom "
                f"{params['capacity_headroom']:g}; use --capacity {use} or leave it to the tuner")
    fits = ~overflow
    smallest = float(mem[fits].min() if fits.any() else mem.min())
    given = ", ".join(f"--{k.replace('_', '-')} {v}" for k, v in fixed.items()
                      if k in ("minibatch", "macrobatch", "capacity")) or "every knob setting"
    hint = ""
    if "minibatch" in fixed:  # the largest of the tuner's minibatches whose buffers fit
        ok = [mb for mb in MINIBATCHES if mb < fixed["minibatch"]
              and _least_buffers(scn, {"capacity": least_capacity(scn, params), **fixed,
                                       "minibatch": mb}) <= limit]
        hint = f" (the largest minibatch that fits: {max(ok)})" if ok else ""
    emulated = ""
    if scn.hardware.emulated_ranks:   # one GPU holds every rank's combine slots
        slots = scn.ep * scn.tokens * scn.model.top_k * scn.model.hidden * 2
        emulated = (f" ({slots / 1e9:.3g} GB of them are the combine slots of all {scn.ep} "
                    f"emulated ranks, which only --tokens or --ep lower)")
    return (f"{given}: MoK's buffers need at least {smallest / 1e9:.3g} GB per GPU{emulated}, more "
            f"than the {limit / 1e9:.3g} GB (half of {scn.hardware.name}'s HBM) they may take; "
            f"lower --minibatch{hint}, --macrobatch or --capacity, or --tokens")


def _least_buffers(scn: Scenario, fixed: dict) -> float:
    """The smallest buffer bytes over the knob grid with some knobs fixed."""
    return float(_grid_buffers(scn, knob_grid(scn, fixed))[0].min())


def _grid_buffers(scn: Scenario, g: dict) -> tuple[np.ndarray, float]:
    """Every grid row's buffer bytes (buffer_bytes) and the share of the HBM they may take."""
    mem = buffer_bytes(scn, g["minibatch"], g["macrobatch"], g["capacity"], g["combine_push"])
    return mem, BUFFER_SHARE_OF_HBM * scn.hardware.hbm_gb * 1e9


def _score(scenario: Scenario, params: Params, g: dict, which: np.ndarray,
           lags: np.ndarray | None = None):
    """(latency s, overflow) of the grid rows `which` (analytic, in chunks), at the work-list
    lags `lags` (one per row; None: the scenario's)."""
    n = len(which)
    lat, overflow = np.empty(n), np.zeros(n, dtype=bool)
    chunk = max(1, 2_000_000 // max(scenario.ep, 1))
    for s in range(0, n, chunk):
        sl, ix = slice(s, s + chunk), which[s:s + chunk]
        r = mok_terms(scenario, params, g["dispatch_push"][ix], g["combine_push"][ix],
                      g["minibatch"][ix], g["comm_sms"][ix], g["macrobatch"][ix], g["capacity"][ix],
                      None if lags is None else lags[sl], totals_only=True)
        lat[sl], overflow[sl] = r["total"], r["overflow"]
    return lat, overflow


def _grid_latency(scenario: Scenario, params: Params, g: dict, lags: tuple[int, ...]):
    """(latency s, work-list lag, overflow, rows evaluated) of every grid row at its best lag
    of `lags` (smallest first). A larger lag changes a pass only where the in-order list binds
    at the smallest (analytic.list_binds; elsewhere it can only lengthen the combine tail), so
    the other lags are scored on those rows only (in the same call of the model, the lag per
    row); ties go to the smaller lag."""
    n = len(g["minibatch"])
    first = replace(scenario, list_lag=lags[0])
    rows = (np.flatnonzero(list_binds(first, params, g["combine_push"], g["minibatch"],
                                      g["comm_sms"])) if len(lags) > 1 else np.zeros(0, np.intp))
    lat_all, overflow = _score(first, params, g,
                               np.concatenate([np.arange(n), np.tile(rows, len(lags) - 1)]),
                               np.concatenate([np.full(n, lags[0]), np.repeat(lags[1:], len(rows))]))
    lat, overflow, lag = lat_all[:n], overflow[:n], np.full(n, lags[0])
    for i, more in enumerate(lags[1:]):  # where a larger lag scores lower, it is the choice
        lat_l = lat_all[n + i * len(rows):n + (i + 1) * len(rows)]
        better = tie_rounded(lat_l) < tie_rounded(lat[rows])
        lat[rows[better]], lag[rows[better]] = lat_l[better], more
    return lat, lag, overflow, len(lat_all)


def _default_rows(scenario: Scenario, g: dict, fixed: dict) -> np.ndarray:
    """The grid rows of the default knobs (default_knobs; a knob given in `fixed` replaces its
    default), any ring and capacity."""
    want = {**default_knobs(scenario.hardware.sms),
            **{k: v for k, v in fixed.items() if k in ("dispatch", "combine", "minibatch", "comm_sms")}}
    return np.flatnonzero((g["dispatch_push"] == (want["dispatch"] == "push"))
                          & (g["combine_push"] == (want["combine"] == "push"))
                          & (g["minibatch"] == want["minibatch"])
                          & (g["comm_sms"] == want["comm_sms"]))


def _pick(lat: np.ndarray, defaults: np.ndarray, margin: float) -> tuple[int, int | None]:
    """(picked, fastest) positions in `lat`: the fastest (ties: the first), unless the fastest
    of `defaults` is finite and the fastest is not `margin` faster than it: then that default,
    and `fastest` is where the fastest was (None where the pick is the fastest)."""
    key = tie_rounded(lat)
    fastest = int(np.lexsort((np.arange(len(lat)), key))[0])
    if len(defaults):
        d = int(defaults[np.lexsort((defaults, key[defaults]))[0]])
        if np.isfinite(lat[d]) and d != fastest and lat[fastest] > lat[d] * (1 - margin):
            return d, fastest
    return fastest, None


def _check_margin(margin) -> None:
    if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not 0 <= margin < 1:
        raise MokInputError(f"default_margin {margin!r} must be a fraction in [0, 1): how much "
                            f"faster another setting must be predicted than the default knobs")


def _config_at(g: dict, i: int) -> Config:
    """Grid row i as a Config."""
    return Config(dispatch="push" if g["dispatch_push"][i] else "pull",
                  combine="push" if g["combine_push"][i] else "pull",
                  minibatch=int(g["minibatch"][i]), comm_sms=int(g["comm_sms"][i]),
                  macrobatch=int(g["macrobatch"][i]), capacity=float(g["capacity"][i]))


def _fixed_knobs(scenario: Scenario, fixed: dict | None) -> dict:
    """The knobs a search keeps fixed: the given ones, checked, and the Gluon FP8 pass's (it
    runs those and no others)."""
    fixed = {knob: plain(v) for knob, v in (fixed or {}).items()}   # numpy scalars as values
    for knob, v in fixed.items():
        check_knob(knob, v)
    if scenario.fp8_kernel == "gluon":
        check_gluon_knobs(scenario, fixed)
        fixed = {**GLUON_KNOBS, **fixed}
    if "comm_sms" in fixed:
        Config(**{k: fixed[k] for k in ("comm_sms", *GLUON_KNOBS) if k in fixed}).check_for(scenario)
    return fixed


def _check_search(params, fixed, top: int = 1, engine: str = "analytic",
                  sim_candidates: int = 1, scenario=None, list_lags=None) -> None:
    """Refuse a search's arguments of the wrong kind, in one line (`mok tune` checks its flags
    the same way)."""
    if not isinstance(scenario, Scenario):
        raise MokInputError(f"scenario {scenario!r} must be a mok_model Scenario")
    if list_lags is not None and (not isinstance(list_lags, (tuple, list)) or not list_lags
                                  or not all(map(is_whole, list_lags))):
        raise MokInputError(f"list_lags {list_lags!r} must be None or a tuple of whole numbers >= 1, "
                            f"e.g. (1, 2, 3, 4)")
    if not isinstance(params, Params):
        raise MokInputError(f"params {params!r} must be a Params (load_params(PATH, HARDWARE); "
                            f"predict() also takes a path or None)")
    if fixed is not None and not isinstance(fixed, dict):
        raise MokInputError(f"fixed {fixed!r} must be a dict of knobs, e.g. {{'minibatch': 256}}, "
                            f"or None")
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise MokInputError(f"--top {top!r} must be an integer >= 1")
    if isinstance(sim_candidates, bool) or not isinstance(sim_candidates, int) or sim_candidates < 1:
        raise MokInputError(f"sim_candidates {sim_candidates!r} must be an integer >= 1")
    if engine not in ENGINES:
        raise MokInputError(f"--engine {engine!r} must be one of {ENGINES}")


def tune(scenario: Scenario, params: Params, fixed: dict | None = None, top: int = 5,
         engine: str = "analytic", sim_candidates: int = 8,
         list_lags: tuple[int, ...] | None = None,
         default_margin: float = DEFAULT_MARGIN) -> TuneResult:
    """Search the knob grid; return the pick, the top K and how many were evaluated. The pick is
    the fastest setting, or the default knobs where the fastest is predicted less than
    `default_margin` faster (DEFAULT_MARGIN; 0: always the fastest).

    `list_lags`: the kernel work-list lags to search with the knobs (e.g. LIST_LAGS; each row
    at its best, _grid_latency); None keeps the scenario's."""
    t0 = time.perf_counter()
    top, sim_candidates = plain(top), plain(sim_candidates)    # numpy scalars as values
    _check_search(params, fixed, top, engine, sim_candidates, scenario, list_lags)
    _check_margin(default_margin)
    scenario.healthy(engine)        # the analytic engine refuses degraded links
    fixed = _fixed_knobs(scenario, fixed)
    lags = tuple(sorted(set(list_lags))) if list_lags else (scenario.list_lag,)
    g = knob_grid(scenario, {"capacity": least_capacity(scenario, params), **fixed})
    n = len(g["minibatch"])
    lat, lag, overflow, evaluated = _grid_latency(scenario, params, g, lags)
    if np.isnan(lat).any():   # never a pick among undefined numbers, never "infeasible" for them
        raise ModelError(f"the analytic model gave no number (NaN) for {int(np.isnan(lat).sum())} "
                         f"of {n} knob settings of {scenario.model.name}, EP {scenario.ep}, "
                         f"{scenario.tokens} tokens on {scenario.hardware.name}: a bug in mok")
    mem, limit = _grid_buffers(scenario, g)
    lat[mem > limit] = np.inf
    if not np.isfinite(lat).any():
        raise MokInputError(_infeasible(scenario, params, fixed, overflow, mem, limit))
    k = max(top, sim_candidates if engine == "sim" else top)
    key = tie_rounded(lat)
    order = np.lexsort((np.arange(n), key))[:k]  # ties broken by grid order: deterministic
    defaults = _default_rows(scenario, g, fixed)
    if len(defaults):        # the fastest default row is a candidate too
        order = np.append(order, defaults[np.lexsort((defaults, key[defaults]))[0]])
    order = np.unique(order[np.isfinite(lat[order])])
    scored = [Scored(_config_at(g, i), float(lat[i]) * 1e3, int(lag[i])) for i in order]
    if engine == "sim":
        from .progress import bar
        from .sim import simulate

        scored = [Scored(s.config, simulate(replace(scenario, list_lag=s.list_lag), s.config,
                                            "mok", params).latency_ms, s.list_lag)
                  for s in bar(scored, f"simulating {len(scored)} candidates at EP {scenario.ep}")]
    ms = np.array([s.latency_ms for s in scored])
    pick, fastest = _pick(ms, np.flatnonzero(np.isin(order, defaults)), default_margin)
    rest = [scored[i] for i in np.lexsort((order, tie_rounded(ms))) if i != pick]
    return TuneResult(scored[pick], [scored[pick], *rest][:top], evaluated,
                      time.perf_counter() - t0, engine,
                      None if fastest is None else scored[fastest],
                      len(scored) if engine == "sim" else 0)


# the routings a setting is judged under when the router's skew is not known (ROBUST: MoKLayer's
# default, `mok tune --routing robust`): the three the project measures on hardware
ROBUST = "robust"
ROBUST_ROUTINGS = ("uniform", "zipf:1.2", "hot:0.1")


def robust_routings(top_k: int, experts: int) -> tuple[str, ...]:
    """ROBUST_ROUTINGS as a model can be routed: the hot expert's share at most 1/top_k (a
    route of every token; top_k > 10), and no hot expert where the other experts cannot fill a
    token's top_k."""
    if not hot_fits(top_k, experts):
        return ROBUST_ROUTINGS[:2]
    return ROBUST_ROUTINGS if top_k <= 10 else (*ROBUST_ROUTINGS[:2], f"hot:{1 / top_k!r}")


_SEED_CANDIDATES = 8  # each routing's best rows judged first: their worst regret bounds the search


@dataclass(frozen=True)
class RobustResult:
    """The setting whose worst regret over the routings is least (`best.regret`: per routing
    judged, its latency over that routing's tuned best, i.e. `tune` told the routing, minus 1);
    `dropped`: routings under which no setting runs (every one overflows its capacity or needs
    more than the buffers' share of HBM)."""
    best: Scored
    dropped: tuple[str, ...]


def _routing_scores(scenario: Scenario, params: Params, g: dict, lags: tuple[int, ...],
                    each_lag: bool = False) -> np.ndarray:
    """Latency (s) of every grid row under `scenario`: (rows,) at each row's best of `lags`, or
    with `each_lag` (rows, lags) at every lag; inf where the capacity overflows or the buffers
    exceed their share of HBM."""
    n = len(g["minibatch"])
    if each_lag:
        lat, overflow = _score(scenario, params, {k: np.tile(v, len(lags)) for k, v in g.items()},
                               np.arange(n * len(lags)), np.repeat(lags, n))
        lat, overflow = lat.reshape(len(lags), n).T, overflow.reshape(len(lags), n).T
    else:
        lat, _, overflow, _ = _grid_latency(scenario, params, g, lags)
    mem, limit = _grid_buffers(scenario, g)
    too_big = mem > limit
    lat[overflow | (too_big[:, None] if each_lag else too_big)] = np.inf
    return lat


def tune_robust(scenario: Scenario, params: Params, fixed: dict | None = None,
                routings: tuple[str, ...] | None = None,
                list_lags: tuple[int, ...] | None = None,
                default_margin: float = DEFAULT_MARGIN) -> RobustResult:
    """Knobs for a router whose skew is not known: of every routing's knob grid (its ring shares
    and least capacity), the setting and work-list lag whose worst regret over the routings is
    least (ties: the faster under the first routing, then grid order). `best.latency_ms` is the
    first routing's latency. Exact, at about the cost of one `tune` a routing: a row whose
    regret under its own grid's routing (at its best lag) exceeds the worst regret of some
    judged setting cannot win, so only the rows under that bound are judged under every routing
    at every lag. The default knobs (default_knobs) are kept unless the pick's worst latency
    over its routings' bests is `default_margin` lower than theirs (tune's rule). MokInputError
    where no setting runs under the first routing. `routings`: None, robust_routings of the
    scenario's model."""
    _check_search(params, fixed, scenario=scenario, list_lags=list_lags)
    _check_margin(default_margin)
    scenario.healthy()              # analytic: degraded links refused
    m = scenario.model
    routings = routings or robust_routings(m.top_k, m.routed_experts)
    fixed = _fixed_knobs(scenario, fixed)
    lags = tuple(sorted(set(list_lags))) if list_lags else (scenario.list_lag,)
    scns = [replace(scenario, routing=r) for r in routings]
    grids, own = [], []
    for s in scns:
        g = knob_grid(s, {"capacity": least_capacity(s, params), **fixed})
        grids.append(g)
        own.append(_routing_scores(s, params, g, lags))
    best = np.array([o.min() for o in own])
    if not np.isfinite(best[0]):
        tune(scns[0], params, fixed=fixed, top=1, list_lags=list_lags)   # raises its reason
    kept = [r for r in range(len(scns)) if np.isfinite(best[r])]

    def judge(cands: list[tuple[int, int]]) -> np.ndarray:
        """(candidates, lags, kept routings) regrets of (grid, row) candidates."""
        g = {k: np.stack([grids[q][k][i] for q, i in cands]) for k in grids[0]}
        return np.stack([_routing_scores(scns[r], params, g, lags, each_lag=True) / best[r]
                         for r in kept], axis=-1)

    seeds = [(q, int(i)) for q in kept
             for i in np.argsort(tie_rounded(own[q]), kind="stable")[:_SEED_CANDIDATES]]
    bound = judge(seeds).max(axis=-1).min()
    defaults = [(q, int(i)) for q in kept for i in _default_rows(scns[q], grids[q], fixed)]
    cands = [(q, int(i)) for q in kept for i in np.flatnonzero(own[q] / best[q] <= bound)]
    # one setting in several grids (same knobs) is judged once, at its first grid's place
    keys = {}
    for q, i in cands + defaults:
        keys.setdefault(_config_at(grids[q], i), (q, i))
    cands = list(keys.values())
    reg = judge(cands)                                      # (candidates, lags, routings)
    worst = reg.max(axis=-1)
    order = np.lexsort((np.arange(worst.size), tie_rounded(reg[..., 0].ravel()),
                        tie_rounded(worst.ravel())))
    default_places = set(defaults)
    is_default = np.isin(np.arange(worst.size) // len(lags),
                         [c for c, qi in enumerate(cands) if qi in default_places])
    # tune's rule on the worst latency ratios in ranked order (the first is the least)
    picked, _ = _pick(worst.ravel()[order], np.flatnonzero(is_default[order]), default_margin)
    c, j = divmod(int(order[picked]), len(lags))
    q, i = cands[c]
    lat0 = reg[c, j, 0] * best[0]                           # kept[0] is the first routing
    regret = {routings[r]: float(reg[c, j, m] - 1) for m, r in enumerate(kept)}
    return RobustResult(Scored(_config_at(grids[q], i), float(lat0) * 1e3, lags[j], regret),
                        tuple(routings[r] for r in range(len(scns)) if r not in kept))
