"""Bad input to the calibration tools (python -m calibration.*, mok calibrate): exit 2, one line on
stderr naming the value and the rule, no traceback, nothing written, and refused before the work
(no fits here: every case stops at a check made before the first prediction)."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RUNS = "calibration/runs/h200_drawn/drawn8.jsonl.gz"
GEMM = "calibration/runs/h200_drawn/drawn2_gemm.jsonl.gz"
PRED = "calibration/predictions/h200_drawn8_2026-12-02.jsonl"
OTHER_RUNS = "calibration/runs/published/gb300_table1.jsonl"
K2 = ["--model", "kimi-k2", "--tokens", "64"]

# (module, argv with {d} for a scratch folder, text the one line must contain)
CASES = [
    # 1. an empty path never becomes the default
    ("heldout_errors", ["--out", ""], "--out '': a file path is required"),
    ("draw_shapes", ["--seed", "1", "--count", "2", "--out-dir", ""],
     "--out-dir '': a folder path is required"),
    ("cli", [RUNS, "--out", "{d}/p.json", "--band", ""], "--band '' must be one of"),
    ("cli", [RUNS, "--out", "{d}/p.json", "--base", ""], "--base '': a file path is required"),
    ("cli", [RUNS, "--out", "{d}/p.json", "--hardware", ""], "--hardware '': a preset name"),
    ("cli", [RUNS, "--out", "{d}/p.json", "--gemm-table", ""], "--gemm-table '': a file path"),
    ("fit_fabric", [RUNS, "--out", "{d}/p.json", "--base", ""], "--base '': a file path"),
    ("fit_fabric", [RUNS, "--out", "{d}/p.json", "--hardware", ""], "--hardware '': a preset"),
    ("report_passes", ["--params", ""], "--params '': a file path is required"),
    ("report", [RUNS, "--out", "{d}/rep", "--free", ""], "--free '': unknown parameter"),
    ("register", [*K2, "--out", "{d}/r.jsonl", "--plan", ""], "--plan '': a file path"),
    ("register", [*K2, "--out", "{d}/r.jsonl", "--hardware", ""], "--hardware '': a preset"),
    # 2. flags the run would drop
    ("cli", [RUNS, "--out", "{d}/p.json", "--band", "none", "--band-samples", "100"],
     "--band-samples 100: only applies with a sampled band"),
    ("cli", [RUNS, "--out", "{d}/p.json", "--band", "none", "--band-seed", "5"],
     "--band-seed 5: only applies with a sampled band"),
    ("register", ["--gpus", "2", "--ep", "8", *K2, "--out", "{d}/r.jsonl"],
     "--ep 8 with --gpus 2"),
    ("register", ["--plan", "F", "--model", "X", "--out", "{d}/r.jsonl"],
     "--plan 'F' with --model: a plan names every record itself"),
    ("register", ["--plan", "F", "--minibatch", "2048", "--seed", "3", "--out", "{d}/r.jsonl"],
     "with --seed, --minibatch"),
    ("gb300_knobs", ["--params", "mok_model/params/gb300-nvl72.json", "--fit-knobs", "default"],
     "--params 'mok_model/params/gb300-nvl72.json': the in-sample column is then a fit"),
    ("nvlink_bench", ["--emulate", "--gpus", "2", "--out", "{d}/n.jsonl"],
     "--gpus 2 with --emulate"),
    # 3. what `mok bench` refuses, refused at registration
    ("register", ["--gpus", "5", *K2, "--out", "{d}/r.jsonl"],
     "--gpus 5: kimi-k2's 384 experts do not divide over 5 GPUs"),
    ("register", ["--ep", "7", *K2, "--out", "{d}/r.jsonl"],
     "--ep 7: kimi-k2's 384 experts do not divide over 7 ranks"),
    ("register", ["--precision", "fp8", "--pass", "bwd", *K2, "--out", "{d}/r.jsonl"],
     "--pass bwd with --precision fp8: the backward megakernel is BF16 only"),
    ("register", ["--gpus", "2", "--precision", "fp8", *K2, "--out", "{d}/r.jsonl"],
     "--precision fp8 with --gpus 2"),
    ("register", ["--gpus", "2", "--pass", "bwd", *K2, "--out", "{d}/r.jsonl"],
     "--pass bwd with --gpus 2"),
    ("register", ["--pass", "bwd", "--list-lag", "2", *K2, "--out", "{d}/r.jsonl"],
     "--list-lag 2 with --pass bwd"),
    ("register", ["--list-lag", "9", *K2, "--out", "{d}/r.jsonl"],
     "--list-lag 9 must be at most 8"),
    ("register", ["--dispatch", "pul", *K2, "--out", "{d}/r.jsonl"], "--dispatch 'pul'"),
    ("register", [*K2, "--out", "{d}/x.txt"], "--out '{d}/x.txt' must name a .jsonl file"),
    # 4. nothing to report; the one-line usage error
    ("registered", [PRED, OTHER_RUNS], "none of its 160 predictions meets exactly one run"),
    ("registered", [], "the following arguments are required: predictions, runs"),
    ("registered", [PRED, RUNS, "--by", "colour"], "--by 'colour'"),
    # 5. tracebacks
    ("report_gemm_table", [RUNS, "--check", ""], "--check '': a comma list of record files"),
    ("report_gemm_table", [GEMM, "--check", "a.jsonl,"], "--check 'a.jsonl,'"),
    ("report_gemm_table", [GEMM, "--hardware", "nope"],
     "no measured forward BF16 mok-gemm records of --hardware 'nope'"),
    ("report_gemm_table", [RUNS], "it holds no mok-gemm records"),
    ("report_gemm_table", [GEMM, "--check", RUNS], "--check " + RUNS),
    ("report", [RUNS, "--also", "/nonexistent.jsonl", "--out", "{d}/rep"],
     "--also: /nonexistent.jsonl: no such run-record file"),
    ("report", [], "the following arguments are required: runs"),
    # 6. the flag the user typed, the top-k of the model, no flag the tool lacks
    ("cli", [RUNS, "--out", "{d}/p.json", "--base", "/nope.json"], "--base '/nope.json': no such"),
    ("fit_fabric", [RUNS, "--out", "{d}/p.json", "--base", "/nope.json"],
     "--base '/nope.json': no such file"),
    ("gb300_knobs", ["--prior", "sm_scaling=/nope.json"],
     "--prior sm_scaling '/nope.json': no such"),
    ("register", ["--routing", "hot:0", *K2, "--out", "{d}/r.jsonl"], "1/top_k = 0.125]"),
    ("register", ["--hardware", "nope", *K2, "--out", "{d}/r.jsonl"],
     "--hardware 'nope': no shipped parameters for it; one of "),
    ("register", ["--params", "mok_model/params/gb300-nvl72.json", *K2, "--out", "{d}/r.jsonl"],
     "was fitted for hardware 'gb300-nvl72', not --hardware 'h200-1'"),
    ("register", ["--params", "/nope.json", *K2, "--out", "{d}/r.jsonl"], "/nope.json"),
    ("heldout_errors", ["--hardware", "nope", RUNS, "--out", "{d}/h.json"],
     "--hardware 'nope': no shipped parameters for it"),
    ("report_unseen", ["--hardware", "nope", RUNS], "(or pass --params FILE)"),
    ("report_unseen", ["--params", "mok_model/params/gb300-nvl72.json", RUNS],
     "was fitted for hardware 'gb300-nvl72', not --hardware 'h200-1'"),
    # 7. session 29's fuzzing (2026-12-02)
    ("gemm_table", [GEMM, "--out", "{d}/t.json", "--hardware", ""], "--hardware '': a preset name "
                                                                     "is required"),
    ("gemm_table", [GEMM, "--out", "{d}/t.json", "--hardware", "nope"],
     "unknown hardware preset 'nope'"),
    ("gemm_table", [GEMM, "--out", "{d}/t.json", "--system", " "], "--system ' ': a system name"),
    ("gemm_table", [GEMM, "--out", "{d}/t.json/"], "is a folder"),
    ("report_space", [GEMM, "--by", "model,model"], "--by 'model,model' names 'model' twice"),
    ("report_space", [GEMM, "--fix", "gemm_eff,gemm_eff"], "--fix 'gemm_eff,gemm_eff' names "
                                                           "'gemm_eff' twice"),
    ("regret", [RUNS, "--refit-by", "model", "--free", "gemm_eff,gemm_eff"], "names 'gemm_eff' twice"),
    ("report", [RUNS, "--out", "{d}/rep", "--free", "gemm_eff,gemm_eff"], "names 'gemm_eff' twice"),
    ("loo", [""], "'': an empty path; name a run-record file"),
    ("register", [*K2, "--seed", "99999999999999999999", "--out", "{d}/r.jsonl"],
     "--seed: 99999999999999999999 must be an integer in [0, 9223372036854775807]"),
]

NO_FLAG = {"heldout_errors", "fit_fabric"}  # tools without --params / mismatch flags (register has
# --params since session 56)


def _main(module: str):
    mod = importlib.import_module(f"calibration.{module}")
    return mod.calibrate_cli if module == "cli" else mod.main


@pytest.mark.parametrize("module, argv, want", CASES,
                         ids=[f"{m} {' '.join(a)}"[:90] for m, a, _ in CASES])
def test_bad_input_is_one_line_and_exit_2(module, argv, want, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("MOK_PROGRESS", "0")
    d = str(tmp_path)
    rc = _main(module)([x.replace("{d}", d) for x in argv])
    cap = capsys.readouterr()
    err = cap.err
    assert rc == 2, (rc, err)
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert want.replace("{d}", d) in err, err
    if module in NO_FLAG:
        assert "--params" not in err and "--allow-params-mismatch" not in err, err
    assert list(tmp_path.iterdir()) == [], "a tool wrote a file although it refused the input"


def test_empty_out_never_touches_the_shipped_file():
    """Through a real process, as the fuzzer ran it: the tracked default output is untouched."""
    shipped = REPO / "mok_model/params/heldout/h200-1.json"
    before = shipped.read_bytes() if shipped.exists() else None
    r = subprocess.run([sys.executable, "-m", "calibration.heldout_errors", "--out", ""],
                       capture_output=True, text=True, cwd=REPO, timeout=120)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert (shipped.read_bytes() if shipped.exists() else None) == before


def test_register_refuses_a_ring_below_a_minibatch(tmp_path, capsys, monkeypatch):
    """--macrobatch below the minibatch is refused, as `mok bench` refuses it (the kernel would
    enlarge the ring without saying so); nothing is registered."""
    from calibration import register

    monkeypatch.chdir(REPO)
    calls = []
    monkeypatch.setattr(register, "planned_records", lambda a: calls.append(a) or [])
    out = tmp_path / "r.jsonl"
    assert register.main(["--macrobatch", "10", *K2, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--macrobatch 10 with --minibatch 4096" in err and err.count("\n") == 1
    assert not calls and not out.exists()


@pytest.mark.parametrize("tiles, prec, want", [
    ({"fp8_kernel": "Gluon"}, "fp8", "tiles.fp8_kernel='Gluon' must be one of"),
    ({"fp8_kernel": ""}, "fp8", "tiles.fp8_kernel='' must be one of"),
    ({"fp8_kernel": "gluon"}, "bf16", "tiles.fp8_kernel='gluon' with precision 'bf16'"),
])
def test_register_plan_names_a_bad_fp8_kernel(tiles, prec, want, tmp_path, capsys, monkeypatch):
    """A plan's tiles.fp8_kernel is one of the bench's values, on the FP8 forward: a misspelt
    "gluon" is not registered as the Triton kernel."""
    from calibration import register

    monkeypatch.chdir(REPO)
    line = json.loads((REPO / "benchmarks/device/s26_gluon_reg_plan.jsonl").read_text().splitlines()[0])
    plan = tmp_path / "plan.jsonl"
    plan.write_text(json.dumps({**line, "tiles": tiles, "precision": prec}) + "\n")
    out = tmp_path / "r.jsonl"
    assert register.main(["--plan", str(plan), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and want in err and "plan.jsonl:1" in err, err
    assert not out.exists()
