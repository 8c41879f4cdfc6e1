"""Inputs session 45's fuzzing pass found refused wrongly, accepted silently or overwritten
without a word: each now runs, or gives one line naming the value and the rule (exit 2)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from mok_model.cli import main
from mok_model.tuner import comm_sms_choices, robust_routings
from mok_model.workload import make_routing

from test_bad_inputs_session30 import _one_line  # the one-line check

REPO = Path(__file__).resolve().parents[1]


def _model(tmp_path: Path, **fields) -> str:
    body = {"hidden": 1024, "expert_width": 2048, "routed_experts": 256, "top_k": 8,
            "shared_experts": 0, "shared_width": 0, "moe_layers": 1, "layers": 1, **fields}
    path = tmp_path / "m.toml"
    path.write_text("".join(f"{k} = {v}\n" for k, v in body.items()))
    return str(path)


def test_a_gpu_of_few_sms_is_tuned(tmp_path, capsys):
    """Under 8 SMs the tuner's comm SM counts (4, 8, ... up to half) were none, and `mok tune`
    said every setting overflowed, --capacity 1.0 included."""
    assert comm_sms_choices(132) == list(range(4, 65, 4)) and comm_sms_choices(8) == [4]
    assert comm_sms_choices(7) == [1, 2, 3] and comm_sms_choices(2) == [1]
    hw = (REPO / "mok_model/presets/hardware.toml").read_text()
    block = hw[hw.index("[h200-hgx8]"):hw.index("[h200-hgx8.sources]")].split("\n", 1)[1]
    path = tmp_path / "small.toml"
    path.write_text(block.replace("sms = 132", "sms = 4"))
    rc = main(["tune", "--hardware", str(path), "--model", "deepseek-v3", "--ep", "8",
               "--tokens", "256", "--params", "mok_model/params/h200-hgx8.json",
               "--allow-params-mismatch", "--json"])
    assert rc == 0
    assert json.loads(capsys.readouterr().out)["best"]["config"]["comm_sms"] in (1, 2)


def test_robust_knobs_judge_a_hot_expert_a_model_can_have(tmp_path, capsys):
    """hot:0.1 is more than one route a token at top_k > 10: the robust question refused such
    models naming a routing the user never gave; where the other experts cannot fill a token's
    top_k there is no hot expert to judge."""
    assert robust_routings(8, 256) == ("uniform", "zipf:1.2", "hot:0.1")
    assert robust_routings(64, 256) == ("uniform", "zipf:1.2", "hot:0.015625")
    assert robust_routings(8, 8) == ("uniform", "zipf:1.2")
    rc = main(["tune", "--hardware", "h200-hgx8", "--model", _model(tmp_path, top_k=64),
               "--ep", "8", "--tokens", "256", "--routing", "robust", "--json"])
    assert rc == 0
    assert json.loads(capsys.readouterr().out)["judged_under"] == list(robust_routings(64, 256))


@pytest.mark.parametrize("spec,experts,k", [("uniform", 128, 128), ("uniform", 256, 255),
                                            ("hot:0.005", 128, 127)])
def test_tokens_that_take_nearly_every_expert_are_drawn(spec, experts, k):
    """Redrawing repeats stalled where a token takes nearly every expert (uniform, top_k =
    experts): 'could not draw ... use a milder zipf:S or hot:F'. Such tokens draw their k
    without replacement, as steep zipf routings do."""
    t0 = time.perf_counter()
    ids = make_routing(spec, 2, 500, experts, k, seed=1)
    assert time.perf_counter() - t0 < 10
    assert ids.shape == (1000, k) and ids.dtype == np.int32
    srt = np.sort(ids, axis=1)
    assert (srt[:, 1:] != srt[:, :-1]).all() and srt.min() >= 0 and srt.max() < experts
    assert np.array_equal(ids, make_routing(spec, 2, 500, experts, k, seed=1))


def test_list_lag_is_refused_for_the_backward(capsys):
    """`--pass bwd --list-lag 2` printed 'work-list lag 2' over the lag-1 prediction."""
    rc = main(["predict", "--hardware", "h200-hgx8", "--model", "deepseek-v3", "--ep", "8",
               "--tokens", "64", "--pass", "bwd", "--list-lag", "2"])
    _one_line(rc, capsys.readouterr().err, "mok: error: --list-lag 2 with --pass bwd",
              "drop --list-lag")


def test_a_knob_table_written_over_says_so(tmp_path, capsys):
    """An existing --table file was replaced without a word (a trace, parameters, a plot and a
    study's files alike): it still is, with a warning line; a file of another kind is refused
    and kept (session 71: a parameters file was replaced by a knob table)."""
    table = tmp_path / "t.json"
    argv = ["tune", "--hardware", "h200-hgx8", "--model", "deepseek-v3", "--ep", "8",
            "--table", str(table), "--tokens-buckets", "64"]
    for other in ('{"keep": "me"}', (REPO / "mok_model" / "params" / "h200-hgx8.json").read_text()):
        table.write_text(other)
        assert main(argv) == 2 and table.read_text() == other
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "exists and holds" in err and "not 'mok-knobs/1'" in err
    table.write_text('{"schema": "mok-knobs/1"}')
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 0 and err == f"mok: warning: --table {str(table)!r} exists; it will be replaced\n"
    assert "buckets" in json.loads(table.read_text())


def test_a_shared_width_without_a_shared_expert_is_refused(tmp_path, capsys):
    """shared_width 2048 with shared_experts 0 was dropped without a word."""
    rc = main(["predict", "--hardware", "h200-hgx8", "--model",
               _model(tmp_path, shared_width=2048), "--ep", "8", "--tokens", "64"])
    _one_line(rc, capsys.readouterr().err, "mok: error: model 'm': shared_width=2048 needs "
              "shared_experts > 0", "drop it or set both")


# ---- found by a second pass (random valid questions, in-process) ----

def test_a_given_ring_gets_a_minibatch_it_holds(capsys):
    """--macrobatch 1024 alone was refused naming '--minibatch 4096', a value nobody gave (the
    check's default), and the tuner could pick a minibatch the given ring does not hold."""
    rc = main(["predict", "--hardware", "h200-hgx8", "--model", "deepseek-v3", "--ep", "8",
               "--tokens", "64", "--macrobatch", "1024", "--json"])
    cfg = json.loads(capsys.readouterr().out)["config"]
    assert rc == 0 and cfg["macrobatch"] == 1024 and cfg["minibatch"] <= 1024
    rc = main(["tune", "--hardware", "h200-hgx8", "--model", "deepseek-v3", "--ep", "8",
               "--tokens", "64", "--macrobatch", "100", "--top", "20", "--json"])
    rows = json.loads(capsys.readouterr().out)["top"]
    assert rc == 0 and {r["config"]["minibatch"] for r in rows} == {100}


def test_the_capacity_advice_stays_in_range(capsys):
    """An overflowing --capacity was told 'use --capacity 1 or more'; capacities lie in (0, 1]."""
    rc = main(["predict", "--hardware", "vr-nvl72", "--model", "llama4-maverick", "--ep", "1",
               "--tokens", "3", "--routing", "zipf:2.762", "--capacity", "0.05"])
    _one_line(rc, capsys.readouterr().err, "mok: error: --capacity 0.05 overflows",
              "use --capacity 1 (every routed row) or leave it to the tuner")


def test_failing_the_only_plane_says_so(capsys):
    """On one-plane hardware `--degrade gpu3.p0:0` was refused advising 'fail one plane:
    gpuN.pK:0', the input itself. (On rubin-ultra-nvl576: since session 64 h200-1, whose peers
    are emulated, refuses any --degrade.)"""
    rc = main(["simulate", "--hardware", "rubin-ultra-nvl576", "--model", "deepseek-v3", "--ep", "8",
               "--tokens", "512", "--degrade", "gpu3.p0:0"])
    _one_line(rc, capsys.readouterr().err, "mok: error: --degrade 'gpu3.p0:0' leaves no bandwidth",
              "rubin-ultra-nvl576 has one NVLink plane, so failing it cuts the GPU off")


def test_minibatches_under_a_tile_are_costed_as_the_kernel_cuts_them(capsys):
    """Cut on tile boundaries (Hopper: tile_aligned_minibatches 1), minibatches under a tile's
    rows are mostly empty; the analytic engine costed every one as a GEMM of its few rows and
    read 8x the simulator (h200-hgx8 deepseek-v3 EP 8 512 tokens --minibatch 4: 15.7 / 1.96 ms)."""
    ms = {}
    for engine in ("predict", "simulate"):
        rc = main([engine, "--hardware", "h200-hgx8", "--model", "deepseek-v3", "--ep", "8",
                   "--tokens", "512", "--minibatch", "4", "--json"])
        assert rc == 0
        ms[engine] = json.loads(capsys.readouterr().out)["latency_ms"]
    assert 0.8 < ms["predict"] / ms["simulate"] < 1.25, ms


def test_the_critical_path_holds_no_negative_term(capsys):
    """With 131 of 132 SMs copying, pipeline_fill (minibatch 0's GEMMs on the one compute SM)
    read 151 ms in a 5.8 ms pass and steady_state -146 ms; the terms still add up to it."""
    rc = main(["predict", "--hardware", "h200-1", "--model", "llama4-maverick", "--ep", "2",
               "--tokens", "4097", "--comm-sms", "131", "--json"])
    d = json.loads(capsys.readouterr().out)
    assert rc == 0 and min(d["breakdown_ms"].values()) >= 0, d["breakdown_ms"]
    assert sum(d["breakdown_ms"].values()) == pytest.approx(d["latency_ms"], rel=1e-9)
