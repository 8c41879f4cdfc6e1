"""The in-order work list's period: the closed form against an item-level simulation of the list.

    python -m calibration.list_check --draws 300 --seed 11 [--lag 2]

mok_model/gemm_table.py `list_period` (held_period) gives the seconds per minibatch that the
megakernel's in-order work list allows in closed form. This tool draws kernel-shaped work (H,
I, row tiles per minibatch, compute SMs; item times at one SM's rate), simulates the list item
by item (`simulate`: gate/up of minibatch 0, then gate/up of i+1 before down of i (--lag L: of
i+L before down of i), each item to
the SM that frees first, a down item holding its SM until its minibatch's gate/up items are
done), keeps the draws where the list binds (the simulated period at least 5% over the items'
plain total over the SMs), and prints the mean and max error of the closed form and of the plain
total (docs/calibration.md "The in-order list"). Deterministic for a seed.
"""

from __future__ import annotations

import argparse
import heapq
import sys

import numpy as np

HIDDEN = (1024, 1536, 2048, 2880, 4096, 5120, 6144, 7168, 8192)
WIDTH = (256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 8192)
COMPUTE_SMS = (68, 84, 100, 116, 124)
SM_FLOPS_PER_US = 5.3e6     # one H200 SM at ~0.7 of its tensor peak, FLOP per microsecond
ITEM_US = 3.0               # an item's fixed cost (the phase mechanism's item_us, rounded)
MAX_DRAWS = 5000            # a few seconds per hundred draws


def simulate(sms: int, g: int, d: int, t_gu: float, t_dn: float, minibatches: int,
             lag: int = 1) -> list[float]:
    """When each minibatch's down items are done, for g gate/up items of t_gu and d down items
    of t_dn per minibatch on `sms` SMs taking items from the list in order (minibatch i's down
    items after minibatch i+lag's gate/up items)."""
    free = [0.0] * sms
    heapq.heapify(free)

    def take(n: int, t: float, ready: float) -> float:
        last = 0.0
        for _ in range(n):
            f = max(heapq.heappop(free), ready) + t
            heapq.heappush(free, f)
            last = max(last, f)
        return last
    gu_done = [take(g, t_gu, 0.0) for _ in range(min(lag, minibatches))]
    dn_done = []
    for i in range(minibatches):
        if i + lag < minibatches:
            gu_done.append(take(g, t_gu, 0.0))
        dn_done.append(take(d, t_dn, gu_done[i]))
    return dn_done


def simulated_period(sms: int, g: int, d: int, t_gu: float, t_dn: float, lag: int = 1) -> float:
    """The list's mean period per minibatch over minibatches 8-38 of 40 (past the pipeline's
    fill; the period is not steady from one minibatch to the next)."""
    done = simulate(sms, g, d, t_gu, t_dn, 40, lag)
    return (done[38] - done[8]) / 30


def draw(rng: np.random.Generator) -> tuple[int, int, int, float, float]:
    """One kernel-shaped (SMs, g, d, T_g, T_d): 128 x 256 gate/up items over K = H, 128 x 256
    down items over K = I (one K slice), 1-8 row tiles per minibatch."""
    sms, rt = int(rng.choice(COMPUTE_SMS)), int(rng.integers(1, 9))
    H, I = int(rng.choice(HIDDEN)), int(rng.choice(WIDTH))
    g, d = rt * (I // 128), rt * -(-H // 256)
    t_gu = ITEM_US + 2 * 128 * 256 * H / SM_FLOPS_PER_US
    t_dn = ITEM_US + 2 * 128 * 256 * I / SM_FLOPS_PER_US
    return sms, g, d, t_gu, t_dn


def compare(draws: int, seed: int, lag: int = 1) -> dict:
    """Errors of held_period and of the plain total against the simulation, where it binds,
    for a work list of lag `lag`."""
    from mok_model.gemm_table import held_period

    rng = np.random.default_rng(seed)
    held, plain = [], []
    while len(held) < draws:
        sms, g, d, t_gu, t_dn = draw(rng)
        if g + d > 4 * sms:          # many waves of items: the plain total holds
            continue
        total = (g * t_gu + d * t_dn) / sms
        sim = simulated_period(sms, g, d, t_gu, t_dn, lag)
        if sim < 1.05 * total:
            continue
        held.append(max(float(held_period(g, d, t_gu, t_dn, sms, lag)), total) / sim - 1)
        plain.append(total / sim - 1)
    h, p = np.abs(held), np.abs(plain)
    return {"draws": draws, "held_mean": float(h.mean()), "held_max": float(h.max()),
            "plain_mean": float(p.mean()), "plain_max": float(p.max())}


def main(argv: list[str] | None = None) -> int:
    from mok_model.cli import doc_parser, int_at_least, run_tool
    from mok_model.scenario import MAX_SEED

    p = doc_parser("python -m calibration.list_check", __doc__)
    p.add_argument("--draws", type=int_at_least(1), default=300)
    p.add_argument("--seed", type=int_at_least(0, MAX_SEED), default=11)
    p.add_argument("--lag", type=int_at_least(1), default=1,
                   help="the work list's lag (KernelConfig.list_lag), 1-8")
    return run_tool(p, _run, argv)


def _run(a: argparse.Namespace) -> int:
    from mok_model.errors import MokInputError
    from mok_model.scenario import MAX_LIST_LAG

    if a.draws > MAX_DRAWS:
        raise MokInputError(f"--draws {a.draws}: at most {MAX_DRAWS}")
    if a.lag > MAX_LIST_LAG:
        raise MokInputError(f"--lag {a.lag}: at most {MAX_LIST_LAG} (KernelConfig.list_lag)")
    r = compare(a.draws, a.seed, a.lag)
    print(f"{r['draws']} drawn kernel shapes where the list of lag {a.lag} binds (seed {a.seed}):")
    print(f"  closed form (held_period): mean error {100 * r['held_mean']:.1f}%, "
          f"max {100 * r['held_max']:.1f}%")
    print(f"  items' plain total:        mean error {100 * r['plain_mean']:.1f}%, "
          f"max {100 * r['plain_max']:.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
