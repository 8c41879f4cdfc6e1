"""Tools that read run records give the same figures whatever order the files are named in, or
the records come in inside a file (session 52, after calibration.report_space: the drift
ceiling's draws, `mok calibrate`'s fit and --thin, `mok validate --thin`, a GEMM table's shapes
and mechanism, and the held-out errors' simulator sample followed the order)."""

from __future__ import annotations

import random
from pathlib import Path

from calibration.noise import drift_ceiling
from mok_model.records import read_records

RUNS = Path(__file__).resolve().parents[1] / "calibration" / "runs"


def _shuffled(recs: list[dict], seed: int = 52) -> list[dict]:
    out = list(recs)
    random.Random(seed).shuffle(out)
    return out


def _shuffled_file(src: Path, dst: Path, seed: int = 52) -> Path:
    lines = [ln for ln in src.read_text().splitlines() if ln.strip()]
    random.Random(seed).shuffle(lines)
    dst.write_text("\n".join(lines) + "\n")
    return dst


def test_drift_ceiling_draws_do_not_follow_record_order():
    recs = [r for r in read_records([str(RUNS / "h200_space" / "space_v2.jsonl")])
            if r["system"] == "mok"]
    sd = {"<=128": 0.05, "<=512": 0.011, "<=2048": 0.02, ">2048": 0.025}
    a, b = drift_ceiling(recs, sd), drift_ceiling(_shuffled(recs), sd)
    assert a["groups"] == b["groups"] > 10
    assert a["ceiling"] == b["ceiling"] and a["bands"] == b["bands"]
