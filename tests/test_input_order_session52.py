"""Tools that read run records give the same figures whatever order the files are named in, or
the records come in inside a file (session 52, after calibration.report_space: the drift
ceiling's draws, `mok calibrate`'s fit and --thin, `mok validate --thin`, a GEMM table's shapes
and mechanism, and the held-out errors' simulator sample followed the order)."""

from __future__ import annotations

import json
import random
from pathlib import Path

from calibration.cli import calibrate_cli, validate_cli
from calibration.gemm_table import build_table
from calibration.heldout_errors import signed_errors
from calibration.noise import drift_ceiling
from calibration.checks import shipped_params
from mok_model.fileio import file_text
from mok_model.records import read_records

RUNS = Path(__file__).resolve().parents[1] / "calibration" / "runs"


def _shuffled(recs: list[dict], seed: int = 52) -> list[dict]:
    out = list(recs)
    random.Random(seed).shuffle(out)
    return out


def _shuffled_file(src: Path, dst: Path, seed: int = 52) -> Path:
    lines = [ln for ln in file_text(src).splitlines() if ln.strip()]
    random.Random(seed).shuffle(lines)
    dst.write_text("\n".join(lines) + "\n")
    return dst


def test_drift_ceiling_draws_do_not_follow_record_order():
    recs = [r for r in read_records([str(RUNS / "h200_space" / "space_v2.jsonl.gz")])
            if r["system"] == "mok"]
    sd = {"<=128": 0.05, "<=512": 0.011, "<=2048": 0.02, ">2048": 0.025}
    a, b = drift_ceiling(recs, sd), drift_ceiling(_shuffled(recs), sd)
    assert a["groups"] == b["groups"] > 10
    assert a["ceiling"] == b["ceiling"] and a["bands"] == b["bands"]


CAL = [str(RUNS / "h200" / f) for f in ("micro.jsonl", "bench_megakernel.jsonl", "bench_cli_v4.jsonl")]


def _calibrate(files: list[str], out: Path, *extra: str) -> dict:
    assert calibrate_cli(files + ["--out", str(out), "--band", "none", "--json", *extra]) == 0
    values = json.loads(out.read_text())["values"]     # their sources name the files in order
    return {k: v["value"] if isinstance(v, dict) else v for k, v in values.items()}


def test_calibrate_fits_the_same_values_whatever_order_the_files_come_in(tmp_path, capsys):
    # the fit's rows followed the files: copy_gbps_per_sm 22.36 named one way, 19.97 the other
    # (and copy_slowdown_beside_gemm 0.121 / 0.016), both at one cost
    a = _calibrate(CAL, tmp_path / "a.json")
    b = _calibrate(CAL[::-1], tmp_path / "b.json")
    assert a == b
    a = _calibrate(CAL, tmp_path / "c.json", "--thin", "3")
    b = _calibrate(CAL[::-1], tmp_path / "d.json", "--thin", "3")
    assert a == b


def test_validate_thin_picks_the_same_records_whatever_the_order(tmp_path, capsys):
    f = RUNS / "h200_drawn" / "drawn20.jsonl.gz"
    params = str(Path(__file__).resolve().parents[1] / "mok_model" / "params" / "h200-1.json")
    docs = []
    for path in (f, _shuffled_file(f, tmp_path / "drawn20.jsonl")):
        capsys.readouterr()
        assert validate_cli([str(path), "--params", params, "--thin", "4", "--json"]) == 0
        docs.append(json.loads(capsys.readouterr().out))
    a, b = ({r["id"]: r["predicted_ms"] for r in d["rows"]} for d in docs)
    assert a == b and len(a) > 10


def test_gemm_table_does_not_follow_record_order():
    recs = read_records([str(RUNS / "h200_space" / f) for f in ("gemm_phases.jsonl.gz",
                                                                 "gemm_phases_v2.jsonl")])
    a = build_table(recs, "h200-1", [], "mok-gemm")
    b = build_table(_shuffled(recs), "h200-1", [], "mok-gemm")
    assert a.shapes == b.shapes and a.mechanism == b.mechanism
    assert [p["id"] if "id" in p else p for p in a.points] == [p["id"] if "id" in p else p
                                                               for p in b.points]
    # equally near shapes: which four a lookup reads went with the shapes' order (up to 12%)
    for I in (384, 768, 1408, 2048):
        for H in (2048, 4096, 6144):
            for L in (4, 16, 64):
                assert a.neighbours(I, H, L) == b.neighbours(I, H, L)
                assert a.eff(64, I, H, L) == b.eff(64, I, H, L)


def test_heldout_errors_sim_sample_does_not_follow_line_order(tmp_path):
    params = shipped_params("h200-1")
    f = RUNS / "h200_drawn" / "decode2_s37.jsonl"
    g = _shuffled_file(f, tmp_path / "decode2_s37.jsonl", seed=3)
    a = signed_errors(params, [str(f)], 3)
    b = signed_errors(params, [str(g)], 3)
    assert sorted((k, e) for _, k, e in a) == sorted((k, e) for _, k, e in b)
    assert any(k.startswith("sim") for _, k, _ in a)


def test_loo_does_not_follow_record_order(tmp_path):
    from calibration.loo import leave_one_out

    recs = read_records([str(RUNS / "published" / "gb300_table1.jsonl")])
    a = {r["id"]: r["predicted_ms"] for r in leave_one_out(recs)}
    b = {r["id"]: r["predicted_ms"] for r in leave_one_out(_shuffled(recs))}
    assert a == b and len(a) == 10


def test_report_passes_reads_files_in_any_order(capsys):
    """calibration.report_passes: the same report, Pearson lines included (a workload timed
    twice took its last record's error), with the files named in reverse."""
    from calibration.report_passes import main
    files = [str(RUNS / "h200" / f) for f in ("fp8_fwd.jsonl", "fp8_variants.jsonl",
                                               "bwd_tiles.jsonl", "bwd_direct.jsonl")]
    outs = []
    for order in (files, files[::-1]):
        assert main(list(order) + ["--json"]) == 0
        outs.append(json.loads(capsys.readouterr().out))
    assert outs[0] == outs[1]
