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
