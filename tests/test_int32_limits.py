"""Session 56 (a helper's audit of the kernels' int32 address and row arithmetic). Each test is a
shape or input the kernels would have run to a wrong number and now refuse at construction (or at
the forward's entry, for inputs) with one MokInputError naming the value and the rule:
- a minibatch whose sum with the capacity rows leaves int32: the fused schedule's minibatch count
  (rows + minibatch - 1) // minibatch wrapped to zero minibatches (no routed row computed);
- an expert whose gate|up weights reach 2^31 elements with weight tiles through pointers (BF16
  tma=False; the backward megakernel always): int32 offsets inside an expert;
- the Gluon FP8 pass's join point, items x join permille, past 2^31;
- x_all / ids_all / w_all of another shape, dtype or row stride than the kernels read.
CPU only: weights of huge shapes are zero-strided views (no memory), refused before packing."""

from __future__ import annotations

import types

import pytest
import torch

from mok_kernels import reference as ref
from mok_kernels.backward import why_not_backward
from mok_kernels.megakernel import KernelConfig, MoKLayer, pointer_weight_refusal
from mok_kernels.reference import MoEWeights
from mok_kernels.schedule import build_schedule, capacity_rows, check_minibatch_rows
from mok_model.errors import MokInputError

KNOBS = dict(dispatch="pull", combine="push", comm_sms=2, macrobatch=64, capacity=1.0,
             block_m=32, bn_gu=32, bn_dn=32, block_k=32, copy_rows=16)


def small_layer(minibatch=32, ep=4, rank=None, n=24, k=2, **cfg):
    w = ref.random_weights(8, 64, 80, 80, seed=3)
    c = KernelConfig(minibatch=minibatch, **(KNOBS | cfg))
    return MoKLayer(w, ep, n, k, rank, c, device="cpu")


def lazy_weights(e, h, i, shared=True):
    z = lambda *d: torch.zeros(()).expand(*d)  # noqa: E731   no memory behind it
    return MoEWeights(z(e, h, i), z(e, h, i), z(e, i, h),
                      *((z(h, i), z(h, i), z(i, h)) if shared else (None,) * 3))


# ---------------------------------------------------------------- minibatch + capacity < 2^31


@pytest.mark.parametrize("rank", [None, 1])
def test_minibatch_past_int32_with_the_capacity_is_refused(rank):
    """minibatch 2^31 - 1 was accepted (KNOB_MAX) and the fused schedule's minibatch count
    wrapped to 0: no routed row was computed and the output held the combine buffer's stale
    values. The layer refuses it; the largest minibatch under the rule still builds."""
    cap = capacity_rows(4, 24, 2, 8, 1.0)       # per rank: virtual ranks stack rank schedules
    with pytest.raises(MokInputError, match=r"minibatch=2147483647: minibatch \+ capacity rows "
                                            rf"\({cap}\) must stay below 2\^31") as exc:
        small_layer(minibatch=2**31 - 1, rank=rank)
    assert "\n" not in str(exc.value)
    ok = small_layer(minibatch=2**31 - 1 - cap, rank=rank)
    assert ok.mb_max == 1 and ok.ring_rows == cap + 32


def test_schedule_refuses_the_minibatch_on_either_path():
    ids = torch.zeros(8, 2, dtype=torch.int64)
    for use_triton in (False, True):       # the refusal comes before either path's work
        with pytest.raises(MokInputError, match="must stay below 2"):
            build_schedule(ids, ep=2, num_experts=4, rank=0, capacity_multiplier=1.0,
                           minibatch=2**31 - 8, use_triton=use_triton)
    check_minibatch_rows(2**31 - 1 - 8, 8)            # the edge itself passes
    with pytest.raises(MokInputError):
        check_minibatch_rows(2**31 - 8, 8)


# ------------------------------------------------- one expert's weights through pointers


def test_pointer_weight_rule_edges():
    assert pointer_weight_refusal(7168, 2048) is None              # kimi-k2
    assert pointer_weight_refusal(32768, 32768 - 128) is None      # just under 2^31
    why = pointer_weight_refusal(32768, 32768)
    assert why is not None and "2147483648 elements" in why and "below 2^31" in why


def test_bf16_pointer_weights_past_int32_are_refused_before_packing():
    """With tma=False the BF16 forward offsets weight rows inside an expert in int32
    (k x 2*Ip + column): H x 2 x Ip = 2^31 wrapped. Refused before any weight is packed."""
    w = lazy_weights(2, 32768, 32768)
    cfg = KernelConfig(minibatch=256, **(KNOBS | dict(block_m=128, bn_gu=128, bn_dn=256,
                                                      block_k=64, tma=False)))
    with pytest.raises(MokInputError, match=r"^tma=False: H x 2 x padded I = 32768 x 2 x 32768"):
        MoKLayer(w, 2, 16, 1, 0, cfg, device="cpu")


def test_backward_refuses_experts_past_int32():
    """The backward megakernel loads weights through pointers: its why_not_backward names the
    rule, so autograd runs the PyTorch backward there and MoKBackward refuses."""
    fake = types.SimpleNamespace(gluon=None, group=None, cfg=types.SimpleNamespace(fuse_gu=True),
                                 H=32768, Ip=32768)
    assert "below 2^31 elements" in why_not_backward(fake)
    fake.Ip = 2048
    assert why_not_backward(fake) is None


# ------------------------------------------------------------------ Gluon FP8 join point


def test_gluon_join_point_past_int32_is_refused():
    """The Gluon pass computes its join point as items x join // 1000 in int32."""
    from mok_kernels.gluon_fp8.mok import GluonFP8MoK
    g = object.__new__(GluonFP8MoK)
    g.__dict__.update(cu=1, qv=0, mode=0, comm=40, grid=132, join=350, home=True, ys=True,
                      H=7168, ip=2048, nt_s=64, t_max=100_000, knobs=None)
    with pytest.raises(MokInputError, match=r"join=350: items x join permille \(7204608 x 350\)"):
        g.configure()
    g.knobs = torch.zeros(4, dtype=torch.int32)
    g.configure(join=1000)                 # no join: the product is never used
    g.t_max = 1000
    g.configure(join=350)
    assert g.knobs.tolist() == [40, 0, 350, 1]


# ------------------------------------------------------------- the forward's input layout


def test_forward_refuses_inputs_the_kernel_would_misread():
    """x_all rows are read as row * H of a dense bf16 (P*N, H) matrix and the schedule is
    built from ids_all's shape: a strided view, another dtype or row count, or ids of another
    shape ran to wrong numbers (or out of bounds) without a word."""
    lay = small_layer()
    rows, h, k = 4 * 24, 64, 2
    ids = torch.zeros(rows, k, dtype=torch.int64)
    wts = torch.full((rows, k), 0.5)
    x = torch.zeros(rows, h, dtype=torch.bfloat16)
    wide = torch.zeros(rows, 2 * h, dtype=torch.bfloat16)
    bad = [((wide[:, :h], ids, wts), r"x_all strides \(128, 1\): \(64, 1\) are required"),
           ((x.t().contiguous().t(), ids, wts), r"x_all strides \(1, 96\)"),
           ((x[:-1], ids, wts), r"x_all \(95, 64\): \(96, 64\) is required"),
           ((x.float(), ids, wts), "x_all dtype torch.float32: torch.bfloat16 is required"),
           ((x, ids[:, :1], wts), r"ids_all \(96, 1\): \(96, 2\) is required"),
           ((x, ids, wts[:8]), r"w_all \(8, 2\): \(96, 2\) is required")]
    for args, rule in bad:
        with pytest.raises(MokInputError, match=rule) as exc:
            lay.forward(*args)
        assert "\n" not in str(exc.value)


def test_backward_run_refuses_inputs_of_other_shapes():
    """MoKBackward.run converted dtype and layout but took any row count or id shape."""
    from mok_kernels.backward import MoKBackward
    bwd = MoKBackward(small_layer())
    rows, h, k = 4 * 24, 64, 2
    x, ids, wts = torch.zeros(rows, h), torch.zeros(rows, k, dtype=torch.int64), torch.ones(rows, k)
    for args, rule in [((x[:-1], ids, wts, x), r"x_all \(95, 64\): \(96, 64\) is required"),
                       ((x, ids, wts, x[:, :32]), r"dout_all \(96, 32\): \(96, 64\) is required"),
                       ((x, ids[:4], wts, x), r"ids_all \(4, 2\): \(96, 2\) is required"),
                       ((x, ids, wts[:, :1], x), r"w_all \(96, 1\): \(96, 2\) is required")]:
        with pytest.raises(MokInputError, match=rule):
            bwd.run(*args)
