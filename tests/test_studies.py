"""Every study on its reduced grid (--quick): output shapes and one physical expectation each;
the parallel runner (process pool, Dask LocalCluster) returns results in point order."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from studies import cli as study_cli
from studies.common import Options
from studies.registry import STUDIES, study
from studies.runner import sweep

EPS = 1e-9


def _run(name: str, tmp_path: Path, **kw):
    opts = Options(out=tmp_path / name, quick=True, workers=1, progress=False, **kw)
    opts.out.mkdir(parents=True)
    res = study(name).run(opts)
    for f in (res.csv, res.png, res.summary):
        assert f.is_file() and f.stat().st_size > 0, f
    assert res.png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = res.summary.read_text()
    assert text.startswith("# ") and "Assumption" in text or name == "predicted-vs-measured"
    with res.csv.open() as fh:
        assert len(list(csv.DictReader(fh))) == len(res.rows)
    return res


def test_list_and_bad_input(capsys):
    assert study_cli.cli(["--list"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in STUDIES)
    for argv in (["nope"], ["push-vs-pull", "--engine", "foo"], ["push-vs-pull", "--workers", "-1"],
                 ["push-vs-pull", "--seed", "x"], []):
        assert study_cli.cli(argv) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and err.startswith("mok study: error:"), err


def test_mok_cli_forwards_study(capsys):
    from mok_model.cli import main

    assert main(["study", "--list"]) == 0
    assert "push-vs-pull" in capsys.readouterr().out
    assert main(["study", "nope"]) == 2


def test_cli_writes_into_out_name(tmp_path, capsys):
    assert study_cli.cli(["minibatch-sweep", "--quick", "--out", str(tmp_path), "--workers", "1",
                          "--no-progress"]) == 0
    assert (tmp_path / "minibatch-sweep" / "summary.md").is_file()


def test_runner_order_processes_and_dask():
    from studies.minibatch_sweep import _point

    pts = [{"model": "glm-5", "tokens": t, "minibatch": b, "seed": 0, "engine": "analytic"}
           for t in (1024, 2048) for b in (1024, 4096, 16384)]
    serial = sweep(_point, pts, Options(out=Path("."), workers=1, progress=False))
    pool = sweep(_point, pts, Options(out=Path("."), workers=2, progress=False))
    assert pool == serial
    from dask.distributed import LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, protocol="tcp",
                      host="127.0.0.1", dashboard_address=None) as lc:
        dask = sweep(_point, pts, Options(out=Path("."), cluster=lc.scheduler_address, progress=False))
    assert dask == serial


def test_seed_reproducible(tmp_path):
    a = _run("minibatch-sweep", tmp_path / "a", seed=3)
    b = _run("minibatch-sweep", tmp_path / "b", seed=3)
    c = _run("minibatch-sweep", tmp_path / "c", seed=4)
    assert a.csv.read_text() == b.csv.read_text()
    assert a.csv.read_text() != c.csv.read_text()


def test_push_vs_pull(tmp_path):
    res = _run("push-vs-pull", tmp_path)
    bench = [r for r in res.rows if r["part"] == "dispatch-bench"]
    for hw in {r["hardware"] for r in bench}:
        push = sorted((r for r in bench if r["hardware"] == hw and r["mode"] == "push"), key=lambda r: r["ep"])
        pull = sorted((r for r in bench if r["hardware"] == hw and r["mode"] == "pull"), key=lambda r: r["ep"])
        sig = [r["signal_ms"] for r in push]
        assert all(b > a for a, b in zip(sig, sig[1:])), "push signalling must grow with EP"
        assert all(p["signal_ms"] < q["signal_ms"] for p, q in zip(pull, push))
        assert all(p["dispatch_ms"] <= q["dispatch_ms"] + EPS for p, q in zip(pull, push))
    # the whole-layer sweep: pull never loses; at 1-8 tokens the gap grows with EP and is
    # positive from EP 72 on (the quick grid: EP 8, 16, 72, 144)
    sweep = [r for r in res.rows if r["part"] == "token-sweep"]
    assert {r["tokens"] for r in sweep} >= {1, 8, 8192}
    assert all(r["push_over_pull"] > -1e-3 for r in sweep)
    for hw in {r["hardware"] for r in sweep}:
        small = sorted((r for r in sweep if r["hardware"] == hw and r["tokens"] == 8), key=lambda r: r["ep"])
        gaps = [r["push_over_pull"] for r in small]
        assert all(b > a for a, b in zip(gaps, gaps[1:])), gaps
        assert all(r["push_over_pull"] > 0.01 for r in small if r["ep"] >= 72)


def test_minibatch_sweep(tmp_path):
    from studies.minibatch_sweep import curves

    res = _run("minibatch-sweep", tmp_path)
    cur = curves(res.rows)
    assert len(cur) == 4  # 2 models x 2 token counts
    for c in cur:
        assert c["best_over_worst"] >= c["best_over_worst_recommended"] >= 1.0
        sel = [r for r in res.rows if (r["model"], r["tokens"]) == (c["model"], c["tokens"])]
        assert max(r["tokens_per_s_per_gpu"] for r in sel) == pytest.approx(
            next(r["tokens_per_s_per_gpu"] for r in sel if r["minibatch"] == c["best_minibatch"]))


def test_ring_buffer(tmp_path):
    res = _run("ring-buffer", tmp_path)
    assert len(res.rows) == 4
    for r in res.rows:
        assert r["half_macrobatch"] < r["all_macrobatch"]
        assert r["overhead_retuned_pct"] >= -1e-6, "a smaller ring is never faster"
        if r["all_minibatch"] <= r["half_macrobatch"]:
            assert r["overhead_same_knobs_pct"] >= r["overhead_retuned_pct"] - 1e-6, "re-tuning never hurts"
        else:
            assert np.isnan(r["overhead_same_knobs_pct"])


def test_host_overhead(tmp_path):
    from studies.host_overhead import SYSTEMS

    res = _run("host-overhead", tmp_path)
    for key in {(r["tokens"], r["pass"], r["system"]) for r in res.rows}:
        sel = sorted((r for r in res.rows if (r["tokens"], r["pass"], r["system"]) == key),
                     key=lambda r: r["host_launch_scale"])
        lat = [r["latency_ms"] for r in sel]
        assert all(b >= a - EPS for a, b in zip(lat, lat[1:])), f"slower host sped up {key}"

    def spread(system):
        sel = [r["latency_ms"] for r in res.rows if r["system"] == system and r["pass"] == "fwd"]
        return max(sel) - min(sel)

    assert all(spread("mok") < spread(b) for b in SYSTEMS if b != "mok")


def test_ep_table(tmp_path):
    res = _run("ep-table", tmp_path)
    assert len(res.rows) == 2 * 2 * 2
    assert res.headline["published rows matched"] == 5
    for r in res.rows:
        assert r["speedup"] == pytest.approx(r["best_baseline_ms"] / r["mok_ms"])
        assert r["mok_lo_ms"] <= r["mok_ms"] <= r["mok_hi_ms"]  # the fit's band (gb300 is fitted)
        if "pub_mok_ms" in r:
            assert r["err_mok_pct"] == pytest.approx(100 * (r["mok_ms"] / r["pub_mok_ms"] - 1))
    for m in ("kimi-k2", "glm-5"):
        for t in (1024, 2048):
            f, b = (next(r for r in res.rows if (r["model"], r["tokens"], r["pass"]) == (m, t, p))
                    for p in ("fwd", "bwd"))
            assert b["mok_ms"] > f["mok_ms"], "backward does about twice the FLOPs of forward"


def test_layer_throughput(tmp_path):
    from mok_model.presets import load_hardware

    res = _run("layer-throughput", tmp_path)
    names = {r["model"] for r in res.rows}
    assert "mixtral-8x7b" not in names and "glm-4.5" in names
    assert next(r for r in res.rows if r["model"] == "glm-4.5")["routed_experts"] == 192
    peak = load_hardware("gb300-nvl72").tflops("mxfp8")
    for r in res.rows:
        assert 0 < r["mok_tflops"] < peak
        assert r["mok_tflops"] * r["mok_ms"] == pytest.approx(r["gflop_per_gpu"])
    assert "skipped" in res.summary.read_text() and "padded" in res.summary.read_text()


def test_scale_up_domains(tmp_path):
    res = _run("scale-up-domains", tmp_path)
    by = {(r["link_x"], r["ep"]): r["mok_ms"] for r in res.rows}
    for (x, ep), ms in by.items():
        if (2 * x, ep) in by:
            assert by[(2 * x, ep)] <= ms + EPS, "more bandwidth never slows the layer"
    assert all(r["routed_experts"] % r["ep"] == 0 for r in res.rows)


def test_end_to_end(tmp_path):
    res = _run("end-to-end", tmp_path)
    rows = sorted(res.rows, key=lambda r: r["mfu"])
    assert len(rows) == 3
    for r in rows:
        assert r["speedup"] == pytest.approx(r["mok_tokens_per_s_per_gpu"] / r["deepep_tokens_per_s_per_gpu"])
        faster_moe = r["mok_moe_total_ms"] < r["deepep_moe_total_ms"]
        assert (r["speedup"] > 1) == faster_moe
    # a faster non-MoE part leaves a larger MoE share, so the speedup moves away from 1
    sp = [abs(r["speedup"] - 1) for r in rows]
    assert sp[0] <= sp[1] <= sp[2]


def test_predicted_vs_measured_without_runs(tmp_path):
    from studies import predicted_vs_measured as pvm

    opts = Options(out=tmp_path / "pvm", quick=True, workers=1, progress=False)
    opts.out.mkdir()
    res = pvm.run(opts, runs_dir=tmp_path / "empty")
    assert res.rows == [] and res.headline["measured records"] == 0
    assert "No measured runs" in res.summary.read_text()
    assert res.csv.read_text().strip() == "id,measured_ms,predicted_ms,ape"


def test_predicted_vs_measured_with_synthetic_runs(tmp_path):
    """Records built from the model itself, scaled by known factors: the study must recover them."""
    from mok_model.predict import predict
    from mok_model.presets import load_hardware, load_model
    from mok_model.records import default_dn_blocks
    from mok_model.scenario import Config, Scenario
    from studies import predicted_vs_measured as pvm

    scn = Scenario(load_hardware("h200-1"), load_model("qwen3-30b-a3b"), 8, 1024, "fwd", "bf16")
    factors = [1.0, 1.1, 0.8, 1.05]
    recs = []
    for i, (mb, f) in enumerate(zip((512, 1024, 2048, 4096), factors)):
        cfg = Config(minibatch=mb, comm_sms=24, macrobatch=max(mb, 8192))
        ms = predict(scn, cfg, "mok").latency_ms * f
        recs.append({"schema": "mok-run/1", "id": f"synthetic-{i}", "date": "2026-12-05",
                     "hardware": {"preset": "h200-1", "gpu": "test", "gpus": 1, "sms": 132, "fabric": "local-hbm"},
                     "software": {}, "system": "mok", "model": "qwen3-30b-a3b", "ep": 8, "emulated_peers": True,
                     "tokens": 1024, "pass": "fwd", "precision": "bf16", "config": cfg.as_dict(),
                     "routing": {"kind": "uniform", "seed": 0}, "latency_ms": {"median": ms},
                     "source": "measured", "tiles": {"zero_shared_slot": 0}})
        d = default_dn_blocks(recs[-1])    # today's kernel: its down blocks named where above 1
        recs[-1]["tiles"] |= {"dn_blocks": d} if d > 1 else {}
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "synthetic.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    opts = Options(out=tmp_path / "pvm", quick=True, workers=1, progress=False)
    opts.out.mkdir()
    res = pvm.run(opts, runs_dir=runs)
    ape = sorted(r["ape"] for r in res.rows)
    want = sorted(abs(1 / f - 1) for f in factors)
    assert np.allclose(ape, want, atol=1e-6)
    assert (opts.out / "predicted-vs-measured-regret.csv").is_file()


def test_engine_option_reaches_the_simulator(tmp_path):
    pytest.importorskip("mok_model.sim")
    sim = _run("minibatch-sweep", tmp_path / "sim", engine="sim")
    ana = _run("minibatch-sweep", tmp_path / "ana")
    assert "Engine: `sim`" in sim.summary.read_text()
    assert [r["latency_ms"] for r in sim.rows] != [r["latency_ms"] for r in ana.rows]
