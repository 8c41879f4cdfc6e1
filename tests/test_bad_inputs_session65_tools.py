"""Session 65 (tools helper): fuzzing of the `python -m calibration.*` tools and the sweep's CPU
side. Each test is one fault found: records of two hardware or two routings joined into one
row, one measurement scored as its own re-run or check, a prediction met by a run of another
routing seed, an empty report or a traceback where one line was due, an output written over
another hardware's default file, a flag with nothing to act on. CPU only, each a few seconds;
nothing is written into the repository (the writes a regression would make are intercepted)."""

from __future__ import annotations

import json
from pathlib import Path

from cli_errors import one_error
from mok_model.fileio import file_text

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "calibration" / "runs"
AUTO = RUNS / "h200_drawn" / "auto_s21_a.jsonl.gz"          # `mok bench --auto` on h200-1
HOT = RUNS / "h200_space" / "auto_hot_ep16_s44.jsonl"    # --auto with hot:0.1 routing
H100 = RUNS / "h100" / "drawn21.jsonl.gz"
H100_PRED = ROOT / "calibration" / "predictions" / "h100_drawn21_2026-12-05.jsonl"
PUBLISHED = RUNS / "published" / "gb300_table1.jsonl"
FABRIC = RUNS / "h200x2" / "nvlink_micro_quick.jsonl"
GEMM_PHASES = RUNS / "h200_space" / "gemm_phases.jsonl.gz"


def _rewrite(src: Path, dst: Path, edit, keep=lambda r: True) -> str:
    """`src`'s records, each passed through edit(record) (in place), written to `dst`."""
    out = []
    for line in file_text(src).splitlines():
        if line.strip() and keep(r := json.loads(line)):
            edit(r)
            out.append(json.dumps(r))
    dst.write_text("\n".join(out) + "\n")
    return str(dst)


def _faster_picks(r: dict, hardware: str | None = None, arg: float | None = None) -> None:
    """Another run of the same sweep: a new id, the picks twice as fast, the rest slower."""
    r["id"] = "x-" + r["id"]
    if hardware:
        r["hardware"]["preset"], r["hardware"]["gpu"] = hardware, "NVIDIA H100 80GB HBM3"
    if arg is not None:
        r["routing"]["arg"] = arg
    f = 0.5 if "auto" in r else 1.5
    r["latency_ms"] = {k: v * f if k in ("median", "p10", "p90") else v
                       for k, v in r["latency_ms"].items() if k != "samples"}


# ---------------------------------------------------------------------------- report_auto


def test_report_auto_refuses_records_of_two_hardware(tmp_path, capsys):
    """h200-1 and h100-1 runs of one workload were joined setting by setting: the h100 pick
    (twice as fast here) against the h200 best read pick / best 0.51, exit 0."""
    from calibration import report_auto
    other = _rewrite(AUTO, tmp_path / "h100.jsonl", lambda r: _faster_picks(r, "h100-1"))
    rc = report_auto.main([str(AUTO), other])
    captured = capsys.readouterr()
    assert rc == 2, captured.out[-400:]
    assert "span hardware" in one_error(captured.err, "python -m calibration.report_auto")


def test_report_auto_keeps_two_routing_arguments_apart(tmp_path, capsys):
    """hot:0.1 and hot:0.05 runs of one model, EP and tokens were one workload: the 0.05 pick
    (twice as fast) against the 0.1 sweep read pick / best 0.64 for every row."""
    from calibration import report_auto
    other = _rewrite(HOT, tmp_path / "hot05.jsonl", lambda r: _faster_picks(r, arg=0.05))
    assert report_auto.main([str(HOT)]) == 0
    alone = capsys.readouterr().out
    assert report_auto.main([str(HOT), other]) == 0
    both = capsys.readouterr().out
    worst = lambda out: next(x for x in out.splitlines() if x.startswith("pick / best"))  # noqa: E731
    assert "over 8 workloads" in worst(both)          # 4 of each routing
    assert worst(alone).split(" over ")[0] == worst(both).split(" over ")[0]   # 1.303 in both


def test_report_auto_reads_past_microbenchmark_records(capsys):
    """A file holding microbenchmark records (a model of one field, no name) ended in
    KeyError: 'name'."""
    from calibration import report_auto
    rc = report_auto.main([str(RUNS / "h200" / "micro.jsonl")])
    assert rc == 2
    assert "no automatic pick" in one_error(capsys.readouterr().err,
                                            "python -m calibration.report_auto")


# --------------------------------------------------------------------------------- rerun


def test_rerun_refuses_one_measurement_on_both_sides(capsys):
    """`--first F --second F` printed "150 runs measured twice", MAPE 0.0%, Spearman 1.00."""
    from calibration import rerun
    rc = rerun.main(["--first", str(RUNS / "h100" / "drawn22.jsonl.gz"),
                     "--second", str(RUNS / "h100" / "drawn22.jsonl.gz")])
    captured = capsys.readouterr()
    assert rc == 2, captured.out[-400:]
    assert "is also in --first" in one_error(captured.err, "python -m calibration.rerun")


# ---------------------------------------------------------------------------- registered


def test_registered_meets_a_run_of_its_own_routing_seed_only(tmp_path, capsys):
    """Predictions registered for routing seed 21 met runs drawn with seed 7 (MAPE 9.8%,
    exit 0): the seed draws another routing, so another workload."""
    from calibration import registered

    def seed7(r):
        r["routing"]["seed"] = 7
    runs = _rewrite(H100, tmp_path / "seed7.jsonl", seed7)
    rc = registered.main([str(H100_PRED), runs])
    captured = capsys.readouterr()
    assert rc == 2, captured.out[-400:]
    assert "none of its 240 predictions meets" in one_error(captured.err,
                                                           "python -m calibration.registered")
    assert registered.main([str(H100_PRED), str(H100)]) == 0      # its own runs still meet


# -------------------------------------------------------------------- report_legacy_zipf


def test_report_legacy_zipf_without_records_of_the_parameters_hardware(capsys):
    """h100-1 runs with h200-1 parameters printed two notes and no figure, exit 0."""
    from calibration import report_legacy_zipf
    rc = report_legacy_zipf.main([str(H100), "--params",
                                  str(ROOT / "mok_model" / "params" / "h200-1.json")])
    captured = capsys.readouterr()
    assert rc == 2, captured.out[-400:]
    assert "no MoE layer records of h200-1" in one_error(
        captured.err, "python -m calibration.report_legacy_zipf")


# ------------------------------------------------------------------------- report_unseen


def test_report_unseen_scores_runs_as_they_ran(capsys):
    """The real 2-GPU runs of bench_e1 (h200-hgx8): a run at capacity 0.75 that the model's
    headroom rule refuses for a choice ended in a traceback (MokInputError outside the error
    handler), and 12 records of a kernel that no longer runs (runtime mode words) were scored
    as today's. Runs that happened are scored as fits score them, the old kernel's left out."""
    from calibration import report_unseen
    rc = report_unseen.main([str(RUNS / "h200x2" / "bench_e1.jsonl"), "--hardware", "h200-hgx8"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err[-400:]
    assert "fwd analytic n  14 " in captured.out
    assert "12 MoK records of h200-hgx8 left out" in captured.err


# ---------------------------------------------------------------------------- knob_pairs


def test_knob_pairs_on_published_rows(capsys):
    """Published rows (no knobs, no p10-p90 interval) ended in KeyError: 'p90'."""
    from calibration import knob_pairs
    rc = knob_pairs.main([str(PUBLISHED)])
    assert rc == 2
    assert "no measured MoK records" in one_error(capsys.readouterr().err,
                                                  "python -m calibration.knob_pairs")


# ----------------------------------------------------------------------------------- loo


def test_loo_refuses_records_of_two_hardware(tmp_path, capsys):
    """Each fold fitted the held-out row's hardware priors to every other row, of any
    hardware (a GB300 row's fit read h200-hgx8 runs as GB300's)."""
    from calibration import loo
    lines = PUBLISHED.read_text().splitlines()[:4] + \
        (RUNS / "h200x2" / "bench_e3.jsonl").read_text().splitlines()[:3]
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("\n".join(lines) + "\n")
    rc = loo.main([str(mixed)])
    captured = capsys.readouterr()
    assert rc == 2, captured.out[-400:]
    assert "span hardware" in one_error(captured.err, "python -m calibration.loo")


def test_loo_without_a_layer_record(capsys):
    """Microbenchmark records only: a header and no row, exit 0."""
    from calibration import loo
    rc = loo.main([str(FABRIC)])
    captured = capsys.readouterr()
    assert rc == 2, captured.out[-400:]
    assert "no records of an MoE layer system" in one_error(captured.err,
                                                            "python -m calibration.loo")


# --------------------------------------------------------------------- report_gemm_table


def test_report_gemm_table_check_is_not_the_tables_own_records(capsys):
    """`--check` naming a RUN_FILE printed the table's in-sample error as the check of shapes
    it never measured."""
    from calibration import report_gemm_table
    rc = report_gemm_table.main([str(GEMM_PHASES), "--check", str(GEMM_PHASES)])
    captured = capsys.readouterr()
    assert rc == 2, captured.out[-400:]
    assert "is one the table is built from" in one_error(
        captured.err, "python -m calibration.report_gemm_table")


# ------------------------------------------------------------------ report_space, report


def test_report_space_fix_with_free(capsys):
    """`--free gemm_eff,mok_fixed_us --fix gemm_eff` fitted mok_fixed_us alone: --fix dropped a
    parameter --free named (and `--free P --fix P` fitted nothing)."""
    from calibration import report_space
    rc = report_space.main([str(H100), "--free", "gemm_eff,mok_fixed_us", "--fix", "gemm_eff"])
    assert rc == 2
    assert "--fix 'gemm_eff' with --free" in one_error(capsys.readouterr().err,
                                                       "python -m calibration.report_space")


def test_report_also_is_not_a_fitted_run_file(tmp_path, capsys):
    """`--also` (run files never fitted on) naming a RUN_FILE reported its fitted records as
    held out."""
    from calibration import report
    rc = report.main([str(RUNS / "h200" / "mok_sweep.jsonl.gz"), "--also",
                      str(RUNS / "h200" / "mok_sweep.jsonl.gz"), "--out", str(tmp_path / "rep")])
    captured = capsys.readouterr()
    assert rc == 2, captured.out[-400:]
    assert "is also in RUN_FILES" in one_error(captured.err, "python -m calibration.report")
    assert not (tmp_path / "rep").exists()


# -------------------------------------------------------------------------- fit_fabric


def test_fit_fabric_out_is_not_another_presets_default_file(capsys, monkeypatch):
    """h200-hgx8 fabric records with `--out mok_model/params/h100-hgx8.json` replaced the
    shipped h100-hgx8 file by an h200-hgx8 fit, without a word (a default file of other
    hardware is then refused when read). The write is intercepted."""
    from calibration import fit_fabric
    written = []
    monkeypatch.setattr(fit_fabric, "write_params", lambda path, *a, **k: written.append(path))
    rc = fit_fabric.main([str(FABRIC), "--out", str(ROOT / "mok_model" / "params" /
                                                    "h100-hgx8.json")])
    captured = capsys.readouterr()
    assert rc == 2 and not written, captured.out[-400:]
    assert "default parameters file of h100-hgx8" in one_error(
        captured.err, "python -m calibration.fit_fabric")


def test_fit_fabric_says_it_replaces_a_file(tmp_path, capsys):
    """An existing --out was replaced in silence (every other parameters writer says so)."""
    from calibration import fit_fabric
    out = tmp_path / "fabric.json"
    out.write_text("{}")
    assert fit_fabric.main([str(FABRIC), "--out", str(out)]) == 0
    assert "exists; it will be replaced" in capsys.readouterr().err


# ------------------------------------------------------------------------ heldout_errors


def test_heldout_errors_out_is_not_another_hardwares_file(tmp_path, capsys, monkeypatch):
    """h200-1 errors written to `--out mok_model/params/heldout/h100-1.json` replaced h100-1's
    held-out file (a warning only); its fingerprint then matched no h100-1 prediction, so
    h100-1 lost its range in silence. The write is intercepted."""
    from calibration import heldout_errors
    written = []
    monkeypatch.setattr(heldout_errors, "atomic_write_text", lambda p, t: written.append(p))
    few = tmp_path / "few.jsonl"
    few.write_text("\n".join(file_text(AUTO).splitlines()[:20]) + "\n")
    rc = heldout_errors.main(["--out", str(heldout_errors.HELDOUT_DIR / "h100-1.json"),
                              "--sim-every", "1000", str(few)])
    captured = capsys.readouterr()
    assert rc == 2 and not written, captured.out[-400:]
    assert "is the held-out file of h100-1" in one_error(captured.err,
                                                         "python -m calibration.heldout_errors")


# -------------------------------------------------------------------------------- regret


def test_regret_allow_params_mismatch_needs_params(capsys):
    """`--allow-params-mismatch` without `--params` was ignored (each workload takes its
    hardware's own file)."""
    from calibration import regret
    rc = regret.main([str(RUNS / "h200" / "mok_sweep.jsonl.gz"), "--allow-params-mismatch"])
    captured = capsys.readouterr()
    assert rc == 2, captured.out[-400:]
    assert "--allow-params-mismatch applies to --params" in one_error(
        captured.err, "python -m calibration.regret")


# --------------------------------------------------------------------------- space_sweep


def test_space_sweep_skip_done_counts_this_hardwares_runs_only():
    """`--skip-done` of an h200 run file on an H100 skipped every workload timed on the H200
    (the documented example names calibration/runs/h200_space/): the H100 sweep left them
    unmeasured. The sweep now passes its GPU's preset (run() needs CUDA; _done is its reader)."""
    from mok_kernels.space_sweep import _done
    path = str(RUNS / "h200_space" / "gemm_phases.jsonl.gz")
    assert _done(path, "mok-gemm")                      # the plan check reads every record
    assert _done(path, "mok-gemm", "h200-1")
    assert not _done(path, "mok-gemm", "h100-1")



def test_first_timed_refuses_one_run_predicted_twice_across_files(capsys):
    """Two registration files (or one twice) predicting one run: the later one silently won."""
    from calibration import first_timed
    pred = str(ROOT / "calibration" / "predictions" / "h100_drawn32_2026-12-06.jsonl")
    rc = first_timed.main([str(RUNS / "h100" / "drawn32.jsonl.gz"), "--predictions", pred, pred])
    err = one_error(capsys.readouterr().err, "python -m calibration.first_timed")
    assert rc == 2 and "predicts the same analytic run as" in err
