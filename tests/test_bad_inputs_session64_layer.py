"""Bad input to choose_knobs (with a knob table), KernelConfig and MoKLayer: one clear MokInputError
(a ValueError) in one line, never a traceback from inside, a silent default or an ignored field.
CPU only: every case is refused before anything needs a GPU."""

from __future__ import annotations

import pytest
import torch

from mok_kernels import knobs
from mok_kernels import megakernel as mk
from mok_kernels.megakernel import KernelConfig, MoKLayer
from mok_kernels.reference import random_weights
from mok_model.errors import MokInputError
from mok_model.presets import load_model

QWEN = load_model("qwen3-30b-a3b")
FULL = dict(dispatch="pull", combine="push", minibatch=256, comm_sms=8, macrobatch=512,
            capacity=1.0)


def one_line(exc) -> str:
    msg = str(exc.value)
    assert "\n" not in msg and msg
    return msg


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    path = tmp_path_factory.mktemp("s64") / "t.json"
    knobs.write_table(path, knobs.build_table("h200-1", QWEN, 8, [64, 512, 4096], command="test"))
    return str(path)


# ---------------------------------------------------------------- 1. given knobs with a table

@pytest.mark.parametrize("given, message", [
    ({"macrobatch": 128}, "macrobatch 128 must hold at least one minibatch"),
    ({"minibatch": 2048, "macrobatch": 128}, "macrobatch 128 must hold at least one minibatch"),
    ({"comm_sms": 500}, "comm-sms 500 must leave compute SMs: at most 131 on h200-1"),
    ({"capacity": 1e-9}, "capacity 1e-09 overflows"),
])
def test_table_refuses_given_knobs_the_tuner_refuses(table, given, message):
    with pytest.raises(MokInputError, match=message) as exc:
        knobs.choose_knobs("h200-1", QWEN, 8, 512, table=table, given=given)
    assert one_line(exc).startswith(f"knob table {table} bucket 512 with ")
    with pytest.raises(MokInputError):              # the tuner refuses the same knobs
        knobs.choose_knobs("h200-1", QWEN, 8, 512, given=given)


def test_table_refuses_without_a_hardware_too(table):
    """hardware None takes the table's: its SM count still bounds comm_sms."""
    with pytest.raises(MokInputError, match="at most 131 on h200-1"):
        knobs.choose_knobs(None, QWEN, 8, 512, table=table, given={"comm_sms": 132})
    with pytest.raises(MokInputError, match="overflows"):
        knobs.choose_knobs(None, QWEN, 8, 512, table=table, given={"capacity": 0.01})


def test_table_keeps_sound_given_knobs(table):
    doc = knobs.load_table(table)
    bucket = next(b for b in doc["buckets"] if b["tokens"] == 512)
    c = knobs.choose_knobs("h200-1", QWEN, 8, 512, table=table,
                           given={"comm_sms": 131, "capacity": 1.0})
    assert c.knobs == {**bucket["config"], "comm_sms": 131, "capacity": 1.0}
    c = knobs.choose_knobs("h200-1", QWEN, 8, 512, table=table,
                           given={"minibatch": 1024, "macrobatch": 1024})
    assert (c.knobs["minibatch"], c.knobs["macrobatch"]) == (1024, 1024)
    assert knobs.choose_knobs("h200-1", QWEN, 8, 512, table=table).knobs == bucket["config"]


# ---------------------------------------------------------------- 2. KernelConfig

@pytest.mark.parametrize("kernel", ["v1", "v3", "v4", "v5", "gluon"])
def test_fp8_kernel_needs_fp8_precision(kernel):
    with pytest.raises(MokInputError, match=f"^fp8_kernel='{kernel}' with precision 'bf16'") as exc:
        KernelConfig(fp8_kernel=kernel).validate()
    one_line(exc)
    KernelConfig().validate()                                  # the default, bf16
    KernelConfig(fp8_kernel="v2").validate()
    KernelConfig(precision="fp8", fp8_kernel="v1", block_m=128).validate()
    with pytest.raises(MokInputError, match="allowed v1, v2"):  # an unknown name: the list
        KernelConfig(fp8_kernel="v9").validate()


def weights(e=16, h=256, i=128, shared=128):
    return random_weights(e, h, i, shared)


@pytest.mark.parametrize("rank", [9, 4, -1])
def test_layer_rank_outside_ep_is_refused(rank):
    with pytest.raises(MokInputError, match=f"^rank={rank}: must be in 0..3") as exc:
        MoKLayer(weights(), ep=4, tokens=64, topk=2, rank=rank, device="cpu", hardware="h200-1")
    one_line(exc)
    with pytest.raises(MokInputError, match="rank="):
        MoKLayer(weights(), 4, 64, 2, "1", KernelConfig(**FULL), device="cpu")


def test_layer_rank_inside_ep_builds():
    layer = MoKLayer(weights(), 4, 64, 2, 3, KernelConfig(**FULL), device="cpu")
    assert layer.tok0 == 3 * 64
    assert MoKLayer(weights(), 4, 64, 2, None, KernelConfig(**FULL), device="cpu").tok0 == 0


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal where CUDA is missing")
@pytest.mark.parametrize("kw", [dict(hardware="h200-1"), dict(cfg=KernelConfig(**FULL))])
def test_layer_on_cuda_without_a_gpu_says_so(kw):
    with pytest.raises(MokInputError, match="^needs a CUDA GPU") as exc:
        MoKLayer(weights(), ep=4, tokens=64, topk=2, rank=1, **kw)
    one_line(exc)
    with pytest.raises(MokInputError, match="^needs a CUDA GPU"):
        mk.check_gpu("cuda", "bf16")
    mk.check_gpu("cpu", "bf16")                                  # not a GPU: nothing to check


@pytest.mark.parametrize("args, message", [
    (dict(ep=0), "^ep=0: an integer >= 1"),
    (dict(ep="4"), "^ep='4': an integer >= 1"),
    (dict(ep=True), "^ep=True: an integer >= 1"),
    (dict(ep=2.0), "^ep=2.0: an integer >= 1"),
    (dict(tokens=0), "^tokens=0: an integer >= 1"),
    (dict(tokens=None), "^tokens=None: an integer >= 1"),
    (dict(topk=-2), "^topk=-2: an integer >= 1"),
    (dict(topk="2"), "^topk='2': an integer >= 1"),
    (dict(rank=1.0), "^rank=1.0: an integer from 0 to ep-1"),
    (dict(ep=3), "^E=16 not divisible by EP=3"),
    (dict(cfg=None), "^cfg=None: a KernelConfig"),
])
def test_layer_argument_types_and_ranges(args, message):
    kw = dict(weights=weights(), ep=4, tokens=64, topk=2, rank=None, cfg=KernelConfig(**FULL),
              device="cpu") | args
    with pytest.raises(MokInputError, match=message) as exc:
        MoKLayer(**kw)
    one_line(exc)
    assert isinstance(exc.value, ValueError)                     # as before, for existing callers


def bad_weights(kind):
    w = weights()
    if kind == "none":
        return None
    if kind == "tuple":
        return (w.wg, w.wu, w.wd)
    if kind == "2d":
        w.wg = w.wg[0]
    elif kind == "wd-shape":
        w.wd = w.wd.transpose(1, 2)
    elif kind == "wu-shape":
        w.wu = w.wu[:, :, :64]
    elif kind == "wg-list":
        w.wg = w.wg.tolist()
    elif kind == "shared-half":
        w.su = None
    elif kind == "shared-3d":
        w.sg = w.sg[None]
    elif kind == "shared-h":
        w.sg = w.sg[:128]
    elif kind == "empty":
        w.wg, w.wu, w.wd = w.wg[:0], w.wu[:0], w.wd[:0]
    return w


@pytest.mark.parametrize("kind, message", [
    ("none", "^weights: a MoEWeights .* got NoneType"),
    ("tuple", "^weights: a MoEWeights .* got tuple"),
    ("2d", r"^weights.wg: a 3-D tensor \(E, H, I\) is required, got shape \(256, 128\)"),
    ("wg-list", "^weights.wg: a 3-D tensor .* got list"),
    ("wd-shape", r"^weights: wg \(16, 256, 128\), wu \(16, 256, 128\), wd \(16, 256, 128\)"),
    ("wu-shape", r"^weights: wg \(16, 256, 128\), wu \(16, 256, 64\)"),
    ("shared-half", "^weights' shared expert: sg, su and sd must all be 2-D tensors"),
    ("shared-3d", "^weights' shared expert: sg, su and sd must all be 2-D tensors"),
    ("shared-h", r"^weights' shared expert: sg \(128, 128\)"),
    ("empty", "E, H and I must be >= 1"),
])
def test_layer_weights_are_checked_up_front(kind, message):
    with pytest.raises(MokInputError, match=message) as exc:
        MoKLayer(bad_weights(kind), 4, 64, 2, None, KernelConfig(**FULL), device="cpu")
    one_line(exc)


def test_layer_accepts_numpy_integers_and_no_shared_expert():
    import numpy as np

    layer = MoKLayer(weights(shared=0), np.int64(4), np.int32(64), np.int64(2), np.int64(1),
                     KernelConfig(**FULL), device="cpu")
    assert (layer.ep, layer.tokens, layer.topk, layer.rank) == (4, 64, 2, 1)
    assert all(type(v) is int for v in (layer.ep, layer.tokens, layer.topk, layer.rank))
    assert not layer.has_shared
