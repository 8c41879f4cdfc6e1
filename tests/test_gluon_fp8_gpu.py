"""GPU tests of the Gluon FP8 pass through the layer API (KernelConfig(precision="fp8",
fp8_kernel="gluon"): mok_kernels/gluon_fp8), skipped without CUDA, and without an sm_90 GPU or
a Triton with Gluon (markers below).

Each forward is compared as in test_fp8_gpu.py: with the float32 reference that quantizes as the
kernel does (TIGHT) and with the plain float32 one (fp8.FP8_REL_TOL), home output and the combine
slots the rank served (poisoned with NaN first), at production widths (kimi-k2, glm-5,
qwen3-30b), with and without a shared expert, uniform / zipf / hot / onehot routing (ranks and
experts that receive nothing), every rank of EP 8 emulated; then bits over repeats and over the
knobs, a stalled wait (raise and trap), load_weights and mok bench."""

from __future__ import annotations

import functools

import pytest
import torch

pytestmark = pytest.mark.gpu
if not torch.cuda.is_available():  # pragma: no cover - CPU CI
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

from mok_kernels.gluon_fp8 import mok as gm  # noqa: E402
from mok_kernels.megakernel import KernelConfig, MegakernelStallError, MoKLayer  # noqa: E402
from tests.test_fp8_gpu import check, plain_errors  # noqa: E402
from tests.test_kernels_gpu import compare_with_reference, setup  # noqa: E402

# a marker, not a module skip: test_random_shapes_gpu.py imports run_gluon from here
needs_sm90 = pytest.mark.skipif(
    gm.gluon is None or torch.cuda.get_device_capability() != (9, 0),
    reason="fp8_kernel='gluon' needs an sm_90 GPU and Triton with Gluon")

# production widths (H, I; the shared expert's width I where the model has one), few experts
KIMI = dict(h=7168, i=2048, e=16, n=96, k=8)
GLM = dict(h=6144, i=2048, e=16, n=96, k=8)
QWEN = dict(h=2048, i=768, i_shared=0, e=32, n=128, k=8)


@functools.lru_cache(maxsize=3)
def inputs(ep: int, routing: str, seed: int, shape: tuple) -> tuple:
    """setup()'s weights and inputs, kept for the next test on the same case (random weights
    at kimi-k2 widths take seconds on the CPU)."""
    return setup(ep, routing, seed, **dict(shape))


def gluon_layer(w, ep, rank, shape, minibatch=256, comm=16, **knobs) -> MoKLayer:
    cfg = KernelConfig(precision="fp8", fp8_kernel="gluon", dispatch="pull", combine="push",
                       capacity=1.0, minibatch=minibatch, comm_sms=comm, on_error="raise",
                       **knobs)
    return MoKLayer(w, ep, shape["n"], shape["k"], rank, cfg)


def run_gluon(ep, rank, routing, shape, minibatch=256, comm=16, seed=0, **knobs):
    """One Gluon FP8 forward: (errors vs the quantizing reference, errors vs the plain reference,
    layer, inputs); errors are (home output, served combine slots), as run_fp8's."""
    w, wf, x, ids, wts = inputs(ep, routing, seed, tuple(sorted(shape.items())))
    layer = gluon_layer(w, ep, rank, shape, minibatch, comm, **knobs)
    quant = compare_with_reference(layer, x, ids, wts, wf, rank, fp8=True)
    plain = plain_errors(layer, x, ids, wts, wf, rank)
    return quant, plain, layer, (x, ids, wts)


def served(layer, ids) -> torch.Tensor:
    """The combine slots the layer's rank served."""
    lo = layer.rank * layer.el
    return ((ids >= lo) & (ids < lo + layer.el)).reshape(-1).nonzero().squeeze(1)


# (rank of EP 8, routing, shape): hot:0.1 loads rank 0; top-1 onehot sends every token to
# expert 0, so rank 0's other experts and ranks 1-7 receive nothing (rank 6 of glm-5 runs only
# its shared expert, rank 5 of qwen3-30b, which has none, no item at all)
CASES = [(3, "uniform", KIMI), (5, "zipf:1.2", dict(KIMI, i_shared=0)), (0, "hot:0.1", GLM),
         (6, "onehot", dict(GLM, k=1)), (7, "uniform", QWEN), (0, "onehot", dict(QWEN, k=1)),
         (5, "onehot", dict(QWEN, k=1)), (2, "zipf:1.2", dict(QWEN, i_shared=768)),
         # I not a multiple of 128 (zero-padded to whole blocks by the pass): 16.5 and 2.5
         # blocks, routed only and with a shared expert of that width
         (1, "uniform", dict(h=4608, i=2112, i_shared=0, e=16, n=96, k=3)),
         (4, "zipf:1.2", dict(h=2304, i=320, i_shared=320, e=16, n=128, k=2))]


@needs_sm90
@pytest.mark.parametrize("rank,routing,shape", CASES,
                         ids=[f"r{r}-{ro}-h{s['h']}-s{s.get('i_shared', s['i'])}-k{s['k']}"
                              for r, ro, s in CASES])
def test_gluon_matches_references(rank, routing, shape):
    quant, plain, layer, _ = run_gluon(8, rank, routing, shape)
    check(quant, plain)
    layer.check()


@needs_sm90
def test_gluon_every_rank_of_ep8():
    for rank in range(8):
        quant, plain, layer, _ = run_gluon(8, rank, "zipf:1.2", KIMI, minibatch=384)
        check(quant, plain)
        del layer


@needs_sm90
def test_gluon_bits_identical_over_repeats_and_knobs():
    """The knobs only move work between programs and minibatches (the row tiles and each row's
    sums are the same): every layer gives the first one's bits, every repeat too."""
    _, _, first, (x, ids, wts) = run_gluon(8, 4, "zipf:1.2", KIMI)
    want = first.forward(x, ids, wts).clone()
    sv = served(first, ids)
    want_slots = first.comb[sv].clone()
    for _ in range(4):
        torch.cuda.synchronize()
        assert torch.equal(first.forward(x, ids, wts), want)
    w = inputs(8, "zipf:1.2", 0, tuple(sorted(KIMI.items())))[0]
    for knobs in (dict(minibatch=128, comm=8, join=False), dict(minibatch=None, comm=None)):
        layer = gluon_layer(w, 8, 4, KIMI, **knobs)
        layer.comb.copy_(first.comb)        # the peers' slots of the home tokens alike
        assert torch.equal(layer.forward(x, ids, wts), want)
        assert torch.equal(layer.comb[sv], want_slots)
        layer.check()


@needs_sm90
def test_gluon_stalled_wait_raises_and_the_next_pass_recovers():
    """max_spin 0: every wait gives up at its first poll, long before the copies land."""
    _, _, layer, (x, ids, wts) = run_gluon(8, 1, "uniform", QWEN)
    want = layer.forward(x, ids, wts).clone()
    layer.cfg.max_spin = 0
    with pytest.raises(MegakernelStallError, match="a wait timed out"):
        layer.forward(x, ids, wts)          # raises: the caller never gets the output
    assert torch.isnan(layer.out.float()).all()
    layer.check()                           # the word was zeroed
    layer.cfg.max_spin = None
    assert torch.equal(layer.forward(x, ids, wts), want)


TRAP_SCRIPT = """
import sys
sys.path.insert(0, {root!r})
from tests.test_kernels_gpu import setup
from mok_kernels.megakernel import KernelConfig, MoKLayer
w, wf, x, ids, wts = setup(8, "uniform", 1, e=32, h=2048, i=768, i_shared=0, n=128, k=8)
layer = MoKLayer(w, 8, 128, 8, 1, KernelConfig(precision="fp8", fp8_kernel="gluon",
                 dispatch="pull", combine="push", capacity=1.0, minibatch=256, comm_sms=16,
                 max_spin=0))
out = layer.forward(x, ids, wts)     # default on_error="trap": no host sync here
value = float(out.float().sum())     # the caller's own synchronization
print("OUTPUT USED", value)
"""


@needs_sm90
def test_gluon_trap_never_returns_output():
    import pathlib
    import subprocess
    import sys
    root = str(pathlib.Path(__file__).resolve().parents[1])
    res = subprocess.run([sys.executable, "-c", TRAP_SCRIPT.format(root=root)],
                         capture_output=True, text=True, timeout=300, cwd=root)
    assert res.returncode != 0, res.stdout
    assert "OUTPUT USED" not in res.stdout
    assert "CUDA error" in res.stderr or "illegal instruction" in res.stderr, res.stderr[-2000:]


@needs_sm90
def test_gluon_load_weights_equals_construction():
    from mok_kernels import reference as ref
    w, _, x, ids, wts = inputs(8, "uniform", 0, tuple(sorted(QWEN.items())))
    w2 = ref.random_weights(QWEN["e"], QWEN["h"], QWEN["i"], 0, seed=9).to(torch.bfloat16)
    a = gluon_layer(w2.to(device="cuda"), 8, 2, QWEN)
    b = gluon_layer(w, 8, 2, QWEN)
    b.load_weights(w2)
    b.comb.copy_(a.comb)
    assert torch.equal(a.forward(x, ids, wts), b.forward(x, ids, wts))


@needs_sm90
def test_mok_bench_runs_the_gluon_pass(tmp_path):
    from mok_kernels import bench
    from mok_model.records import read_records
    out = tmp_path / "r.jsonl"
    rc = bench.cli(["--model", "qwen3-30b-a3b", "--ep", "8", "--tokens", "256", "--precision",
                    "fp8", "--fp8-kernel", "gluon", "--capacity", "1.0", "--comm-sms", "16",
                    "--minibatch", "1024", "--systems", "mok", "--iters", "3", "--warmup", "1",
                    "--breakdown", "--out", str(out)])
    assert rc == 0
    (rec,) = read_records([out])
    assert rec["precision"] == "fp8" and rec["tiles"]["fp8_kernel"] == "gluon"
    assert rec["config"]["comm_sms"] == 16 and rec["config"]["capacity"] == 1.0
    assert set(rec["breakdown_ms"]) == {"schedule", "megakernel", "epilogue"}
