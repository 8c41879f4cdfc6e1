"""The space sweep's plan (CPU): fixed by the seed, every workload runnable by its preset, the
published default knobs first, and a resumed run skips exactly the workloads already recorded."""

import json

from mok_kernels import space_sweep as ss
from mok_model.presets import load_model


def test_plan_is_seeded_valid_and_covers_the_space():
    a, b = ss.plan(0), ss.plan(0)
    assert a == b and a != ss.plan(1)
    keys = {(w["model"], w["ep"], w["tokens"], w["routing"]) for w in a}
    assert len(keys) == len(a)                              # no workload twice
    assert all(load_model(w["model"]).routed_experts % w["ep"] == 0 for w in a)
    assert ("mixtral-8x7b", 16, 64, "uniform") not in keys   # 8 experts: not on 16 GPUs
    assert ("mixtral-8x7b", 8, 8192, "hot:0.1") in keys
    for w in a:
        c = w["configs"]
        assert (c[0]["dispatch"], c[0]["combine"], c[0]["minibatch"], c[0]["comm_sms"]) == \
            ss.DEFAULT_KNOBS
        assert len({json.dumps(x, sort_keys=True) for x in c}) == len(c) == 1 + ss.DRAWN
    first = a[:60]                                          # a deadline's prefix spans the space
    assert len({w["model"] for w in first}) >= 8 and len({w["ep"] for w in first}) == 4


def test_planned_records_and_resume(tmp_path):
    recs = ss.planned_records(0)
    assert len(recs) == sum(len(w["configs"]) for w in ss.plan(0))
    w = ss.plan(0)[0]
    from mok_kernels.routing import routing_record
    assert recs[0]["routing"] == routing_record(w["routing"], 0)
    assert ss._done(None, "gemm-only") == set()
    path = tmp_path / "r.jsonl"
    rec = {"schema": "mok-run/1", "id": "x", "date": "2026-12-01", "hardware": {"preset": "h200-1"}, "software": {},
           "system": "gemm-only", "model": w["model"], "ep": w["ep"], "emulated_peers": True,
           "tokens": w["tokens"], "pass": "fwd", "precision": "bf16", "config": {},
           "routing": routing_record(w["routing"], 0),
           "latency_ms": {"median": 1.0, "p10": 1.0, "p90": 1.0, "n": 1}, "source": "measured"}
    path.write_text(json.dumps(rec) + "\n")
    assert ss._done(str(path), "gemm-only") == {ss._key(w["model"], w["ep"], w["tokens"],
                                                        routing_record(w["routing"], 0))}
    assert ss._done(str(path), "mok-gemm") == set()        # --gemm-phases resumes on its own


def test_drawn_shapes_are_seeded_valid_and_written_once(tmp_path, capsys):
    """calibration/draw_shapes.py: the same seed draws the same shapes, every one a model file
    the kernel accepts (H a multiple of 64, shared width 0 or I, top-k <= E / 4), and an existing
    file is never overwritten (exit 2 naming it)."""
    from calibration import draw_shapes as ds

    a = ds.draw(2, 10)
    assert a == ds.draw(2, 10) and a != ds.draw(3, 10) and len({s["name"] for s in a}) == 10
    for s in a:
        assert s["hidden"] % 64 == 0 and 256 <= s["expert_width"] <= 8192
        assert s["top_k"] <= max(1, s["routed_experts"] // 4)
        assert s["shared_width"] in (0, s["expert_width"])
    assert ds.main(["--seed", "2", "--count", "3", "--out-dir", str(tmp_path / "d")]) == 0
    files = sorted((tmp_path / "d").glob("*.toml"))
    assert len(files) == 3 and load_model(str(files[0])).hidden in {s["hidden"] for s in a}
    before = files[0].read_text()
    assert ds.main(["--seed", "2", "--count", "3", "--out-dir", str(tmp_path / "d")]) == 2
    assert "exists" in capsys.readouterr().err and files[0].read_text() == before


def test_a_sweep_of_model_files_draws_per_shape_and_records_the_shape(tmp_path):
    """--shapes sweeps model files instead of the presets: --per-shape workloads of each, at the
    --eps and --tokens given (EP sizes that do not divide a shape's experts skipped), planned
    records carrying the shape dict; the plan is fixed by the seed and the same with --models
    naming some of the files (the warm-up processes' view)."""
    from calibration import draw_shapes as ds

    assert ds.main(["--seed", "2", "--count", "3", "--out-dir", str(tmp_path)]) == 0
    files = tuple(str(p) for p in sorted(tmp_path.glob("*.toml")))
    space = dict(models=files, eps=(4, 8, 32), tokens=(96, 1536), per_model=4)
    a = ss.plan(0, **space)
    assert a == ss.plan(0, **space) and len(a) == 4 * len(files)
    for w in a:
        m = load_model(w["model"])
        assert m.routed_experts % w["ep"] == 0 and w["tokens"] in (96, 1536)
    recs = ss.planned_records(0, **space)
    assert recs[0]["model"]["name"] == load_model(a[0]["model"]).name
    out = tmp_path / "plan.jsonl"
    assert ss.main(["--shapes", ",".join(files), "--per-shape", "4", "--eps", "4,8,32",
                    "--tokens", "96,1536", "--plan-out", str(out)]) == 0
    assert [json.loads(x) for x in out.read_text().splitlines()] == recs
    assert ss.main(["--shapes", ",".join(files), "--models", "kimi-k2", "--plan-out",
                    str(tmp_path / "p2.jsonl")]) == 2              # not one of the files
    assert ss.main(["--shapes", files[0], "--tokens", "96,,1", "--plan-out",
                    str(tmp_path / "p3.jsonl")]) == 2
