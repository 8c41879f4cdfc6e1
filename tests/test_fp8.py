"""CPU tests of the FP8 block quantization (fp8.py), the FP8 reference and KernelConfig's
precision rules. The FP8 megakernel itself is tested on a GPU (test_fp8_gpu.py)."""

from __future__ import annotations

import pytest
import torch

from mok_kernels import reference as ref
from mok_kernels.fp8 import (FP8, FP8_MAX, FP8_REL_TOL, dequantize_blocks, fake_quant,
                             quantize_rows, quantize_weight)
from mok_kernels.megakernel import KernelConfig, MoKLayer
from mok_kernels.routing import make_routing


def _randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def test_row_scales_are_block_amax_over_448_with_partial_last_block():
    x = _randn(5, 300)
    q, s = quantize_rows(x)
    assert q.dtype == FP8 and q.shape == x.shape and s.shape == (5, 3)
    for b, (lo, hi) in enumerate([(0, 128), (128, 256), (256, 300)]):
        want = x[:, lo:hi].abs().amax(1) / torch.full((5,), FP8_MAX)
        assert torch.equal(s[:, b], want)
    # each block's largest element lands on +-448, so it comes back (almost) exactly
    back = dequantize_blocks(q, s, 1, 128)
    i = x[:, :128].abs().argmax(1)
    assert torch.allclose(back[torch.arange(5), i], x[torch.arange(5), i], rtol=1e-6)


def test_rounding_error_is_at_most_half_an_e4m3_step():
    x = _randn(64, 512, seed=1)
    back = fake_quant(x, 1, 128)
    amax = x.view(64, 4, 128).abs().amax(-1).repeat_interleave(128, 1)
    normal = x.abs() * FP8_MAX / amax >= 2.0 ** -6                 # e4m3 normals after scaling
    rel = ((back - x).abs() / x.abs())[normal]
    assert rel.max() <= 2.0 ** -4 + 1e-6                          # 3 mantissa bits, nearest
    assert 0.015 < float((back - x).norm() / x.norm()) < 0.04     # ~2.6% RMS per operand


def test_values_on_the_e4m3_grid_come_back_exactly():
    grid = torch.tensor([448.0, -448.0, 1.0, -0.5, 0.015625, 3.5, 0.0, 240.0] * 16)[None]  # 1 x 128
    q, s = quantize_rows(grid * 0.25)      # scale 0.25: every value is a grid value times it
    assert torch.equal(s, torch.tensor([[0.25]]))
    assert torch.equal(dequantize_blocks(q, s, 1, 128), grid * 0.25)


def test_zero_block_stays_zero_and_finite():
    x = torch.zeros(3, 256)
    x[1, 200] = 2.0
    q, s = quantize_rows(x)
    assert torch.isfinite(s).all() and (s > 0).all()
    back = dequantize_blocks(q, s, 1, 128)
    assert torch.equal(back, x)


def test_weight_blocks_are_128_by_128():
    w = _randn(2, 300, 200, seed=2)         # partial blocks both ways
    q, s = quantize_weight(w)
    assert s.shape == (2, 3, 2)
    assert torch.equal(s[1, 2, 1], w[1, 256:, 128:].abs().amax() / torch.tensor(FP8_MAX))
    assert torch.allclose(dequantize_blocks(q, s, 128, 128), fake_quant(w, 128, 128))


def test_pack_quantization_matches_the_reference_blocks():
    """MoKLayer._quantize (fp8 weights, K-contiguous, gate|up interleaved per 128 columns)
    dequantizes to what reference.swiglu_ffn(fp8=True) uses for each matrix."""
    h, ip, bn = 256, 256, 128
    wg, wu, wd = _randn(2, h, ip, seed=3), _randn(2, h, ip, seed=4), _randn(2, ip, h, seed=5)
    gu = torch.stack([wg.view(2, h, ip // bn, bn), wu.view(2, h, ip // bn, bn)], 3).reshape(2, h, 2 * ip)
    gq, _, dq, gs, ds = MoKLayer._quantize(gu.bfloat16().float(), wd.bfloat16().float())
    assert gq.dtype == FP8 and gq.shape == (2, 2 * ip, h) and gs.shape == (2, h // 128, 2 * ip // 128)
    assert dq.shape == (2, h, ip) and ds.shape == (2, ip // 128, h // 128)
    g_back = dequantize_blocks(gq.transpose(1, 2), gs, 128, 128).view(2, h, ip // bn, 2, bn)
    assert torch.equal(g_back[:, :, :, 0].reshape(2, h, ip), fake_quant(wg.bfloat16().float(), 128, 128))
    assert torch.equal(g_back[:, :, :, 1].reshape(2, h, ip), fake_quant(wu.bfloat16().float(), 128, 128))
    d_back = dequantize_blocks(dq.transpose(1, 2), ds, 128, 128)
    assert torch.equal(d_back, fake_quant(wd.bfloat16().float(), 128, 128))


def test_fp8_reference_error_is_within_the_stated_tolerance():
    e, h, i, n, k = 4, 512, 256, 96, 2
    w = ref.random_weights(e, h, i, i, seed=0).to(torch.bfloat16).to(torch.float32)
    x = _randn(n, h, seed=6).bfloat16().float()
    ids, wts = make_routing(n, e, k, "uniform", 0)
    plain = ref.moe_reference(x, ids, wts, w)
    fp8 = ref.moe_reference(x, ids, wts, w, fp8=True)
    rel = float((fp8 - plain).norm() / plain.norm())
    assert 0.04 < rel < FP8_REL_TOL, rel      # measured ~6.3% at every shape (fp8.py)
    assert torch.equal(fp8, ref.moe_reference(x, ids, wts, w, fp8=True))


def test_precision_rules():
    KernelConfig(precision="fp8").validate()
    assert KernelConfig(precision="fp8").block_k == 128 and KernelConfig().block_k == 64
    with pytest.raises(ValueError, match="allowed bf16, fp8"):
        KernelConfig(precision="fp16").validate()
    for bad in (dict(block_k=64), dict(bn_gu=64), dict(fuse_gu=False, tma=False)):
        with pytest.raises(ValueError, match="precision='fp8' needs block_k=128"):
            KernelConfig(precision="fp8", **bad).validate()


def test_fp8_kernel_v2_rules():
    cfg = KernelConfig(precision="fp8")        # the measured fastest (bench_variants_s12.log)
    assert (cfg.fp8_kernel, cfg.block_m, cfg.num_stages) == ("v2", 64, 4)
    assert KernelConfig(precision="fp8", block_m=128).num_stages == 3      # 4 overflow smem
    assert (KernelConfig().block_m, KernelConfig().num_stages) == (128, 4)  # bf16 unchanged
    KernelConfig(bn_gu=256).validate()                 # fp8_kernel is ignored for bf16
    for ok in (dict(), dict(bn_dn=128), dict(block_m=64)):
        KernelConfig(precision="fp8", fp8_kernel="v2", **ok).validate()
    with pytest.raises(ValueError, match="allowed v1, v2, v3, v4, v5"):
        KernelConfig(precision="fp8", fp8_kernel="v6").validate()
    for kern in ("v2", "v3", "v4", "v5"):
        for ok in (dict(), dict(bn_dn=128), dict(block_m=128), dict(tma=False)):
            KernelConfig(precision="fp8", fp8_kernel=kern, **ok).validate()
        for bad in (dict(bn_gu=256), dict(bn_dn=64), dict(bn_dn=512)):
            with pytest.raises(ValueError, match=f"fp8_kernel='{kern}' needs"):
                KernelConfig(**{"precision": "fp8", "fp8_kernel": kern, **bad}).validate()


def test_bench_fp8_kernel_variants():
    from mok_kernels.bench import fp8_variant_tiles
    assert fp8_variant_tiles(None) == {}
    assert fp8_variant_tiles("v1") == {"fp8_kernel": "v1", "block_m": 128, "num_stages": 3}
    assert fp8_variant_tiles("v2-bm64") == {"fp8_kernel": "v2", "block_m": 64, "num_stages": 4}
    assert fp8_variant_tiles("v3-bm64") == {"fp8_kernel": "v3", "block_m": 64, "num_stages": 4}
    assert fp8_variant_tiles("v4") == {"fp8_kernel": "v4", "block_m": 128, "num_stages": 3}


def test_tile_sweep_fp8_candidates_are_valid():
    from mok_kernels.tile_sweep import FP8_CANDIDATES
    kernels = set()
    for name, (bm, bg, bd, nw, ns, *kern) in FP8_CANDIDATES.items():
        kernels.add(kern[0] if kern else "v2")
        KernelConfig(precision="fp8", block_m=bm, bn_gu=bg, bn_dn=bd, num_warps=nw, num_stages=ns,
                     fp8_kernel=kern[0] if kern else "v2").validate()
        assert name.startswith(f"f8{kern[0] if kern else ''}-m{bm}-g{bg}-d{bd}-w{nw}-s{ns}")
    assert kernels == {"v2", "v3", "v4", "v5"}


def test_bench_fp8_records_and_flag(tmp_path):
    from mok_kernels import bench
    from mok_model.records import append_records, read_records
    knobs = dict(dispatch="pull", combine="push", minibatch=4096, comm_sms=32,
                 macrobatch=131072, capacity=0.5)
    hw = {"preset": "h200-1", "gpu": "NVIDIA H200", "gpus": 1, "sms": 132, "fabric": "local-hbm",
          "driver": "x"}
    rec = bench.make_record(system="mok", model="kimi-k2", ep=8, tokens=4096, knobs=knobs,
                            routing="uniform", seed=0, times=[1.0], breakdown={}, note="t",
                            hardware=hw, software={"torch": "x", "triton": "y", "commit": "z"},
                            precision="fp8")
    out = tmp_path / "runs.jsonl"
    append_records(out, [rec])
    assert read_records([out])[0]["precision"] == "fp8"
    a = bench.parse_args(["--out", str(out), "--precision", "bf16,fp8"])
    bench._check_args(a)
    with pytest.raises(bench.BadInput, match="--precision 'fp16': allowed bf16, fp8"):
        bench._check_args(bench.parse_args(["--out", str(out), "--precision", "fp16"]))
    a = bench.parse_args(["--out", str(out), "--precision", "fp8", "--fp8-kernel", "v1,v2-bm64"])
    bench._check_args(a)
    bench._check_args(bench.parse_args(["--out", str(out), "--precision", "fp8",
                                        "--fp8-kernel", "v3,v3-bm64,v4-bm64,v5-bm64"]))
    bench._check_args(bench.parse_args(["--out", str(out), "--list-lag", "1,2,4"]))
    for bad, match in ((["--list-lag", "0"], "--list-lag '0': an integer from 1 to 8"),
                       (["--list-lag", "2", "--pass", "bwd"], "backward kernel's list has no lag")):
        with pytest.raises(bench.BadInput, match=match):
            bench._check_args(bench.parse_args(["--out", str(out), *bad]))
    with pytest.raises(bench.BadInput, match="--fp8-kernel 'v6'"):
        bench._check_args(bench.parse_args(["--out", str(out), "--precision", "fp8",
                                            "--fp8-kernel", "v6"]))
