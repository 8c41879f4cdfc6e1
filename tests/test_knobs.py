"""Knobs chosen before launch (mok_kernels/knobs.py): the tuner's choice per shape, knob tables,
the capacity bound, and MoKLayer's resolution (CPU: the layer is built, never launched)."""

from __future__ import annotations

import json
import os
import statistics
import time
from pathlib import Path

import pytest
import torch

from mok_kernels import knobs
from mok_model import capacity
from mok_model.errors import MokInputError
from mok_kernels import reference as ref
from mok_kernels.megakernel import KernelConfig, MoKLayer
from mok_kernels.schedule import capacity_rows as kernel_capacity_rows
from mok_model.cli import main
from mok_model.params import load_params
from mok_model.presets import load_hardware, load_model
from mok_model.scenario import Scenario
from mok_model.tuner import LIST_LAGS, tune, tune_robust

KIMI = knobs.shape_of(load_model("kimi-k2"))


def test_choice_is_the_tuners_and_cached_calls_are_fast():
    """Same answer as `mok tune --routing robust` (the default: not told the routing) or `mok
    tune` (told uniform) at the capacity the bounds ask (`mok tune --capacity`); deterministic;
    < 10 ms once cached."""
    knobs._CACHE.clear()
    t0 = time.perf_counter()
    c = knobs.choose_knobs("h200-1", KIMI, 16, 2048)
    first_ms = (time.perf_counter() - t0) * 1e3
    m = load_model("kimi-k2")
    safe = capacity.safe_capacity(16, 2048, m.top_k, m.routed_experts)
    scn, params = Scenario(load_hardware("h200-1"), m, 16, 2048), load_params(None, "h200-1")
    best = tune_robust(scn, params, fixed={"capacity": safe}, list_lags=LIST_LAGS).best
    assert c.knobs == best.config.as_dict() and c.predicted_ms == pytest.approx(best.latency_ms)
    assert c.list_lag == best.list_lag
    assert c.source.startswith("tuner: h200-1 params ")
    assert (f"h200-1.json; capacity raised to {safe} (uniform and hot-expert bounds); robust "
            f"over uniform, zipf:1.2, hot:0.1: worst regret +") in c.source
    again = knobs.tuned_choice("h200-1", KIMI, 16, 2048)      # uncached: same numbers
    assert again == c
    uniform = knobs.choose_knobs("h200-1", KIMI, 16, 2048, routing="uniform")
    told = tune(scn, params, fixed={"capacity": safe}, top=1, list_lags=LIST_LAGS).best
    assert uniform.knobs == told.config.as_dict() != c.knobs
    assert uniform.source.endswith("(uniform and hot-expert bounds)")
    times = []
    for _ in range(50):
        t0 = time.perf_counter()
        assert knobs.choose_knobs("h200-1", KIMI, 16, 2048) == c
        times.append(time.perf_counter() - t0)
    cached_ms = statistics.median(times) * 1e3
    print(f"\nchoose_knobs kimi-k2 EP16 2048: first {first_ms:.1f} ms, cached {cached_ms:.3f} ms")
    assert cached_ms < 10.0


def test_choice_is_the_same_in_another_process():
    """Every rank of a group chooses on its own; the arena layout needs the same answer."""
    import subprocess
    import sys

    code = ("import json; from mok_kernels import knobs; "
            "print(json.dumps([knobs.choose_knobs(h, s, p, n).knobs for h, s, p, n in "
            f"[('h200-hgx8', {KIMI!r}, 8, 1024), ('h200-1', {KIMI!r}, 16, 100)]]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    here = [knobs.choose_knobs("h200-hgx8", KIMI, 8, 1024).knobs,
            knobs.choose_knobs("h200-1", KIMI, 16, 100).knobs]
    assert json.loads(out.stdout) == here


def test_explicit_knobs_win_and_the_tuner_fills_the_rest():
    given = {"dispatch": "push", "minibatch": 512}
    c = knobs.choose_knobs("h200-1", KIMI, 16, 1024, given=given)
    assert c.knobs["dispatch"] == "push" and c.knobs["minibatch"] == 512
    m = load_model("kimi-k2")
    safe = capacity.safe_capacity(16, 1024, m.top_k, m.routed_experts)
    best = tune_robust(Scenario(load_hardware("h200-1"), m, 16, 1024),
                       load_params(None, "h200-1"), fixed={**given, "capacity": safe}).best
    assert c.knobs == best.config.as_dict()
    assert c.source.endswith("given: dispatch, minibatch")
    with pytest.raises(ValueError, match="macrobatch=4096 given without minibatch"):
        knobs.choose_knobs("h200-1", KIMI, 16, 1024, given={"macrobatch": 4096})
    with pytest.raises(ValueError, match="choosing knobs for h200-1 / kimi-k2 / EP 16 / 1024 tokens") as e:
        knobs.choose_knobs("h200-1", KIMI, 16, 1024, given={"capacity": 0.01})   # overflows
    assert "\n" not in str(e.value)
    every = dict(dispatch="pull", combine="pull", minibatch=300, comm_sms=7, macrobatch=999,
                 capacity=0.9)
    assert knobs.choose_knobs(None, KIMI, 16, 1024, given=every) == knobs.Choice(every, "given")


# narrow experts under a wide H (calibration/drawn_shapes/seed5): a lag above 1 measured faster
SYN5 = dict(hidden=5376, expert_width=384, routed_experts=16, top_k=1, shared_width=0)


def _fake_layer(cfg, group=None, **kw):
    """What knobs.resolve_layer reads of a MoKLayer: SYN5's weights at EP 4, rank 0, 2304 tokens."""
    from types import SimpleNamespace

    w = SimpleNamespace(wg=torch.empty(4, 5376, 384, device="meta"), sg=None)
    return SimpleNamespace(**{"cfg": cfg, "group": group, "hardware": "h200-1", "device": "cpu",
                              "weights": w, "local_weights": True, "ep": 4, "tokens": 2304,
                              "topk": 1, "rank": 0, "knob_table": None, "knob_params": None,
                              "allow_params_mismatch": False, **kw})


def test_the_lag_is_chosen_with_the_knobs_on_one_gpu_in_bf16_only():
    """KernelConfig.list_lag None: the tuner's lag with its knobs (BF16, one GPU, no group);
    1 where every knob is given, in group mode and in FP8; a given lag is kept."""
    c = knobs.choose_knobs("h200-1", SYN5, 4, 2304)
    assert c.list_lag > 1
    one = knobs.choose_knobs("h200-1", SYN5, 4, 2304, list_lag=1)
    assert one.list_lag == 1 and one.predicted_ms > c.predicted_ms
    # searched only where lags were tested: not across real GPUs (h200-hgx8), not in FP8
    assert knobs.choose_knobs("h200-hgx8", SYN5, 4, 2304).list_lag == 1
    assert knobs.choose_knobs("h200-1", SYN5, 4, 2304, precision="fp8").list_lag == 1
    cfg, source = knobs.resolve_layer(_fake_layer(KernelConfig()))
    assert (cfg.knobs(), cfg.list_lag) == (c.knobs, c.list_lag)
    assert source.endswith(f"; list_lag {c.list_lag}")
    assert knobs.resolve_layer(_fake_layer(KernelConfig(list_lag=3)))[0].list_lag == 3
    assert knobs.resolve_layer(_fake_layer(KernelConfig(), group=object()))[0].list_lag == 1
    fp8 = KernelConfig(precision="fp8", block_k=128)
    assert knobs.resolve_layer(_fake_layer(fp8))[0].list_lag == 1
    full = KernelConfig(**c.knobs)
    cfg, source = knobs.resolve_layer(_fake_layer(full))
    assert source == "given" and cfg.list_lag == 1


def small_weights(e=32, h=256, i=128, shared=True):
    return ref.random_weights(e, h, i, i if shared else 0, seed=0)


def test_layer_resolves_unset_knobs_once_and_keeps_given_ones():
    w = small_weights()
    layer = MoKLayer(w, 4, 200, 4, 1, KernelConfig(minibatch=512, on_error="raise"), device="cpu",
                     hardware="h200-1")
    assert layer.cfg.minibatch == 512 and layer.cfg.on_error == "raise"
    assert None not in layer.cfg.knobs().values()
    shape = dict(hidden=256, expert_width=128, routed_experts=32, top_k=4, shared_width=128)
    assert layer.cfg.knobs() == knobs.choose_knobs("h200-1", shape, 4, 200,
                                                   given={"minibatch": 512}).knobs
    assert layer.knob_source.startswith("tuner: h200-1 params ")
    assert layer.knob_source.endswith("given: minibatch")
    full = KernelConfig(dispatch="pull", combine="push", minibatch=256, comm_sms=8,
                        macrobatch=4096, capacity=1.0)
    layer = MoKLayer(w, 4, 200, 4, 1, full, device="cpu")      # no GPU needed: nothing to choose
    assert layer.knob_source == "given" and layer.cfg.knobs() == full.knobs()


def test_virtual_ranks_choose_for_their_share_of_the_sms():
    w = small_weights()
    layer = MoKLayer(w, 4, 200, 4, None, device="cpu", hardware="h200-1")
    assert "at 33 SMs per rank" in layer.knob_source         # 132 SMs over 4 virtual ranks
    assert layer.cfg.comm_sms < 33


def test_layer_without_gpu_or_hardware_refuses_in_one_line():
    with pytest.raises(ValueError) as e:
        MoKLayer(small_weights(), 4, 200, 4, 1, device="cpu")
    msg = str(e.value)
    assert "\n" not in msg and "not a CUDA GPU" in msg and "hardware=" in msg


@pytest.mark.parametrize("gpu,group,want", [("NVIDIA H200", False, "h200-1"),
                                            ("NVIDIA H200", True, "h200-hgx8"),
                                            ("NVIDIA H100 80GB HBM3", False, "h100-1"),
                                            ("NVIDIA H100 80GB HBM3", True, "h100-hgx8")])
def test_hardware_for_gpu(gpu, group, want):
    """The preset a GPU's knobs are chosen for and its bench records are read against; each
    has a shipped parameters file."""
    from mok_model.params import PARAMS_DIR
    assert knobs.hardware_for_gpu(gpu, group) == knobs.preset_for_gpu(gpu, group) == want
    assert (PARAMS_DIR / f"{want}.json").is_file()


def test_unknown_gpu_is_refused():
    """A GPU the presets do not describe gets none: another GPU, the PCIe / NVL parts of the
    same names, or an SM count other than the preset's."""
    with pytest.raises(ValueError, match="no hardware preset"):
        knobs.hardware_for_gpu("NVIDIA A100-SXM4-80GB", False)
    for name, sms in (("NVIDIA A100-SXM4-80GB", None), ("NVIDIA H100 PCIe", 114),
                      ("NVIDIA H100 NVL", 132), ("NVIDIA H200 NVL", 132),
                      ("NVIDIA H100 80GB HBM3", 114)):
        assert knobs.preset_for_gpu(name, False, sms) is None, name
    assert knobs.preset_for_gpu("NVIDIA H100 80GB HBM3", False, 132) == "h100-1"
    with pytest.raises(ValueError, match=r"\(114 SMs\) has no hardware preset"):
        knobs.hardware_for_gpu("NVIDIA H100 80GB HBM3", True, 114)


# ---------------------------------------------------------------- knob tables

@pytest.fixture(scope="module")
def table(tmp_path_factory):
    path = tmp_path_factory.mktemp("knobs") / "kimi.json"
    rc = main(["tune", "--table", str(path), "--hardware", "h200-1", "--model", "kimi-k2",
               "--ep", "16", "--tokens-buckets", "128,64,512"])
    assert rc == 0
    return path


def test_table_round_trips(table, capsys):
    doc = json.loads(table.read_text())
    assert [b["tokens"] for b in doc["buckets"]] == [64, 128, 512]
    assert (doc["hardware"], doc["model"], doc["ep"]) == ("h200-1", "kimi-k2", 16)
    assert doc["params"].endswith("h200-1.json") and doc["date"] and doc["command"].startswith(
        "mok tune --table")
    assert list(table.parent.iterdir()) == [table]            # atomic: no temporary left behind
    for b in doc["buckets"]:
        c = knobs.choose_knobs("h200-1", KIMI, 16, b["tokens"])
        assert b["config"] == c.knobs and b["predicted_ms"] == pytest.approx(c.predicted_ms)
        t = knobs.choose_knobs("h200-1", KIMI, 16, b["tokens"], table=table)
        assert t.knobs == c.knobs and t.source == f"table {table} bucket {b['tokens']}"
    assert knobs.load_table(table)["buckets"] == doc["buckets"]


def test_table_bucket_is_the_nearest_at_or_above(table):
    doc = knobs.load_table(table)
    assert [knobs.table_bucket(doc, n)["tokens"] for n in (1, 64, 65, 128, 129, 512)] == \
        [64, 64, 128, 128, 512, 512]
    with pytest.raises(knobs.KnobTableError, match="513 tokens is above its largest bucket"):
        knobs.table_bucket(doc, 513)


def test_table_capacity_is_raised_for_fewer_tokens(table):
    """Bucket 64's capacity is safe for 64 tokens; 1 token per rank needs the worst case."""
    c = knobs.choose_knobs("h200-1", KIMI, 16, 1, table=table)
    assert c.knobs["capacity"] == 1.0 and "capacity raised to 1.0" in c.source


@pytest.mark.parametrize("hw,shape,ep,match", [
    ("h200-hgx8", KIMI, 16, "tuned for hardware 'h200-1'"),
    ("h200-1", {**KIMI, "hidden": 4096}, 16, "tuned for model 'kimi-k2'"),
    ("h200-1", KIMI, 8, "tuned for EP 16, this layer has EP 8"),
])
def test_table_for_other_hardware_model_or_ep_is_refused(table, hw, shape, ep, match):
    with pytest.raises(knobs.KnobTableError, match=match) as e:
        knobs.choose_knobs(hw, shape, ep, 100, table=table)
    assert "\n" not in str(e.value)


def _mutations():
    def drop(key):
        return lambda d: d.pop(key)

    def bucket(i, **kv):
        return lambda d: d["buckets"][i].update(kv)

    def config(i, **kv):
        return lambda d: d["buckets"][i]["config"].update(kv)

    return [
        (lambda d: d.update(schema="mok-knobs/0"), "schema 'mok-knobs/0'"),
        (drop("ep"), "missing field 'ep'"),
        (lambda d: d.update(ep="16"), "field 'ep'='16' has the wrong type"),
        (lambda d: d.update(buckets=[]), "no buckets"),
        (bucket(1, tokens=64), "bucket 1: tokens=64 must be an integer above"),
        (lambda d: d["buckets"][0]["config"].pop("capacity"), "bucket 64: config must name"),
        (config(0, dispatch="both"), "bucket 64: --dispatch 'both'"),
        (config(2, capacity=0.0), "bucket 512: --capacity 0.0"),
        (bucket(0, predicted_ms=-1.0), "bucket 64: predicted_ms=-1.0"),
        (bucket(1, list_lag=0), "bucket 128: list_lag=0 must be an integer from 1 to 8"),
        (bucket(2, list_lag="2"), "bucket 512: list_lag='2'"),
        (lambda d: d["shape"].update(top_k="8"), "shape.top_k='8'"),
    ]


@pytest.mark.parametrize("mutate,match", _mutations())
def test_bad_table_is_refused_with_one_line(table, tmp_path, mutate, match):
    doc = json.loads(table.read_text())
    mutate(doc)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    with pytest.raises(knobs.KnobTableError) as e:
        knobs.load_table(bad)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"knob table {bad}: ") and match in msg


def test_table_that_is_not_json_or_absent(tmp_path):
    bad = tmp_path / "t.json"
    bad.write_text("{oops")
    with pytest.raises(knobs.KnobTableError, match="not JSON"):
        knobs.load_table(bad)
    with pytest.raises(knobs.KnobTableError, match="no such file"):
        knobs.load_table(tmp_path / "absent.json")


def test_a_table_holds_robust_choices_unless_told_a_routing(table, tmp_path):
    """`mok tune --table` writes what a layer picks without one (robust); `--routing R` writes
    R's choices, which a layer uses as they are, or refuses where it asks for another routing."""
    assert knobs.table_routing(knobs.load_table(table)) == "robust"
    assert "--routing robust" in knobs.load_table(table)["command"]
    path = tmp_path / "uniform.json"
    assert main(["tune", "--table", str(path), "--hardware", "h200-1", "--model", "kimi-k2",
                 "--ep", "16", "--tokens-buckets", "512", "--routing", "uniform"]) == 0
    doc = knobs.load_table(path)
    assert doc["routing"] == "uniform"
    assert doc["buckets"][0]["config"] == knobs.choose_knobs("h200-1", KIMI, 16, 512,
                                                             routing="uniform").knobs
    assert knobs.choose_knobs("h200-1", KIMI, 16, 512, table=path).knobs == doc["buckets"][0]["config"]
    for asked in ("robust", "hot:0.1"):
        with pytest.raises(MokInputError, match=f"holds choices for routing 'uniform', the layer "
                                                f"asks for '{asked}'"):
            knobs.choose_knobs("h200-1", KIMI, 16, 512, table=path, routing=asked)
    old = {k: v for k, v in doc.items() if k not in ("routing", "_path")}  # before the field
    (tmp_path / "old.json").write_text(json.dumps(old))
    assert knobs.table_routing(knobs.load_table(tmp_path / "old.json")) == "uniform"


def test_layer_loads_a_table(tmp_path):
    """MoKLayer(..., knob_table=) takes the bucket at or above its token count, and given knobs."""
    shape = dict(hidden=256, expert_width=128, routed_experts=32, top_k=4, shared_width=128)
    path = tmp_path / "small.json"
    knobs.write_table(path, knobs.build_table("h200-1", shape, 4, [64, 256], command="test"))
    doc = knobs.load_table(path)
    assert doc["model"] == "custom" and doc["shape"] == shape
    layer = MoKLayer(small_weights(), 4, 200, 4, 1, device="cpu", hardware="h200-1",
                     knob_table=str(path))
    assert layer.cfg.knobs() == doc["buckets"][1]["config"]
    assert layer.knob_source == f"table {path} bucket 256"
    assert layer.cfg.list_lag == doc["buckets"][1]["list_lag"]
    layer = MoKLayer(small_weights(), 4, 200, 4, 1, KernelConfig(comm_sms=8), device="cpu",
                     hardware="h200-1", knob_table=str(path))
    assert layer.cfg.knobs() == {**doc["buckets"][1]["config"], "comm_sms": 8}
    assert layer.knob_source.endswith("given: comm_sms")
    with pytest.raises(knobs.KnobTableError, match="tuned for EP 4, this layer has EP 8"):
        MoKLayer(small_weights(), 8, 200, 4, 1, device="cpu", hardware="h200-1",
                 knob_table=str(path))


def test_tune_table_flags_are_checked(tmp_path, capsys):
    out = tmp_path / "t.json"
    for argv, needle in [(["--tokens", "64"], "drop --tokens"),
                         (["--tokens-buckets", "64,x"], "--tokens-buckets '64,x'"),
                         (["--routing", "zipf:x"], "--routing 'zipf:x'"),
                         (["--seed", "3"], "drop --seed 3")]:
        rc = main(["tune", "--table", str(out), "--hardware", "h200-1", "--model", "kimi-k2",
                   "--ep", "16", *argv])
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and len(err) == 1 and needle in err[0]
    assert not out.exists()
    blocker = tmp_path / "file"
    blocker.write_text("")
    rc = main(["tune", "--table", str(blocker / "t.json"), "--hardware", "h200-1", "--model",
               "kimi-k2", "--ep", "16", "--tokens-buckets", "64"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "does not exist" in err[0]   # checked before the work
    rc = main(["tune", "--hardware", "h200-1", "--model", "kimi-k2", "--ep", "16"])
    assert rc == 2 and "--tokens" in capsys.readouterr().err


# ---------------------------------------------------------------- capacity

def test_capacity_rows_is_the_kernels_formula():
    for ep, n, k, e, cap in [(16, 2048, 8, 384, 0.125), (4, 200, 4, 32, 0.3), (8, 1, 8, 128, 1.0)]:
        assert capacity.capacity_rows(ep, n, k, e, cap) == kernel_capacity_rows(ep, n, k, e, cap)


@pytest.mark.parametrize("model,ep", [("kimi-k2", 16), ("kimi-k2", 8), ("qwen3-30b-a3b", 32),
                                      ("glm-5", 4)])
@pytest.mark.parametrize("tokens", [1, 16, 64, 200, 2048])
def test_chosen_capacity_holds_the_uniform_and_hot_expert_needs(model, ep, tokens):
    m = load_model(model)
    c = knobs.choose_knobs("h200-1", knobs.shape_of(m), ep, tokens)
    need = capacity.uniform_need_rows(ep, tokens, m.top_k, m.routed_experts)
    hot = capacity.hot_expert_need_rows(ep, tokens, m.top_k, m.routed_experts)
    held = capacity.capacity_rows(ep, tokens, m.top_k, m.routed_experts, c.knobs["capacity"])
    assert held >= max(need, hot) == capacity.need_rows(ep, tokens, m.top_k, m.routed_experts)
    assert need > tokens * m.top_k                 # above the mean: the bound has a margin
    assert hot > ep * tokens                       # above the hot expert's own rows


@pytest.mark.parametrize("ep,tokens,e,k", [(16, 64, 64, 8), (8, 16, 64, 4), (4, 200, 32, 4),
                                           (16, 128, 128, 8), (8, 64, 8, 2), (4, 32, 16, 1)])
@pytest.mark.parametrize("routing", ["onehot", "hot:X"])
def test_hot_expert_bound_covers_sampled_routings(ep, tokens, e, k, routing):
    """The hot-expert bound is above the rows of the rank holding expert 0 in 200 routings drawn
    by the kernel's own generator with expert 0 taking a route of every token (onehot) or half of
    that (hot:X at X = 1/(2k)); it stays at most the worst case. Session 43: the uniform bound
    alone (capacity 0.125 at EP 16) overflowed under hot 0.1 on the H200."""
    from mok_kernels.routing import make_routing

    passes = 200
    need = capacity.hot_expert_need_rows(ep, tokens, k, e)
    spec = "onehot" if routing == "onehot" else f"hot:{1 / (2 * k)}"
    ids, _ = make_routing(passes * ep * tokens, e, k, spec, 0)
    rank0 = (ids.reshape(passes, ep * tokens * k) < e // ep).sum(1)
    assert int(rank0.max()) <= need <= ep * tokens * min(k, e // ep)
    if routing == "onehot":
        assert int(rank0.min()) >= ep * tokens      # expert 0 took a route of every token


@pytest.mark.parametrize("ep,tokens,e,k", [(16, 64, 64, 8), (8, 16, 64, 4), (4, 200, 32, 4)])
def test_uniform_bound_covers_sampled_routings(ep, tokens, e, k):
    """The bound is above the busiest rank's rows in 200 uniform routings drawn by the kernel's
    own generator (tokens are independent: one draw of 200 passes' tokens); it stays at most the
    worst case."""
    from mok_kernels.routing import make_routing

    passes = 200
    need = capacity.uniform_need_rows(ep, tokens, k, e)
    ids, _ = make_routing(passes * ep * tokens, e, k, "uniform", 0)
    rank = ids.reshape(passes, ep * tokens * k) // (e // ep)
    rows = torch.zeros(passes, ep, dtype=torch.int64).scatter_add_(1, rank, torch.ones_like(rank))
    assert int(rows.sum()) == passes * ep * tokens * k
    busiest = int(rows.max())
    assert busiest <= need <= ep * tokens * min(k, e // ep)


def test_fp8_layers_are_tuned_with_the_fp8_terms():
    """An FP8 layer's knobs come from the model's FP8 terms (its own predicted time), never from a
    BF16 knob table."""
    bf16 = knobs.choose_knobs("h200-1", KIMI, 8, 4096)
    fp8 = knobs.choose_knobs("h200-1", KIMI, 8, 4096, precision="fp8")
    assert "(fp8)" in fp8.source and "(fp8)" not in bf16.source
    assert fp8.predicted_ms != bf16.predicted_ms
    with pytest.raises(MokInputError, match="knob tables hold BF16"):
        knobs.choose_knobs("h200-1", KIMI, 8, 4096, table="any.json", precision="fp8")


def test_a_table_carries_each_buckets_lag(tmp_path):
    """`mok tune --table` writes the lag chosen with each bucket's knobs; a layer takes it with
    the bucket's knobs, but not with knobs of its own (the lag was chosen for the bucket's);
    tables written before the lag was chosen name none and give 1."""
    path = tmp_path / "syn5.json"
    knobs.write_table(path, knobs.build_table("h200-1", SYN5, 4, [2304], command="test"))
    doc = json.loads(path.read_text())
    assert doc["buckets"][0]["list_lag"] == knobs.choose_knobs("h200-1", SYN5, 4, 2304).list_lag > 1
    assert knobs.choose_knobs("h200-1", SYN5, 4, 2304, table=path).list_lag > 1
    assert knobs.choose_knobs("h200-1", SYN5, 4, 2304, table=path,
                              given={"comm_sms": 16}).list_lag == 1
    del doc["buckets"][0]["list_lag"]
    old = tmp_path / "old.json"
    old.write_text(json.dumps(doc))
    assert knobs.choose_knobs("h200-1", SYN5, 4, 2304, table=old).list_lag == 1


@pytest.mark.parametrize("name,sms,want", [("NVIDIA H200", 132, "h200-1"),
                                           ("NVIDIA H100 80GB HBM3", 132, "h100-1"),
                                           ("NVIDIA H100 PCIe", 114, "unknown")])
def test_bench_records_name_the_gpus_preset(monkeypatch, name, sms, want):
    """A bench record's hardware names the preset of the GPU that ran it (knobs.preset_for_gpu),
    "unknown" where none describes it: never h200-1 for another GPU."""
    from types import SimpleNamespace

    import torch

    from mok_kernels import bench
    monkeypatch.setattr(torch.cuda, "get_device_properties",
                        lambda dev=None: SimpleNamespace(name=name, multi_processor_count=sms))
    hw = bench._hardware()
    assert (hw["preset"], hw["gpu"], hw["sms"]) == (want, name, sms)


def test_knobs_told_the_routing_are_the_tuners_for_it():
    """KernelConfig.knob_routing: the unset knobs are the tuner's for that routing (the busiest
    GPU's pass; session 43: under hot 0.1 at EP 4 the uniform question's pick ran up to 13% off
    the best), at the layer's capacity; the source names the routing; a knob table written for
    another routing refuses it; a malformed spec is refused when the config is made."""
    m = load_model("qwen3-next-80b-a3b")
    shape = knobs.shape_of(m)
    told = knobs.choose_knobs("h200-1", shape, 8, 512, routing="hot:0.1")  # EP 8: session 75's
    plain = knobs.choose_knobs("h200-1", shape, 8, 512)    # refit picks alike at EP 4
    scn = Scenario(load_hardware("h200-1"), m, 8, 512, routing="hot:0.1")
    best = tune(scn, load_params(None, "h200-1"), top=1, list_lags=LIST_LAGS).best
    assert told.knobs == best.config.as_dict() != plain.knobs
    assert told.source.endswith("h200-1.json for routing hot:0.1")
    assert told.predicted_ms == pytest.approx(best.latency_ms)
    with pytest.raises(MokInputError, match="hot expert's share of routes must be in"):
        knobs.choose_knobs("h200-1", shape, 4, 512, routing="hot:0.5")    # above 1/top_k
    cfg, source = knobs.resolve_layer(_fake_layer(KernelConfig(knob_routing="zipf:1.2")))
    assert "for routing zipf:1.2" in source
    assert cfg.knobs() == knobs.choose_knobs("h200-1", SYN5, 4, 2304, routing="zipf:1.2").knobs
    for bad in ("hot", "zipf:x", 3):
        with pytest.raises(ValueError, match="knob_routing"):
            KernelConfig(knob_routing=bad).validate()


def test_a_layer_not_told_the_routing_picks_robust_knobs():
    """KernelConfig.knob_routing None (the default): the robust pick (tuner.tune_robust, the
    source says so); "robust" given is the same question; "uniform" is the uniform one."""
    default, source = knobs.resolve_layer(_fake_layer(KernelConfig()))
    assert "robust over uniform, zipf:1.2, hot:0.1" in source
    robust = knobs.choose_knobs("h200-1", SYN5, 4, 2304, routing="robust")
    assert default.knobs() == robust.knobs and default.list_lag == robust.list_lag
    told, told_source = knobs.resolve_layer(_fake_layer(KernelConfig(knob_routing="robust")))
    assert told.knobs() == default.knobs() and told_source == source
    uniform, _ = knobs.resolve_layer(_fake_layer(KernelConfig(knob_routing="uniform")))
    assert uniform.knobs() == knobs.choose_knobs("h200-1", SYN5, 4, 2304, routing="uniform").knobs


def test_knobs_told_a_measured_routing_file(tmp_path):
    """knob_routing may name a routing file (a router's top-k ids, (EP x tokens, top_k), as `mok
    predict --routing FILE` reads it): the knobs are the tuner's for those loads; a file of
    another shape is refused in one line naming it."""
    import numpy as np

    rng = np.random.default_rng(0)
    ids = rng.integers(0, 4, size=(4 * 2304, 1))           # every route on rank 0's experts
    path = tmp_path / "router.npy"
    np.save(path, ids)
    told = knobs.choose_knobs("h200-1", SYN5, 4, 2304, routing=str(path))
    assert told.source.endswith(f"for routing {path}")
    assert told.knobs["capacity"] == 1.0                   # rank 0 receives every route
    np.save(tmp_path / "short.npy", ids[:100])
    with pytest.raises(MokInputError, match="short.npy"):
        knobs.choose_knobs("h200-1", SYN5, 4, 2304, routing=str(tmp_path / "short.npy"))


# ---------------------------------------------------------------- answers kept across processes

def _fresh_choice(*args, **kw):
    """choose_knobs with this process's answers forgotten (the route cache's folder stays)."""
    knobs._CACHE.clear()
    return knobs.choose_knobs(*args, **kw)


def test_a_kept_answer_is_the_computed_one_bit_for_bit(tmp_path, monkeypatch):
    """The second process's answer is read from the cache's folder and is the first's: knobs,
    lag, source and the predicted latency's bits; MOK_ROUTE_CACHE=0 keeps nothing."""
    monkeypatch.setenv("MOK_ROUTE_CACHE_DIR", str(tmp_path))
    first = _fresh_choice("h200-1", KIMI, 16, 2048)
    kept = list(tmp_path.glob("*.route"))
    answers = [p for p in kept if b'"mok-knob-answer/1"' in p.read_bytes()]
    assert len(answers) == 1
    monkeypatch.setattr(knobs, "tuned_choice", lambda *a, **k: pytest.fail("not read back"))
    again = _fresh_choice("h200-1", KIMI, 16, 2048)
    assert again == first and again.predicted_ms.hex() == first.predicted_ms.hex()
    off = tmp_path / "off"
    monkeypatch.undo()
    monkeypatch.setenv("MOK_ROUTE_CACHE_DIR", str(off))
    monkeypatch.setenv("MOK_ROUTE_CACHE", "0")
    _fresh_choice("h200-1", KIMI, 8, 1024)
    assert not off.exists()


@pytest.mark.parametrize("tamper", [
    lambda a: {**a, "knobs": {**a["knobs"], "minibatch": -1}},
    lambda a: {**a, "knobs": {**a["knobs"], "capacity": 2.0}},
    lambda a: {**a, "predicted_ms": "1.0"},
    lambda a: {**a, "predicted_ms": -1.0},
    lambda a: {**a, "list_lag": 0},
    lambda a: {k: v for k, v in a.items() if k != "source"},
    lambda a: {**a, "knobs": {k: v for k, v in a["knobs"].items() if k != "comm_sms"}},
])
def test_an_entry_that_is_not_a_choice_is_answered_again(tmp_path, monkeypatch, tamper):
    monkeypatch.setenv("MOK_ROUTE_CACHE_DIR", str(tmp_path))
    first = _fresh_choice("h200-1", KIMI, 16, 4096)
    (entry,) = [p for p in tmp_path.glob("*.route") if b'"mok-knob-answer/1"' in p.read_bytes()]
    doc = json.loads(entry.read_bytes())
    entry.write_text(json.dumps({**doc, "answer": tamper(doc["answer"])}))
    assert _fresh_choice("h200-1", KIMI, 16, 4096) == first
    assert json.loads(entry.read_bytes())["answer"] == doc["answer"]     # written again


def test_a_routing_file_is_asked_every_process(tmp_path, monkeypatch):
    """A question for a routing file keeps no answer (the file may change under its name)."""
    import numpy as np

    from mok_model.workload import make_routing

    monkeypatch.setenv("MOK_ROUTE_CACHE_DIR", str(tmp_path / "cache"))
    m = load_model("kimi-k2")
    path = tmp_path / "routes.npy"
    np.save(path, make_routing("zipf:1.2", 16, 1024, m.routed_experts, m.top_k, 0))
    c = _fresh_choice("h200-1", KIMI, 16, 1024, routing=str(path))
    answers = [p for p in (tmp_path / "cache").glob("*.route")
               if b'"mok-knob-answer/1"' in p.read_bytes()]
    assert c.knobs and not answers


def test_a_parameters_file_changed_in_this_process_keeps_no_answer(tmp_path, monkeypatch):
    """A file of the answer written after mok_model was imported (a fit written in this process, or
    code edited under a running one) may not be what computes the answer: nothing is kept."""
    import shutil

    monkeypatch.setenv("MOK_ROUTE_CACHE_DIR", str(tmp_path / "cache"))
    mine = tmp_path / "h200-1.json"
    shutil.copy(knobs._MODEL_DIR / "params" / "h200-1.json", mine)
    doc = json.loads(mine.read_text())
    doc["gemm_table"] = str(knobs._MODEL_DIR / "params" / doc["gemm_table"])
    mine.write_text(json.dumps(doc))
    c = _fresh_choice("h200-1", KIMI, 16, 2048, params=str(mine))
    assert c.knobs
    answers = [p for p in (tmp_path / "cache").glob("*.route")
               if b'"mok-knob-answer/1"' in p.read_bytes()]
    assert not answers
    monkeypatch.setattr(knobs.mok_model, "IMPORTED_AT", time.time() + 1)
    _fresh_choice("h200-1", KIMI, 16, 2048, params=str(mine))
    assert [p for p in (tmp_path / "cache").glob("*.route") if b'"mok-knob-answer/1"' in p.read_bytes()]


def test_a_parameters_path_is_kept_as_its_name(tmp_path, monkeypatch):
    """knob_params given as a Path (os.PathLike) is the same question as its name (a Path in
    the key was a TypeError); a question JSON cannot hold keeps nothing."""
    from mok_model import route_cache

    monkeypatch.setenv("MOK_ROUTE_CACHE_DIR", str(tmp_path))
    shipped = knobs._MODEL_DIR / "params" / "h200-1.json"
    by_path = _fresh_choice("h200-1", KIMI, 16, 2048, params=shipped)
    monkeypatch.setattr(knobs, "tuned_choice", lambda *a, **k: pytest.fail("not read back"))
    assert _fresh_choice("h200-1", KIMI, 16, 2048, params=str(shipped)) == by_path
    assert route_cache.answer_key({"q": float("nan")}, ()) is None
    assert route_cache.answer_key({"q": object()}, ()) is None


def test_a_changed_file_or_version_is_another_key(tmp_path, monkeypatch):
    """route_cache.answer_key hashes the files' bytes (read once a process) and names the
    Python and numpy versions: an edited parameters file is never answered from before."""
    from mok_model import route_cache

    monkeypatch.setenv("MOK_ROUTE_CACHE_DIR", str(tmp_path))
    f = tmp_path / "params.json"
    f.write_text('{"a": 1}')
    route_cache._files_digest.cache_clear()
    before = route_cache.answer_key({"q": 1}, (f,))
    f.write_text('{"a": 2}')
    route_cache._files_digest.cache_clear()
    after = route_cache.answer_key({"q": 1}, (f,))
    assert before["files"] != after["files"] and before["question"] == after["question"]
    assert {"python", "numpy", "cpu", "machine"} <= set(before)
    assert route_cache.answer_key({"q": 1}, (tmp_path / "missing.json",)) is None


def test_the_kept_answers_hash_every_module_a_choice_runs():
    """Every module of mok_model and mok_kernels that a choice imports (a fresh process, several
    kinds of question) is among the files its key hashes (knobs.ANSWER_CODE)."""
    import subprocess
    import sys

    code = ("import json, sys\n"
            "from mok_kernels import knobs\n"
            "from mok_model.presets import load_model\n"
            "s = knobs.shape_of(load_model('kimi-k2'))\n"
            "knobs.choose_knobs('h200-1', s, 16, 2048)\n"
            "knobs.choose_knobs('h200-hgx8', s, 8, 512, routing='zipf:1.2')\n"
            "knobs.choose_knobs('gb300-nvl72', knobs.shape_of(load_model('glm-5')), 16, 1024,\n"
            "                   given={'dispatch': 'push'}, precision='fp8')\n"
            "print(json.dumps([m.__file__ for n, m in sys.modules.items()\n"
            "                  if n.split('.')[0] in ('mok_model', 'mok_kernels')]))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "MOK_ROUTE_CACHE": "0"})
    hashed = {p.resolve() for p in knobs._answer_files(load_hardware("h200-1"), None, False)}
    ran = {Path(f).resolve() for f in json.loads(out.stdout)}
    assert ran and ran <= hashed, sorted(ran - hashed)
