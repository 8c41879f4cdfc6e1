"""calibration/noise.py drift_sd and drift_ceiling (the Spearman a perfect model would expect
against run-to-run drift) and their CLI, against hand-made records whose answer is known."""

import json
import math

import numpy as np
import pytest

from calibration.noise import _rank_corr, band, drift_ceiling, drift_regret, drift_sd, main
from calibration.rerun import repeated
from calibration.validate import spearman


def _rec(i, ms, tokens=1024, mb=4096, seed=0, date="2026-12-01T03:00:00+00:00"):
    """A run record with what workload_key, rerun.run_key and the CLI's reader need; `mb`
    (minibatch) tells configurations apart, `seed` (routing) workloads."""
    return {"schema": "mok-run/1", "id": f"r{i}", "date": date, "system": "mok",
            "model": "glm-5", "ep": 8, "hardware": {"preset": "h200-1"}, "software": {},
            "emulated_peers": True, "tokens": tokens,
            "routing": {"kind": "uniform", "seed": seed}, "pass": "fwd", "precision": "bf16",
            "source": "measured", "latency_ms": {"median": float(ms)}, "tiles": {},
            "config": {"dispatch": "pull", "combine": "push", "minibatch": mb, "comm_sms": 32,
                       "macrobatch": 131072, "capacity": 1.0}}


def _workloads(steps, count=10, tokens=1024, configs=4, start=0):
    """`count` workloads of `configs` configurations each, medians 1 ms x (1 + step)^j."""
    return [_rec(start + w * configs + j, (1 + steps) ** j, tokens, mb=256 << j, seed=w)
            for w in range(count) for j in range(configs)]


def test_bands_split_at_128_512_2048_tokens():
    assert [band(t) for t in (1, 128, 129, 512, 2048, 2049)] == \
        ["<=128", "<=128", "<=512", "<=512", "<=2048", ">2048"]


def test_rank_corr_is_validate_spearman_row_by_row_ties_included():
    rng = np.random.default_rng(3)
    x = [1.0, 2.0, 2.0, 3.0, 0.5]
    ys = rng.normal(size=(20, 5))
    ys[0] = [1, 1, 2, 2, 3]
    assert _rank_corr(x, ys) == pytest.approx([spearman(x, y) for y in ys])


def test_configurations_far_apart_rank_as_measured():
    out = drift_ceiling(_workloads(0.5), {"<=2048": (0.02, 10)})
    assert out["groups"] == 10 and out["ceiling"] > 0.999
    assert out["bands"] == {"<=2048": {"ceiling": out["ceiling"], "groups": 10}}


def test_configurations_closer_than_the_drift_do_not():
    out = drift_ceiling(_workloads(0.001), {"<=2048": 0.05})   # 0.1% apart, 5% drift
    assert out["groups"] == 10 and out["ceiling"] < 0.3
    # between: steps of one drift SD rank clearly, not perfectly
    mid = drift_ceiling(_workloads(0.05), {"<=2048": 0.05})["ceiling"]
    assert 0.6 < mid < 0.97


def test_seeded_and_deterministic():
    recs, sd = _workloads(0.01), {"<=2048": 0.02}
    a, b = drift_ceiling(recs, sd, seed=5), drift_ceiling(recs, sd, seed=5)
    assert a["ceiling"] == b["ceiling"] and a["workloads"] == b["workloads"]
    assert drift_ceiling(recs, sd, seed=6)["ceiling"] != a["ceiling"]
    assert drift_ceiling(recs, sd, draws=1000)["ceiling"] == pytest.approx(a["ceiling"], abs=0.05)


def test_each_band_takes_its_own_sd_and_a_band_without_one_is_left_out():
    recs = (_workloads(0.01, tokens=64) + _workloads(0.01, tokens=4096, start=100)
            + _workloads(0.01, tokens=256, count=3, start=200)
            + [_rec(300, 1.0, seed=99), _rec(301, 2.0, seed=99, mb=512)]     # 2 configs: none
            + [_rec(310 + j, 1.0, seed=98, mb=256 << j) for j in range(3)])  # all equal: none
    out = drift_ceiling(recs, {"<=128": 0.05, ">2048": 0.001, "<=2048": 0.01})
    assert out["groups"] == 20 and out["no_sd"] == 3                          # <=512: no SD
    assert out["bands"]["<=128"]["ceiling"] < 0.5 < 0.99 < out["bands"][">2048"]["ceiling"]
    assert out["ceiling"] == pytest.approx(np.mean([v["ceiling"] for v in out["bands"].values()]))
    assert drift_ceiling([dict(r, system="mok-gemm") for r in recs], {"<=128": 0.05})["groups"] == 0


def test_regret_floor_is_nil_far_apart_and_the_drift_where_configurations_tie():
    far = drift_regret(_workloads(0.5), {"<=2048": 0.02})
    assert far["workloads"] == 10 and far["max"] < 1e-12 and far["share_over"]["0.03"] == 0
    # four equal settings, 5% drift: the first run's pick is any one of four equals, so its
    # expected regret is E[X1 / min(X1..X4)] - 1 for log-normal X: about 5% (1.03 SD)
    tie = drift_regret(_workloads(1e-9), {"<=2048": 0.05}, draws=2000)
    assert 0.04 < tie["mean"] < 0.065 and tie["max"] > tie["mean"]
    assert tie["bands"] == {"<=2048": {k: tie[k] for k in ("workloads", "mean", "max")}}
    assert drift_regret(_workloads(1e-9), {"<=2048": 0.05}, draws=2000) == tie  # seeded


def test_regret_floor_counts_workloads_of_enough_configurations_in_bands_with_an_sd():
    recs = _workloads(0.01, configs=3) + _workloads(0.01, tokens=64, start=100)
    out = drift_regret(recs, {"<=2048": 0.05})
    assert out["workloads"] == 0 and out["no_sd"] == 10 and out["mean"] is None
    out = drift_regret(recs, {"<=2048": 0.05}, min_configs=3)
    assert out["workloads"] == 10 and out["no_sd"] == 10 and set(out["bands"]) == {"<=2048"}


def test_drift_sd_recovers_a_known_sd_and_shrugs_off_outliers():
    rng = np.random.default_rng(0)
    pairs = []
    for tokens, sd in ((64, 0.05), (1024, 0.02)):
        for x in rng.normal(0.01, sd, 2000):      # a shift moves no SD
            pairs.append(({"tokens": tokens, "latency_ms": {"median": 1.0}},
                          {"tokens": tokens, "latency_ms": {"median": math.exp(x)}}))
    pairs += [({"tokens": 1024, "latency_ms": {"median": 1.0}},
               {"tokens": 1024, "latency_ms": {"median": 3.0}})] * 20     # 1% wild pairs
    got = drift_sd(pairs)
    assert set(got) == {"<=128", "<=2048"}
    assert got["<=128"][0] == pytest.approx(0.05, rel=0.1) and got["<=128"][1] == 2000
    assert got["<=2048"][0] == pytest.approx(0.02, rel=0.1) and got["<=2048"][1] == 2020


def test_drift_sd_reads_runs_measured_twice():
    later = "2026-12-02T03:00:00+00:00"
    first = _workloads(0.5, count=1)
    again = [dict(r, id=r["id"] + "b", date=later,
                  latency_ms={"median": r["latency_ms"]["median"] * f})
             for r, f in zip(first, (1.0, 1.02, 0.98, 1.0))]
    sd, n = drift_sd(repeated(first + again))["<=2048"]
    assert n == 4 and sd == pytest.approx(1.4826 * 0.01, rel=0.05)


def test_cli_prints_sds_and_ceiling_and_refuses_runs_measured_once(tmp_path, capsys):
    later = "2026-12-02T03:00:00+00:00"
    recs = _workloads(0.5, count=3)
    again = [dict(r, id=r["id"] + "b", date=later,
                  latency_ms={"median": r["latency_ms"]["median"] * (1.01 if i % 2 else 0.99)})
             for i, r in enumerate(recs)]
    f = tmp_path / "runs.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in recs + again))
    assert main([str(f)]) == 0
    out = capsys.readouterr().out
    assert "12 runs measured twice" in out and "(12 pairs)" in out
    assert "drift ceiling (Spearman within workloads): 0.9" in out and "over 3 workloads" in out
    assert "drift regret floor (a perfect model's pick, workloads >= 4 configurations)" in out
    assert main([str(f), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["groups"] == 3 and doc["drift_sd"]["<=2048"]["pairs"] == 12
    # every record is a configuration, as in report_space's Spearman: the two measurements of
    # a run (2% apart, drift SD 1.5%) swap places in some draws; the settings 50% apart never
    assert 0.9 < doc["ceiling"] < 0.99
    # the pick is the faster of a run's two measurements, 2% apart: its twin can beat it
    assert doc["regret_floor"]["workloads"] == 3 and 0 < doc["regret_floor"]["max"] < 0.03

    once = tmp_path / "once.jsonl"
    once.write_text("".join(json.dumps(r) + "\n" for r in recs))
    assert main([str(once)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("python -m calibration.noise: error: no MoK run was measured twice")
    assert err.count("\n") == 1
    for argv, text in (([], "give run-record files"),
                       ([str(tmp_path / "nope.jsonl")], "nope.jsonl: no such run-record file"),
                       ([str(f), "--table-system", "x"], "--table-system 'x': choose from")):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert text in err and err.count("\n") == 1 and "Traceback" not in err


def test_registered_prints_the_floor_from_runs_measured_twice(capsys):
    """`calibration.registered --drift-from` (session 71): the floor of the met runs, as
    mok_kernels/logs_s71/seed_floor.py computes it for seed 35 on the H100."""
    from pathlib import Path

    from calibration.registered import main as registered
    root = Path(__file__).resolve().parents[1]
    runs = root / "calibration" / "runs" / "h100"
    argv = [str(root / "calibration" / "predictions" / "h100_drawn35_2026-12-06.jsonl"),
            f"{runs}/drawn35.jsonl"]
    twice = [f"{runs}/drawn22.jsonl.gz", f"{runs}/drawn22_rerun.jsonl.gz"]
    assert registered([*argv, "--drift-from", *twice]) == 0
    out = capsys.readouterr().out
    assert out.count("drift regret floor (a perfect model, run-to-run drift alone): mean 0.17%, "
                     "expected max 2.7% over 30 workloads") == 1
    assert registered(argv) == 0 and "drift regret floor" not in capsys.readouterr().out
    assert registered([*argv, "--drift-from", f"{runs}/drawn35.jsonl"]) == 2
    assert "no MoK run measured twice" in capsys.readouterr().err
