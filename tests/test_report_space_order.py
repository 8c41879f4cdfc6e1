"""calibration/report_space.py reads the same records the same way whatever order the files
come in (session 52: the thinning, the simulator's sample and the workload's GEMM-phase tile
followed file order, so the README's command and its log read different figures)."""

from __future__ import annotations

import random

from calibration.report_space import every_nth_workload, usable
from mok_model.records import read_records

FILES = ["calibration/runs/h200_space/gemm_phases.jsonl.gz", "calibration/runs/h200_space/gemm_phases_v2.jsonl",
         "calibration/runs/h200_space/space.jsonl.gz", "calibration/runs/h200_space/space_v2.jsonl.gz"]


def test_usable_and_samples_ignore_record_order():
    recs = read_records(FILES)
    shuffled = list(recs)
    random.Random(52).shuffle(shuffled)
    (a, left_a), (b, left_b) = usable(recs), usable(shuffled)
    assert {r["id"] for r in a} == {r["id"] for r in b} and left_a == left_b
    mok_a = [r for r in a if r["system"] == "mok"]
    mok_b = [r for r in b if r["system"] == "mok"]
    assert every_nth_workload(mok_a, 8) == every_nth_workload(mok_b, 8)
    assert every_nth_workload(mok_a, 25) == every_nth_workload(list(reversed(mok_a)), 25)
