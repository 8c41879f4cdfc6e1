"""Session 65's bad-input pass over the kernel package's Python API, on the CPU: arguments that
were accepted silently, computed a wrong number, or died in a traceback from deep inside are
refused with one MokInputError line before any CUDA work."""

import pytest
import torch

from mok_kernels import reference as ref
from mok_kernels.autograd import MegakernelForward, mok_moe
from mok_kernels.backward import parse_tiles
from mok_kernels.megakernel import KernelConfig, MoKLayer
from mok_kernels.reference import MoEWeights
from mok_model.errors import MokInputError

KNOBS = dict(dispatch="pull", combine="push", minibatch=64, comm_sms=4, macrobatch=1024,
             capacity=1.0)


def _w():
    return ref.random_weights(8, 64, 32, 0, seed=0)


def _layer(**kw):
    """A layer built on the CPU (every knob given: nothing is chosen for a GPU)."""
    args = dict(weights=ref.random_weights(8, 64, 64, 0), ep=2, tokens=16, topk=2, rank=0,
                cfg=KernelConfig(**KNOBS), device="cpu") | kw
    return MoKLayer(**args)


def _inputs(n=5):
    g = torch.Generator().manual_seed(0)
    ids = torch.tensor([[0, 1], [2, 3], [4, 5], [6, 7], [1, 0]])[:n]
    return torch.randn(n, 64, generator=g), ids, torch.rand(n, 2, generator=g)


# KernelConfig ---------------------------------------------------------------------------------

@pytest.mark.parametrize("v", [True, 2.0])
def test_split_dn_must_be_an_integer(v):
    with pytest.raises(MokInputError, match=r"split_dn=.*allowed 1, 2, 4, 8, 16"):
        KernelConfig(split_dn=v).validate()


@pytest.mark.parametrize("v", [3, 64, 2**20])
def test_num_warps_is_a_power_of_two_up_to_32(v):
    with pytest.raises(MokInputError, match=rf"num_warps={v}: a power of two from 1 to 32"):
        KernelConfig(num_warps=v).validate()
    KernelConfig(num_warps=4).validate()


def test_fp8_block_m_not_an_integer_is_refused_not_a_type_error():
    cfg = KernelConfig(precision="fp8", block_m="128")       # was TypeError in __post_init__
    with pytest.raises(MokInputError, match=r"block_m='128': an integer"):
        cfg.validate()


# MoKLayer -------------------------------------------------------------------------------------

@pytest.mark.parametrize("dev", ["banana", "", None, 1.5, "cuda:-1"])
def test_layer_device_is_checked(dev):
    with pytest.raises(MokInputError, match=r"device=.*a torch device"):
        _layer(device=dev)


@pytest.mark.parametrize("v", ["yes", 1, None])
def test_layer_local_weights_is_a_bool(v):
    with pytest.raises(MokInputError, match=r"local_weights=.*True or False"):
        _layer(local_weights=v)


@pytest.mark.parametrize("g", ["local", 5, object()])
def test_layer_group_type_is_checked(g):
    with pytest.raises(MokInputError, match=r"group=.*LocalGroup or a torch.distributed"):
        _layer(group=g)


@pytest.mark.parametrize("conv", [lambda t: t.long(), lambda t: t.bool(),
                                  lambda t: t.to(torch.complex64), lambda t: t.to("meta")])
def test_layer_weights_must_be_floating_point_values(conv):
    w = ref.random_weights(8, 64, 64, 0)
    bad = MoEWeights(conv(w.wg), conv(w.wu), conv(w.wd))
    with pytest.raises(MokInputError, match=r"weights.wg: dtype .*floating-point weights"):
        _layer(weights=bad)


def test_layer_shape_refusal_and_local_weights_rank_are_mok_errors():
    with pytest.raises(MokInputError, match=r"H=48 is not a multiple of 64"):
        _layer(weights=ref.random_weights(8, 48, 64, 0))
    with pytest.raises(MokInputError, match=r"local_weights=True needs a rank"):
        _layer(local_weights=True, rank=None)


def test_layer_inputs_dtype_type_and_device():
    lay = _layer()
    x = torch.zeros(32, 64, dtype=torch.bfloat16)
    ids, w = torch.zeros(32, 2, dtype=torch.int64), torch.zeros(32, 2)
    lay.check_inputs(x, ids, w)
    with pytest.raises(MokInputError, match=r"ids_all dtype torch.float32: integer expert ids"):
        lay.check_inputs(x, ids.float(), w)        # was read as ids by .long() (2.7 -> 2)
    with pytest.raises(MokInputError, match=r"w_all dtype torch.int64: floating-point"):
        lay.check_inputs(x, ids, w.long())
    with pytest.raises(MokInputError, match=r"x_all: a torch.Tensor is required"):
        lay.check_inputs(x.float().numpy(), ids, w)
    with pytest.raises(MokInputError, match=r"save_gu='yes': True, False or None"):
        lay.forward(x, ids, w, save_gu="yes")


@pytest.mark.parametrize("arg", [0, 1, 2])
def test_layer_inputs_on_another_device_are_refused(arg):
    """A CPU tensor given to a CUDA layer failed inside Triton; here meta stands in for it."""
    lay = _layer()
    args = [torch.zeros(32, 64, dtype=torch.bfloat16), torch.zeros(32, 2, dtype=torch.int64),
            torch.zeros(32, 2)]
    args[arg] = args[arg].to("meta")
    name = ("x_all", "ids_all", "w_all")[arg]
    with pytest.raises(MokInputError, match=rf"{name} on meta: the layer's device cpu"):
        lay.check_inputs(*args)


def test_load_weights_checks_like_construction():
    lay, w = _layer(), ref.random_weights(8, 64, 64, 0)
    with pytest.raises(MokInputError, match=r"a MoEWeights .* is required, got tuple"):
        lay.load_weights((1, 2))
    with pytest.raises(MokInputError, match=r"wg and wu must be \(E, H, I\) and wd"):
        lay.load_weights(MoEWeights(w.wg, w.wu, w.wd[:, :32]))       # was a copy_ RuntimeError
    with pytest.raises(MokInputError, match=r"floating-point weights"):
        lay.load_weights(MoEWeights(w.wg.long(), w.wu.long(), w.wd.long()))
    with pytest.raises(MokInputError, match=r"differ from the layer's"):
        lay.load_weights(ref.random_weights(8, 64, 128, 0))


# autograd -------------------------------------------------------------------------------------

def test_mok_moe_refuses_inputs_that_gave_wrong_numbers():
    x, ids, tw = _inputs()
    w = _w()
    with pytest.raises(MokInputError, match=r"x dtype torch.int64: a floating-point dtype"):
        mok_moe(x.long(), ids, tw, w)          # returned an int64 output (truncated)
    with pytest.raises(MokInputError, match=r"topk_w dtype torch.int64"):
        mok_moe(x, ids, tw.long(), w)
    with pytest.raises(MokInputError, match=r"weights.wg: dtype torch.int64 on cpu: floating-point weights"):
        mok_moe(x, ids, tw, MoEWeights(w.wg.long(), w.wu.long(), w.wd.long()))
    with pytest.raises(MokInputError, match=r"weights.wg: dtype torch.float32 on meta: "
                                            r"floating-point weights holding values"):
        mok_moe(x, ids, tw, w.to(device="meta"))     # returned uninitialized numbers


def test_mok_moe_refuses_wrong_types_in_one_line():
    x, ids, tw = _inputs()
    w = _w()
    with pytest.raises(MokInputError, match=r"x: a torch.Tensor is required, got ndarray"):
        mok_moe(x.numpy(), ids, tw, w)
    with pytest.raises(MokInputError, match=r"topk_ids: a torch.Tensor is required, got list"):
        mok_moe(x, ids.tolist(), tw, w)
    with pytest.raises(MokInputError, match=r"weights: a MoEWeights"):
        mok_moe(x, ids, tw, (w.wg, w.wu, w.wd))
    with pytest.raises(MokInputError, match=r"shared expert: sg, su and sd must all be 2-D tensors "
                                            r"\(or all None\), got sg \(64, 32\), su NoneType"):
        mok_moe(x, ids, tw, MoEWeights(w.wg, w.wu, w.wd, torch.zeros(64, 32)))
    with pytest.raises(MokInputError, match=r"weights.wg: a 3-D tensor \(E, H, I\) is required, got shape \(64, 32\)"):
        mok_moe(x, ids, tw, MoEWeights(w.wg[0], w.wu[0], w.wd[0]))
    with pytest.raises(MokInputError, match=r"topk_ids must be integers, got torch.complex64"):
        mok_moe(x, ids.to(torch.complex64), tw, w)
    with pytest.raises(MokInputError, match=r"expert ids outside \[0, 8\)"):
        mok_moe(x, ids + 8, tw, w)


@pytest.mark.parametrize("kw, rule", [
    (dict(max_layers=0), r"max_layers=0: an integer >= 1"),
    (dict(max_layers=1.5), r"max_layers=1.5: an integer >= 1"),
    (dict(max_layers="x"), r"max_layers='x'"),
    (dict(cfg={}), r"cfg=\{\}: a KernelConfig"),
    (dict(cfg=KernelConfig(minibatch=-1)), r"minibatch=-1: an integer"),
    (dict(save_for_backward="no"), r"save_for_backward='no': True, False or None"),
    (dict(bwd_tiles="saved_gu=1"), r"bwd_tiles='saved_gu=1': a BackwardTiles"),
])
def test_megakernel_forward_arguments(kw, rule):
    with pytest.raises(MokInputError, match=rule):
        MegakernelForward(**kw)


def test_megakernel_forward_takes_numpy_integers():
    import numpy as np
    assert MegakernelForward(ep=np.int64(2)).ep == 2


# backward.parse_tiles -------------------------------------------------------------------------

@pytest.mark.parametrize("spec, rule", [
    ("bn_a=64,bn_a=128", r"bn_a is given twice"),
    ("w_flat=5", r"w_flat=5: 0 or 1 is required"),
    ("bn_a=-64", r"bn_a=-64: tile sizes must be powers of two >= 16"),
    ("bn_a=1_28", r"'1_28' is not an integer"),
    ("bn_a=abc", r"'abc' is not an integer"),
    ("bn_a=63", r"bn_a=63: tile sizes must be powers of two >= 16"),
    ("bw=17", r"bw=17: tile sizes must be powers of two >= 16 \(or 0: chosen"),
    ("diag=9", r"diag=9: allowed 0"),
    ("num_warps=3", r"num_warps=3: a power of two from 1 to 32"),
    ("num_stages=0", r"num_stages=0: an integer >= 1 is required"),
])
def test_parse_tiles_values(spec, rule):
    with pytest.raises(MokInputError, match=rule):
        parse_tiles(spec)


@pytest.mark.parametrize("spec", [None, 5, ["bn_a=64"]])
def test_parse_tiles_takes_a_string(spec):
    from mok_kernels.backward import RECOMPUTE_TILES, TRAINING_TILES
    with pytest.raises(MokInputError, match=r"a string 'field=value,...' is required"):
        parse_tiles(spec)
    # the shipped sets still read
    assert parse_tiles(TRAINING_TILES).saved_gu and parse_tiles(RECOMPUTE_TILES).w_direct
    assert parse_tiles("bk_x=0,a_epi=0").bk_x == 0


# tiles ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("args", [(0, 64, 0, 64), (-64, 64, 0, 64), (64, 0, 0, 64),
                                  (64, 64, -64, 64), (64, 64, 0, 0), ("64", 64, 0, 64),
                                  (None, 64, 0, 64)])
def test_shape_refusal_names_nonpositive_or_non_integer_sizes(args):
    from mok_kernels.tiles import shape_refusal
    assert "the megakernel needs an integer" in shape_refusal(*args)


@pytest.mark.parametrize("call", [
    lambda t: t.padded_width(100, 0, 0), lambda t: t.forward_group_m(64, 64, 0, 0),
    lambda t: t.expected_row_tiles(10, 2, 8, 0), lambda t: t.expected_row_tiles(-10, 2, 8, 2),
    lambda t: t.forward_split_dn(64, 2, 8, 2, 64, 8192, 128, 0),
    lambda t: t.forward_dn_blocks(64, 2, 8, 2, 64, 64, 132, 128, 0)])
def test_tile_choosers_refuse_zero_and_negative_sizes(call):
    from mok_kernels import tiles
    with pytest.raises(MokInputError, match=r"an integer >= 1 is required"):
        call(tiles)


# reference ------------------------------------------------------------------------------------

def test_reference_refuses_out_of_range_ids_instead_of_dropping_them():
    x, ids, tw = _inputs()
    w = _w()
    for bad in (ids + 8, ids - 2):
        with pytest.raises(MokInputError, match=r"expert ids in \[0, 8\) are required"):
            ref.moe_reference(x, bad, tw, w)
    with pytest.raises(MokInputError, match=r"integer expert ids are required"):
        ref.moe_reference(x, ids.float() + 0.5, tw, w)


@pytest.mark.parametrize("which", ["tw cols", "tw rows", "x rows", "x H", "ids 1d"])
def test_reference_refuses_mismatched_shapes(which):
    x, ids, tw = _inputs()
    w = _w()
    args = {"tw cols": (x, ids, torch.rand(5, 3), w), "tw rows": (x, ids, tw[:4], w),
            "x rows": (x[:4], ids, tw, w), "x H": (x[:, :32], ids, tw, w),
            "ids 1d": (x, ids[:, 0], tw, w)}[which]
    with pytest.raises(MokInputError):
        ref.moe_reference(*args)


def test_reference_ranks_are_checked():
    w = _w()
    xa, ia, wa = torch.randn(2, 3, 64), torch.randint(0, 8, (2, 3, 2)), torch.rand(2, 3, 2)
    with pytest.raises(MokInputError, match=r"rank=-1: an integer >= 0"):
        ref.rank_output(-1, xa, ia, wa, w, 2)         # read the last rank's tokens
    with pytest.raises(MokInputError, match=r"ids_all \(2, 3, 2\): 4 ranks \(ep=4\)"):
        ref.rank_output(0, xa, ia, wa, w, 4)
    with pytest.raises(MokInputError, match=r"rank=9: must be in 0..1"):
        ref.owned_experts(9, 8, 2)
    with pytest.raises(MokInputError, match=r"ep=0: an integer >= 1"):
        ref.owned_experts(0, 8, 0)
    with pytest.raises(MokInputError, match=r"experts range\(0, 20\): ids in \[0, 8\)"):
        ref.routed_outputs(xa[0], ia[0], w, range(0, 20))


# peers ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("args, rule", [((0,), r"ep=0: an integer >= 1"), ((2.5,), r"ep=2.5"),
                                        ((2, "banana"), r"device='banana': a CUDA device"),
                                        ((2, "cpu"), r"device='cpu': a CUDA device")])
def test_local_group_arguments(args, rule):
    from mok_kernels.peers import LocalGroup
    with pytest.raises(MokInputError, match=rule):
        LocalGroup(*args)


# hf (fake blocks: the module reads the block's class name, not transformers) ------------------

class _Expert(torch.nn.Module):
    def __init__(self, h=16, i=8):
        super().__init__()
        self.w1 = torch.nn.Linear(h, i, bias=False)
        self.w3 = torch.nn.Linear(h, i, bias=False)
        self.w2 = torch.nn.Linear(i, h, bias=False)
        self.act_fn = torch.nn.SiLU()


class MixtralSparseMoeBlock(torch.nn.Module):
    def __init__(self, e=4, top_k=2):
        super().__init__()
        self.gate = torch.nn.Linear(16, e, bias=False)
        self.experts = torch.nn.ModuleList(_Expert() for _ in range(e))
        self.top_k = top_k


@pytest.mark.parametrize("top_k", [0, 5, -1, 2.5, "2"])
def test_hf_block_top_k_is_checked(top_k):
    from mok_kernels.hf import MoKSparseMoE
    with pytest.raises(MokInputError, match=r"top_k=.*an integer from 1 to 4"):
        MoKSparseMoE(MixtralSparseMoeBlock(top_k=top_k))


def test_hf_backend_release_and_model_are_checked():
    from mok_kernels.hf import MoKSparseMoE, replace_moe_blocks
    with pytest.raises(MokInputError, match=r"backend 'gpu': allowed auto"):
        replace_moe_blocks(torch.nn.Sequential(MixtralSparseMoeBlock()), backend="gpu")
    with pytest.raises(MokInputError, match=r"release='no': True or False"):
        MoKSparseMoE(MixtralSparseMoeBlock(), release="no")
    with pytest.raises(MokInputError, match=r"model: a torch.nn.Module is required"):
        replace_moe_blocks("model")


def test_hf_expert_shapes_are_checked():
    from mok_kernels.hf import MoKSparseMoE
    block = MixtralSparseMoeBlock()
    block.experts[3].w1 = torch.nn.Linear(16, 4, bias=False)
    with pytest.raises(MokInputError, match=r"experts\[3\]: gate, up, down weights"):
        MoKSparseMoE(block)                       # was torch.stack's RuntimeError
    block = MixtralSparseMoeBlock()
    MoKSparseMoE(block, release=True)
    with pytest.raises(MokInputError, match=r"experts\[0\]: .*released by replace_moe_blocks"):
        MoKSparseMoE(block)                       # built a module of 1-D weights
    block.experts = torch.nn.ModuleList()
    with pytest.raises(MokInputError, match=r"its experts ModuleList is empty"):
        MoKSparseMoE(block)


def test_layer_topk_at_most_its_experts():
    e = int(_w().wg.shape[0])
    with pytest.raises(MokInputError, match=rf"topk={e + 1}: at most the layer's {e} experts"):
        _layer(topk=e + 1)
