"""`simulate(scenario, config, system, params, trace)`: the discrete-event engine behind
`predict(..., engine="sim")`, answering with the same Prediction as the analytic model."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from ..analytic import mok_config_terms, scale_out_time
from ..errors import MokInputError, is_whole
from ..params import Params
from ..scenario import SYSTEMS, Config, Scenario, default_config
from . import trace as tr
from .mok import MokSim
from .network import fabric_summary, merge_time, without_scale_out

TRACE_GPUS = 8  # traces stay bounded at large EP: only the first GPUs are written


def _events(env) -> int:
    """Events the SimPy environment scheduled (its event id counter)."""
    eid = getattr(env, "_eid", None)
    return int(next(eid)) if eid is not None else -1


def _resolve(scenario: Scenario, params, allow_other_hardware: bool = False) -> Params:
    from ..predict import resolve_params

    return resolve_params(scenario, params, allow_other_hardware)


SCHEDULES = ("published", "naive")
MERGE_MAX_S = 1e-4   # merge windows the simulator is meant for: docs/sim-study.md measures 0-6 us


def _check_args(scenario, config, system, schedule, trace_gpus, max_peers, chunk_bytes, merge_s,
                refuse_overflow, allow_other_hardware) -> None:
    """Refuse simulate()'s arguments the way the CLI refuses its flags: one line each."""
    if not isinstance(scenario, Scenario):
        raise MokInputError(f"simulate: scenario {scenario!r} must be a mok_model Scenario")
    if system not in SYSTEMS:
        raise MokInputError(f"simulate: system {system!r} must be one of {SYSTEMS}")
    if config is not None and not isinstance(config, Config):
        raise MokInputError(f"simulate: config {config!r} must be a Config or None (predict() tunes "
                            f"the knobs a dict leaves out)")
    if system != "mok" and config is not None:
        raise MokInputError(f"simulate: system {system} has no MoK knobs; drop the config")
    if schedule not in SCHEDULES:
        raise MokInputError(f"simulate: schedule {schedule!r} must be one of {SCHEDULES}")
    for name, v in (("trace_gpus", trace_gpus), ("max_peers", max_peers)):
        if not is_whole(v):
            raise MokInputError(f"simulate: {name}={v!r} must be a whole number >= 1")
    if isinstance(chunk_bytes, bool) or not isinstance(chunk_bytes, (int, float, np.number)) \
            or not np.isfinite(chunk_bytes) or chunk_bytes < 1:
        raise MokInputError(f"simulate: chunk_bytes={chunk_bytes!r} must be a finite number >= 1")
    if merge_s is not None and (isinstance(merge_s, bool) or not isinstance(merge_s, (int, float, np.number))
                                or not 0 <= merge_s <= MERGE_MAX_S):
        raise MokInputError(f"simulate: merge_s={merge_s!r} must be None (the default window) or a "
                            f"number of seconds in [0, {MERGE_MAX_S:g}]")
    for name, v in (("refuse_overflow", refuse_overflow), ("allow_other_hardware", allow_other_hardware)):
        if not isinstance(v, bool):
            raise MokInputError(f"simulate: {name}={v!r} must be True or False")


def _prologue(scn: Scenario, p: Params, cfg: Config, refuse_overflow: bool) -> dict[str, float]:
    """launch, schedule, reduction and fixed terms (seconds): the analytic formulas, reused."""
    r = mok_config_terms(scn, p, cfg, refuse_overflow)
    return {k: float(r["terms"][k][0]) for k in ("launch", "schedule", "reduction", "quantize", "fixed")}


# minibatches the simulator walks on the busiest GPU at most (about 5 ms of this machine's CPU
# each: 1,461 took 7 s for glm-5 at EP 32 on gb300-nvl72); past it, a run looks like a hang
MAX_SIM_MINIBATCHES = 4096
# the most work (sim_work) a simulation takes on. Measured on this 2-core machine (session 64,
# kimi-k2 on gb300-nvl72, its CPU shared with other jobs): EP 64, 16,384 tokens 0.28 million in
# 17 s; EP 128 (2 domains), 2,048 tokens, minibatch 256 0.87 million in 26 s; EP 384 (6 domains),
# 1,024 tokens 0.95 million in 15-28 s, minibatch 64 1.45 million in 67 s; with 4,096 tokens
# 2.28 million in 144 s and, minibatch 256, 2.75 million in over 300 s; the scale-up-domains
# study's EP 1,024 point 3.7 million in 422 s. The limit refuses what would take over ten minutes.
MAX_SIM_WORK = 6e6
CROSS_DOMAIN_COST = 4   # a flow of a pass across domains (NICs, rails) against one in one domain


def sim_work(scenario: Scenario, steps: int, rows: float, max_peers: int = 128,
             chunk_bytes: float = 2 ** 20) -> float:
    """About the flows a simulation schedules: every GPU's dispatch and combine messages (one per
    minibatch and peer it has rows from: at most its `steps` minibatches plus its local experts x
    peers) and chunks of its `rows` (the busiest GPU's), a pass across domains counting
    CROSS_DOMAIN_COST times, plus the pass on one domain its scale_out term is split from."""
    P = scenario.ep
    messages = steps + scenario.local_experts * min(P - 1, max_peers)
    chunks = rows * 2 * scenario.model.hidden / chunk_bytes
    passes = 1 if scenario.domains == 1 else CROSS_DOMAIN_COST + 1
    return float(passes * P * 2 * (messages + chunks))


def check_work(scenario: Scenario, config: Config, rows: float, max_peers: int = 128,
               chunk_bytes: float = 2 ** 20) -> None:
    """Refuse a simulation that would look like a hang: a minibatch so small that it walks more
    than MAX_SIM_MINIBATCHES minibatches on the busiest GPU (`rows` routed rows there), or more
    than MAX_SIM_WORK work (minutes of CPU); the analytic engine answers both in a second."""
    steps = int(np.ceil(rows / config.minibatch))
    if steps > MAX_SIM_MINIBATCHES:
        least = int(np.ceil(rows / MAX_SIM_MINIBATCHES))
        raise MokInputError(f"--minibatch {config.minibatch}: the simulator would walk {steps} "
                            f"minibatches on the busiest GPU (at most {MAX_SIM_MINIBATCHES}); use "
                            f"--engine analytic (mok predict), or --minibatch {least} or more")
    work = sim_work(scenario, steps, rows, max_peers, chunk_bytes)
    if work > MAX_SIM_WORK:
        D = scenario.domains
        lower = "lower --tokens or --ep" + (", or raise --minibatch" if sim_work(
            scenario, 1, rows, max_peers, chunk_bytes) <= MAX_SIM_WORK else "")
        raise MokInputError(f"--ep {scenario.ep} --tokens {scenario.tokens} --minibatch "
                            f"{config.minibatch}: the simulation would take over ten minutes (the work of about "
                            f"{work / 1e6:.1f} million flows{f' across {D} domains' if D > 1 else ''}, "
                            f"at most {MAX_SIM_WORK / 1e6:g} million); {lower}, or use --engine "
                            f"analytic (mok predict)")


def traced_set(ep: int, trace_gpus: int, slowest: int) -> frozenset[int]:
    """The GPUs a trace keeps: the first trace_gpus, the last of them swapped for the slowest GPU
    when it is not among them (a trace always shows the GPU that ends the pass)."""
    kept = list(range(min(trace_gpus, ep)))
    if slowest not in kept:
        kept = kept[:-1] + [slowest] if kept else [slowest]
    return frozenset(kept)


def simulate(scenario: Scenario, config: Config | None = None, system: str = "mok",
             params: Params | str | None = None, trace: str | Path | None = None,
             schedule: str = "published", trace_gpus: int = TRACE_GPUS,
             max_peers: int = 128, chunk_bytes: float = 2 ** 20, merge_s: float | None = None,
             refuse_overflow: bool = True, allow_other_hardware: bool = False):
    """Simulate one layer pass on every GPU; the pass ends when the slowest GPU ends.

    schedule: "published" (comm and compute walk the work in different orders) or "naive"
    (dispatch i, compute i, combine i in order). max_peers: above this many peers, peers are
    aggregated into groups whose links and SMs are summed (keeps EP 576 fast). chunk_bytes:
    larger messages are cut into chunks of at most this size. merge_s: flow starts and ends
    closer than this share one max-min recomputation (default: merge_time(scenario)).
    A trace keeps trace_gpus GPUs, always including the slowest: the GPU with the most routed
    rows is guessed first, and a missed guess reruns the (deterministic) simulation.
    refuse_overflow=False: a measured run's config is simulated even where the capacity headroom
    would refuse it (calibration.scoring; the run happened, so its schedule held).
    allow_other_hardware: parameters fitted for other hardware are used anyway (predict's flag).
    """
    from ..analytic import loads, one_domain

    _check_args(scenario, config, system, schedule, trace_gpus, max_peers, chunk_bytes, merge_s,
                refuse_overflow, allow_other_hardware)
    if trace:
        from ..fileio import TRACE_KIND, check_output_file, refuse_other_kind
        check_output_file(trace, "trace", ".json")   # a folder, a missing one: one line
        refuse_other_kind(Path(trace), "trace", (TRACE_KIND,))   # the command line warns, not here
    params = _resolve(scenario, params, allow_other_hardware)

    if system == "mok" and isinstance(config, Config):
        check_work(scenario, config, float(np.max(loads(scenario).rows)), max_peers, chunk_bytes)
    if not trace:
        pred = _simulate(scenario, config, system, params, None, schedule, frozenset(), max_peers,
                         chunk_bytes, merge_s, refuse_overflow)
    else:
        guess = 0 if scenario.hardware.emulated_ranks else int(np.argmax(loads(scenario).rows))
        kept = traced_set(scenario.ep, trace_gpus, guess)
        pred = _simulate(scenario, config, system, params, trace, schedule, kept, max_peers,
                         chunk_bytes, merge_s, refuse_overflow)
        if pred.slowest_gpu not in kept:
            kept = traced_set(scenario.ep, trace_gpus, pred.slowest_gpu)
            pred = _simulate(scenario, config, system, params, trace, schedule, kept, max_peers,
                             chunk_bytes, merge_s, refuse_overflow)
        pred.extra["traced_gpus"] = sorted(kept)
    if scenario.domains > 1:
        # spanning domains is its own term, as in the analytic model: the other terms are those of
        # the same pass simulated on one domain, scale_out what the scale-out links add
        one = one_domain(scenario)
        one = one.with_(hardware=one.hardware.with_(degrade=without_scale_out(one.hardware.degrade)))
        one = _simulate(one, config, system, params, None, schedule, frozenset(), max_peers,
                        chunk_bytes, merge_s, refuse_overflow)
        extra = scale_out_time(pred.latency_ms, one.latency_ms)
        if extra >= 0:
            pred.breakdown_ms = {**one.breakdown_ms, "scale_out": extra}
        else:
            # the pass on several domains ended first (a --degrade'd GPU whose NVLink carries
            # only its own domain's rows there, or a different order of the same copies): the
            # domains added nothing, and a negative term would not be a cost; the breakdown is
            # the pass's own, which adds up to its latency
            pred.breakdown_ms = {**pred.breakdown_ms, "scale_out": 0.0}
    return pred


def _simulate(scenario: Scenario, config: Config | None, system: str, params, trace,
              schedule: str, trace_gpus: frozenset[int], max_peers: int, chunk_bytes: float,
              merge_s: float | None, refuse_overflow: bool = True):
    """One simulation; message spans are recorded for the GPUs in trace_gpus."""
    from ..predict import Prediction

    if system not in SYSTEMS:
        raise MokInputError(f"--system {system!r} must be one of {SYSTEMS}")
    p = _resolve(scenario, params)
    t0 = time.perf_counter()
    if system != "mok":
        from .baselines import simulate_baseline

        return simulate_baseline(scenario, system, p, trace, trace_gpus, max_peers, chunk_bytes, merge_s)
    cfg = (config or default_config(scenario)).check_for(scenario)
    pre = _prologue(scenario, p, cfg, refuse_overflow)
    sim = MokSim(scenario, p, cfg, schedule, trace_gpus, max_peers, chunk_bytes,
                 merge_time(scenario) if merge_s is None else merge_s)
    sim.run()
    P = scenario.ep
    pipe = sim.pipe_end
    slow = int(np.argmax(pipe))
    typ = int(np.argsort(pipe, kind="stable")[P // 2])
    if scenario.hardware.emulated_ranks:  # one GPU runs rank 0 of the group: what is measured
        slow = typ = 0
    fill = float(sim.first_gemm[typ])
    drain = float(pipe[typ] - sim.compute_end[typ])
    # back-pressure waits overlap compute (they show as "ring wait" spans); slot recycling is
    # charged to the critical path as in the analytic model
    ring = float(min(sim.ring_wrap[typ], max(pipe[typ] - fill - drain, 0.0)))
    terms = {"launch": pre["launch"], "schedule": pre["schedule"], "pipeline_fill": fill,
             "steady_state": float(pipe[typ]) - fill - drain - ring, "pipeline_drain": drain,
             "ring_buffer": ring, "load_imbalance": float(pipe[slow] - pipe[typ]),
             "reduction": pre["reduction"], "quantize": pre["quantize"], "fixed": pre["fixed"]}
    terms_ms = {k: v * 1e3 for k, v in terms.items()}
    latency = sum(terms_ms.values())
    sm = sim.sm[slow]
    plan = sim.plan
    M = int(plan.minibatches[slow])
    waits = ((sim.dispatch_wait + (0.0 if sim.kpush else sim.remote_wait)) * M
             + (sim.remote_wait if sim.kpush else sim.sig_local))
    work = {"dispatch": sm.busy_op[0], "combine": sm.busy_op[1],
            "routed_gemm": float(plan.gate_up[slow].sum() + plan.down[slow].sum()
                                 + M * p["minibatch_overhead_us"] * 1e-6),
            "shared_expert": plan.shared, "signals": waits,
            "link_egress": sim.link_busy(slow)["nvlink-up"],
            "link_ingress": sim.link_busy(slow)["nvlink-down"],
            "comm_sms": sm.busy_s}
    # the busiest resource of the median GPU names what bounds the pass (as the analytic "bound")
    busy = {"compute SMs": float(plan.gate_up[typ].sum() + plan.down[typ].sum() + plan.shared),
            "comm SMs": sim.sm[typ].busy_s,
            "links": max(sim.link_busy(typ).values())}
    limiter = max(busy, key=busy.get)
    offset = pre["launch"] + pre["schedule"]
    spans = [(g, t, n, s + offset, d) for g, t, n, s, d in sim.spans]
    spans += [(g, t, n, s + offset, d) for g, t, n, s, d in (sim.msg_trace or [])]
    for g in range(P):
        spans.append((g, tr.HOST, "launch+schedule", 0.0, offset))
        spans.append((g, tr.HOST, "reduction", offset + float(pipe[g]), pre["reduction"]))
    n_events = _events(sim.env) + 2 * sim.fluid.flows  # SimPy events, flow starts and ends
    wall = time.perf_counter() - t0
    extra = {"events": n_events, "invariants": "ok", "schedule": schedule,
             "minibatches": int(plan.minibatches[slow]), "sim_seconds": round(wall, 3),
             "dispatch_signal_wait_ms": float(np.median(sim.signal_wait)) * 1e3,  # per minibatch
             "ring_wait_ms": float(sim.ring_wait[typ]) * 1e3,
             "busiest_gpu": int(np.argmax(sim.owner_done)),  # whose own work ends last
             "bound": "compute" if limiter == "compute SMs" else "comm", "limiter": limiter,
             "peer_groups": int(plan.groups.max()) + 1 if plan.grouped else None,
             "gpu_end_ms": {"min": float(pipe.min() + offset) * 1e3, "median": float(pipe[typ] + offset) * 1e3,
                            "max": float(pipe[slow] + offset) * 1e3},
             "timelines": _timelines(spans, P),
             "fabric": fabric_summary(sim.net, sim.fluid)}
    if trace:
        extra["trace_events"] = tr.write_trace(trace, spans, trace_gpus, P,
                                                {"system": "mok", "schedule": schedule,
                                                 **scenario.describe(), "config": cfg.as_dict()},
                                                sim.span_args)
        extra["trace"] = str(trace)
    return Prediction(scenario, cfg, "mok", "sim", latency, terms_ms,
                      {k: v * 1e3 for k, v in work.items()}, p.path, slow, extra=extra)


def _timelines(spans: list, P: int) -> dict[int, list]:
    """Per GPU: [(thread, name, start_ms, dur_ms)] of compute phases and operation streams."""
    out: dict[int, list] = {g: [] for g in range(P)}
    for g, t, n, s, d in spans:
        if t in (tr.HOST, tr.DISPATCH, tr.COMBINE, tr.COMPUTE_SMS) and 0 <= g < P:
            out[g].append((tr.THREAD_NAMES[t], n, s * 1e3, d * 1e3))
    return out
