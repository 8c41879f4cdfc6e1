"""Synthetic MoE layer shapes for held-out tests, drawn by a seeded generator rather than chosen.

    python -m calibration.draw_shapes --seed 2 --count 10 --out-dir calibration/drawn_shapes/seed2

A shape no preset has is the honest test of a new user's layer; choosing such shapes by hand
invites choosing the ones the model predicts well. Each shape here is one draw of:

- hidden size H: a multiple of 256 from 1024 to 8192 (the kernel needs a multiple of block_k 64);
- expert width I: log-uniform from 256 to 8192, rounded to a multiple of 64;
- routed experts E: one of 8, 16, 32, 64, 128, 160, 256;
- top-k: uniform from 1 to min(10, E / 4);
- one shared expert of width I, or none (even odds; the kernel's shared width is 0 or I).

The files are the TOML of a model preset (mok_model/presets.py), so `mok predict`, `mok bench`
and `mok_kernels.space_sweep --shapes` take them as they take a preset. The same seed and count
write the same files; a file that exists is never overwritten.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from pathlib import Path

EXPERTS = (8, 16, 32, 64, 128, 160, 256)
MAX_COUNT = 1000          # far below the distinct shapes the draw can make


def draw(seed: int, count: int) -> list[dict]:
    """`count` shapes from one seeded generator (module docstring), as MoEModel fields."""
    rng = random.Random(seed)
    out = []
    while len(out) < count:
        h = 256 * rng.randint(4, 32)
        i = 64 * max(4, round(math.exp(rng.uniform(math.log(256), math.log(8192))) / 64))
        e = rng.choice(EXPERTS)
        k = rng.randint(1, min(10, e // 4))
        s = rng.randint(0, 1)
        name = f"syn{seed}-h{h}-i{i}-e{e}-k{k}" + ("-s1" if s else "")
        if any(m["name"] == name for m in out):
            continue
        out.append({"name": name, "hidden": h, "expert_width": i, "routed_experts": e,
                    "top_k": k, "shared_experts": s, "shared_width": i if s else 0})
    return out


def toml_text(shape: dict, seed: int) -> str:
    """The preset TOML of one drawn shape."""
    lines = ["# Synthetic MoE layer shape drawn by calibration/draw_shapes.py "
             f"(--seed {seed}), not a published model:",
             "# held out of every fit (docs/calibration.md \"Drawn shapes\")."]
    lines += [f"name = \"{shape['name']}\""]
    lines += [f"{k} = {shape[k]}" for k in ("hidden", "expert_width", "routed_experts", "top_k",
                                             "shared_experts", "shared_width")]
    lines += [f"source = \"synthetic shape drawn by calibration/draw_shapes.py --seed {seed}, "
              f"not a published model\""]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from mok_model.cli import doc_parser, int_at_least, run_tool
    from mok_model.scenario import MAX_SEED

    p = doc_parser("python -m calibration.draw_shapes", __doc__)
    p.add_argument("--seed", type=int_at_least(0, MAX_SEED), required=True)
    p.add_argument("--count", type=int_at_least(1), required=True)
    p.add_argument("--out-dir", required=True, help="directory for the TOML files")
    return run_tool(p, _run, argv)


def _run(a: argparse.Namespace) -> int:
    from mok_model.errors import MokInputError
    from mok_model.fileio import check_output_dir
    from mok_model.presets import load_model

    from .checks import required_text

    required_text(a.out_dir, "--out-dir", "folder path")
    if a.count > MAX_COUNT:
        raise MokInputError(f"--count {a.count}: at most {MAX_COUNT} shapes per draw")
    out = Path(a.out_dir)
    if out.exists() and not out.is_dir():
        raise MokInputError(f"--out-dir {a.out_dir!r} is a file, not a directory")
    shapes = draw(a.seed, a.count)
    paths = [out / f"{s['name']}.toml" for s in shapes]
    taken = [str(p) for p in paths if p.exists()]
    if taken:
        raise MokInputError(f"--out-dir {a.out_dir!r}: {taken[0]} exists; drawn shapes are written "
                            f"once (name a new directory)")
    check_output_dir(out, "--out-dir")     # made, and writable (a chmod a-w folder refused)
    for s, path in zip(shapes, paths):
        path.write_text(toml_text(s, a.seed))
        load_model(str(path))              # the file reads back as a valid preset
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
