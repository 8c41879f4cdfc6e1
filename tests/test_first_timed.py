"""The setting a sweep times first against the same kernel timed later (calibration.first_timed)."""

import json
import math

from calibration.first_timed import blocks, main, report, twins


def _rec(i, mb=4096, ms=0.2, comm=32, combine="push", tokens=64, system="mok", f="a.jsonl"):
    return {"schema": "mok-run/1", "id": f"r{i}", "date": "2026-12-01T03:00:00+00:00",
            "system": system, "model": "qwen3-30b-a3b", "ep": 8,
            "hardware": {"preset": "h200-1"}, "software": {}, "emulated_peers": True,
            "tokens": tokens, "routing": {"kind": "uniform", "seed": 0}, "pass": "fwd",
            "precision": "bf16", "source": "measured", "latency_ms": {"median": ms},
            "tiles": {}, "_file": f,
            "config": {"dispatch": "pull", "combine": combine, "minibatch": mb, "comm_sms": comm,
                       "macrobatch": 131072, "capacity": 1.0}}


def test_pairs_are_the_same_kernel_on_one_minibatch_each():
    # 64 tokens x top-8 = 512 rows a GPU (about 560 at the busiest, median iteration)
    blk = [_rec(0, ms=0.206), _rec(1, mb=8192, ms=0.2), _rec(2, mb=512, ms=0.3),
           _rec(3, mb=8192, comm=16), _rec(4, mb=2048, combine="pull"), _rec(5, mb=1024, ms=0.2)]
    got = {(p["earlier"], p["later"]): p for p in twins(blk)}
    # 512 rows may take two minibatches; other comm SMs or combine: another kernel
    assert set(got) == {("r0", "r1"), ("r0", "r5"), ("r1", "r5")}
    assert got[("r0", "r1")]["first"] and not got[("r1", "r5")]["first"]
    assert math.isclose(got[("r0", "r1")]["log_ratio"], math.log(1.03))


def test_blocks_follow_the_files_order_and_skip_other_systems():
    recs = [_rec(0), _rec(1, system="gemm-only"), _rec(2, mb=8192), _rec(3, tokens=128),
            _rec(4), _rec(5, mb=8192, f="b.jsonl")]
    assert [[r["id"] for r in b] for b in blocks(recs)] == [["r0", "r2"], ["r3"], ["r4"], ["r5"]]


def test_the_first_timed_penalty_is_found_and_the_control_reads_none():
    recs = []
    for w in range(6):      # six visits: the first setting 4% slow, the same kernel later not
        recs += [_rec(10 * w, ms=0.208, f=f"{w}"), _rec(10 * w + 1, mb=8192, ms=0.2, f=f"{w}"),
                 _rec(10 * w + 2, mb=2048, ms=0.2, f=f"{w}")]
    s = report(recs)["summary"]
    assert s["first"]["all"]["n"] == 12 and math.isclose(s["first"]["all"]["mean"], math.log(1.04))
    assert s["control"]["all"]["n"] == 6 and abs(s["control"]["all"]["mean"]) < 1e-12
    assert s["first"]["> 640"]["n"] == 0 and s["first"]["> 640"]["mean"] is None


def test_cli_prints_and_refuses_a_missing_file(tmp_path, capsys):
    assert main(["nope.jsonl"]) == 2
    assert "nope.jsonl" in capsys.readouterr().err
    f = tmp_path / "runs.jsonl"
    f.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "_file"}) + "\n"
                         for r in (_rec(0, ms=0.21), _rec(1, mb=8192, ms=0.2))))
    assert main([str(f), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["summary"]["first"]["all"]["n"] == 1
    assert main([str(f)]) == 0
    assert "earlier timed first in its workload" in capsys.readouterr().out


def test_default_minus_rest_by_where_the_default_was_timed(monkeypatch):
    import calibration.registered as registered
    from calibration.first_timed import default_residuals
    recs = []
    for w in range(4):      # the default (pull/push/4096/32) 5% above its prediction
        blk = [_rec(10 * w, ms=0.21, f=f"{w}"), _rec(10 * w + 1, mb=8192, ms=0.3, f=f"{w}"),
               _rec(10 * w + 2, mb=2048, ms=0.4, f=f"{w}")]
        recs += blk if w % 2 == 0 else blk[1:] + blk[:1]        # timed last in odd workloads
    recs.append(_rec(99, tokens=4096, ms=0.5, f="big"))      # a block of one: no measure
    want = {0: 0.2, 1: 0.3, 2: 0.4}
    preds = [{"engine": "analytic", "id": r["id"], "predicted_ms": 0.5 if r["id"] == "r99"
              else want[int(r["id"][1:]) % 10]} for r in recs]
    preds.append({"engine": "sim", "id": "r0", "predicted_ms": 9.0})    # another engine: unused
    monkeypatch.setattr(registered, "match", lambda ps, rs: [
        (p, next(r for r in rs if r["id"] == p["id"])) for p in ps])
    got = default_residuals(recs, preds)
    for where in ("timed first", "timed later"):
        assert got[where]["<= 640"]["n"] == 2
        assert math.isclose(got[where]["<= 640"]["mean"], math.log(1.05))
        assert got[where]["> 640"]["n"] == 0


def test_the_sweep_times_the_default_last_in_every_other_workload_when_asked():
    from mok_kernels.space_sweep import DEFAULT_KNOBS, plan, timing_order
    w = plan(3, models=("kimi-k2",), eps=(8,), tokens=(256, 1024))
    first = tuple(w[0]["configs"][0][k] for k in ("dispatch", "combine", "minibatch", "comm_sms"))
    assert first == DEFAULT_KNOBS
    assert timing_order(w[0]["configs"], 1, False) == w[0]["configs"]
    assert timing_order(w[0]["configs"], 0, True) == w[0]["configs"]
    moved = timing_order(w[0]["configs"], 1, True)
    assert moved[-1] is w[0]["configs"][0] and moved[:-1] == w[0]["configs"][1:]
