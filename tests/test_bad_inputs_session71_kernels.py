"""Bad input to the kernel package's host-side API (session 71's audit): knobs, buffers, tiles,
the float32 reference, routing, MoKLayer and mok_moe refuse it with one MokInputError (a
ValueError) line naming the value and the rule, never a TypeError, a ZeroDivisionError, an
error from inside torch, a silent substitution or a wrong number. CPU only."""

from __future__ import annotations

import warnings

import pytest
import torch

from mok_kernels import buffers, knobs, tiles
from mok_kernels import reference as ref
from mok_kernels.autograd import MegakernelForward, mok_moe
from mok_kernels.megakernel import MoKLayer
from mok_kernels.routing import make_routing
from mok_model.errors import MokInputError
from mok_model.params import load_params
from mok_model.presets import load_model

QWEN = load_model("qwen3-30b-a3b")
FULL = dict(dispatch="pull", combine="push", minibatch=256, comm_sms=8, macrobatch=512,
            capacity=1.0)


def refused(call, match: str) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # a torch warning is no refusal
        with pytest.raises(MokInputError, match=match) as exc:
            call()
    msg = str(exc.value)
    assert msg and "\n" not in msg
    return msg


# ---------------------------------------------------------------- 1. every knob given

@pytest.mark.parametrize("bad, rule", [({"comm_sms": 500}, "at most 131 on h200-1"),
                                       ({"capacity": 0.001}, "--capacity 0.001 overflows"),
                                       ({"macrobatch": 128}, "must hold at least one minibatch")])
def test_every_knob_given_is_checked_as_five_are(bad, rule):
    five = {k: v for k, v in {**FULL, **bad}.items() if k != "dispatch"}
    refused(lambda: knobs.choose_knobs("h200-1", QWEN, 8, 512, given=five), rule)
    refused(lambda: knobs.choose_knobs("h200-1", QWEN, 8, 512, given={**FULL, **bad}), rule)
    assert knobs.choose_knobs("h200-1", QWEN, 8, 512, given=FULL) == knobs.Choice(FULL, "given")
    if "macrobatch" in bad:                  # no hardware: the knob set's own rule still holds
        refused(lambda: knobs.choose_knobs(None, QWEN, 8, 512, given={**FULL, **bad}), rule)


# ---------------------------------------------------------------- 2. params, given, allow

def test_params_given_and_allow_mismatch_types():
    p = load_params(None, "h200-1")
    refused(lambda: knobs.choose_knobs("h200-1", QWEN, 8, 512, params=p),
            r"params: a Params object; choose_knobs takes a parameters file")
    refused(lambda: knobs.choose_knobs("h200-1", QWEN, 8, 512, params=[1]),
            r"--params \[1\]: name a parameters file")
    refused(lambda: knobs.tuned_choice("h200-1", QWEN, 8, 512, params=[1]),
            r"--params \[1\]: name a parameters file \(JSON\) or give a Params")
    refused(lambda: knobs.tuned_choice("h200-1", QWEN, 8, 512, given=[1]), r"given knobs \[1\]")
    refused(lambda: knobs.tuned_choice("h200-1", QWEN, 8, 512, allow_params_mismatch="no"),
            "allow_params_mismatch='no': True or False")
    assert knobs.tuned_choice("h200-1", QWEN, 8, 512, params=p).knobs    # a Params is taken


# ---------------------------------------------------------------- 3. table buckets

@pytest.mark.parametrize("buckets", [[64.7], ["64"], [True], ["x"], None, 64])
def test_table_buckets_are_whole_counts(buckets):
    refused(lambda: knobs.build_table("h200-1", QWEN, 8, buckets),
            r"--tokens-buckets .*: a list of whole token counts >= 1")


# ---------------------------------------------------------------- 4. buffer bytes

SIZES = dict(ep=8, tokens=512, top_k=8, experts=128, hidden=2048, width_padded=768,
             capacity_rows=1024, minibatch=256, macrobatch=512, pull_combine=True)


@pytest.mark.parametrize("bad, rule", [({"ep": -1}, "ep=-1"), ({"tokens": -100}, "tokens=-100"),
                                       ({"ep": 0}, "ep=0"), ({"hidden": 2048.0}, "hidden=2048.0"),
                                       ({"precision": "fp16"}, "precision 'fp16': allowed")])
def test_layer_bytes_refuses_bad_sizes_and_precision(bad, rule):
    refused(lambda: buffers.layer_bytes(**{**SIZES, **bad}), rule)
    assert buffers.layer_bytes(**SIZES) > buffers.layer_bytes(**SIZES, precision="fp8") > 0


# ---------------------------------------------------------------- 5. tile choosers

@pytest.mark.parametrize("call, rule", [
    (lambda: tiles.forward_split_dn(64, 2, 8, 8, 4096, 14336, precision="BF16"), "precision 'BF16'"),
    (lambda: tiles.forward_split_dn(64, 2, 8, 8, 4096, 0), "expert_width=0"),
    (lambda: tiles.forward_split_dn(64, 2, 8, 8, 4096, -5), "expert_width=-5"),
    (lambda: tiles.forward_split_dn(64, 2, 8, 8, 4096, "14336"), "expert_width='14336'"),
    (lambda: tiles.forward_dn_blocks(4096, 8, 128, 8, 2048, 768, 0), "sms=0"),
    (lambda: tiles.forward_dn_blocks(4096, 8, 128, 8, 2048, 768, 1.5), "sms=1.5"),
    (lambda: tiles.forward_dn_blocks(4096, 8, 128, 8, 2048, 768, 132, precision="fp16"), "'fp16'"),
    (lambda: tiles.forward_group_m(2048, -7168), "hidden=-7168"),
    (lambda: tiles.forward_group_m(2048, "7168"), "hidden='7168'")])
def test_tile_choosers_refuse_bad_values(call, rule):
    refused(call, rule)
    assert tiles.forward_split_dn(64, 2, 8, 8, 4096, 14336) == tiles.SPLIT_DN
    assert tiles.forward_split_dn(64, 2, 8, 8, 4096, 14336, precision="mxfp8") == 1


# ---------------------------------------------------------------- 6. a CPU layer's forward

def test_a_layer_built_off_cuda_refuses_its_forward():
    lay = MoKLayer(ref.random_weights(4, 64, 32, 0), ep=2, tokens=5, topk=2, rank=0, device="cpu",
                   hardware="h200-1")              # built: it plans buffers, knobs, schedule
    x = torch.zeros(10, 64, dtype=torch.bfloat16)
    ids, w = torch.zeros(10, 2, dtype=torch.int64), torch.zeros(10, 2)
    refused(lambda: lay.forward(x, ids, w), r"device='cpu': the megakernel runs on a CUDA GPU")


# ---------------------------------------------------------------- 7. a MegakernelForward backend

def test_megakernel_forward_backend_on_cpu_is_a_mok_error():
    x, ids, tw = torch.randn(5, 64), torch.tensor([[0, 1]] * 5), torch.rand(5, 2)
    w = ref.random_weights(4, 64, 32, 16)
    refused(lambda: mok_moe(x, ids, tw, w, backend=MegakernelForward(ep=2)), "x is on cpu")


# ---------------------------------------------------------------- 8. reference and routing

@pytest.mark.parametrize("which, rule", [
    ("tw None", "topk_w: a torch.Tensor is required, got NoneType"),
    ("tw complex", "topk_w dtype torch.complex64: floating-point"),
    ("experts 2", r"experts 2: ids in \[0, 4\)"), ("experts float", r"experts \[0.0, 1.0\]"),
    ("experts bool", r"experts \[True\]"), ("shared H", r"x \(5, 32\) .*H = 64"),
    ("e -1", "e=-1"), ("e 2.5", "e=2.5"), ("seed 1.5", "seed=1.5"), ("i_shared -5", "i_shared=-5"),
    ("k > E", "k=8: at most the 4 experts"), ("seed 2**64", "seed=18446744073709551616")])
def test_reference_and_routing_refuse_bad_arguments(which, rule):
    x, ids, tw = torch.randn(5, 64), torch.tensor([[0, 1]] * 5), torch.rand(5, 2)
    w = ref.random_weights(4, 64, 32, 16)
    call = {"tw None": lambda: ref.moe_reference(x, ids, None, w),
            "tw complex": lambda: ref.moe_reference(x, ids, tw.to(torch.complex64), w),
            "experts 2": lambda: ref.routed_outputs(x, ids, w, experts=2),
            "experts float": lambda: ref.routed_outputs(x, ids, w, experts=[0.0, 1.0]),
            "experts bool": lambda: ref.routed_outputs(x, ids, w, experts=[True]),
            "shared H": lambda: ref.shared_output(torch.randn(5, 32), w),
            "e -1": lambda: ref.random_weights(-1, 64, 32, 0),
            "e 2.5": lambda: ref.random_weights(2.5, 64, 32, 0),
            "seed 1.5": lambda: ref.random_weights(2, 64, 32, 0, seed=1.5),
            "i_shared -5": lambda: ref.random_weights(2, 64, 32, -5),
            "k > E": lambda: make_routing(4, 4, 8, "uniform", 0),
            "seed 2**64": lambda: make_routing(4, 8, 2, "uniform", 2**64)}[which]
    refused(call, rule)


def test_reference_valid_calls_unchanged():
    x, ids, tw = torch.randn(5, 64), torch.tensor([[0, 1]] * 5), torch.rand(5, 2)
    w = ref.random_weights(4, 64, 32, 16)
    y = ref.routed_outputs(x, ids, w)
    assert torch.equal(ref.routed_outputs(x, ids, w, experts=[0, 1]), y)
    assert torch.equal(ref.moe_reference(x, ids, tw, w), ref.combine(ref.shared_output(x, w), y, tw))
    i, t = make_routing(6, 4, 4, "uniform", 2**64 - 1)         # k = E: every expert once
    assert sorted(i[0].tolist()) == [0, 1, 2, 3] and t.shape == (6, 4)


# ---------------------------------------------------------------- 9. distinct ids in the reference

def test_reference_refuses_repeated_ids_as_mok_moe_does():
    x, tw = torch.randn(5, 64), torch.rand(5, 2)
    w = ref.random_weights(4, 64, 32, 16)
    dup = torch.tensor([[0, 0]] * 5)
    want = refused(lambda: mok_moe(x, dup, tw, w, backend="torch"), "must be distinct")
    assert refused(lambda: ref.moe_reference(x, dup, tw, w), "must be distinct") == want
    refused(lambda: ref.routed_outputs(x, dup, w), "must be distinct")
