"""Device job: the megakernel's tile shapes per shape class (single-GPU rank emulation).

    PYTHONPATH=. python3 -m mok_kernels.tile_sweep --out $OUT/tiles.jsonl [--deadline-s 400]
    PYTHONPATH=. python3 -m mok_kernels.tile_sweep --precision fp8 --out $OUT/tiles_fp8.jsonl \
        --workloads kimi-k2:8:4096,glm-5:8:4096

For each workload (model:EP:tokens, rank 0, uniform routing) it times the GEMMs alone and MoK
under every tile candidate (block_m, bn_gu, bn_dn, num_warps, num_stages) at fixed knobs, after
checking a sample of the routed rows this rank served and of its shared-expert rows against
float32. Records carry the tiles in ``tiles``; a candidate that fails its check is printed and
not recorded. The table in mok_kernels/tiles.py is read from these records.
"""

from __future__ import annotations

import re
import sys
import time

import torch

from mok_model.records import append_records, record_model

from .bench import Workload, _hardware, _software, make_record, run_gemm_only, time_events

CANDIDATES = {          # name: (block_m, bn_gu, bn_dn, num_warps, num_stages)
    "m128-g128-d256-w8-s4": (128, 128, 256, 8, 4),
    "m64-g128-d256-w8-s4": (64, 128, 256, 8, 4),
    "m128-g64-d256-w8-s4": (128, 64, 256, 8, 4),
    "m128-g128-d128-w8-s4": (128, 128, 128, 8, 4),
    "m64-g64-d128-w4-s4": (64, 64, 128, 4, 4),
    "m128-g128-d256-w8-s3": (128, 128, 256, 8, 3),
    # narrower column blocks: more work items where an expert has few row tiles (decode sizes)
    "m128-g128-d64-w8-s4": (128, 128, 64, 8, 4),
    "m128-g64-d64-w8-s4": (128, 64, 64, 8, 4),
    "m128-g64-d128-w8-s4": (128, 64, 128, 8, 4),
    # gate/up tiles in groups of G row tiles, column-major (KernelConfig.group_m)
    "m128-g128-d256-w8-s4-G4": (128, 128, 256, 8, 4, 4),
    "m128-g128-d256-w8-s4-G8": (128, 128, 256, 8, 4, 8),
    "m128-g128-d256-w8-s4-G16": (128, 128, 256, 8, 4, 16),
    # activation tiles through TMA as well (KernelConfig.tma_a): group_m, tma_a
    "m128-g128-d256-w8-s4-A": (128, 128, 256, 8, 4, 1, True),
    "m128-g128-d256-w8-s4-G8-A": (128, 128, 256, 8, 4, 8, True),
    "m128-g128-d256-w8-s3-A": (128, 128, 256, 8, 3, 1, True),
    "m128-g128-d256-w8-s3-G8-A": (128, 128, 256, 8, 3, 8, True),
}
FP8_CANDIDATES = {      # bn_gu 128; name: (block_m, bn_gu, bn_dn, warps, stages[, fp8_kernel])
    "f8-m64-g128-d256-w8-s4": (64, 128, 256, 8, 4),      # the fp8 default (fp8_kernel v2)
    "f8-m64-g128-d256-w4-s4": (64, 128, 256, 4, 4),
    "f8-m64-g128-d128-w4-s4": (64, 128, 128, 4, 4),
    "f8-m64-g128-d128-w8-s5": (64, 128, 128, 8, 5),
    "f8-m64-g128-d256-w8-s3": (64, 128, 256, 8, 3),
    "f8-m128-g128-d128-w8-s3": (128, 128, 128, 8, 3),
    "f8-m128-g128-d256-w8-s3": (128, 128, 256, 8, 3),
    # fp8_kernel v3-v5 (NOTES.md "FP8 v3-v5"); in `mok bench` 1.07-1.11x v2's time (2026-12-01),
    # not yet in the tile sweep
    "f8v3-m64-g128-d256-w8-s4": (64, 128, 256, 8, 4, "v3"),
    "f8v4-m64-g128-d256-w8-s4": (64, 128, 256, 8, 4, "v4"),
    "f8v4-m64-g128-d256-w8-s3": (64, 128, 256, 8, 3, "v4"),
    "f8v4-m64-g128-d128-w8-s4": (64, 128, 128, 8, 4, "v4"),
    "f8v5-m64-g128-d256-w8-s4": (64, 128, 256, 8, 4, "v5"),
}
# name-cNN: the candidate with copy_rows NN (rows per dispatch copy step); name-kNN: split_dn NN;
# name-bNN: dn_blocks NN (down column blocks an item walks)
# (the down GEMM's K loop in NN slices)
OPTION_SUFFIXES = {"c": "copy_rows", "k": "split_dn", "b": "dn_blocks"}
WORKLOADS = ("qwen3-235b-a22b:2:4096,qwen3-235b-a22b:2:8192,gpt-oss-120b:2:8192,kimi-k2:2:4096,"
             "glm-5:2:8192,qwen3-30b-a3b:8:4096,qwen3-30b-a3b:8:512,kimi-k2:16:256,"
             "kimi-k2:16:1024,llama4-maverick:8:4096")
SAMPLE = 64
TOL = 2e-2


def _rel(got: torch.Tensor, want: torch.Tensor) -> float:
    got = got.float()
    return float("inf") if not torch.isfinite(got).all() else float((got - want).norm() / want.norm())


def check(layer, wl: Workload) -> float:
    """Relative error of SAMPLE served routed rows (their combine slots) and SAMPLE shared-expert
    rows of this rank against float32."""
    from .reference import swiglu_ffn
    k, el, lo = wl.shape.topk, wl.el, wl.rank * wl.el
    flat = wl.ids.reshape(-1)
    served = ((flat >= lo) & (flat < lo + el)).nonzero().squeeze(1)
    served = served[torch.linspace(0, served.numel() - 1, min(SAMPLE, served.numel()),
                                   device=served.device).long()]
    w = wl.w
    want = torch.stack([swiglu_ffn(wl.x[s // k][None].float(), w.wg[e].float(), w.wu[e].float(),
                                   w.wd[e].float())[0]
                        for s, e in zip(served.tolist(), (flat[served] - lo).tolist())])
    err = _rel(layer.comb[served], want)
    if w.sg is not None:
        m = min(SAMPLE, wl.tokens)
        home = wl.x[wl.rank * wl.tokens:wl.rank * wl.tokens + m].float()
        err = max(err, _rel(layer.sh_out[:m], swiglu_ffn(home, w.sg.float(), w.su.float(),
                                                          w.sd.float())))
    return err


def candidate(name: str, table: dict) -> tuple[str, dict] | None:
    """(base candidate, options of its -cNN / -kNN / -bNN suffixes) of a candidate name; None if it is
    not a table entry with such suffixes, each at most once."""
    options = {}
    while name not in table:
        m = re.fullmatch(r"(.+)-([a-z])(\d+)", name)
        if m is None or m.group(2) not in OPTION_SUFFIXES:
            return None
        if OPTION_SUFFIXES[m.group(2)] in options:     # -c16-c32: one of two values, silently
            return None
        name, options[OPTION_SUFFIXES[m.group(2)]] = m.group(1), int(m.group(3))
    return name, options


def candidate_tiles(name: str, table: dict, fp8: bool) -> dict:
    """The KernelConfig tile options of a candidate name (candidate()): its table entry, its
    suffixes' options, and split_dn and dn_blocks 1 where it names none (the layer's own choices
    are per shape); group_m 1 and the FP8 kernel v2 where the entry names none."""
    base, options = candidate(name, table)
    bm, bg, bd, nw, ns, *kern = table[base]
    tiles = dict(block_m=bm, bn_gu=bg, bn_dn=bd, num_warps=nw, num_stages=ns,
                 **{"split_dn": 1, "dn_blocks": 1, **options})
    if fp8:
        tiles.update(fp8_kernel=kern[0] if kern else "v2", group_m=1)
    else:   # every candidate names its group_m (none: row tile by row tile)
        tiles.update(group_m=kern[0] if kern else 1)
        if len(kern) > 1 and kern[1]:
            tiles.update(tma_a=1)
    return tiles


def main(argv: list[str]) -> int:
    from mok_model.cli import deadline_arg, doc_parser, int_at_least, run_tool

    from .bench import MAX_ITERS
    p = doc_parser("python -m mok_kernels.tile_sweep", __doc__)
    p.add_argument("--out", required=True)
    p.add_argument("--workloads", default=WORKLOADS)
    p.add_argument("--candidates", default=None, help="comma list (default: every candidate of "
                   "the precision)")
    p.add_argument("--precision", default="bf16", choices=("bf16", "fp8"))
    p.add_argument("--comm-sms", default=None, help="comma list (default: 16 where a workload "
                   "has >= 16384 routes, else 32)")
    p.add_argument("--iters", type=int_at_least(1, MAX_ITERS), default=8)
    p.add_argument("--warmup", type=int_at_least(0, MAX_ITERS), default=2)
    p.add_argument("--deadline-s", type=deadline_arg, default=400)
    return run_tool(p, lambda a: sweep(a, argv), argv)


def _workloads(text: str) -> list[tuple[str, int, int]]:
    """--workloads MODEL:EP:TOKENS,...: each part checked (a preset, integers >= 1)."""
    from mok_model.cli import number_list
    from mok_model.errors import MokInputError
    from mok_model.presets import load_model

    from .bench import check_fits
    from mok_model.cli import distinct

    out = []
    for spec in distinct("--workloads", text):
        parts = spec.split(":")
        if len(parts) != 3:
            raise MokInputError(f"--workloads {spec!r}: each workload is MODEL:EP:TOKENS")
        experts = load_model(parts[0]).routed_experts
        ep, n = number_list(f"{parts[1]},{parts[2]}", f"--workloads {spec!r} (EP, tokens)")
        if experts % ep:
            raise MokInputError(f"--workloads {spec!r}: {parts[0]}'s {experts} experts do not "
                                f"divide over EP {ep}")
        check_fits(parts[0], ep, n, f"--workloads {spec!r}: tokens")
        out.append((parts[0], ep, n))
    return out


def sweep(a, argv: list[str]) -> int:
    """Time each candidate on each workload (flags checked first; a CUDA GPU)."""
    from mok_model.cli import distinct, number_list
    from mok_model.errors import MokInputError

    from . import require_cuda
    from .bench import capture_graph, check_comm_sms, check_records_out
    from .megakernel import KernelConfig, MoKLayer

    check_records_out(a.out, "--out")
    workloads = _workloads(a.workloads)
    comm_sms = number_list(a.comm_sms, "--comm-sms") if a.comm_sms is not None else None
    if comm_sms is not None:
        distinct("--comm-sms", a.comm_sms)
        check_comm_sms(comm_sms)
    fp8 = a.precision == "fp8"
    table = FP8_CANDIDATES if fp8 else CANDIDATES
    if a.candidates is not None:     # '' is refused below, never taken for every candidate
        distinct("--candidates", a.candidates)
    names = a.candidates.split(",") if a.candidates is not None else list(table)
    seen: dict = {}
    for name in names:
        if (parsed := candidate(name, table)) is None:
            raise MokInputError(f"--candidates {name!r}: not one of {', '.join(table)}, optionally "
                                f"followed by -cNN (copy_rows NN), -kNN (split_dn NN) and / or -bNN "
                                f"(dn_blocks NN), each at most once")
        same = seen.setdefault((parsed[0], tuple(sorted(parsed[1].items()))), name)
        if same != name:    # -c16 and -c016, or -k4-c64 and -c64-k4: the same points twice
            raise MokInputError(f"--candidates {a.candidates!r} names {same!r} (and as {name!r}) "
                                f"twice: each candidate once (a repeated value would rerun the same "
                                f"points)")
        try:    # a suffix value the kernel refuses, named before any GPU work
            KernelConfig(**candidate_tiles(name, table, fp8), precision=a.precision).validate()
        except ValueError as exc:
            raise MokInputError(f"--candidates {name!r}: {exc}") from None
    require_cuda()
    if fp8:
        from .fp8 import FP8_REL_TOL
    tol = FP8_REL_TOL if fp8 else TOL
    t0, hw, sw = time.time(), _hardware(), _software()
    cmd = "python3 -m mok_kernels.tile_sweep " + " ".join(argv)
    for model, ep, n in workloads:
        spec = f"{model}:{ep}:{n}"
        wl = Workload(model, ep, n, "uniform", 0, 0)
        comm = (comm_sms if comm_sms is not None
                else [16 if n * wl.shape.topk >= 16384 else 32])
        knobs = dict(dispatch="pull", combine="push", minibatch=2048, comm_sms=comm[0],
                     macrobatch=131072, capacity=1.0)
        common = dict(model=record_model(model), ep=ep, tokens=n, routing="uniform", seed=0,
                      hardware=hw, software=sw, breakdown={})
        note = f"single-GPU rank emulation: rank 0 of EP {ep}; graph replay; {cmd}"
        recs = [make_record(system="gemm-only", times=run_gemm_only(wl, a.iters, a.warmup),
                            note=note, knobs=knobs, **common)]
        line = [f"{spec}: gemm-only {recs[0]['latency_ms']['median']:.3f}"]
        for name, cs in ((n_, c) for c in comm for n_ in names):
            if time.time() - t0 > a.deadline_s:
                break
            knobs = dict(knobs, comm_sms=cs)
            tiles = candidate_tiles(name, table, fp8)
            # the previous candidate's layer goes before this one is built: at kimi-k2 EP 32 x
            # 8,192 tokens one layer's emulated combine buffers alone are 28 GiB, and two did not
            # fit an H100 (session 54)
            layer = fwd = None
            torch.cuda.empty_cache()
            try:
                layer = MoKLayer(wl.w, ep, n, wl.shape.topk, 0,
                                 KernelConfig(**knobs, **tiles, precision=a.precision,
                                              on_error="raise"),
                                 local_weights=True)
                fwd = lambda lay=layer, w=wl: lay.forward(w.x, w.ids, w.wts)  # noqa: E731
                fwd()
                err = check(layer, wl)
                if err > tol:
                    raise RuntimeError(f"relative error {err:.2e} > {tol}")
                layer.cfg.on_error = "trap"
                times = time_events(capture_graph(fwd), wl.refresh, a.iters, a.warmup)
            except Exception as exc:    # a stall, a wrong result, or out of shared memory
                print(f"{spec} {name} comm {cs}: FAILED {type(exc).__name__}: {exc}", flush=True)
                continue
            rec = make_record(system="mok", times=times, note=note, precision=a.precision,
                              tiles=tiles, knobs=knobs, **common)
            rec["rel_err_vs_fp32"] = err
            recs.append(rec)
            line.append(f"{name}/c{cs} {rec['latency_ms']['median']:.3f}")
        append_records(a.out, recs)
        print("; ".join(line) + f" ({time.time() - t0:.0f} s)", flush=True)
        del wl
        torch.cuda.empty_cache()
        if time.time() - t0 > a.deadline_s:
            break
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
