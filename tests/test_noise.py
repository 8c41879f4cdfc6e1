"""calibration/noise.py: ranking measures beside Spearman, against hand-made records."""

import numpy as np
import pytest

from calibration.noise import iteration_times, noise_ceiling, resolved_pairs, within_run_regret


def rec(i, times, note="run a", tokens=1024):
    t = np.asarray(times, float)
    return {"id": f"r{i}", "system": "mok", "note": note, "tokens": tokens, "ep": 2, "pass": "fwd",
            "precision": "bf16", "model": "glm-5", "routing": {"kind": "uniform", "seed": 0},
            "hardware": {"preset": "h200-hgx8"},
            "config": {"dispatch": "pull", "combine": "push", "minibatch": 2048,
                       "comm_sms": 16 + i, "macrobatch": 131072, "capacity": 1.0},
            "rank_ms": [list(t), list(t - 0.01)],
            "latency_ms": {"median": float(np.median(t)), "p10": float(np.percentile(t, 10)),
                           "p90": float(np.percentile(t, 90)), "n": len(t)}}


def test_iteration_times_take_the_slowest_rank():
    r = rec(0, [1.0, 2.0])
    r["rank_ms"] = [[1.0, 3.0], [2.0, 2.0]]
    assert list(iteration_times(r)) == [2.0, 3.0]


def test_ceiling_is_one_when_configs_stand_apart_and_falls_when_noise_covers_them():
    rng = np.random.default_rng(1)
    apart = [rec(i, 1.0 + i + 0.001 * rng.standard_normal(8)) for i in range(4)]
    assert noise_ceiling(apart)["ceiling"] == pytest.approx(1.0)
    close = [rec(i, 1.0 + 0.001 * i + 0.05 * rng.standard_normal(8)) for i in range(4)]
    assert noise_ceiling(close)["ceiling"] < 0.9


def test_resolved_pairs_and_within_run_regret():
    recs = [rec(0, [1.0] * 8), rec(1, [2.0] * 8), rec(2, [2.0 + 1e-9] * 8)]
    recs[2]["latency_ms"].update(p10=1.9, p90=2.1)  # overlaps config 1: not resolved
    out = resolved_pairs(recs, [1.0, 3.0, 2.0])
    assert (out["pairs"], out["resolved"], out["concordant"]) == (3, 2, 1.0)
    assert resolved_pairs(recs, [3.0, 1.0, 2.0])["concordant"] == 0.0
    # picks config 1 (2.0 ms) of run a, whose best is config 0 (1.0 ms): regret 100%; config 2
    # alone in its run is no choice
    recs[2]["note"] = "run b"
    wr = within_run_regret(recs, [2.0, 1.0, 0.5])
    assert wr["groups"] == 1 and wr["max"] == pytest.approx(1.0)


def test_a_tied_pick_is_broken_as_the_tuner_does_not_by_the_measurement():
    recs = [rec(0, [2.0] * 8), rec(1, [1.0] * 8)]
    recs[1]["config"]["dispatch"] = "push"   # measured faster, predicted the same
    wr = within_run_regret(recs, [1.5, 1.5])
    assert wr["max"] == pytest.approx(1.0)   # the tuner takes pull: 2.0 against the best 1.0


def test_knob_pairs_take_one_knob_apart_within_one_run():
    """calibration.knob_pairs: only pairs of one workload and one bench command that differ in one
    knob, ordered from the smaller value; measured and predicted changes and resolution."""
    from calibration.knob_pairs import knob_pairs, summarize
    recs = [rec(i, [t] * 8) for i, t in enumerate((2.0, 1.0, 1.5))]  # comm SMs 16, 17, 18
    recs[2]["config"].update(dispatch="push", comm_sms=16)  # config 0 but for dispatch; two
    # knobs from config 1: no pair
    recs.append(rec(3, [1.0] * 8, note="run b"))     # another run: never paired
    pairs = knob_pairs(recs, [2.0, 1.2, 2.2, 9.0])
    by = {p["knob"]: p for p in pairs}
    assert sorted(by) == ["comm_sms", "dispatch"] and len(pairs) == 2
    assert (by["comm_sms"]["a"], by["comm_sms"]["b"]) == (16, 17)
    assert by["comm_sms"]["measured"] == pytest.approx(-0.5)
    assert by["comm_sms"]["predicted"] == pytest.approx(-0.4)
    assert (by["dispatch"]["a"], by["dispatch"]["b"]) == ("pull", "push")
    assert by["dispatch"]["measured"] == pytest.approx(-0.25) and by["dispatch"]["resolved"]
    s = summarize([by["dispatch"]])
    assert s["resolved"] == 1 and s["right"] == 0.0  # measured faster, predicted slower
    assert s["error"] == pytest.approx(0.1 + 0.25)


def test_knob_pairs_of_given_run_files_use_the_shipped_parameters(capsys):
    """Run files no fit reads (an automatic-pick sweep) are predicted with the shipped
    parameters of their hardware, each knob step printed with the share ordered right."""
    from calibration.knob_pairs import main
    assert main(["calibration/runs/h200_drawn/auto_s22_dec_a.jsonl.gz", "--worst", "1"]) == 0
    out = capsys.readouterr().out
    assert "comm_sms: 16 -> 32 (analytic, shipped parameters)" in out
    assert "largest regrets (analytic, shipped parameters):" in out and "same way" in out
