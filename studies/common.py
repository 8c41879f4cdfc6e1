"""Shared pieces of every study: options, the parameters for a preset, scenario building,
and writers for the three outputs (CSV, PNG, markdown summary)."""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from mok_model.errors import MokInputError  # noqa: E402
from mok_model.fileio import atomic_path, atomic_write_text  # noqa: E402
from mok_model.params import PARAMS_DIR, Params, load_params  # noqa: E402
from mok_model.presets import Hardware, MoEModel  # noqa: E402

FALLBACK_PARAMS = "gb300-nvl72"  # used for a preset that has no shipped parameters file yet


@dataclass(frozen=True)
class Options:
    """What every study is told: where to write, which engine, how to run the grid."""

    out: Path
    engine: str = "analytic"
    workers: int = 0  # 0: one local process per CPU core
    cluster: str | None = None  # address of a running Dask scheduler
    seed: int = 0
    quick: bool = False
    progress: bool = True


@dataclass
class Outputs:
    """What a study wrote, and its headline numbers (for tests and the CLI's last line)."""

    csv: Path
    png: Path
    summary: Path
    rows: list[dict]
    headline: dict


def params_for(hw_name: str) -> tuple[Params, str]:
    """The shipped parameters of a hardware preset, or gb300-nvl72's when it has none.

    Returns the parameters and a sentence saying which were used (for the summary)."""
    if (PARAMS_DIR / f"{hw_name}.json").is_file():
        p = load_params(None, hw_name)
        how = f"fitted on {', '.join(map(str, p.fitted_on))}" if p.fitted_on else "priors, not yet fitted"
        return p, f"`{hw_name}` uses its shipped parameters (mok_model/params/{hw_name}.json: {how})"
    p = load_params(None, FALLBACK_PARAMS)
    return p, (f"`{hw_name}` has no shipped parameters file yet: it borrows {FALLBACK_PARAMS}'s "
               f"efficiencies and overheads (assumption: same software efficiency on newer silicon)")


def pad_experts(model: MoEModel, ep: int) -> tuple[MoEModel, str]:
    """Round routed experts up to a multiple of EP (experts per GPU = ceil(E / EP)).

    Returns the (possibly padded) model and a note ('' when nothing changed)."""
    e = model.routed_experts
    if e % ep == 0:
        return model, ""
    per_gpu = -(-e // ep)
    padded = model.with_(routed_experts=per_gpu * ep)
    return padded, f"{model.name}: {e} routed experts padded to {per_gpu * ep} ({per_gpu} per GPU) for EP {ep}"


def domain_variant(hw: Hardware, domain: int, link_scale: float = 1.0) -> Hardware:
    """A what-if copy of a hardware whose one-hop domain has `domain` GPUs and whose links are
    `link_scale` x today's bandwidth."""
    return hw.with_(name=f"{hw.name}~d{domain}~x{link_scale:g}", domain_size=domain,
                    link_gbps=hw.link_gbps * link_scale)


def write_csv(path: Path, rows: list[dict]) -> None:
    """Rows of dicts to CSV; columns in first-seen order across all rows."""
    cols: list[str] = []
    for r in rows:
        cols += [k for k in r if k not in cols]
    with atomic_path(path) as tmp, tmp.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols)
        w.writeheader()
        for r in rows:
            w.writerow({k: _fmt_csv(v) for k, v in r.items()})


def _fmt_csv(v):
    if isinstance(v, float):
        return f"{v:.6g}"
    return v


def fmt(v, digits: int = 3) -> str:
    """A number for a markdown table."""
    if isinstance(v, float):
        if math.isnan(v):
            return "-"
        if v != 0 and (abs(v) >= 1e5 or abs(v) < 1e-3):
            return f"{v:.{digits}g}"
        return f"{v:.{digits}f}".rstrip("0").rstrip(".") if "." in f"{v:.{digits}f}" else f"{v:.{digits}f}"
    return str(v)


def md_table(rows: list[dict], cols: list[str], headers: list[str] | None = None) -> str:
    """A markdown table of some columns of some rows."""
    headers = headers or cols
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        lines.append("| " + " | ".join(fmt(r.get(c, "")) for c in cols) + " |")
    return "\n".join(lines)


PREDICTED = "Every number below is a model prediction unless it is marked *published* or *measured*."


def write_summary(path: Path, title: str, sections: list[tuple[str, str]], opts: Options,
                  png_name: str, provenance: str = PREDICTED) -> None:
    """A short markdown summary: the plot, then sections of (heading, body)."""
    head = [f"# {title}", "", f"![{title}]({png_name})", "",
            f"Engine: `{opts.engine}`; seed {opts.seed}; grid: {'reduced (--quick)' if opts.quick else 'full'}. "
            + provenance, ""]
    body = []
    for heading, text in sections:
        body += [f"## {heading}", "", text.strip(), ""]
    atomic_write_text(path, "\n".join(head + body))


def new_figure(ncols: int = 1, nrows: int = 1, width: float = 6.4, height: float = 4.4):
    """A figure with a grid of axes and a consistent style."""
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False)
    for ax in axes.ravel():
        ax.grid(True, alpha=0.3)
    return fig, axes


def save_figure(fig, path: Path) -> None:
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=120, format=Path(path).suffix.lstrip(".") or "png")
    plt.close(fig)


def outputs(opts: Options, name: str, rows: list[dict], headline: dict) -> Outputs:
    d = opts.out
    return Outputs(d / f"{name}.csv", d / f"{name}.png", d / "summary.md", rows, headline)


def need(cond: bool, message: str) -> None:
    """Raise a one-line input error unless cond holds."""
    if not cond:
        raise MokInputError(message)
