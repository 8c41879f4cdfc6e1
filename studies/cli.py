"""`mok study NAME [--out DIR] [--engine analytic|sim] [--workers N] [--cluster ADDRESS]
[--seed S] [--quick]` and `mok study --list`. Parses, runs the study, prints where it wrote."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from mok_model.cli import MokParser, int_at_least, local_processes
from mok_model.errors import MokInputError
from mok_model.fileio import check_output_dir, check_output_file, warn
from mok_model.scenario import ENGINES, MAX_SEED

from .common import Options
from .registry import STUDIES, study

RUN_FLAGS = ("--engine", "--workers", "--cluster", "--seed", "--quick", "--no-progress")
# the run flags a study does not use, refused where given, never ignored; a study not named here
# uses them all (its grid runs through runner.sweep, its routings drawn from --seed)
UNUSED_FLAGS = {"predicted-vs-measured": ("--workers", "--cluster", "--seed", "--quick",
                                          "--no-progress")}


def build_parser() -> argparse.ArgumentParser:
    p = MokParser(prog="mok study", description="Run a what-if or paper-reproduction study.")
    p.add_argument("name", nargs="?", help="study name (see --list)")
    p.add_argument("--list", action="store_true", help="list the studies and exit")
    # defaults None, resolved in options(): --list refuses a flag it would ignore
    p.add_argument("--out", default=None, help="output folder; the study writes DIR/NAME/ "
                                               "(default studies/out)")
    p.add_argument("--engine", default=None, help=f"one of {ENGINES} (default analytic)")
    p.add_argument("--workers", type=int_at_least(0), default=None,
                   help="local processes (0, the default: one per core)")
    p.add_argument("--cluster", default=None, help="address of a running Dask scheduler")
    p.add_argument("--seed", type=int_at_least(0, MAX_SEED), default=None,
                   help="routing seed (outputs reproduce from it; default 0)")
    p.add_argument("--quick", action="store_true", help="reduced grid (tests, smoke runs)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    return p


def _given(a: argparse.Namespace) -> list[str]:
    """The flags (and NAME) given on the command line."""
    return [f for f, v in (("NAME", a.name), ("--cluster", a.cluster), ("--engine", a.engine),
                           ("--out", a.out), ("--workers", a.workers), ("--seed", a.seed),
                           ("--quick", a.quick or None), ("--no-progress", a.no_progress or None))
            if v is not None]


def options(a: argparse.Namespace) -> Options:
    """Validate the parsed flags into Options (flags not given take their defaults)."""
    unused = UNUSED_FLAGS.get(a.name, ())
    if given := [f for f in _given(a) if f in unused]:
        it = "it" if len(given) == 1 else "them"
        takes = ", ".join(["--out"] + [f for f in RUN_FLAGS if f not in unused])
        raise MokInputError(f"{', '.join(given)}: the {a.name} study does not use {it} (it takes "
                            f"{takes}); drop {it}")
    given_out = a.out is not None
    for key, default in (("out", "studies/out"), ("engine", "analytic"), ("workers", 0), ("seed", 0)):
        if getattr(a, key) is None:
            setattr(a, key, default)
    if a.engine not in ENGINES:
        raise MokInputError(f"--engine {a.engine!r} must be one of {ENGINES}")
    if a.workers < 0:
        raise MokInputError(f"--workers {a.workers} must be >= 0 (0: one per core)")
    local_processes("--workers", a.workers)
    if a.seed < 0:
        raise MokInputError(f"--seed {a.seed} must be >= 0")
    if a.cluster is not None and not a.cluster.strip():
        raise MokInputError("--cluster '' is empty; give a Dask scheduler's address or leave "
                            "--cluster out (local processes)")
    if a.cluster is not None:      # before the output folder is made and any point runs
        from .runner import check_cluster

        check_cluster(a.cluster)
    if a.engine == "sim":
        try:
            import mok_model.sim  # noqa: F401
        except ImportError:
            raise MokInputError("--engine sim: the simulator (mok_model.sim) is not available in "
                                "this checkout; use --engine analytic") from None
    check_output_dir(a.out, "--out" if given_out else "the default --out")
    out = check_output_dir(Path(a.out) / a.name, "--out")
    names = (f"{a.name}.csv", f"{a.name}.png", "summary.md", f"{a.name}-regret.csv")
    for name in names:
        check_output_file(out / name, f"--out {a.out!r}: the study's file")   # before any point
    if any((out / name).exists() for name in names):
        warn(f"--out {a.out!r} holds an earlier {a.name} study's files in {str(out)!r}; they "
             f"will be replaced")
    return Options(out=out, engine=a.engine, workers=a.workers, cluster=a.cluster, seed=a.seed,
                   quick=a.quick, progress=not a.no_progress)


def cli(argv: list[str]) -> int:
    """Entry point the `mok` CLI forwards to. 0 ok, 2 bad input (one line on stderr), 1 other."""
    try:
        try:
            a = build_parser().parse_args(argv)
        except SystemExit as exc:  # --help
            return int(exc.code or 0)
        if a.list:
            given = _given(a)
            if given:
                raise MokInputError(f"--list lists the studies and runs none; drop "
                                    f"{', '.join(given)}")
            for name in STUDIES:
                print(f"{name:24s} {study(name).TITLE}")
            return 0
        if not a.name:
            raise MokInputError("mok study: give a study NAME or --list")
        mod = study(a.name)
        opts = options(a)
        opts.out.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        res = mod.run(opts)
        secs = time.perf_counter() - t0
        print(f"{a.name}: wrote {res.csv}, {res.png}, {res.summary} in {secs:.1f} s")
        for k, v in res.headline.items():
            print(f"  {k}: {v}")
        return 0
    except MokInputError as exc:
        print(f"mok study: error: {exc}".replace("mok study: error: mok study: ", "mok study: error: "),
              file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(cli(sys.argv[1:]))
