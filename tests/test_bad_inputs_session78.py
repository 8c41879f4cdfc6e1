"""Session 78 (helper's fuzz pass of the code changed since 2026-12-06 15:00): each test is one
fault found: `calibration.gemm_table --out` over an existing file holding `[]` (an empty JSON
list, which the output check lets be replaced) ending in AttributeError. CPU only; nothing is
written into the repository."""

from __future__ import annotations

import json
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent
GEMM_PHASES = ROOT / "calibration" / "runs" / "h200_space" / "gemm_phases.jsonl.gz"


def test_gemm_table_out_over_an_empty_json_list(tmp_path, capsys):
    """An existing --out holding `[]` (nothing to lose: check_output_file lets it be replaced)
    ended in AttributeError: 'list' object has no attribute 'get'."""
    from calibration import gemm_table
    out = tmp_path / "t.json"
    out.write_text("[]\n")
    rc = gemm_table.main([str(GEMM_PHASES), "--out", str(out), "--hardware", "h200-1",
                          "--system", "mok-gemm"])
    cap = capsys.readouterr()
    assert rc == 0 and "Traceback" not in cap.err, cap.err[-600:]
    assert json.loads(out.read_text())["hardware"] == "h200-1"
