"""Session 42 probe: work items of several column blocks walked in one flattened K loop
(KernelConfig.dn_blocks; call 1 also timed gate/up blocks, a flag removed after it: no gain)
against one block an item, on one H200 (rank 0 of an emulated EP group).

Why: on the narrow presets the megakernel's own GEMM phases run ~1.3x the library's grouped GEMMs
(qwen3-30b-a3b EP 8 4,096: 0.63-0.65 ms against 0.49; NOTES "Session 40"), where a down item's K
loop is 12 steps (I 768) and each item pays its pipeline's fill and its store alone. With
several blocks an item, the next block's first loads are in flight while this one stores.

    PYTHONPATH=. python3 benchmarks/device/s42_blocks.py warm MODEL EP TOKENS GU DN
    PYTHONPATH=. python3 benchmarks/device/s42_blocks.py bits CASE_INDEX OUT.jsonl
    PYTHONPATH=. python3 benchmarks/device/s42_blocks.py time OUT.jsonl SECONDS [timed|sweep|modes|decode]
    PYTHONPATH=. python3 benchmarks/device/s42_blocks.py jobs timed|sweep|modes|decode   # warm-up lines

bits: what rank 0 computes (the combine slots of the routes it serves, its shared rows) with
blocks 1 and with the case's blocks, same inputs, split_dn 1 both: must be identical.
time: the launch alone (graph replay, fresh token values, median of 20; benchmarks/
copy_beside_gemm.py time_form), the pass and its GEMM phases alone (skip_copy), each variant in
alternating order over two rounds.
"""
import json
import statistics
import sys
import time

import torch

sys.path.insert(0, "benchmarks")
from copy_beside_gemm import time_form  # noqa: E402

from mok_kernels.bench import Workload  # noqa: E402
from mok_kernels.megakernel import KernelConfig, MoKLayer  # noqa: E402

D = "calibration/drawn_shapes"
BITS = [  # (model, ep, tokens, seed, dispatch, combine, minibatch, comm_sms, gu, dn, extra)
    ("qwen3-30b-a3b", 8, 1024, 0, "pull", "push", 1024, 8, 4, 3, {}),
    ("qwen3-30b-a3b", 8, 1024, 0, "pull", "pull", 1024, 16, 2, 2, {}),
    ("qwen3-30b-a3b", 8, 1024, 0, "push", "push", 1024, 6, 4, 3, {}),
    ("qwen3-30b-a3b", 8, 1024, 0, "push", "pull", 1024, 12, 5, 8, {}),
    ("qwen3-30b-a3b", 8, 1024, 0, "pull", "push", 1024, 8, 1, 3, {"tma_a": True}),
    ("gpt-oss-120b", 8, 512, 0, "pull", "push", 1024, 8, 3, 5, {}),
    (f"{D}/seed14/syn14-h3328-i1280-e256-k7-s1.toml", 16, 640, 14, "pull", "pull", 512, 6, 2,
     4, {}),
    (f"{D}/seed14/syn14-h3328-i1280-e256-k7-s1.toml", 16, 640, 14, "push", "push", 512, 12, 3,
     2, {}),
    (f"{D}/seed13/syn13-h4352-i384-e160-k10.toml", 4, 640, 13, "pull", "push", 2048, 8, 2, 3,
     {}),
]
TIMED = [  # (model, ep, tokens, dispatch, combine, minibatch, comm_sms, [(gu, dn), ...])
    ("qwen3-30b-a3b", 8, 4096, "pull", "push", 4096, 32,
     [(1, 1), (2, 1), (1, 2), (2, 2), (1, 4), (3, 4)]),
    ("qwen3-30b-a3b", 32, 4096, "pull", "push", 4096, 32, [(1, 1), (2, 2), (1, 4)]),
    ("minimax-m2", 32, 4096, "pull", "push", 4096, 32, [(1, 1), (2, 2), (1, 4)]),
    ("qwen3-next-80b-a3b", 8, 4096, "pull", "push", 4096, 32, [(1, 1), (2, 2), (1, 4)]),
    ("kimi-k2", 8, 4096, "pull", "push", 4096, 16, [(1, 1), (2, 2), (1, 4)]),
]
# call 2: dn_blocks alone across the presets (gate/up blocks lost with dn 4 in call 1)
SWEEP = [
    ("qwen3-30b-a3b", 8, 4096, "pull", "push", 4096, 32, [(1, d) for d in (1, 2, 3, 4, 6, 8)]),
    ("qwen3-30b-a3b", 32, 4096, "pull", "push", 4096, 32, [(1, d) for d in (1, 4, 8)]),
    ("qwen3-30b-a3b", 8, 1024, "pull", "push", 4096, 32, [(1, d) for d in (1, 2, 4, 8)]),
    ("qwen3-30b-a3b", 32, 256, "pull", "push", 4096, 32, [(1, d) for d in (1, 2, 4)]),
    ("qwen3-next-80b-a3b", 8, 4096, "pull", "push", 4096, 32, [(1, d) for d in (1, 2, 4, 8)]),
    ("qwen3-235b-a22b", 32, 4096, "pull", "push", 4096, 32, [(1, d) for d in (1, 2, 3, 4)]),
    ("glm-4.5", 32, 4096, "pull", "push", 4096, 32, [(1, d) for d in (1, 2, 3)]),
    ("minimax-m2", 32, 4096, "pull", "push", 4096, 32, [(1, d) for d in (1, 2, 3)]),
    ("gpt-oss-120b", 32, 4096, "pull", "push", 4096, 32, [(1, d) for d in (1, 2)]),
    ("glm-5", 8, 4096, "pull", "push", 4096, 32, [(1, d) for d in (1, 2)]),
    ("kimi-k2", 32, 4096, "pull", "push", 4096, 32, [(1, d) for d in (1, 2)]),
]

# call 6: the combine modes (seed 17's registration read pull combine 15-36% slower than
# predicted on the one shape whose rule gives 2 blocks)
MODES = [
    (f"{D}/seed17/syn17-h5120-i1088-e32-k6-s1.toml", 32, 4608, "push", "pull", 2048, 32,
     [(1, 1), (1, 2)]),
    (f"{D}/seed17/syn17-h5120-i1088-e32-k6-s1.toml", 32, 4608, "pull", "pull", 2048, 32,
     [(1, 1), (1, 2)]),
    (f"{D}/seed17/syn17-h5120-i1088-e32-k6-s1.toml", 32, 4608, "pull", "push", 4096, 32,
     [(1, 1), (1, 2)]),
    ("qwen3-30b-a3b", 8, 4096, "pull", "pull", 4096, 32, [(1, 1), (1, 4)]),
    ("qwen3-30b-a3b", 8, 4096, "push", "pull", 4096, 32, [(1, 1), (1, 4)]),
    ("qwen3-30b-a3b", 8, 4096, "push", "push", 4096, 32, [(1, 1), (1, 4)]),
]
# prepared for session 43: decode sizes, where the rule's item floor (one expected down item an
# SM) keeps 1 block but qwen3-30b-a3b EP 32 256 read 0.93 at 2 (call 2), and where it picks 2-4
DECODE = [
    ("qwen3-30b-a3b", 32, 256, "pull", "push", 4096, 32, [(1, 1), (1, 2), (1, 4)]),
    ("qwen3-30b-a3b", 32, 512, "pull", "push", 4096, 32, [(1, 1), (1, 2), (1, 4)]),
    ("qwen3-next-80b-a3b", 32, 256, "pull", "push", 4096, 32, [(1, 1), (1, 2), (1, 4)]),
    ("qwen3-next-80b-a3b", 8, 256, "pull", "push", 4096, 32, [(1, 1), (1, 2), (1, 4)]),
    ("qwen3-next-80b-a3b", 16, 1024, "pull", "push", 4096, 32, [(1, 1), (1, 2), (1, 4)]),
    ("glm-4.5", 8, 256, "pull", "push", 4096, 32, [(1, 1), (1, 2)]),
    ("minimax-m2", 8, 256, "pull", "push", 4096, 32, [(1, 1), (1, 2)]),
    ("qwen3-235b-a22b", 32, 256, "pull", "push", 4096, 32, [(1, 1), (1, 2)]),
]
CASES = {"timed": TIMED, "sweep": SWEEP, "modes": MODES, "decode": DECODE}


def jobs(cases: list) -> None:
    """The warm-up lines of a case list: one compile per (model, variant)."""
    seen = set()
    for model, ep, n, disp, comb, _, _, variants in cases:
        for gu, dn in variants:
            if (model, disp, comb, dn) not in seen:
                seen.add((model, disp, comb, dn))
                print(f"warm {model} {ep} {n} {gu} {dn} {disp} {comb}")


def knobs_of(disp, comb, mb, cs) -> dict:
    return dict(dispatch=disp, combine=comb, minibatch=mb, comm_sms=cs, macrobatch=131072,
                capacity=1.0)


def warm(model: str, ep: int, n: int, gu: int, dn: int, disp: str = "pull",
         comb: str = "push") -> None:
    """Compile a timed variant of one workload (one forward in the case's modes)."""
    wl = Workload(model, ep, n, "uniform", 0, 0)
    cfg = KernelConfig(**knobs_of(disp, comb, 4096, 32), split_dn=1, dn_blocks=dn,
                       on_error="raise")
    layer = MoKLayer(wl.w, ep, n, wl.shape.topk, 0, cfg, local_weights=True)
    layer.forward(wl.x, wl.ids, wl.wts)
    torch.cuda.synchronize()
    print(f"warm {model} {ep} {n} gu {gu} dn {dn}: ok", flush=True)


def bits(i: int, path: str) -> int:
    model, ep, n, seed, disp, comb, mb, cs, gu, dn, extra = BITS[i]
    wl = Workload(model, ep, n, "uniform", seed, 0)
    flat = wl.ids.reshape(-1)
    served = ((flat >= 0) & (flat < wl.el)).nonzero().squeeze(1)
    res = []
    for _g, d in ((1, 1), (gu, dn)):
        cfg = KernelConfig(**knobs_of(disp, comb, mb, cs), split_dn=1, on_error="raise",
                           dn_blocks=d, **extra)
        layer = MoKLayer(wl.w, ep, n, wl.shape.topk, 0, cfg, local_weights=True)
        layer.forward(wl.x, wl.ids, wl.wts)
        torch.cuda.synchronize()
        res.append(torch.cat([layer.comb[served].reshape(-1)]
                             + ([layer.sh_out[:n].reshape(-1)] if wl.w.sg is not None else [])))
        del layer
    same = torch.equal(res[0], res[1]) and bool(torch.isfinite(res[0].float()).all())
    line = {"check": "bits", "model": model, "ep": ep, "tokens": n, "dispatch": disp,
            "combine": comb, "minibatch": mb, "comm_sms": cs, "gu_blocks": gu, "dn_blocks": dn,
            "extra": extra, "identical": same}
    print(json.dumps(line), flush=True)
    with open(path, "a") as out:
        out.write(json.dumps(line) + "\n")
    return 0 if same else 1


def timed(path: str, budget: float, cases: list) -> None:
    deadline = time.time() + budget
    med = statistics.median
    with open(path, "a") as out:
        for model, ep, n, disp, comb, mb, cs, variants in cases:
            wl = Workload(model, ep, n, "uniform", 0, 0)
            knobs = knobs_of(disp, comb, mb, cs)
            got: dict = {}
            for rnd in range(2):
                order = [(f, v) for f in ("pass", "gemm") for v in variants]
                for form, (gu, dn) in (order if rnd == 0 else order[::-1]):
                    if time.time() > deadline:
                        print("deadline", flush=True)
                        return
                    opts = dict(split_dn=1, dn_blocks=dn,
                                **({"skip_copy": True} if form == "gemm" else {}))
                    times, _ = time_form(wl, knobs, 20, **opts)
                    got.setdefault(f"{form}_g{gu}d{dn}", []).extend(times)
            row = {k: med(t) for k, t in got.items()}
            line = {"check": "time", "model": model, "ep": ep, "tokens": n, "knobs": knobs,
                    "launch_ms": row, "times": got}
            out.write(json.dumps(line) + "\n")
            out.flush()
            base_p, base_g = row["pass_g1d1"], row["gemm_g1d1"]
            print(f"{model}:{ep}:{n} {disp}/{comb} c{cs}: pass g1d1 {base_p:.3f}, gemm g1d1 "
                  f"{base_g:.3f}; " + ", ".join(
                      f"g{g}d{d} pass {row[f'pass_g{g}d{d}'] / base_p:.3f} gemm "
                      f"{row[f'gemm_g{g}d{d}'] / base_g:.3f}" for g, d in variants[1:]),
                  flush=True)
            del wl
            torch.cuda.empty_cache()


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "warm":
        warm(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]),
             *sys.argv[7:9])
    elif cmd == "bits":
        sys.exit(bits(int(sys.argv[2]), sys.argv[3]))
    elif cmd == "jobs":
        jobs(CASES[sys.argv[2]])
    else:
        timed(sys.argv[2], float(sys.argv[3]), CASES[sys.argv[4] if len(sys.argv) > 4 else "timed"])
