"""Per-item cost model of the backward megakernel (mok_kernels/backward.py), one rank of EP 8,
uniform routing: a modelling aid for choosing tile options before a GPU run, not a measurement.

Each item class (A: SwiGLU backward, X: dX, W: weight gradients) gets, per SM, a roofline over
its K steps (tensor FLOPs at 4096 FLOP/clk, shared-memory traffic at 128 B/clk: cp.async writes
plus wgmma reads, A once and B once per warpgroup) plus fixed latencies (pipeline fill, acquire
round trips, dependent scalar loads, epilogue), spread over the compute programs. Added here to
the first version (/work/bwd-scratch/perf/model.py of the bwdperf session): the saved-g/u A item
and the traffic every item pulls from L2 into the SMs (operand tiles re-read per output tile),
as a whole-pass floor at an assumed L2 -> SM bandwidth (not measured on this H200: the public
H100 figures are 5.5-7 TB/s; the GH100 die is the same). Measured references (H200, 4096
tokens, rank 0 of EP 8, calibration/runs/h200/bwd_tiles.jsonl) are printed beside.

    python benchmarks/bwd_item_model.py
"""

from __future__ import annotations

CLK = 1.83e9                  # SM clock, Hz
FLOP_CLK, SMEM_CLK = 4096, 128  # dense BF16 FLOP and shared-memory bytes per SM per clock
FILL, RT, SCAL, EPI = 1.0e-6, 0.5e-6, 0.5e-6, 1.0e-6   # s: pipeline fill, acquire, scalar, epilogue
MODELS = {"glm-5": (6144, 2048, 256), "kimi-k2": (7168, 2048, 384)}   # H, I, E (top-8)
# measured backward ms at 4096 tokens (bwd_tiles.jsonl, 2026-12-01): first path, w_flat,
# + a_fuse_gu, + bw 256 (the default since)
MEASURED = {"glm-5": (23.26, 21.24, 20.80, 18.14), "kimi-k2": (28.97, 27.10, 26.48, 22.89)}
GEMMS_ALONE = {"glm-5": 8.77, "kimi-k2": 10.48}


def kstep(bm: int, dots: list[int], bk: int, loads: int) -> tuple[float, float]:
    """Clocks of one K step: FLOPs of dots (bm x n x bk each) and shared-memory bytes (A read
    once per dot, B twice: two warpgroups; ``loads`` bytes written by cp.async)."""
    flops = sum(2 * bm * n * bk for n in dots)
    reads = sum(bm * bk * 2 + 2 * n * bk * 2 for n in dots)
    return flops / FLOP_CLK, (reads + loads) / SMEM_CLK


def model(name: str, n: int, *, w_flat=True, fuse=True, bw=256, saved=False, bn_a=64,
          comm=16, sms=132, l2_tbs=6.0, bm=128, bk=64, bn_x=128, bw_h=128, bkr=64) -> dict:
    h, i, e = MODELS[name]
    el = e // 8
    rows_e = n * 8 * 8 // e               # routed rows per local expert (uniform)
    progs = sms - comm
    tiles_r, tiles_s = el * (-(-rows_e // bm)), -(-n // bm)
    tiles = tiles_r + tiles_s
    # A item: bm rows x bn_a columns of I, K = H
    if saved:
        # bn_a 128: two 64-column dots on one dOut tile (backward.py A_SPLIT)
        f, s = kstep(bm, [bn_a] if bn_a <= 64 else [bn_a // 2] * 2, bk, (bm + bn_a) * bk * 2)
        a_l2 = 2 * h * (bm + bn_a) + 2 * bm * 2 * bn_a          # dOut tile, Wd cols, saved g, u
    elif fuse:
        f, s = kstep(bm, [2 * bn_a, bn_a], bk, (2 * bm + 3 * bn_a) * bk * 2)
        a_l2 = 2 * h * (2 * bm + 3 * bn_a)                      # x, dOut tiles, Wg|Wu, Wd cols
    else:
        f, s = kstep(bm, [bn_a, bn_a, bn_a], bk, (2 * bm + 3 * bn_a) * bk * 2)
        a_l2 = 2 * h * (2 * bm + 3 * bn_a)
    a_l2 += 2 * bm * 3 * bn_a                                    # stores: dg, du, w*h
    t_a = (h // bk) * max(f, s) / CLK + FILL + EPI
    n_a = tiles * (i // bn_a)
    # X item: bm rows x bn_x columns of H, K = 2I
    f, s = kstep(bm, [bn_x], bk, (bm + bn_x) * bk * 2)
    t_x = (2 * i // bk) * max(f, s) / CLK + FILL + EPI
    n_x = tiles * -(-h // bn_x)
    x_l2 = 2 * 2 * i * (bm + bn_x) + 2 * bm * bn_x
    # W item: bw_h x bw tile, K = the expert's rows in bkr steps
    f, s = kstep(bw_h, [bw], bkr, (bw_h + bw) * bkr * 2)
    step = max(f, s) / CLK

    def t_w(rows: int) -> float:
        nt = -(-rows // bm)
        if w_flat:
            return RT * (1 + nt // 64) + SCAL + FILL + rows / bkr * step + EPI
        return nt * (RT + SCAL + FILL + 2 * step) + EPI

    nwt = -(-h // bw_h) * (2 * i // bw) + (i // bw) * -(-h // bw_h)
    w_l2 = lambda rows: nwt * 2 * rows * (bw_h + bw) + nwt * bw_h * bw * 4   # noqa: E731
    sm = (n_a * t_a + n_x * t_x + el * nwt * t_w(rows_e) + nwt * t_w(n)) / progs
    l2 = (n_a * a_l2 + n_x * x_l2 + el * w_l2(rows_e) + w_l2(n)) / (l2_tbs * 1e12)
    rows = el * rows_e + n
    gemm_flops = 12 * h * i * rows + (0 if saved else 4 * h * i * rows)
    return dict(sm_ms=sm * 1e3, l2_ms=l2 * 1e3, ms=max(sm, l2) * 1e3, l2_gb=l2 * l2_tbs * 1e3,
                flops=gemm_flops, A=n_a * t_a / progs * 1e3, X=n_x * t_x / progs * 1e3,
                W=(el * nwt * t_w(rows_e) + nwt * t_w(n)) / progs * 1e3)


VARIANTS = [("first path", dict(w_flat=False, fuse=False, bw=128)),
            ("w_flat", dict(fuse=False, bw=128)),
            ("+ a_fuse_gu", dict(bw=128)),
            ("+ bw 256 (default)", dict()),
            ("saved_gu, bn_a 64", dict(saved=True)),
            ("saved_gu, bn_a 128", dict(saved=True, bn_a=128))]

# README table (calibration/runs/h200/bwd_grid.jsonl.gz, uniform routing, 2026-12-01): backward MoK
# (default tiles, best of 4 knob settings), GEMMs alone, torch autograd, ms
GRID_UNIFORM = {("glm-5", 1024): (6.20, 2.99, 4.36), ("glm-5", 2048): (10.48, 5.23, 7.35),
                ("glm-5", 4096): (18.54, 8.96, 13.37), ("kimi-k2", 1024): (8.86, 3.77, 5.37),
                ("kimi-k2", 2048): (13.40, 6.20, 9.42), ("kimi-k2", 4096): (23.53, 11.16, 15.84)}
PREDICT = [("saved_gu=1", dict(saved=True)),
           ("saved_gu=1,bn_a=128", dict(saved=True, bn_a=128)),
           ("saved_gu=1,bn_a=128,bn_x=256", dict(saved=True, bn_a=128, bn_x=256)),
           ("bn_x=256", dict(bn_x=256))]


def predictions(l2_tbs: float = 7.0) -> None:
    """Each option set's predicted ms at the grid's uniform workloads: the model's raw figure, and
    scaled by the measured/modelled ratio of the default tiles at the same workload (the part of
    the time the model misses: tails, waits), as ratios to the GEMMs alone and to autograd."""
    print(f"\nPredictions at L2 {l2_tbs} TB/s (uniform; residual = measured / modelled default)")
    print(f"{'workload':14} {'residual':>8} {'option set':30} {'raw ms':>7} {'ms':>7} "
          f"{'/GEMMs':>7} {'autograd/':>9}")
    for (name, n), (mok, gemm, ag) in GRID_UNIFORM.items():
        res = mok / model(name, n, l2_tbs=l2_tbs)["ms"]
        for label, kw in PREDICT:
            raw = model(name, n, l2_tbs=l2_tbs, **kw)["ms"]
            print(f"{name + ' ' + str(n):14} {res:8.2f} {label:30} {raw:7.2f} {raw * res:7.2f} "
                  f"{raw * res / gemm:7.2f} {ag / (raw * res):9.2f}")


def main() -> None:
    """The predictions at each assumed L2 bandwidth."""
    predictions()
    for l2 in (None, 7.0, 5.5):
        print(f"\nL2 -> SM bandwidth: {'not modelled' if l2 is None else f'{l2} TB/s'}")
        print(f"{'model':8} {'variant':20} {'A':>6} {'X':>6} {'W':>6} {'SM ms':>6} {'L2 GB':>6} "
              f"{'L2 ms':>6} {'pred':>6} {'meas':>6} {'pred/GEMMs':>10}")
        for name in MODELS:
            for j, (label, kw) in enumerate(VARIANTS):
                r = model(name, 4096, l2_tbs=l2 or 1e9, **kw)
                meas = f"{MEASURED[name][j]:6.2f}" if j < 4 else f"{'-':>6}"
                print(f"{name:8} {label:20} {r['A']:6.2f} {r['X']:6.2f} {r['W']:6.2f} "
                      f"{r['sm_ms']:6.2f} {r['l2_gb'] if l2 else 0:6.1f} "
                      f"{r['l2_ms'] if l2 else 0:6.2f} {r['ms']:6.2f} {meas} "
                      f"{r['ms'] / GEMMS_ALONE[name]:10.2f}")


if __name__ == "__main__":
    import sys

    from mok_model.cli import doc_parser, run_tool

    sys.exit(run_tool(doc_parser("benchmarks/bwd_item_model.py", __doc__), lambda a: main()))
