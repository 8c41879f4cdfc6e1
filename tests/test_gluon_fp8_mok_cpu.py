"""The Gluon FP8 MoK pass's work list (mok_kernels/gluon_fp8/mok.py), on the CPU: the host
twin of the kernel's item decode walks the same list as item_order, and every item's waits
point to earlier items (the pass's freedom from deadlock, with every program resident)."""

from __future__ import annotations

import pytest
import torch

from mok_kernels.gluon_fp8.mok import item_at, item_order, tile_minibatch, tile_minibatch_host
from mok_kernels.routing import make_routing
from mok_kernels.schedule import build_schedule


@pytest.mark.parametrize("ep, e, n, k, routing, minibatch, nsh, nbg, nbd", [
    (8, 16, 256, 8, "uniform", 512, 256, 16, 56),
    (8, 16, 192, 8, "zipf:1.2", 384, 192, 16, 48),
    (4, 8, 300, 2, "hot:0.3", 128, 0, 4, 8),
    (2, 4, 64, 1, "onehot", 4096, 64, 3, 5),
])
def test_item_list_and_decode_agree_and_waits_point_back(ep, e, n, k, routing, minibatch, nsh,
                                                         nbg, nbd):
    ids, _ = make_routing(ep * n, e, k, routing, seed=3)
    s = build_schedule(ids, ep=ep, num_experts=e, rank=0, capacity_multiplier=1.0,
                       minibatch=minibatch, block_m=128, use_triton=False)
    mb_tile, tiles = s.mb_tile.tolist(), int(s.num_tiles)
    order = item_order(nsh, mb_tile, tiles, nbg, nbd)
    assert [item_at(i, nsh, mb_tile, tiles, nbg, nbd, s.max_tiles)
            for i in range(len(order))] == order
    nt_s = -(-nsh // 128)
    assert len(order) == (nt_s + tiles) * (nbg + nbd) and len(set(order)) == len(order)
    last_gu = {}
    for i, (kind, u, _) in enumerate(order):
        if kind == "gu":
            last_gu[u] = i
        else:            # a down item waits for every gate/up item of its row tile
            assert u in last_gu and last_gu[u] < i
            assert sum(1 for kd, uu, _ in order[:i] if kd == "gu" and uu == u) == nbg
    t_idx = torch.arange(s.max_tiles, dtype=torch.int32)
    assert tile_minibatch(s.mb_tile, t_idx).tolist() == tile_minibatch_host(mb_tile, s.max_tiles)


# --- KernelConfig(precision="fp8", fp8_kernel="gluon") on the CPU: every refusal, the knob
# mapping and the delegation of MoKLayer to the Gluon pass (a stand-in for GluonFP8MoK; the
# kernel itself runs in tests/test_gluon_fp8_gpu.py) ------------------------------------------

from types import SimpleNamespace  # noqa: E402

from mok_kernels import reference as ref  # noqa: E402
from mok_kernels.gluon_fp8 import mok as gm  # noqa: E402
from mok_kernels.megakernel import KernelConfig, MegakernelStallError, MoKLayer  # noqa: E402


def gluon_cfg(**kw) -> KernelConfig:
    return KernelConfig(**{"precision": "fp8", "fp8_kernel": "gluon", **kw})


@pytest.mark.parametrize("knobs, message", [
    (dict(dispatch="push"), "dispatch='push' with fp8_kernel='gluon': pull dispatch only"),
    (dict(combine="pull"), "combine='pull' with fp8_kernel='gluon': push combine only"),
    (dict(capacity=0.5), "capacity=0.5 with fp8_kernel='gluon': capacity 1.0 only"),
    (dict(capacity=0.5), "capacity=0.5 with fp8_kernel='gluon': capacity 1.0 only"),
    (dict(list_lag=2), "list_lag=2 with fp8_kernel='gluon': lag 1 only"),
    (dict(block_m=64), "block_m=64 with fp8_kernel='gluon': its row tiles are 128 rows"),
    (dict(group_m=1), "group_m=1 with fp8_kernel='gluon': its item order takes 8 row tiles"),
    (dict(grid=64), "grid=64 with fp8_kernel='gluon': one program an SM"),
    (dict(skip_copy=True), "skip_copy=True with fp8_kernel='gluon'"),
    (dict(skip_gemm=True), "skip_gemm=True with fp8_kernel='gluon'"),
    (dict(tma=False), "tma=False with fp8_kernel='gluon': its weights always go through TMA"),
    (dict(tma_a=True), "tma_a=True with precision 'fp8'"),
    (dict(save_for_backward=True), "save_for_backward=True with precision 'fp8': the backward"),
    (dict(split_dn=2), "split_dn=2 with precision 'fp8'"),
])
def test_gluon_config_refusals_name_the_value_and_the_rule(knobs, message):
    with pytest.raises(ValueError, match=f"^{message}") as exc:
        gluon_cfg(**knobs).validate()
    assert "\n" not in str(exc.value)


def test_gluon_config_defaults_and_accepted_knobs():
    cfg = gluon_cfg()
    assert (cfg.block_m, cfg.block_k, cfg.num_stages) == (128, 128, 4)   # its fixed tiles
    cfg.validate()
    gluon_cfg(dispatch="pull", combine="push", capacity=1.0, list_lag=1, group_m=8, minibatch=64,
              comm_sms=1, join=False, on_error="raise", max_spin=0).validate()
    with pytest.raises(ValueError, match="fp8_kernel='gluon' with precision 'bf16'"):
        KernelConfig(fp8_kernel="gluon").validate()      # it would be ignored (session 64)
    with pytest.raises(ValueError, match="allowed v1, v2, v3, v4, v5, gluon"):
        gluon_cfg(fp8_kernel="v9").validate()


class FakePass:
    """Stands in for GluonFP8MoK: records how MoKLayer builds and drives it."""

    def __init__(self, w, ep, tokens, topk, rank, **kw):
        self.kw, self.el, self.cap, self.has_shared = kw, 2, 123, w.sg is not None
        self.comb, self.sh_out, self.out = torch.zeros(3), torch.zeros(2), torch.zeros(1)
        self.stalled, self.last_schedule, self.calls = False, None, []

    def forward(self, x, ids, w):
        self.calls.append(("forward", self.trap, self.max_spin, w.dtype))
        return self.out

    def check(self):
        stalled, self.stalled = self.stalled, False
        if stalled:
            raise MegakernelStallError("gluon FP8 MoK: a wait timed out")

    def load_weights(self, w):
        self.calls.append(("load_weights", w))


@pytest.fixture
def sm90(monkeypatch):
    """An sm_90 GPU of 132 SMs and a Triton with Gluon, as MoKLayer asks for them."""
    monkeypatch.setattr(gm, "gluon", object())
    monkeypatch.setattr(gm, "GluonFP8MoK", FakePass)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda dev=None: (9, 0))
    monkeypatch.setattr(torch.cuda, "get_device_properties",
                        lambda dev=None: SimpleNamespace(multi_processor_count=132))


def gluon_layer(cfg=None, ep=8, rank=3, e=16, h=256, i=128, ishared=128, device="cuda", **kw):
    w = ref.random_weights(e, h, i, ishared, seed=1)
    return MoKLayer(w, ep, 32, 4, rank, cfg or gluon_cfg(), device=device, **kw)


def test_gluon_layer_maps_the_knobs(sm90):
    lay = gluon_layer()
    g = lay.gluon
    assert (g.kw["comm"], g.kw["minibatch"], g.kw["join"]) == (gm.COMM_SMS, gm.MINIBATCH, gm.JOIN)
    assert lay.knob_source == "fp8_kernel='gluon' defaults"
    c = lay.cfg
    assert (c.dispatch, c.combine, c.capacity, c.list_lag, c.group_m, c.split_dn) == (
        "pull", "push", 1.0, 1, 8, 1)
    assert (c.minibatch, c.comm_sms, c.macrobatch) == (gm.MINIBATCH, gm.COMM_SMS, 123)
    assert lay.comb is g.comb and lay.out is g.out and lay.capacity == 123
    lay = gluon_layer(gluon_cfg(comm_sms=16, minibatch=512, join=False))
    kw = lay.gluon.kw
    assert (kw["comm"], kw["minibatch"], kw["join"]) == (16, 512, 1000)
    assert lay.knob_source == "given"
    assert lay.gluon.kw["local_weights"] is False and lay.gluon.kw["num_experts"] == 16


def test_the_model_takes_the_pass_defaults_for_open_knobs():
    """A Gluon prediction with comm_sms / minibatch open is of the pass the layer runs."""
    from mok_model.scenario import GLUON_COMM_SMS, GLUON_MINIBATCHES
    assert (GLUON_COMM_SMS, GLUON_MINIBATCHES) == ((gm.COMM_SMS,), (gm.MINIBATCH,))


def test_gluon_layer_honors_on_error(sm90):
    # inputs of the layer's shapes (the forward checks them before the stand-in pass runs)
    x, ids = torch.zeros(8 * 32, 256, dtype=torch.bfloat16), torch.zeros(8 * 32, 4, dtype=torch.int64)
    w = torch.zeros(8 * 32, 4, dtype=torch.float64)
    lay = gluon_layer(gluon_cfg(max_spin=5))
    lay.forward(x, ids, w)
    assert lay.gluon.calls[-1] == ("forward", True, 5, torch.float32)    # trap, the config's spin
    lay.gluon.stalled = True
    lay.forward(x, ids, w)              # trap: no host read; the launch traps on the GPU
    with pytest.raises(MegakernelStallError, match="timed out"):
        lay.check()
    lay.check()                          # the word was zeroed
    lay = gluon_layer(gluon_cfg(on_error="raise"))
    lay.gluon.stalled = True
    with pytest.raises(MegakernelStallError, match="timed out"):
        lay.forward(x, ids, w)
    assert lay.gluon.calls[-1][1] is False and lay.gluon.calls[-1][2] == 1 << 22


def test_gluon_layer_load_weights_checks_shapes_then_delegates(sm90):
    lay = gluon_layer()
    w2 = ref.random_weights(16, 256, 128, 128, seed=2)
    lay.load_weights(w2)
    assert lay.gluon.calls[-1] == ("load_weights", w2) and lay.weights is w2
    with pytest.raises(ValueError, match="differ from the layer's"):
        lay.load_weights(ref.random_weights(16, 256, 128, 0, seed=2))


@pytest.mark.parametrize("kw, message", [
    (dict(rank=None), "rank=None \\(P virtual ranks in one launch\\) is not supported"),
    (dict(group=object()), "group mode \\(LocalGroup or real GPUs\\) is not supported"),
    (dict(rank=8), "E=16, EP=8, rank=8: E divisible by EP, 0 <= rank < EP"),
    (dict(e=12), "E=12, EP=8, rank=3: E divisible by EP"),
    (dict(h=320), "H=320: must be a multiple of 128"),
    (dict(ishared=256), "shared width 256: 0 or I=128 only"),
    (dict(cfg=gluon_cfg(comm_sms=132)), "comm_sms=132 leaves no compute programs"),
])
def test_gluon_layer_refusals(sm90, kw, message):
    with pytest.raises(ValueError, match=message) as exc:
        gluon_layer(**kw)
    assert "\n" not in str(exc.value)


def test_gluon_layer_needs_gluon_and_sm90(sm90, monkeypatch):
    with pytest.raises(ValueError, match="needs an sm_90 GPU .* device 'cpu' is not a CUDA GPU"):
        gluon_layer(device="cpu")
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda dev=None: (10, 0))
    with pytest.raises(ValueError, match="needs an sm_90 GPU \\(H100 / H200\\); device 'cuda' is "
                                         "sm_100"):
        gluon_layer()
    monkeypatch.setattr(gm, "gluon", None)
    with pytest.raises(ValueError, match="needs Triton with Gluon"):
        gluon_layer()


def pass_weights(cls, i: int, shared: bool) -> tuple:
    """A Gluon pass object (no GPU: only what quantize() reads) as rank 1 of EP 2 with 4 experts
    of H 256 and width i, and its layer weights: (pass, weights, H, local experts, padded I)."""
    g = object.__new__(cls)
    h, el = 256, 2
    ip = -(-i // 128) * 128
    g.H, g.I, g.ip, g.device, g.local_weights, g.rank, g.el = h, i, ip, "cpu", False, 1, el
    g.has_shared = shared
    return g, ref.random_weights(4, h, i, i if shared else 0, seed=3), h, el, ip


@pytest.mark.parametrize("i, shared", [(192, True), (200, False), (64, True)])
def test_gluon_quantize_pads_the_width_exactly(i, shared):
    """The pass computes I zero-padded to whole 128-column blocks: its quantized weights are the
    unpadded weights' (fp8.py's partial edge blocks), bit for bit, then zeros."""
    from mok_kernels.fp8 import quantize_weight
    g, w, h, el, ip = pass_weights(gm.GluonFP8MoK, i, shared)
    wgu, sgu, wd, sd = g.quantize(w)
    assert wgu.shape == (el + 1, 2 * ip, h) and wd.shape == (el + 1, h, ip)
    gate = wgu.view(el + 1, ip // 128, 2, 128, h)
    mats = [(w.wg[x], w.wu[x], w.wd[x]) for x in (2, 3)] + [
        (w.sg, w.su, w.sd) if shared else (torch.zeros(h, i),) * 2 + (torch.zeros(i, h),)]
    for x, (g_, u_, d_) in enumerate(mats):
        for half, src in ((0, g_), (1, u_)):
            q, sc = quantize_weight(src.float())
            got = gate[x, :, half].reshape(ip, h)
            assert torch.equal(got[:i].view(torch.uint8), q.t().contiguous().view(torch.uint8))
            assert not got[i:].view(torch.uint8).any()
            assert torch.equal(sgu[x].view(ip // 128, 2, h // 128)[:, half], sc.t())
        q, sc = quantize_weight(d_.float())
        assert torch.equal(wd[x, :, :i].view(torch.uint8), q.t().contiguous().view(torch.uint8))
        assert not wd[x, :, i:].view(torch.uint8).any()
        assert torch.equal(sd[x], sc.t())


def test_gluon_layer_has_no_backward(sm90):
    from mok_kernels.autograd import MegakernelForward
    from mok_kernels.backward import MoKBackward, why_not_backward
    lay = gluon_layer()
    assert "fp8_kernel='gluon' is forward only" in why_not_backward(lay)
    with pytest.raises(ValueError, match="fp8_kernel='gluon' is forward only"):
        MoKBackward(lay)
    with pytest.raises(ValueError, match="fp8_kernel='gluon' in the autograd path"):
        MegakernelForward(cfg=gluon_cfg())
    with pytest.raises(ValueError, match="fp8_kernel='gluon' in the autograd path"):
        MegakernelForward(ep=4, cfg=gluon_cfg(), save_for_backward=False)


def test_gluon_pass_check_raises_once_and_zeroes_its_word():
    g = object.__new__(gm.GluonFP8MoK)
    g.err_acc, g.last_schedule = torch.ones(1, dtype=torch.int32), None
    with pytest.raises(MegakernelStallError, match="a wait timed out"):
        g.check()
    assert int(g.err_acc) == 0
    g.check()


def test_gluon_record_tiles_are_the_gluon_default_variant(tmp_path):
    from mok_kernels import bench
    from mok_model.records import append_records, default_variant, read_records, variant_label
    g = object.__new__(gm.GluonFP8MoK)
    g.join, g.ys, g.home, g.cu, g.qv = gm.JOIN, gm.YS, gm.HOME, 1, 0
    tiles = g.tiles()
    assert "gluon_qv" not in tiles        # records of the default path keep their old tiles
    assert tiles["fp8_kernel"] == "gluon" and tiles["block_m"] == 128 and tiles["gluon_join"] == 350
    knobs = dict(dispatch="pull", combine="push", minibatch=4096, comm_sms=24, macrobatch=131072,
                 capacity=1.0)
    rec = bench.make_record(system="mok", model="kimi-k2", ep=8, tokens=4096, knobs=knobs,
                            routing="uniform", seed=0, times=[1.0], breakdown={}, note="t",
                            hardware={"preset": "h200-1", "gpus": 1}, software={},
                            precision="fp8", tiles=tiles)
    out = tmp_path / "r.jsonl"
    append_records(out, [rec])
    back = read_records([out])[0]
    assert back["tiles"]["fp8_kernel"] == "gluon"
    # the Gluon kernel's own default (records.DEFAULT_GLUON; the model's Scenario.fp8_kernel
    # "gluon"), not the Triton FP8 kernel's; other Gluon knobs are a non-default variant
    assert default_variant(back) and variant_label(back).startswith("fp8 gluon")
    assert not default_variant({**back, "tiles": {**back["tiles"], "gluon_join": 1000}})
    assert not default_variant({**back, "tiles": {**back["tiles"], "gluon_qv": 1}})


def test_bench_gluon_variant_and_grid_refusals(tmp_path):
    from mok_kernels import bench
    assert "gluon" in bench.FP8_VARIANTS
    assert bench.fp8_variant_tiles("gluon") == {"fp8_kernel": "gluon"}
    out = str(tmp_path / "r.jsonl")
    base = ["--out", out, "--precision", "fp8", "--fp8-kernel", "gluon", "--ep", "8"]
    bench._check_args(bench.parse_args([*base, "--capacity", "1.0"]))
    bench._check_args(bench.parse_args([*base, "--capacity", "1.0", "--model", "qwen3-30b-a3b",
                                        "--comm-sms", "16,24", "--minibatch", "512,4096"]))
    for extra, message in [
            ([], "grid point fp8-gluon pull/push .* capacity 0.5 .*: capacity=0.5 with "
                 "fp8_kernel='gluon': capacity 1.0 only"),
            (["--capacity", "1.0", "--dispatch", "pull,push"], "dispatch='push' with fp8_kernel"),
            (["--capacity", "1.0", "--combine", "pull"], "combine='pull' with fp8_kernel"),
            (["--capacity", "1.0", "--list-lag", "2"], "list_lag=2 with fp8_kernel='gluon'"),
            (["--capacity", "1.0", "--model", "gpt-oss-120b"],
             "--fp8-kernel gluon with --model gpt-oss-120b --ep 8: H=2880: must be a "
             "multiple of 128")]:
        with pytest.raises(bench.BadInput, match=message):
            bench._check_args(bench.parse_args([*base, *extra]))


def test_bench_gluon_machine_refusal(tmp_path, monkeypatch, capsys):
    from mok_kernels import bench
    from mok_kernels.gluon_fp8 import core
    argv = ["--out", str(tmp_path / "r.jsonl"), "--precision", "fp8", "--fp8-kernel", "gluon",
            "--capacity", "1.0", "--ep", "8"]
    assert bench.gluon_machine_refusal(bench.parse_args(argv[:2])) is None   # bf16: no check
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(core, "gluon", None)
    assert "needs Triton with Gluon" in bench.gluon_machine_refusal(bench.parse_args(argv))
    monkeypatch.setattr(core, "gluon", object())
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda dev=None: (8, 0))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda dev=None: "NVIDIA A100")
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda dev=None: SimpleNamespace(
        multi_processor_count=108, total_memory=80e9, name="NVIDIA A100"))
    assert bench.cli(argv) == 2
    err = capsys.readouterr().err
    assert err == ("mok bench: error: --fp8-kernel gluon needs an sm_90 GPU (H100 / H200); this "
                   "NVIDIA A100 is sm_80\n")


@pytest.mark.parametrize("i, shared", [(192, True), (256, False)])
def test_gluon_bf16_weights_are_the_layer_weights_packed(i, shared):
    """GluonBF16MoK (session 60) packs the BF16 weights as the FP8 pass packs its e4m3 ones:
    per 128-row block of W_gu^T the gate's rows then the up's, I zero-padded to whole blocks,
    W_d^T (H, Ip); the values are the layer's, rounded to BF16 once, and no scale is kept."""
    g, w, h, el, ip = pass_weights(gm.GluonBF16MoK, i, shared)
    wgu, sgu, wd, sd = g.quantize(w)
    assert wgu.dtype == wd.dtype == torch.bfloat16
    assert wgu.shape == (el + 1, 2 * ip, h) and wd.shape == (el + 1, h, ip)
    assert sgu.numel() == sd.numel() == 1
    blocks = wgu.view(el + 1, ip // 128, 2, 128, h)
    mats = [(w.wg[x], w.wu[x], w.wd[x]) for x in (2, 3)] + [
        (w.sg, w.su, w.sd) if shared else (torch.zeros(h, i),) * 2 + (torch.zeros(i, h),)]
    for x, (g_, u_, d_) in enumerate(mats):
        for half, src in ((0, g_), (1, u_)):
            got = blocks[x, :, half].reshape(ip, h)
            assert torch.equal(got[:i], src.to(torch.bfloat16).t())
            assert not got[i:].any()
        assert torch.equal(wd[x, :, :i], d_.to(torch.bfloat16).t())
        assert not wd[x, :, i:].any()


def test_pack_rows_is_pack_gate_up_without_scales():
    from mok_kernels.gluon_fp8.core import pack_gate_up, pack_rows
    wg, wu = torch.randn(3, 256, 384), torch.randn(3, 256, 384)
    sg, su = torch.randn(3, 2, 3), torch.randn(3, 2, 3)
    w, sc = pack_gate_up(wg, sg, wu, su)
    assert torch.equal(pack_rows(wg, wu), w)
    assert torch.equal(w.view(3, 2, 2, 128, 384)[:, 1, 0], wg[:, 128:])   # block 1's gate rows
    assert torch.equal(sc.view(3, 2, 2, 3)[:, 1, 1], su[:, 1])              # block 1's up scales


def test_gluon_bf16_record_tiles_name_the_bf16_pass():
    g = object.__new__(gm.GluonBF16MoK)
    g.join, g.ys, g.home, g.cu, g.qv = gm.JOIN, gm.YS, gm.HOME, 1, 0
    tiles = g.tiles()
    assert tiles["bf16_kernel"] == "gluon" and "fp8_kernel" not in tiles
    assert tiles["block_k"] == 64 and tiles["block_m"] == 128


def test_grouped_gemm_checks_name_each_wrong_write():
    """The grouped GEMM benchmarks' checks (benchmarks/gluon_fp8_gemm.py coverage_failures,
    subset_failures; gluon_bf16_grouped.py uses them too) on C tensors built by hand."""
    from benchmarks.gluon_fp8_gemm import coverage_failures, subset_failures
    nan = float("nan")
    c = torch.full((6, 4), nan)
    c[:4] = 1.0
    assert coverage_failures(c, 4) == []
    c[5, 2] = 0.0                                   # a row past the end written
    c[1, 0] = nan                                   # an own row left NaN
    assert coverage_failures(c, 4) == ["rows past the last expert's written",
                                       "1 rows not written (or NaN)"]
    whole = torch.arange(24.0).view(6, 4)
    mine = torch.tensor([True, False, True, False])
    part = torch.full((6, 4), nan)
    part[:4][mine] = whole[:4][mine]
    assert subset_failures(part, whole, mine, 4, "odd") == []
    part[0, 0] = -1.0                               # its own row differs
    part[1, 1] = 0.0                                # another expert's row written
    assert subset_failures(part, whole, mine, 4, "odd") == [
        "odd experts' tiles alone: their rows differ",
        "odd experts' tiles alone wrote rows of other experts or past the end"]
