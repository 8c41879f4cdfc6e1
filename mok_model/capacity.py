"""The schedule capacity a layer runs: the tuner's least feasible capacity, raised to two routing
bounds so that the fixed-size schedule does not overflow.

The kernel's schedule holds C = ceil(capacity * P * N * min(k, E/P)) rows per rank
(mok_kernels/schedule.py). The tuner scores the least capacity the scenario's own routing needs
(tuner.least_capacity); a layer does not know the routing it will see, so the capacity it runs is
raised, where needed, to the smallest of the tuner's capacities (`tuner.CAPACITIES`) whose C
covers both bounds, each exceeded with probability below OVERFLOW_PROBABILITY a pass (Bernstein's
inequality):
- uniform routing (`uniform_need_rows`): every token routed to k distinct experts drawn
  uniformly and independently of other tokens (union bound over the P ranks);
- one hot expert (`hot_expert_need_rows`): one expert takes a route of every token, the most any
  expert can take (a router collapsed onto it, `onehot` routing; any `hot:X`), the other k - 1
  routes uniform over the other experts; the rank that holds it receives the most.
Since session 43: with the uniform bound alone (0.125) the layer's pick overflowed at EP 16 under
hot routing (expert 0 a tenth of the routes) on the H200, and the launch trapped. Several hot
experts on one rank can still exceed both: the kernel then traps the launch or raises
CapacityOverflowError, never drops rows; give capacity explicitly (1.0 never overflows) then.
Where the bounds' buffers do not fit the HBM, the uniform bound alone is taken and said so.

`mok predict` / `mok simulate` without knobs and MoKLayer without knobs (mok_kernels/knobs.py)
ask the same question through `tune_as_layer`.
"""

from __future__ import annotations

import math

from .errors import MokInputError
from .params import Params
from .scenario import Scenario
from .tuner import CAPACITIES, Scored, least_capacity, tune, tune_robust

OVERFLOW_PROBABILITY = 1e-9   # policy: a pass overflows the chosen capacity less often than this


def capacity_rows(ep: int, tokens: int, top_k: int, routed_experts: int, capacity: float) -> int:
    """Rows one rank's schedule holds: the kernel's formula (mok_kernels/schedule.py)."""
    return max(1, math.ceil(capacity * ep * tokens * min(top_k, routed_experts // ep)))


def uniform_need_rows(ep: int, tokens: int, top_k: int, routed_experts: int,
                      probability: float = OVERFLOW_PROBABILITY) -> int:
    """Rows a rank must hold so that uniform routing overflows it with probability < `probability`.

    Each of the P*N tokens sends X_t rows to a given rank, 0 <= X_t <= c = min(k, E/P), mean k/P,
    variance at most k (1/P)(1 - 1/P) (k distinct experts drawn without replacement vary less
    than with replacement); tokens are independent. Bernstein: P(sum - N k >= t) <=
    exp(-t^2 / (2 (n var + c t / 3))); solved for t at probability/P per rank. Capped at the worst
    case P*N*c (capacity 1.0).
    """
    p, n, k = ep, tokens, top_k
    c = min(k, routed_experts // p)
    var = k * (1.0 / p) * (1.0 - 1.0 / p)
    big_l = math.log(p / probability)
    a = big_l * c / 3.0
    t = a + math.sqrt(a * a + 2.0 * big_l * p * n * var)
    return min(math.ceil(n * k + t), p * n * c)


def hot_expert_need_rows(ep: int, tokens: int, top_k: int, routed_experts: int,
                         probability: float = OVERFLOW_PROBABILITY) -> int:
    """Rows the rank holding a hot expert must hold: that expert takes one route of each of the
    P*N tokens (the most one expert can take), each token's other k - 1 routes go to distinct
    experts drawn uniformly from the other E - 1, and the rank's other E/P - 1 experts catch
    Y_t of them: mean (k-1) q, q = (E/P - 1) / (E - 1), variance at most (k-1) q (1 - q), at most
    min(k-1, E/P - 1). Bernstein as uniform_need_rows (one rank: no union bound). Capped at the
    worst case P*N*min(k, E/P) (capacity 1.0)."""
    p, n, k, e = ep, tokens, top_k, routed_experts
    el = e // p
    c = min(k, el)
    if e <= 1:
        return p * n * c
    q = (el - 1) / (e - 1)
    cy = min(k - 1, el - 1)
    var = (k - 1) * q * (1.0 - q)
    big_l = math.log(1.0 / probability)
    a = big_l * cy / 3.0
    t = a + math.sqrt(a * a + 2.0 * big_l * p * n * var)
    return min(math.ceil(p * n * (1.0 + (k - 1) * q) + t), p * n * c)


def need_rows(ep: int, tokens: int, top_k: int, routed_experts: int) -> int:
    """Rows a rank's schedule must hold: the larger of the two bounds (module docstring)."""
    return max(uniform_need_rows(ep, tokens, top_k, routed_experts),
               hot_expert_need_rows(ep, tokens, top_k, routed_experts))


def safe_capacity(ep: int, tokens: int, top_k: int, routed_experts: int,
                  hot_expert: bool = True) -> float:
    """The smallest of the tuner's capacities whose schedule holds `need_rows` (with
    ``hot_expert=False``: the uniform-routing bound alone)."""
    need = (need_rows(ep, tokens, top_k, routed_experts) if hot_expert
            else uniform_need_rows(ep, tokens, top_k, routed_experts))
    for cap in sorted(CAPACITIES):
        if capacity_rows(ep, tokens, top_k, routed_experts, cap) >= need:
            return cap
    return 1.0


def layer_capacity(scenario: Scenario, params: Params) -> float | None:
    """The capacity MoKLayer raises the tuner's to for this scenario (the bounds' smallest above
    the least feasible one), or None where it keeps the tuner's (the least already holds the
    bounds; the Gluon FP8 pass, whose capacity is fixed)."""
    if scenario.fp8_kernel == "gluon":
        return None
    m = scenario.model
    safe = safe_capacity(scenario.ep, scenario.tokens, m.top_k, m.routed_experts)
    return safe if safe > least_capacity(scenario, params) else None


def tune_as_layer(scenario: Scenario, params: Params, fixed: dict,
                  list_lags: tuple[int, ...] | None = None,
                  robust: bool = False) -> tuple[Scored, str]:
    """The tuner's best for `scenario` with the knobs in `fixed`, at the capacity a layer runs
    where none is given: the least feasible one raised to the bounds, in one tuner question (the
    uniform bound alone where the bounds' buffers do not fit the HBM). `robust`: the setting
    whose worst regret over tuner.robust_routings is least (tuner.tune_robust; the scenario's
    routing is not used), what MoKLayer picks when not told the routing. Returns the best and a
    note for the knob source ("" where nothing was raised and nothing judged). The Gluon FP8
    pass's capacity is fixed (1.0): left as the tuner has it."""
    def ask(fx: dict) -> tuple[Scored, str]:
        if not robust:
            return tune(scenario, params, fixed=fx, top=1, list_lags=list_lags).best, ""
        r = tune_robust(scenario, params, fixed=fx, list_lags=list_lags)
        dropped = (f"; {', '.join(r.dropped)} overflows every setting at this capacity"
                   if r.dropped else "")
        return r.best, (f"robust over {', '.join(r.best.regret)}: worst regret "
                        f"{max(r.best.regret.values()):+.1%}{dropped}")

    def joined(*notes: str) -> str:
        return "; ".join(n for n in notes if n)

    safe = None if "capacity" in fixed else layer_capacity(scenario, params)
    if safe is None:
        return ask(fixed)
    m, ep, n = scenario.model, scenario.ep, scenario.tokens
    try:
        best, note = ask({**fixed, "capacity": safe})
        return best, joined(f"capacity raised to {safe} (uniform and hot-expert bounds)", note)
    except MokInputError:      # its buffers do not fit the HBM: the uniform bound alone
        cap = max(least_capacity(scenario, params),
                  safe_capacity(ep, n, m.top_k, m.routed_experts, hot_expert=False))
        try:
            best, note = ask({**fixed, "capacity": cap})
            return best, joined(f"capacity {cap} (the uniform bound: the hot-expert bound's "
                                f"{safe} does not fit the HBM)", note)
        except MokInputError:  # nor that: the tuner's least capacity, or its refusal naming
            best, note = ask(fixed)  # only the knobs the caller gave
            return best, joined(f"capacity {best.config.capacity} (the least that holds this "
                                f"routing: the uniform bound's {cap} does not fit the HBM)", note)
