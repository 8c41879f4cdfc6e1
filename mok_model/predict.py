"""One question, two engines: `predict(scenario, config, system, params, engine)`.

The analytic model and the discrete-event simulator answer through this one signature and return
the same Prediction, so the tuner, validation and studies switch engine with one argument.
"""

from __future__ import annotations

from dataclasses import dataclass, field


from .analytic import mok_config_terms
from .band import LEVEL, Band, band
from .baselines import BASELINES, COMM_KERNELS, baseline_terms, copy_gbps
from .errors import MokInputError
from .heldout import Heldout, heldout_range
from .params import Params, load_params
from .scenario import ENGINES, GLUON_MINIBATCHES, HOPPER_GPUS, SYSTEMS, Config, Scenario


@dataclass
class Prediction:
    """Latency of one pass (slowest GPU), its critical-path breakdown and the resolved knobs."""

    scenario: Scenario
    config: Config | None  # None for baselines: they have no MoK knobs
    system: str
    engine: str
    latency_ms: float
    breakdown_ms: dict[str, float]  # critical-path terms; they add up to latency_ms
    work_ms: dict[str, float]  # busy time of each resource on the slowest GPU (overlaps)
    params: str | None
    slowest_gpu: int
    tuned: list[str] = field(default_factory=list)  # knobs the tuner chose
    extra: dict = field(default_factory=dict)  # engine-specific results (sim: events, timelines)
    band: Band | None = None  # the fit's uncertainty band, once with_band() computed it
    heldout: Heldout | None = None  # the held-out runs' range, once with_heldout() read it

    def notes(self) -> list[str]:
        """What a reader must know to read the numbers (scenario_notes, then the engine's)."""
        return (scenario_notes(self.scenario, self.system) + list(self.extra.get("knob_notes", []))
                + list(self.extra.get("notes", [])))

    def as_json(self) -> dict:
        d = {"latency_ms": self.latency_ms, "breakdown_ms": self.breakdown_ms,
             "work_ms": self.work_ms,
             "config": self.config.as_dict() if self.config else None,
             **self.scenario.describe(), "system": self.system, "engine": self.engine,
             "params": self.params, "slowest_gpu": self.slowest_gpu, "tuned_knobs": self.tuned,
             "domains": self.scenario.domains, "notes": self.notes()}
        d.update({k: v for k, v in self.extra.items() if k not in ("timelines", "notes", "knob_notes")})
        if self.band is not None:
            d["band_ms"] = self.band.as_json()
            d["band_note"] = self.band.full_note
        if self.heldout is not None:
            d["heldout_ms"] = self.heldout.as_json()
            d["heldout_note"] = self.heldout.note
        return d

    def with_band(self, params: Params, level: float = LEVEL) -> "Prediction":
        """Attach the uncertainty band of the parameters' fit (mok_model.band); returns self.
        The parameters are the ones the prediction was made with (another file's fit is not
        this prediction's band)."""
        if not isinstance(params, Params) or (self.params is not None and params.path is not None
                                              and str(params.path) != str(self.params)):
            raise MokInputError(f"with_band: the band comes from the parameters the prediction was "
                                f"made with ({self.params}), not {getattr(params, 'path', params)!r}")
        self.band = band(self, params, level)
        return self

    def with_heldout(self, params: Params) -> "Prediction":
        """Attach the range held-out runs measured at such a prediction (mok_model.heldout)."""
        self.heldout = heldout_range(self, params)
        return self


def scenario_notes(s: Scenario, system: str = "mok") -> list[str]:
    """Facts about a scenario (and `system`'s pass of it) that change how its numbers read:
    domains spanned, uneven expert placement, emulated peers."""
    out = []
    if s.domains > 1:
        out.append(f"the EP group spans {s.domains} scale-up domains of {s.hardware.domain_size} "
                   f"GPUs; rows between domains cross the scale-out link (term scale_out)")
    if s.uneven:
        q, r = divmod(s.model.routed_experts, s.ep)
        out.append(f"EP {s.ep} does not divide the {s.model.routed_experts} experts of "
                   f"{s.model.name}: {r} GPUs hold {q + 1} experts and {s.ep - r} hold {q} "
                   f"(uneven placement); the GPUs with more receive more rows")
    if system == "mok" and s.hardware.gpu.startswith(HOPPER_GPUS):
        from mok_kernels.tiles import shape_refusal   # pure Python, no torch

        m = s.model
        why = shape_refusal(m.hidden, m.expert_width, m.shared_width * m.shared_experts,
                            128 if s.precision == "fp8" else 64)
        if why:
            out.append(f"our megakernel refuses this shape ({why}): the latency is the MoK "
                       f"design's, at parameters fitted to runs of other shapes")
    if s.hardware.emulated_ranks and s.ep > 1:
        peers = "the 1 peer" if s.ep == 2 else f"the {s.ep - 1} peers"
        if system == "mok":
            out.append(f"{s.hardware.name} emulates {peers} in local memory; the "
                       f"latency is rank 0's")
            out += spared_rank_note(s)
        else:   # a baseline exchanges with real peers: it waits for the slowest (as both engines say)
            out.append(f"{s.hardware.name} emulates {peers} for MoK (rank 0's "
                       f"pass); a {system} pass is not emulated: its latency is the slowest of "
                       f"the {s.ep} GPUs, each on this hardware")
    return out


# rank 0 below this share of the busiest GPU's routed rows: its emulated pass is not the step's
SPARED_SHARE = 0.8


def spared_rank_note(s: Scenario) -> list[str]:
    """A note where the routing spares rank 0, the rank an emulating GPU times: its rows under
    SPARED_SHARE of the busiest GPU's, so the pass reads shorter than the layer's step (which
    waits for the busiest rank) and can read shorter under skew than uniform."""
    from .analytic import loads

    rows = loads(s).rows
    busiest = int(rows.argmax())
    if rows[busiest] <= 0 or rows[0] >= SPARED_SHARE * rows[busiest]:
        return []
    return [f"the routing spares rank 0: it receives {int(rows[0])} routed rows, GPU {busiest} "
            f"{int(rows[busiest])}; this rank-0 pass is shorter than the busiest rank's, which the "
            f"layer's step waits for (a multi-GPU preset of the same GPU predicts the slowest GPU)"]


def resolve_params(scenario: Scenario, params: Params | str | None,
                   allow_other_hardware: bool = False) -> Params:
    if isinstance(params, Params):   # an object is used as given (studies pass derived hardware)
        return params
    return load_params(params, scenario.hardware.name, allow_other_hardware)


def _ms(x) -> float:
    return float(x) * 1e3


def analytic_mok(scenario: Scenario, config: Config, p: Params,
                 refuse_overflow: bool = True) -> Prediction:
    r = mok_config_terms(scenario, p, config, refuse_overflow)
    terms = {k: _ms(v[0]) for k, v in r["terms"].items()}
    work = {k: _ms(v[0]) for k, v in r["work"].items()}
    return Prediction(scenario, config, "mok", "analytic", sum(terms.values()), terms, work,
                      p.path, int(r["slowest_gpu"][0]),
                      extra={"bound": str(r["bound"][0]), "limiter": str(r["limiter"][0]),
                             "minibatches": int(r["minibatches"][0])})


def deepep_hybridep_note(scenario: Scenario, p: Params) -> str | None:
    """Why DeepEP and HybridEP come out alike where they do: both copy kernels outrun the link."""
    hw = scenario.hardware
    link = hw.link_gbps * p["link_eff"]
    caps = {s: copy_gbps(p, s, p[f"{s}_sms"]) / 1e9 for s in ("deepep", "hybridep")}
    if scenario.domains > 1 or min(caps.values()) < link \
            or COMM_KERNELS["deepep"].combine_pulls != COMM_KERNELS["hybridep"].combine_pulls:
        return None
    return (f"DeepEP ({p['deepep_sms']:g} SMs, {caps['deepep']:.0f} GB/s) and HybridEP "
            f"({p['hybridep_sms']:g} SMs, {caps['hybridep']:.0f} GB/s) both copy faster than the "
            f"{link:.0f} GB/s the NVLink port carries, so inside one domain both exchanges are "
            f"link-bound and equal"
            + (f", and both launch {p['deepep_ops']:g} host operations" if p["deepep_ops"] == p["hybridep_ops"] else "")
            + "; they differ only in the SMs left to the shared expert beside the dispatch")


def analytic_baseline(scenario: Scenario, system: str, p: Params) -> Prediction:
    r = baseline_terms(scenario, p, system)
    terms = {k: _ms(v) for k, v in r["terms"].items()}
    note = deepep_hybridep_note(scenario, p) if system in ("deepep", "hybridep") else None
    return Prediction(scenario, None, system, "analytic", sum(terms.values()), terms,
                      {k: _ms(v) for k, v in r["work"].items()}, p.path, r["slowest_gpu"],
                      extra={"notes": [note] if note else []})


def predict(scenario: Scenario, config: Config | dict | None = None, system: str = "mok",
            params: Params | str | None = None, engine: str = "analytic",
            allow_other_hardware: bool = False, refuse_overflow: bool = True,
            search_lag: bool = False, layer_capacity: bool = False) -> Prediction:
    """Predict one pass. `config` may be a Config, a dict of some knobs (the tuner picks the
    rest), or None (the tuner picks all). ``refuse_overflow=False``: a measured run's config is
    predicted even where the model's capacity headroom would refuse it (it ran, so it held).
    ``search_lag``: where the tuner picks knobs, it picks the kernel's work-list lag with them
    as MoKLayer does (tuner.lag_choices; the prediction's scenario carries it), instead of
    keeping the scenario's. ``layer_capacity``: where the tuner picks the capacity, it is raised
    to the bounds MoKLayer's is (capacity.tune_as_layer; the prediction's notes say so)."""
    if not isinstance(scenario, Scenario):
        raise MokInputError(f"predict: scenario {scenario!r} must be a mok_model Scenario")
    if system not in SYSTEMS:
        raise MokInputError(f"--system {system!r} must be one of {SYSTEMS}")
    if engine not in ENGINES:
        raise MokInputError(f"--engine {engine!r} must be one of {ENGINES}")
    for name, flag in (("allow_other_hardware", allow_other_hardware),
                       ("refuse_overflow", refuse_overflow), ("search_lag", search_lag),
                       ("layer_capacity", layer_capacity)):
        if not isinstance(flag, bool):
            raise MokInputError(f"{name} {flag!r} must be True or False")
    if not isinstance(config, (Config, dict, type(None))):
        raise MokInputError(f"config {config!r}: a Config, a dict of some knobs, or None (the "
                            f"tuner picks them)")
    if system != "mok" and (isinstance(config, Config) or config):
        given = sorted(config.as_dict() if isinstance(config, Config) else config)
        raise MokInputError(f"--system {system} has no MoK knobs; drop {given}")
    p = resolve_params(scenario, params, allow_other_hardware)
    healthy = scenario.healthy(engine)      # unset knobs are tuned on healthy links
    tuned: list[str] = []
    capacity_note = ""
    if system == "mok" and not isinstance(config, Config):
        from .capacity import tune_as_layer
        from .tuner import lag_choices, tune

        fixed = dict(config or {})
        lags = lag_choices(scenario) if search_lag and len(fixed) < len(Config().as_dict()) else None
        if layer_capacity:
            best, capacity_note = tune_as_layer(healthy, p, fixed, lags)
        else:
            best = tune(healthy, p, fixed=fixed, top=1, list_lags=lags).best
        tuned = sorted(set(best.config.as_dict()) - set(fixed))
        if lags:
            tuned.append("list_lag")
            scenario = scenario.with_(list_lag=best.list_lag)
        config = best.config
    if engine == "sim":
        from .sim import simulate

        pred = simulate(scenario, config if system == "mok" else None, system, p,
                        refuse_overflow=refuse_overflow, allow_other_hardware=allow_other_hardware)
    elif system == "mok":
        pred = analytic_mok(scenario, config, p, refuse_overflow)
    else:
        pred = analytic_baseline(scenario, system, p)
    pred.tuned = tuned
    if capacity_note:
        pred.extra["knob_notes"] = [f"tuned knobs: {capacity_note}, as MoKLayer raises it"]
    return add_notes(pred, p)


def add_notes(pred: Prediction, p: Params) -> Prediction:
    """Append the notes of the parameters and the pass to a prediction (either engine): for MoK,
    a GEMM shape the table never measured and the in-order list's hold; an older parameters
    file's parameters that took their prior."""
    notes = []
    if pred.system == "mok":
        from .gemm_table import unmeasured_shape_note
        notes += [unmeasured_shape_note(p.gemm_table, pred.scenario),
                  list_hold_note(pred, pred.config, p), gluon_minibatch_note(pred),
                  source_slice_note(pred, p)]
    notes.append(p.filled_note())
    pred.extra["notes"] = list(pred.extra.get("notes", [])) + [n for n in notes if n]
    return pred


def source_slice_note(pred: Prediction, p: Params) -> str | None:
    """A note where every GPU's minibatch 0 draws on the same sources (rows sorted by expert, then
    source rank: analytic.first_minibatch_sources) and the busiest of them sends at least twice
    what a GPU's minibatch receives: with rank order such slices can recur at every minibatch,
    which the analytic engine charges in the fill only (docs/sim-study.md "M", "N")."""
    from .analytic import first_minibatch_sources, tile_rows

    scn, cfg = pred.scenario, pred.config
    if (pred.engine != "analytic" or cfg is None or scn.ep <= 2 or scn.hardware.emulated_ranks
            or p["source_order_rotated"] >= 0.5 or pred.extra.get("minibatches", 1) < 2):
        return None
    _, egress = first_minibatch_sources(scn, float(cfg.minibatch), float(tile_rows(scn, p)),
                                        p["tile_aligned_minibatches"] >= 0.5)
    ratio = float(egress.max()) / (cfg.minibatch * (scn.ep - 1) / scn.ep)
    if ratio < 2.0:
        return None
    return (f"every GPU's minibatch 0 draws on the same sources (each expert's rows sorted by "
            f"source rank), the busiest sending {ratio:.1f}x what a GPU's minibatch receives; such "
            f"slices can recur at every minibatch, which this engine charges in the fill only: "
            f"check with `mok simulate` (docs/sim-study.md 'N': up to 2.2x at EP 144 with one "
            f"expert per GPU, nothing where the GPUs fall out of step; `--source-order rotated` "
            f"is the what-if without them)")


def gluon_minibatch_note(pred: Prediction) -> str | None:
    """A note where the Gluon FP8 pass is predicted at a minibatch its terms were not fitted or
    checked at (GLUON_MINIBATCHES): measured there, the pass ran much slower than predicted."""
    mb = pred.config.minibatch
    if pred.scenario.fp8_kernel != "gluon" or mb is None or mb in GLUON_MINIBATCHES:
        return None
    return (f"the Gluon FP8 pass's terms were fitted and checked at minibatch "
            f"{', '.join(str(m) for m in GLUON_MINIBATCHES)} only; at {mb} this prediction is "
            f"an extrapolation, and measured at 2,048 and 1,024 the pass took up to 1.47x and "
            f"1.35x the prediction (docs/calibration.md \"Session 28\")")


def list_hold_note(pred: Prediction, config: Config, p: Params) -> str | None:
    """A note where the kernel's in-order work list holds the compute SMs past the GEMM tiles'
    time for more than 5% of the pass (analytic.list_period; the analytic terms' list_hold,
    which the simulator's GEMMs include too)."""
    hold = pred.work_ms.get("list_hold")
    if hold is None:
        hold = _ms(mok_config_terms(pred.scenario, p, config, False)["work"]["list_hold"][0])
    if not hold > 0.05 * pred.latency_ms:
        return None
    return (f"at minibatch {config.minibatch} the kernel's in-order work list holds the compute "
            f"SMs {hold:.3f} ms past the GEMM tiles' time: each minibatch has few long gate/up items "
            f"ahead of many short down items that wait for them (docs/calibration.md \"The "
            f"in-order list\"); larger minibatches take fewer such steps, and a larger "
            f"work-list lag (now {pred.scenario.list_lag}; --list-lag) holds each less")


def best_baseline(scenario: Scenario, params: Params | str | None = None,
                  engine: str = "analytic", systems: tuple[str, ...] = BASELINES) -> Prediction:
    """The fastest of the given baseline systems for a workload."""
    preds = [predict(scenario, None, s, params, engine) for s in systems]
    return min(preds, key=lambda q: q.latency_ms)
