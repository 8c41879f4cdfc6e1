"""Write the shipped default parameter files, one per hardware preset (mok_model/params/*.json).

    python -m calibration.defaults

- gb300-nvl72: the Blackwell priors fitted to the published GB300 NVL72 rows
  (calibration/runs/published/gb300_table1.jsonl, made from the published rows in docs/sources.md).
- gb200-nvl72, vr-nvl72, rubin-ultra-nvl576: the GB300 fit transferred (same kernel design,
  Grace/Vera hosts); b200-hgx8, b300-dgx8: the same with an x86 host (host_launch_scale 1).
- h200-hgx8, h100-hgx8: priors from our H200 probe and public figures.
- h200-1: `mok calibrate` on the committed H200 runs (microbenchmarks, then the megakernel sweep)
  from those priors.
"""

from __future__ import annotations

from pathlib import Path

from mok_model.params import PARAMS_DIR, Params, write_params
from mok_model.records import append_records, read_records

from .cli import calibrate_cli
from .fit import fit
from .priors import BLACKWELL, H200_LOCAL, HOPPER, prior_params
from .published import published_records

RUNS = Path(__file__).parent / "runs" / "published" / "gb300_table1.jsonl"
H200_RUNS = [Path(__file__).parent / "runs" / "h200" / f
             for f in ("micro.jsonl", "mok_sweep.jsonl", "bench_megakernel.jsonl")]
FREE = ["gemm_eff", "mok_fixed_us", "wgrad_bytes_per_weight", "host_launch_scale", "nccl_eff"]


def published_file() -> Path:
    if not RUNS.exists():
        append_records(RUNS, published_records())
    return RUNS


def main() -> None:
    """Run from the repository root (the parameter files name their runs relative to it)."""
    runs = published_file()
    records = read_records([runs])
    result = fit(records, prior_params("gb300-nvl72", BLACKWELL), FREE)
    gb300 = result.params
    rel = str(runs.relative_to(Path(__file__).resolve().parents[1]))
    fitted_src = {k: f"fitted to {rel} (bounded least squares on relative error)" for k in FREE}
    gb300 = Params(gb300.values, "gb300-nvl72", None, [rel], {**gb300.sources, **fitted_src})
    write_params(PARAMS_DIR / "gb300-nvl72.json", gb300,
                 "Blackwell priors (calibration/priors.py) with five parameters fitted to the "
                 "published GB300 NVL72 rows; nothing else was tuned toward published numbers.",
                 {"residuals": result.residuals})
    for name, x86 in (("gb200-nvl72", False), ("vr-nvl72", False), ("rubin-ultra-nvl576", False),
                      ("b200-hgx8", True), ("b300-dgx8", True)):
        values = dict(gb300.values)
        sources = {k: f"transferred from the gb300-nvl72 fit: {v}" for k, v in gb300.sources.items()}
        if x86:
            values["host_launch_scale"] = 1.0
            sources["host_launch_scale"] = "x86 host: the preset's launch_us as measured"
        write_params(PARAMS_DIR / f"{name}.json", Params(values, name, None, [rel], sources),
                     "Transferred from the gb300-nvl72 fit (same kernel design); no runs on this "
                     "hardware yet.")
    for name, family in (("h200-1", H200_LOCAL), ("h200-hgx8", HOPPER), ("h100-hgx8", HOPPER)):
        write_params(PARAMS_DIR / f"{name}.json", prior_params(name, family),
                     "Priors from our H200 probe and public figures (both in docs/sources.md); "
                     "not yet fitted.")
    root = Path(__file__).resolve().parents[1]
    calibrate_cli([str(f.relative_to(root)) for f in H200_RUNS]
                  + ["--out", str((PARAMS_DIR / "h200-1.json").relative_to(root)),
                     "--base", str((PARAMS_DIR / "h200-1.json").relative_to(root))])
    for row in result.residuals:
        print(f"{row['id']:<40} measured {row['measured_ms']:.3f} ms  predicted "
              f"{row['predicted_ms']:.3f} ms  error {100 * row['rel_error']:+.1f}%")


if __name__ == "__main__":
    main()
