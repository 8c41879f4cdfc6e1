"""The measured GEMM efficiency table (mok_model/gemm_table.py): lookup and interpolation, the
model using it in place of gemm_eff, the parameters file naming it, and the leave-one-group-out
report's splits (calibration/report_space.py): no held-out record reaches its fold's fit."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest

import calibration.report_space as rs
from calibration.cli import priors_for
from calibration.gemm_table import build_table
from mok_model.fileio import file_text
from mok_model.analytic import expert_ffn_parts, mok_terms, weight_stream_bps
from mok_model.band import band
from mok_model.errors import MokInputError
from calibration.gemm_table import fit_mechanism
from mok_model.gemm_table import (MECHANISM, SUSTAIN, GemmTable, curves_of, ideal_seconds,
                                  mechanism_seconds, monotone_in_work, phase_features,
                                  points_mechanism_seconds,
                                  read_table, scenario_eff, shape_of, sustained, table_point,
                                  write_table)
from mok_model.params import load_params, read_params, write_params
from mok_model.predict import predict
from mok_model.presets import load_hardware, load_model
from mok_model.records import read_records, record_scenario
from mok_model.scenario import Config, Scenario

RUNS = Path(__file__).resolve().parents[1] / "calibration" / "runs"
SHAPE_A = {"expert_width": 2048, "hidden": 7168, "local_experts": 16}
SHAPE_B = {"expert_width": 512, "hidden": 7168, "local_experts": 16}


def pt(rows: float, eff: float, **shape) -> dict:
    return {"rows_per_expert": rows, "eff": eff, **(shape or SHAPE_A)}


def table(*points) -> GemmTable:
    return GemmTable("h200-1", tuple(points))


def scenario(model: str = "kimi-k2", ep: int = 16, tokens: int = 2048) -> Scenario:
    return Scenario(load_hardware("h200-1"), load_model(model), ep, tokens)


def test_one_shape_is_linear_in_log_rows_and_flat_beyond_its_ends():
    t = table(pt(64, 0.4), pt(256, 0.6))
    a = SHAPE_A
    assert t.eff(128, a["expert_width"], a["hidden"], a["local_experts"]) == pytest.approx(0.5)
    assert t.eff(64 * 2 ** 0.5, 2048, 7168, 16) == pytest.approx(0.45)  # a quarter of the way
    assert t.eff(8, 2048, 7168, 16) == pytest.approx(0.4)  # below the first point
    assert t.eff(1e5, 2048, 7168, 16) == pytest.approx(0.6)  # above the last
    # two points at one rows value are averaged
    assert table(pt(64, 0.4), pt(64, 0.6)).eff(64, 2048, 7168, 16) == pytest.approx(0.5)


def test_one_point_off_its_neighbours_is_not_a_trend():
    """Each point but a curve's ends is the median of itself and its neighbours: an isolated
    outlier (a run's, as mixtral's 891-row point of 2026-12-01) is replaced, a monotone curve and
    its ends are kept as measured."""
    a = (2048, 7168, 16)
    spike = table(pt(64, 0.4), pt(128, 0.9), pt(256, 0.5), pt(512, 0.6))
    assert spike.eff(128, *a) == pytest.approx(0.5)         # median of 0.4, 0.9, 0.5
    assert spike.eff(64, *a) == pytest.approx(0.4) and spike.eff(512, *a) == pytest.approx(0.6)
    rising = table(pt(64, 0.4), pt(128, 0.5), pt(256, 0.6))
    assert [rising.eff(r, *a) for r in (64, 128, 256)] == pytest.approx([0.4, 0.5, 0.6])


def test_other_shapes_are_inverse_distance_weighted_in_log_space():
    t = table(pt(100, 0.5, **SHAPE_A), pt(100, 0.7, **SHAPE_B))
    assert t.eff(100, 2048, 7168, 16) == pytest.approx(0.5)  # its own shape: no mixing
    assert t.eff(100, 512, 7168, 16) == pytest.approx(0.7)
    # I = 1024 lies one octave from both: the plain mean
    assert t.eff(100, 1024, 7168, 16) == pytest.approx(0.6)
    # nearer B (I = 724 is 0.5 octave from B, 1.5 from A): weights 1/0.25 and 1/2.25
    q = t.eff(100, 2 ** 9.5, 7168, 16)
    assert q == pytest.approx((0.7 / 0.25 + 0.5 / 2.25) / (1 / 0.25 + 1 / 2.25))
    # a shape with points at other rows: its curve at the queried rows enters the mean
    t2 = table(pt(64, 0.4, **SHAPE_A), pt(256, 0.6, **SHAPE_A), pt(128, 0.9, **SHAPE_B))
    assert t2.eff(128, 1024, 7168, 16) == pytest.approx((0.5 + 0.9) / 2)


def test_table_point_recovers_the_efficiency_it_was_measured_at():
    """A GEMM-phase record measured at ideal / 0.55 gives a point of eff 0.55 at its shape."""
    scn = scenario()
    ideal = ideal_seconds(scn, 128, 128)
    rows, width, hidden, local = shape_of(scn)
    assert local == 24 and width == 2048 and rows == pytest.approx(2048 * 16 * 8 / 384, rel=0.1)
    rec = _gemm_record("kimi-k2", 16, 2048, ideal / 0.55 * 1e3)
    t = build_table([rec], "h200-1", ["x.jsonl"])
    assert t.points[0]["eff"] == pytest.approx(0.55)
    assert t.uses_mechanism  # the point carries its phase features; the file its fitted mechanism
    # in use, the GEMM phases without the record's own launch (the pass pays its launch itself)
    launch = t.mechanism["launch_us"] * 1e-6
    assert 0 < launch < ideal / 0.55
    assert scenario_eff(t, scn) == pytest.approx(ideal / (ideal / 0.55 - launch))
    # without the mechanism, the efficiency per occupied SM interpolated by shape
    old = GemmTable("h200-1", t.points)
    assert not old.uses_mechanism
    assert old.eff(rows, width, hidden, local, t.points[0]["occupancy"]) == pytest.approx(0.55)
    # more FLOPs, more ideal time: a wider expert of the same rows
    assert ideal_seconds(scenario("glm-5"), 128, 128) < ideal_seconds(scenario("kimi-k2"), 128, 128) * 1.2


def test_the_model_uses_the_table_in_place_of_gemm_eff():
    """A table of one constant efficiency predicts what gemm_eff of that value (and no tile-fill
    term) predicts; a lower table efficiency, a slower GEMM."""
    scn = scenario()
    base = priors_for("h200-1").with_values(gemm_row_share=0.3)
    flat = base.with_values(gemm_eff=0.6, gemm_row_share=0.0)
    args = (np.array([False, True]), np.array([True, False]), np.array([2048, 4096]),
            np.array([16, 32]), np.array([131072, 8192]), np.array([0.5, 0.5]))
    want = mok_terms(scn, flat, *args)["total"]
    got = mok_terms(scn, base.with_table(table(pt(10, 0.6), pt(5000, 0.6))), *args)["total"]
    assert np.allclose(got, want, rtol=1e-12)
    slow = mok_terms(scn, base.with_table(table(pt(10, 0.3))), *args)["work"]["routed_gemm"]
    fast = mok_terms(scn, base.with_table(table(pt(10, 0.6))), *args)["work"]["routed_gemm"]
    assert np.all(slow > fast)
    # the simulator reads the same GEMM times
    cfg = Config(minibatch=4096, comm_sms=16)
    s1 = predict(scn, cfg, "mok", flat, "sim").latency_ms
    s2 = predict(scn, cfg, "mok", base.with_table(table(pt(10, 0.6))), "sim").latency_ms
    assert s2 == pytest.approx(s1, rel=1e-9)


def test_a_table_holds_only_for_the_pass_and_precision_it_measured():
    t = table({**pt(10, 0.3), "pass": "fwd", "precision": "bf16"})
    assert t.covers(scenario())
    assert not t.covers(scenario().with_(pass_="bwd"))


def test_parameters_file_names_its_table_and_bands_keep_it(tmp_path):
    tpath = tmp_path / "gemm" / "h200-1.json"
    tpath.parent.mkdir()
    t = GemmTable("h200-1", (pt(64, 0.4), pt(4096, 0.7)), ("calibration/runs/x.jsonl",), str(tpath))
    write_table(tpath, t)
    p = priors_for("h200-1").with_table(read_table(tpath))
    write_params(tmp_path / "p.json", p, "test")
    doc = json.loads((tmp_path / "p.json").read_text())
    assert doc["gemm_table"] == "gemm/h200-1.json"  # relative to the parameters file
    q = read_params(tmp_path / "p.json")
    assert q.gemm_table is not None and q.gemm_table.records == ("calibration/runs/x.jsonl",)
    scn, cfg = scenario(), Config(minibatch=4096, comm_sms=16)
    assert predict(scn, cfg, "mok", q).latency_ms == pytest.approx(predict(scn, cfg, "mok", p).latency_ms)
    assert q.with_values(mok_fixed_us=5.0).gemm_table is q.gemm_table
    # a band re-predicts with samples that keep the table
    u = {"method": "bootstrap", "seed": 0, "n": 2, "free": ["mok_fixed_us"],
         "samples": [[0.0], [100.0]]}
    pb = priors_for("h200-1").with_table(q.gemm_table)
    pb = type(pb)(pb.values, pb.hardware, None, [], pb.sources, u, (), pb.gemm_table)
    assert all(s.gemm_table is q.gemm_table for s in pb.samples())
    b = band(predict(scn, cfg, "mok", pb), pb)
    assert 0.09 <= b.hi - b.lo <= 0.1 + 1e-9  # the two samples lie 100 us apart


def test_bad_table_files_are_refused(tmp_path):
    f = tmp_path / "t.json"
    f.write_text(json.dumps({"schema": "other", "points": []}))
    with pytest.raises(MokInputError, match="schema"):
        read_table(f)
    f.write_text(json.dumps({"schema": "mok-gemm-table/1", "points": [{**pt(64, 0.4), "eff": -1}]}))
    with pytest.raises(MokInputError, match="eff"):
        read_table(f)
    with pytest.raises(MokInputError, match="no such file"):
        read_table(tmp_path / "missing.json")


TODAY = {"zero_shared_slot": 0}   # a kernel record's tiles since 2026-12-01 (bench.make_record)


def _gemm_record(model: str, ep: int, tokens: int, ms: float, rid: str | None = None) -> dict:
    return {"schema": "mok-run/1", "id": rid or f"g-{model}-{ep}-{tokens}", "date": "2026-12-01",
            "hardware": {"preset": "h200-1", "gpu": "NVIDIA H200", "gpus": 1, "sms": 132,
                         "fabric": "local-hbm", "driver": "-"},
            "software": {}, "system": "gemm-only", "model": model, "ep": ep,
            "emulated_peers": True, "tokens": tokens, "pass": "fwd", "precision": "bf16",
            "config": {}, "routing": {"kind": "uniform", "seed": 0},
            "latency_ms": {"median": ms}, "source": "measured"}


@pytest.fixture(scope="module")
def dev_records() -> list[dict]:
    recs = read_records([RUNS / "h200" / "micro.jsonl", RUNS / "h200-tiles" / "tiles.jsonl",
                         RUNS / "h200x2" / "emulated_same_rank_v2.jsonl.gz"])
    return rs.usable(recs)[0]


@pytest.mark.parametrize("by", ["model", "ep"])
def test_report_folds_hold_out_every_record_of_the_group(dev_records, by):
    """Each fold's training set has no record of its held-out value, of any system (MoK,
    GEMM phases, microbenchmarks of a model preset: the micro-gemm-sms of glm-5 EP 16 leaves
    with glm-5 and with EP 16); every MoK record is held out exactly once."""
    from calibration.split import group_value

    seen = []
    for value, train, held in rs.folds(dev_records, by):
        assert held and all(group_value(r, by) == value for r in held)
        assert not [r for r in train if group_value(r, by) == value and not rs.hardware_micro(r)]
        assert {r["system"] for r in train} >= {"mok", "gemm-only", "micro-copy"}
        if value in ("glm-5", "16"):
            assert "micro-gemm-sms" not in {r["system"] for r in train}
        seen += [r["id"] for r in held]
    mok = [r["id"] for r in dev_records if r["system"] == "mok"]
    assert sorted(seen) == sorted(mok)


def test_a_fold_builds_its_table_from_its_training_records_only(dev_records, monkeypatch):
    got = {}

    def spy(records, hardware, files, system="gemm-only", *a, **k):
        got["ids"] = {r["id"] for r in records if r["system"] == system}
        return build_table(records, hardware, files, system, *a, **k)

    class Done(Exception):
        pass

    def stop(layer, base, free, *a, **k):  # the layer fit itself is not under test here
        got["free"], got["table"] = free, base.gemm_table
        raise Done

    monkeypatch.setattr(rs, "build_table", spy)
    monkeypatch.setattr(rs, "fit", stop)
    value, train, held = next(f for f in rs.folds(dev_records, "model") if f[0] == "kimi-k2")
    with pytest.raises(Done):
        rs.fit_fold(train, "absolute")
    kimi = {r["id"] for r in dev_records if r["model"] == "kimi-k2"}
    assert got["ids"] and not got["ids"] & kimi
    assert {p["model"] for p in got["table"].points} .isdisjoint({"kimi-k2"})
    assert "gemm_eff" not in got["free"]  # the table replaces it
    # the phase mechanism is fitted to the fold's own points (none of the held-out model's), with
    # the long-phase term as the shipped table
    mech = got["table"].mechanism
    assert mech is not None and mech == fit_mechanism(got["table"].points, sustain=True)


def test_report_leaves_out_runs_of_another_tile(dev_records):
    tiles = read_records([RUNS / "h200-tiles" / "tiles.jsonl"])
    kept, left = rs.usable(tiles)
    mok = [r for r in kept if r["system"] == "mok"]
    assert mok and all(rs._tile(r) == rs._tile({}) for r in mok)
    assert sum(v for k, v in left.items() if "tile" in k) == sum(
        r["system"] == "mok" for r in tiles) - len(mok)


def test_sim_sample_keeps_whole_workloads(dev_records):
    held = [r for r in dev_records if r["system"] == "mok"]
    sample = rs.sim_sample(held, 3)
    from mok_model.records import workload_key

    keys = {workload_key(r) for r in sample}
    assert sample and len(keys) == math.ceil(len({workload_key(r) for r in held}) / 3)
    assert all(workload_key(r) in keys for r in held if r in sample)
    assert len(sample) == sum(workload_key(r) in keys for r in held)
    assert record_scenario(sample[0])  # the sampled records are scenarios the model reads


def test_regret_is_the_predicted_best_configuration_measured_against_the_best(dev_records):
    """Ten configurations of one workload: the model's pick measured 5% over the best -> 5%."""
    base = next(r for r in dev_records if r["system"] == "mok")
    recs, pred = [], []
    for i in range(10):
        r = {**base, "id": f"c{i}", "config": {**base["config"], "minibatch": 512 * (i + 1)},
             "latency_ms": {"median": 1.0 + 0.01 * i}}
        recs.append(r)
        pred.append(2.0 - 0.01 * i if i != 5 else 0.5)  # the model picks configuration 5
    (row,) = rs.regrets(recs, pred, "analytic")
    assert row["configs"] == 10 and row["regret"] == pytest.approx(0.05)
    assert rs.regrets(recs[:7], pred[:7], "analytic") == []  # under 8 configurations: no sweep


def test_calibrate_with_a_table_writes_a_file_that_names_it(tmp_path, monkeypatch):
    """`python -m calibration.gemm_table` then `mok calibrate --gemm-table`: the parameters file
    names the table, predictions read it back, gemm_eff is left at its prior."""
    from calibration.cli import calibrate_cli
    from calibration.gemm_table import main as table_main

    runs = str(RUNS / "h200x2" / "emulated_same_rank_v2.jsonl.gz")
    tfile, pfile = tmp_path / "t.json", tmp_path / "p.json"
    assert table_main([runs, "--out", str(tfile)]) == 0
    t = read_table(tfile)
    assert len(t.points) == 12 and t.records == (runs,)
    assert calibrate_cli([runs, "--out", str(pfile), "--gemm-table", str(tfile),
                          "--band", "none", "--free", "mok_fixed_us"]) == 0
    p = read_params(pfile)
    assert p.gemm_table is not None and len(p.gemm_table.points) == 12
    assert p["gemm_eff"] == priors_for("h200-1")["gemm_eff"]
    scn, cfg = scenario("glm-5", 2, 4096), Config(minibatch=2048, comm_sms=16, capacity=1.0)
    assert predict(scn, cfg, "mok", p).latency_ms != pytest.approx(
        predict(scn, cfg, "mok", p.with_table(None)).latency_ms, rel=1e-3)


def test_a_relative_table_gives_the_shape_trend_and_gemm_eff_the_level():
    """Relative (another GEMM's records): eff = gemm_eff x table / its median, so the level is
    gemm_eff's and a shape at the median runs at gemm_eff; absolute: the table's value."""
    pts = (pt(64, 0.3), pt(512, 0.6), pt(4096, 0.9))
    rel = GemmTable("h200-1", pts, level="relative")
    assert rel.median == pytest.approx(0.6)
    from mok_model.gemm_table import gemm_efficiency, replaces_gemm_eff

    scn = scenario()  # kimi-k2 EP 16 at 2048 tokens: about 680 rows per expert
    rows = shape_of(scn)[0]
    p = priors_for("h200-1").with_values(gemm_eff=0.5)
    e_rel, _ = gemm_efficiency(p.with_table(rel), scn)
    e_abs, _ = gemm_efficiency(p.with_table(GemmTable("h200-1", pts)), scn)
    # kimi-k2 has I 2048, H 7168, L 24: not a table shape, so the 4-nearest mean of one shape
    want = float(np.interp(math.log2(rows), [6, 9, 12], [0.3, 0.6, 0.9]))
    assert e_abs == pytest.approx(want)
    assert e_rel == pytest.approx(0.5 * want / 0.6)
    assert replaces_gemm_eff(GemmTable("h200-1", pts)) and not replaces_gemm_eff(rel)
    with pytest.raises(MokInputError, match="level"):
        GemmTable("h200-1", pts, level="sideways")


def test_known_points_are_reused_for_the_given_records_only():
    """report_space makes every GEMM-phase record's point once (record_points) and builds each
    fold's table from them: the same table as from the records, and no point of a record the
    fold was not given."""
    from calibration.gemm_table import record_points

    recs = [_gemm_record("kimi-k2", 16, 2048, 1.0), _gemm_record("glm-5", 8, 1024, 0.5)]
    known = record_points(recs, "h200-1")
    assert sorted(known) == sorted(r["id"] for r in recs)
    fresh = build_table(recs[:1], "h200-1", [])
    reused = build_table(recs[:1], "h200-1", [], known=known)
    assert reused.points == fresh.points and len(reused.points) == 1
    assert reused.points[0]["model"] == "kimi-k2"


def test_occupancy_scales_the_interpolated_rate_and_points_are_reproduced():
    """A phase with fewer tiles than SMs runs on that many: occupancy < 1 for few rows of a
    narrow model, 1 for a full one; the table interpolates eff / occupancy and multiplies the
    query's occupancy back, so a point's own shape and rows give its eff."""
    from mok_model.gemm_table import occupancy

    few = Scenario(load_hardware("h200-1"), load_model("gpt-oss-120b"), 32, 64)
    full = scenario("kimi-k2", 16, 4096)
    assert 0 < occupancy(few) < 0.9 and occupancy(full) == pytest.approx(1.0)
    t = table(pt(64, 0.2, **SHAPE_A, occupancy=0.4), pt(256, 0.6, **SHAPE_A, occupancy=1.0))
    assert t.eff(64, 2048, 7168, 16, 0.4) == pytest.approx(0.2)
    assert t.eff(256, 2048, 7168, 16) == pytest.approx(0.6)
    assert t.eff(64, 2048, 7168, 16) == pytest.approx(0.5)  # the rate of the occupied SMs
    rec = {**_gemm_record("gpt-oss-120b", 32, 64, 0.1), "system": "mok-gemm", "tiles": TODAY}  # the kernel's own
    p = build_table([rec], "h200-1", [], "mok-gemm").points[0]
    assert p["occupancy"] == pytest.approx(occupancy(record_scenario(rec)))
    assert GemmTable("h200-1", (p,)).eff(*shape_of(record_scenario(rec)),
                                        occupancy(record_scenario(rec))) == pytest.approx(p["eff"])


MECH = {"tensor_eff": 0.6, "item_us": 2.0, "hbm_gbps": 4000.0, "launch_us": 30.0}


def _mech_point(model: str, ep: int, tokens: int, mech: dict = MECH, scale: float = 1.0) -> dict:
    """A table point of a GEMM-phase record that took the mechanism's time (times `scale`)."""
    scn = scenario(model, ep, tokens)
    ms = mechanism_seconds(phase_features(scn), mech) * 1e3 * scale
    rec = {**_gemm_record(model, ep, tokens, ms), "system": "mok-gemm", "tiles": TODAY}
    return table_point(rec, scn, 128, 128)


def test_phase_mechanism_counts_items_waves_and_weight_reads():
    """More rows, more work items and time; a short pass is held by one gate/up then one down
    item (the chain) or by its weights from HBM; group_m 8 reads a wide expert's weights from
    HBM fewer times than group_m 1 (mok_kernels/tiles.py)."""
    few, many = phase_features(scenario(tokens=256)), phase_features(scenario(tokens=8192))
    assert many["gu"][0][0] > few["gu"][0][0] and many["dn"][0][0] > few["dn"][0][0]
    assert mechanism_seconds(many, MECH) > 2 * mechanism_seconds(few, MECH)
    # kimi-k2 gate/up: one item of 128 x 256 over K = 7168, down 128 x 256 over K = 2048
    assert few["gu"][0][1] == 2 * 128 * 256 * 7168 and few["dn"][0][1] == 2 * 128 * 256 * 2048
    # with no HBM floor and no launch: at least one gate/up item then one down item
    rate = 0.6 * few["peak_tflops"] * 1e12 / few["sms"]
    chain = 2 * 2e-6 + (few["gu"][0][1] + few["dn"][0][1]) / rate
    assert mechanism_seconds(few, {**MECH, "hbm_gbps": 0.0, "launch_us": 0.0}) >= chain * (1 - 1e-12)
    # the HBM floor: a slow enough HBM sets the time
    slow = {**MECH, "hbm_gbps": 1.0}
    assert mechanism_seconds(few, slow) == pytest.approx(few["weight_bytes"] / 1e9 + 30e-6)
    scn = scenario("mixtral-8x7b", 8, 8192)
    g1 = phase_features(scn, {"group_m": 1})["weight_bytes"]
    g8 = phase_features(scn, {"group_m": 8})["weight_bytes"]
    assert g8 < g1 / 4


def test_a_table_s_points_take_the_mechanism_all_at_once_as_one_by_one():
    """points_mechanism_seconds (a table's points, read at once) is mechanism_seconds point by
    point, bit for bit: the shipped table's points and features of 0 to 3 blocks per phase."""
    shipped = read_table(Path(__file__).resolve().parents[1] / "mok_model" / "params" / "gemm"
                         / "h200-1.json")
    features = [p["mech"] for p in shipped.points]
    features += [phase_features(scenario(m, ep, n)) for m, ep, n in
                 (("kimi-k2", 16, 64), ("mixtral-8x7b", 8, 8192), ("qwen3-30b-a3b", 4, 1))]
    features += [{"gu": gu, "dn": dn, "weight_bytes": 3e9, "sms": 132, "peak_tflops": 989.0}
                 for gu, dn in (([], [[4.0, 1e9]]), ([[0.0, 5e8], [3.0, 2e9], [700.0, 1e8]],
                                                    [[0.0, 1e9]]))]
    for mech in (shipped.mechanism, MECH, {**MECH, "hbm_gbps": 0.0}, {**MECH, "hbm_gbps": 1.0}):
        assert points_mechanism_seconds(features, mech) == [mechanism_seconds(f, mech)
                                                            for f in features]


def test_the_chain_counts_its_waves_and_a_few_items_take_as_long_on_fewer_sms():
    """A phase of a few more items than SMs takes two item times, not 1.01 of one, the last
    wave's items at an SM's tensor peak or their share of HBM, whichever is slower (never slower
    than a full wave's); on fewer SMs (the compute SMs beside the comm SMs) a chain-bound pass (a
    few items) takes as long as on all, while a pass of many items is slower by
    (all / used)^scaling, the analytic model's sm_scaling, and eff_on gives the analytic model
    exactly that time."""
    from mok_model.gemm_table import eff_on

    f_gu, f_dn = 2.0 * 128 * 256 * 4096, 2.0 * 128 * 256 * 2048

    def phases(n_gu, n_dn):
        return {"gu": [[n_gu, f_gu]], "dn": [[n_dn, f_dn]],
                "weight_bytes": 0.0, "sms": 132, "peak_tflops": 989.0}
    bare = {**MECH, "hbm_gbps": 0.0, "launch_us": 0.0}
    one, two = mechanism_seconds(phases(132, 1), bare), mechanism_seconds(phases(133, 1), bare)
    rate, peak = 0.6 * 989e12 / 132, 989e12 / 132
    gu, dn = 2e-6 + f_gu / rate, 2e-6 + f_dn / rate
    gu_alone, dn_alone = 2e-6 + f_gu / peak, 2e-6 + f_dn / peak
    # one full wave: the items' total over the SMs; a 133rd item: a second gate/up item alone
    assert one == pytest.approx(gu + dn / 132) and two == pytest.approx(gu + gu_alone + dn_alone)
    # a tail of 50 items sharing a slow HBM: their share of it (BF16 weights, 128 rows a tile),
    # capped at a full wave's item time
    hbm = {**bare, "hbm_gbps": 2000.0}
    share = 50 * f_gu / 128 / 2000e9
    assert gu_alone < share < gu
    assert mechanism_seconds(phases(182, 1), hbm) == pytest.approx(gu + share + dn_alone)
    assert mechanism_seconds(phases(182, 1), {**bare, "hbm_gbps": 100.0}) == pytest.approx(
        2 * gu + dn_alone)
    few = phases(20, 40)
    assert mechanism_seconds(few, bare, 68, 0.7) == pytest.approx(mechanism_seconds(few, bare))
    many = phases(20000, 40000)
    assert mechanism_seconds(many, bare, 66, 0.7) == pytest.approx(
        mechanism_seconds(many, bare) * 2.0 ** 0.7, rel=1e-3)
    on = mechanism_seconds(many, bare, np.array([66.0, 132.0]), 0.7)
    assert on.shape == (2,) and on[1] == pytest.approx(mechanism_seconds(many, bare))
    # eff_on: the analytic model's GEMM time on `sms` SMs, (ideal / eff) (S / sms)^scaling, is
    # the table's time on them
    t = GemmTable("h200-1", tuple(_mech_point("qwen3-30b-a3b", ep, 64) for ep in (8, 16, 32)),
                  mechanism=dict(MECH))
    scn = scenario("qwen3-30b-a3b", 32, 64)
    for sms in (68.0, 100.0, 132.0):
        got = ideal_seconds(scn, 128, 128) / eff_on(t, scn, sms, 0.7) * (132 / sms) ** 0.7
        assert got == pytest.approx(t.scenario_seconds(scn, sms, 0.7))
    assert t.scenario_seconds(scn, 68.0, 0.7) == pytest.approx(t.scenario_seconds(scn))


def test_fit_mechanism_recovers_the_constants_that_made_the_points():
    pts = [_mech_point(m, ep, n) for m in ("kimi-k2", "qwen3-30b-a3b", "mixtral-8x7b")
           for ep in (4, 8) for n in (64, 1024, 8192)]
    got = fit_mechanism(pts)
    assert set(got) == set(MECHANISM)
    for k in ("tensor_eff", "launch_us"):
        assert got[k] == pytest.approx(MECH[k], rel=1e-3)
    # deterministic
    assert fit_mechanism(pts) == got
    assert fit_mechanism([{k: v for k, v in p.items() if k != "mech"} for p in pts]) is None


def test_the_long_phase_term_slows_only_phases_past_its_duration():
    """sustained: nothing below sustain_ms, sustain_loss of the time per doubling past it; a
    mechanism without the term is as before; the points' all-at-once sums take it as one by one."""
    term = {"sustain_loss": 0.05, "sustain_ms": 4.0}
    assert sustained(0.003, term) == pytest.approx(0.003)
    assert sustained(0.016, term) == pytest.approx(0.016 * 1.10)
    assert sustained(np.array([0.002, 0.008]), term) == pytest.approx([0.002, 0.008 * 1.05])
    assert sustained(0.016, dict(MECH)) == 0.016
    short, long = phase_features(scenario(tokens=256)), phase_features(scenario(tokens=16384))
    with_term = {**MECH, "sustain_loss": 0.05, "sustain_ms": 1.0}
    assert mechanism_seconds(short, with_term) == pytest.approx(mechanism_seconds(short, MECH))
    assert mechanism_seconds(long, with_term) > 1.1 * mechanism_seconds(long, MECH)
    assert points_mechanism_seconds([short, long], with_term) == pytest.approx(
        [mechanism_seconds(short, with_term), mechanism_seconds(long, with_term)], rel=1e-12)


def test_fit_mechanism_with_the_term_recovers_it_and_a_file_keeps_it(tmp_path):
    """Points made with the term (long phases included) give it back; a table file holds the six
    constants, and a file with one of SUSTAIN alone is refused naming the rule."""
    made = {**MECH, "sustain_loss": 0.06, "sustain_ms": 3.0}
    pts = [_mech_point(m, ep, n, made) for m in ("kimi-k2", "qwen3-30b-a3b", "mixtral-8x7b")
           for ep in (4, 8) for n in (64, 1024, 8192, 32768)]
    assert max(p["measured_ms"] for p in pts) > 4 * made["sustain_ms"]
    got = fit_mechanism(pts, sustain=True)
    assert set(got) == set(MECHANISM + SUSTAIN)
    for k in ("tensor_eff", "sustain_loss", "sustain_ms"):
        assert got[k] == pytest.approx(made[k], rel=2e-2)
    assert fit_mechanism(pts, sustain=True) == got                  # deterministic
    without = fit_mechanism(pts)
    assert set(without) == set(MECHANISM)
    t = GemmTable("h200-1", tuple(pts), mechanism=got)
    write_table(tmp_path / "t.json", t)
    assert read_table(tmp_path / "t.json").mechanism == got
    doc = json.loads((tmp_path / "t.json").read_text())
    del doc["mechanism"]["sustain_ms"]
    (tmp_path / "t.json").write_text(json.dumps(doc))
    with pytest.raises(MokInputError, match="sustain_loss and sustain_ms together.*lacks sustain_ms"):
        read_table(tmp_path / "t.json")
    doc["mechanism"]["sustain_ms"] = 0
    (tmp_path / "t.json").write_text(json.dumps(doc))
    with pytest.raises(MokInputError, match="sustain_ms=0 must be a number > 0"):
        read_table(tmp_path / "t.json")


def test_a_held_out_shape_takes_the_mechanism_and_its_neighbours_residual():
    """Points that follow the mechanism up to a constant factor predict a shape the table lacks
    (llama4-maverick's I = 8192) to within a few percent (the training points never stream
    their weights as slowly as some llama4 ones, so hbm_gbps is loosely fitted); interpolating
    eff / occupancy across shapes is off by twice as much or more (17% here)."""
    pts = [_mech_point(m, ep, n, scale=1.25) for m in ("kimi-k2", "glm-4.5", "mixtral-8x7b",
                                                       "qwen3-30b-a3b", "gpt-oss-120b")
           for ep in (4, 8) for n in (64, 512, 4096)]
    mech = fit_mechanism(pts)
    t = GemmTable("h200-1", tuple(pts), mechanism=mech)
    old = GemmTable("h200-1", tuple(pts))
    errs_new, errs_old = [], []
    for ep, n in ((4, 1024), (8, 8192), (8, 64), (16, 256), (32, 2048)):
        scn = scenario("llama4-maverick", ep, n)
        want = (mechanism_seconds(phase_features(scn), MECH) - MECH["launch_us"] * 1e-6) * 1.25
        ideal = ideal_seconds(scn, 128, 128)
        errs_new.append(ideal / scenario_eff(t, scn) / want - 1)
        errs_old.append(ideal / old.eff(*shape_of(scn), 1.0) / want - 1)
    assert max(abs(e) for e in errs_new) < 0.08
    assert max(abs(e) for e in errs_old) > 2 * max(abs(e) for e in errs_new)


def test_the_weight_floor_streams_at_the_rate_the_table_measured():
    """Where a mechanism table covers the pass, the layer's HBM floor reads expert weights at the
    mechanism's hbm_gbps (the kernel's own GEMM phases measured it), not at hbm_eff of the spec
    (the epilogue reduction's); outside the table's pass, and for the library's GEMMs, as before."""
    scn = scenario("kimi-k2", 16, 64)
    base = priors_for("h200-1").with_values(hbm_eff=0.5)
    pts = tuple(_mech_point(m, 8, n) for m in ("kimi-k2", "glm-4.5") for n in (64, 4096))
    with_table = base.with_table(GemmTable("h200-1", pts, mechanism=MECH))
    spec = scn.hardware.hbm_tbps * 1e12
    assert weight_stream_bps(scn, base) == pytest.approx(0.5 * spec)
    assert weight_stream_bps(scn, with_table) == pytest.approx(MECH["hbm_gbps"] * 1e9)
    assert weight_stream_bps(scn.with_(pass_="bwd"), with_table) == pytest.approx(0.5 * spec)
    assert weight_stream_bps(scn, with_table, library=True) == pytest.approx(
        base["torch_hbm_eff"] * spec)
    # a weight-bound pass: the floor is the touched experts' weights at that rate
    rows, tiles = np.array([4.0]), np.array([1.0])
    _, floor = expert_ffn_parts(scn, with_table, rows, tiles, 24, 132, scn.model.expert_width)
    weights = 24 * 3.0 * scn.model.hidden * scn.model.expert_width * 2
    assert floor[0] == pytest.approx((weights + 4 * 2 * scn.model.expert_width * 2) / (MECH["hbm_gbps"] * 1e9))


def test_a_table_file_holds_the_curves_its_points_make_and_reads_the_points_when_asked(tmp_path):
    """The shipped tables' curves are those their points make (curves_of), bit for bit; a table
    written and read back looks up the same and reads its points file only when asked."""
    shipped = Path(__file__).resolve().parents[1] / "mok_model" / "params" / "gemm"
    for name in ("h200-1.json", "h200-1-library.json"):
        t = read_table(shipped / name)
        assert t._points is None  # a lookup never needs the points
        made = curves_of(t.points, t.mechanism)
        assert list(made.by_shape) == t.shapes
        for s, (xs, ys) in made.by_shape.items():
            assert xs.tobytes() == t.curves.by_shape[s][0].tobytes()
            assert ys.tobytes() == t.curves.by_shape[s][1].tobytes()
        assert (made.measured, made.uses_mechanism) == (t.curves.measured, t.uses_mechanism)
        assert made.median_eff == t.median == float(np.median([p["eff"] for p in t.points]))
    pts = (pt(64, 0.4), pt(128, 0.5), pt(256, 0.45), pt(64, 0.3, **SHAPE_B))
    write_table(tmp_path / "t.json", GemmTable("h200-1", pts, ("r.jsonl",)))
    back = read_table(tmp_path / "t.json")
    assert json.loads((tmp_path / "t.json").read_text())["points_file"] == "points/t.json"
    assert back.eff(100, 2048, 7168, 16) == table(*pts).eff(100, 2048, 7168, 16)
    assert back._points is None and back.points == pts and back.records == ("r.jsonl",)
    (tmp_path / "points" / "t.json").write_text(json.dumps({"schema": "other"}))
    with pytest.raises(MokInputError, match="schema"):
        len(read_table(tmp_path / "t.json").points)


def test_table_file_keeps_its_mechanism(tmp_path):
    pts = [_mech_point("kimi-k2", 16, n) for n in (256, 4096)]
    t = GemmTable("h200-1", tuple(pts), mechanism=dict(MECH))
    write_table(tmp_path / "t.json", t)
    back = read_table(tmp_path / "t.json")
    assert back.mechanism == MECH and back.uses_mechanism
    doc = json.loads((tmp_path / "t.json").read_text())
    doc["mechanism"] = {"tensor_eff": 0.6}
    (tmp_path / "t.json").write_text(json.dumps(doc))
    with pytest.raises(MokInputError, match="mechanism must hold"):
        read_table(tmp_path / "t.json")


def test_a_shape_the_table_never_measured_is_named_in_the_notes():
    """predict says when its GEMM time comes from other shapes: never at a measured shape."""
    from mok_model.gemm_table import unmeasured_shape_note
    base = priors_for("h200-1")
    kimi = scenario("kimi-k2", ep=24)                 # I 2048, H 7168, 16 local experts
    t = table(pt(10, 0.6, **SHAPE_A), pt(10, 0.5, **SHAPE_B))
    assert t.neighbours(2048, 7168, 16) == [(2048, 7168, 16)]
    assert unmeasured_shape_note(t, kimi) is None
    assert unmeasured_shape_note(None, kimi) is None
    glm = scenario("glm-5", ep=16)                    # I 2048, H 6144: not in the table
    note = unmeasured_shape_note(t, glm)
    assert "never measured" in note and "I 2048, H 7168, 16 local" in note
    assert any("never measured" in n for n in predict(glm, None, "mok", base.with_table(t)).notes())
    assert not any("never measured" in n
                   for n in predict(kimi, None, "mok", base.with_table(t)).notes())
    # a transferred table names the hardware its points were measured on (h100-1 reads h200-1's)
    drawn = load_model("calibration/drawn_shapes/seed24/syn24-h4864-i6976-e8-k2.toml")
    h100 = Scenario(model=drawn, hardware=load_hardware("h100-1"), ep=4, tokens=128)
    note = unmeasured_shape_note(load_params(None, "h100-1").gemm_table, h100)
    assert "never measured on h200-1, whose table h100-1 reads transferred:" in note


def test_microbench_record_of_a_bare_shape():
    """A microbenchmark names only the row width it ran ({"hidden": H}): its record still gets an
    id and validates (make_record once required a model name and raised KeyError)."""
    from mok_kernels.bench import make_record
    from mok_model.records import validate_record
    r = make_record(system="micro-copy", model={"hidden": 2048}, ep=16, tokens=1024, knobs={},
                    routing="uniform", seed=0, times=[1.0, 1.1, 0.9], breakdown={}, note="n",
                    hardware={"gpu": "NVIDIA H200", "gpus": 1, "preset": "h200-1", "sms": 132,
                              "fabric": "local-hbm", "driver": "cuda 13.0"},
                    software={"commit": "x", "torch": "2.11", "triton": "3.6"})
    r["metrics"] = {"sms": 4, "GBps": 10.0, "bytes": 1 << 20, "copy_rows": 16}
    assert r["id"].startswith("micro-copy-h2048-") and r["model"] == {"hidden": 2048}
    validate_record(r)


def test_a_hot_record_of_the_old_draw_stays_out_of_the_table():
    """The fits' rule (records.routing_reproduced): a few-expert hot record of the old draw
    (mixtral: expert 0 got about twice F) makes no point; the same record drawn the model's way
    does, and so does an old-draw one of many experts (kimi-k2: the excess is within 2% of F)."""
    from calibration.gemm_table import table_records

    def hot(model, draw=None):
        r = _gemm_record(model, 8, 8192, 10.0, rid=f"{model}-{draw}")
        r["routing"] = {"kind": "hot", "arg": 0.1, "seed": 0, **({"draw": draw} if draw else {})}
        return r

    recs = [hot("mixtral-8x7b"), hot("mixtral-8x7b", "model"), hot("kimi-k2")]
    assert [r["id"] for r in table_records(recs, "h200-1")] == ["kimi-k2-None",    # id order
                                                                  "mixtral-8x7b-model"]
    built = build_table(recs, "h200-1", [])
    assert {p["id"] for p in built.points} == {"mixtral-8x7b-model", "kimi-k2-None"}


def test_an_old_kernels_gemm_phases_count_its_zero_shared_slot_the_librarys_do_not():
    """A mok-gemm point of a model without a shared expert recorded before 2026-12-01 counts the
    zero shared slot that kernel ran (N home tokens at the routed width: analytic.shared_section)
    in its ideal FLOPs and its mechanism's work items; a gemm-only point (the library's grouped
    GEMM) and a record of today's kernel do not; a model with a shared expert counts its own."""
    from mok_model.analytic import shared_section

    mixtral = scenario("mixtral-8x7b", 8, 4096).with_(zero_shared_slot=True)
    assert shared_section(scenario("mixtral-8x7b", 8, 4096), True) == (0, 0)
    assert shared_section(mixtral, True) == (1, 14336)
    assert shared_section(mixtral, False) == (0, 0)
    assert shared_section(scenario("kimi-k2"), False) == (1, 2048)
    kernel = {**_gemm_record("mixtral-8x7b", 8, 4096, 5.0), "system": "mok-gemm"}  # no tiles: the old kernel
    library = _gemm_record("mixtral-8x7b", 8, 4096, 5.0)
    pk, pl = (table_point(r, mixtral, 128, 128) for r in (kernel, library))
    routed = ideal_seconds(mixtral, 128, 128, kernel=False)
    # 32 row tiles of 128 rows: gate/up (4096 -> 2 x 14336) and down, 6 H I FLOPs per row
    slot = 32 * 128 * 6 * 4096 * 14336 / (mixtral.hardware.tflops("bf16") * 1e12)
    assert pl["ideal_ms"] == pytest.approx(routed * 1e3)
    assert pk["ideal_ms"] == pytest.approx((routed + slot) * 1e3)
    assert len(pk["mech"]["gu"]) == 2 and pk["mech"]["gu"][1][0] == 32 * 112


def test_report_gemm_table_holds_out_each_model_and_checks_other_files(tmp_path, capsys):
    """calibration/report_gemm_table.py: one line per held-out model, pooled, and the checked
    file's records predicted by the table of all; a missing file is one clear error (exit 2)."""
    from calibration import report_gemm_table as rg

    src = [json.loads(x) for x in file_text(RUNS / "h200_space" / "gemm_phases.jsonl.gz").splitlines()]
    keep = [r for r in src if r["model"] in ("kimi-k2", "glm-5", "deepseek-v3") and r["ep"] == 8]
    train, check = tmp_path / "train.jsonl", tmp_path / "check.jsonl"
    train.write_text("".join(json.dumps(r) + "\n" for r in keep if r["model"] != "deepseek-v3"))
    check.write_text("".join(json.dumps(r) + "\n" for r in keep if r["model"] == "deepseek-v3"))
    assert rg.main([str(train), "--check", str(check)]) == 0
    out = capsys.readouterr().out
    assert "kimi-k2" in out and "glm-5" in out and "pooled" in out and "checked with" in out
    pooled = float(out.split("pooled")[1].split("MAPE")[1].split("%")[0])
    assert 0 < pooled < 30
    assert rg.main([str(train), "--check", str(tmp_path / "missing.jsonl")]) == 2


def test_the_in_order_list_period_follows_an_item_level_simulation_of_the_list():
    """Few long gate/up items ahead of many short down items (I 256 under H 7168: 8 and 112 per
    512-row minibatch) hold the SMs for about half a gate/up item per minibatch, three times
    the items' plain total over the SMs. On drawn kernel shapes where the simulated list binds
    (calibration/list_check.py), held_period is within 20% of it and 8% on average, where the
    plain total is off by 30% on average; 0 where the list does not bind (kimi-k2's items)."""
    from calibration.list_check import compare, simulated_period
    from mok_model.gemm_table import held_period

    r = compare(40, 0)
    assert r["held_max"] < 0.2 and r["held_mean"] < 0.08 and r["plain_mean"] > 0.3
    narrow = float(held_period(8, 112, 92.0, 6.0, 100))
    assert narrow == pytest.approx(simulated_period(100, 8, 112, 92.0, 6.0), rel=0.15)
    assert narrow > 3 * (8 * 92.0 + 112 * 6.0) / 100
    assert float(held_period(64, 112, 92.0, 28.0, 100)) == 0.0  # kimi-k2's items: plain holds


def test_a_longer_list_lag_shortens_the_period_as_the_simulated_list_says():
    """With the down items of minibatch i after the gate/up items of minibatch i+L (the kernel's
    list_lag), a down item waits less for its row tile: the closed form's period falls with L
    toward the plain total and follows the item-level simulation of that list; lag 1 is the
    list as it always ran; the scenario carries the lag into the analytic period."""
    from calibration.list_check import compare, simulated_period
    from mok_model.analytic import list_period
    from mok_model.gemm_table import held_period

    periods = [float(held_period(8, 112, 92.0, 6.0, 100, lag)) for lag in (1, 2, 3)]
    assert periods[0] > periods[1] > periods[2] > (8 * 92.0 + 112 * 6.0) / 100
    for lag, period in zip((1, 2, 3), periods):
        assert period == pytest.approx(simulated_period(100, 8, 112, 92.0, 6.0, lag), rel=0.15)
    assert periods[0] == float(held_period(8, 112, 92.0, 6.0, 100))
    r = compare(30, 1, lag=2)
    assert r["held_max"] < 0.25 and r["held_mean"] < 0.08
    params_dir = Path(__file__).resolve().parents[1] / "mok_model" / "params"
    p = read_params(params_dir / "h200-1.json")
    narrow = load_model(str(Path(__file__).resolve().parents[1] / "calibration" / "drawn_shapes"
                            / "seed3" / "syn3-h7168-i256-e256-k5-s1.toml"))
    one = Scenario(load_hardware("h200-1"), narrow, 32, 2560)
    lagged = dataclasses.replace(one, list_lag=3)
    assert 0 < float(list_period(lagged, p, 4.0, 100.0)) < float(list_period(one, p, 4.0, 100.0))


def test_the_model_charges_the_list_period_to_narrow_experts_at_small_minibatches():
    """list_period binds for a narrow expert under a large H at 512-row minibatches and not at
    one minibatch of all the rows, nor for a table without a mechanism; the analytic pass and
    the simulator's plan grow by it."""
    from mok_model.analytic import list_period
    from mok_model.gemm_table import list_period as table_list_period

    params_dir = Path(__file__).resolve().parents[1] / "mok_model" / "params"
    p = read_params(params_dir / "h200-1.json")
    narrow = load_model(str(Path(__file__).resolve().parents[1] / "calibration" / "drawn_shapes"
                            / "seed3" / "syn3-h7168-i256-e256-k5-s1.toml"))
    # one down block an item (the kernel before 2026-12-04); today's 8 blocks an item (4 K steps
    # a block, tiles.forward_dn_blocks) hold fewer SMs waiting: a shorter period, still there
    scn = Scenario(load_hardware("h200-1"), narrow, 32, 2560, dn_blocks=1)
    assert float(list_period(scn, p, 4.0, 100.0)) > 30e-6
    today = dataclasses.replace(scn, dn_blocks=0)
    assert 0 < float(list_period(today, p, 4.0, 100.0)) < float(list_period(scn, p, 4.0, 100.0))
    assert float(list_period(scn, p, 100.0, 100.0)) == 0.0
    assert float(table_list_period(GemmTable("h200-1", (pt(64, 0.5),)), scn, 4.0, 100.0)) == 0.0
    # without a measured mechanism (real GPUs: h200-hgx8) the items run at gemm_eff's rate; the
    # published design (wave_sync 1: gb300-nvl72) has no such list
    real = Scenario(load_hardware("h200-hgx8"), narrow, 8, 2560)
    assert float(list_period(real, read_params(params_dir / "h200-hgx8.json"), 4.0, 100.0)) > 30e-6
    gb = Scenario(load_hardware("gb300-nvl72"), narrow, 8, 2560)
    assert float(list_period(gb, read_params(params_dir / "gb300-nvl72.json"), 4.0, 100.0)) == 0.0
    cfg = dict(dispatch_push=np.array([False]), combine_push=np.array([True]),
               comm_sms=np.array([32]), macrobatch=np.array([131072]), capacity=1.0)
    small = mok_terms(scn, p, minibatch=np.array([512]), **cfg)["total"]
    whole = mok_terms(scn, p, minibatch=np.array([16384]), **cfg)["total"]
    assert float(small.max()) > 1.5 * float(whole.max())
    # predict and simulate say so in a note, and the hold is part of the routed GEMMs' time
    knobs = dict(dispatch="pull", combine="push", comm_sms=32, capacity=1.0)
    for engine in ("analytic", "sim"):
        held = predict(scn, Config(minibatch=512, **knobs), params=p, engine=engine)
        assert any("in-order work list" in n for n in held.notes()), held.notes()
        free = predict(scn, Config(minibatch=16384, **knobs), params=p, engine=engine)
        assert not any("in-order work list" in n for n in free.notes())
    a = predict(scn, Config(minibatch=512, **knobs), params=p)
    assert 0 < a.work_ms["list_hold"] < a.work_ms["routed_gemm"]


def test_the_table_tool_fits_the_term_on_request_and_a_relative_table_refuses_it(tmp_path, capsys):
    """`--sustain` writes the six constants; with `--relative` (no mechanism) it is one error."""
    from cli_errors import one_error

    from calibration.gemm_table import main as table_main
    args = [str(RUNS / "h100" / "gemm_phases_drawn21.jsonl"), "--hardware", "h100-1",
            "--system", "mok-gemm"]
    assert table_main([*args, "--out", str(tmp_path / "t.json"), "--sustain"]) == 0
    assert set(read_table(tmp_path / "t.json").mechanism) == set(MECHANISM + SUSTAIN)
    capsys.readouterr()
    assert table_main([*args, "--out", str(tmp_path / "r.json"), "--sustain", "--relative"]) == 2
    assert "--sustain fits a term of the phase mechanism" in one_error(
        capsys.readouterr().err, "python -m calibration.gemm_table")
    assert not (tmp_path / "r.json").exists()


def test_measured_times_are_made_monotone_in_the_mechanism_shape_by_shape():
    """At one shape a point with more mechanism work but less measured time is pooled with the
    one it undercuts (their mean); points in order keep their times, and another shape's points
    never pool with them."""
    pts = [{"expert_width": 1536, "hidden": 5120, "local_experts": 5, "rows_per_expert": r}
           for r in (40, 150, 200, 400)] + [{"expert_width": 512, "hidden": 2048,
                                             "local_experts": 8, "rows_per_expert": 150}]
    mech = np.array([1.0, 2.0, 2.1, 3.0, 1.5])
    measured = np.array([1.2, 2.6, 2.2, 3.5, 0.5])
    out = monotone_in_work(tuple(pts), measured, mech)
    assert out.tolist() == pytest.approx([1.2, 2.4, 2.4, 3.5, 0.5])
    assert measured.tolist() == [1.2, 2.6, 2.2, 3.5, 0.5]   # the caller's array is left alone


def test_a_curve_holds_no_point_faster_than_one_with_less_work():
    """A table whose 128-token point of glm-4.5 EP 32 took twice the mechanism's time and whose
    256-token point took it (less time than the smaller pass, as points of mixed runs did; the
    running median keeps a first point as measured): the curve's times (residual x mechanism)
    do not fall from one point to the next."""
    pts = [_mech_point("glm-4.5", 32, n, scale=2.0 if n == 128 else 1.0) for n in (128, 256, 1024)]
    (xs, ys), = curves_of(tuple(pts), MECH).by_shape.values()
    launch = MECH["launch_us"] * 1e-6
    work = np.array(points_mechanism_seconds([p["mech"] for p in pts], MECH)) - launch
    assert np.all(np.diff([p["rows_per_expert"] for p in pts]) > 0) and np.all(np.diff(work) > 0)
    times = ys * work  # one point per rows value, in rows order
    assert np.all(np.diff(times) >= -1e-12)
    assert times[0] < pts[0]["measured_ms"] * 1e-3 - launch - 1e-9   # pooled with the next point


def test_the_shipped_table_reads_no_faster_gemms_with_more_tokens_at_glm_4_5_ep_32():
    """The case that showed the dip: h200-1's GEMM phases of glm-4.5 EP 32, uniform, 96 then 128
    tokens (both two row tiles an expert) read 126 then 101 us before the measured times were
    made monotone in the mechanism's (a 20% drop); now within 1%."""
    t = load_params(None, "h200-1").gemm_table
    at = [t.scenario_seconds(scenario("glm-4.5", 32, n)) for n in (96, 128)]
    assert at[1] >= 0.99 * at[0]
