"""MoK against the same rank's GEMMs alone over the model space, from space-sweep records.

    python benchmarks/kernel_space.py calibration/runs/h200_space/space.jsonl.gz

Per model preset (or model file: its name) and token band (64-512 tokens per GPU: decode-size;
1K-8K), over the workloads of the records (EP x tokens x routing): the ratio best measured MoK
configuration / GEMMs alone (both measured in the same run), its median and worst case, and how many workloads meet the
issue's goal (<= 1.5x at 64-512 tokens, <= 1.2x at 1K-8K). The best is over the configurations
the records hold (the space sweep times 4 per workload), so it is an upper bound on the tuned
kernel's ratio. Only MoK records of today's kernel count (records.ran_todays_choices: the down
blocks an item walks as the layer picks them today, and records.todays_kernel: not the
wide-expert presets' runs before group_m, nor the forwards that ran a zero shared expert before
2026-12-01, measured again in calibration/runs/h200_space/space_noshared.jsonl.gz); a workload
measured again takes its latest GEMMs-alone record and the best MoK record of the same run
(file), never a better MoK run of another day. Hot records of the draw before
2026-12-01 that gave expert 0 more than its share (records.hot_reproduced: mixtral,
llama4-maverick, gpt-oss-120b) are left out: their workloads were measured again with today's
draw.
"""

from __future__ import annotations

import argparse
import collections
import sys

from calibration.split import group_value
from mok_model.cli import MokParser
from mok_model.errors import MokInputError
from mok_model.records import hot_reproduced, ran_todays_choices, read_records

BANDS = (("64-512", 0, 512, 1.5), ("1K-8K", 1024, 8192, 1.2))


def table(records: list[dict]) -> list[str]:
    """Markdown rows: preset, band, workloads, median and worst ratio, share within the goal."""
    best: dict[tuple, float] = {}                     # (workload, run file): best MoK
    gemm: dict[tuple, tuple[str, float, str]] = {}    # workload: (date, GEMMs alone, run file)
    for r in records:
        if (r.get("pass", "fwd") != "fwd" or r.get("precision", "bf16") != "bf16"
                or not hot_reproduced(r)):
            continue
        ro = r["routing"]
        key = (group_value(r, "model"), r["ep"], r["tokens"], ro["kind"], ro.get("arg"),
               ro.get("order"), ro.get("draw"))
        ms, run = r["latency_ms"]["median"], r.get("_file", "")
        if r["system"] == "mok" and ran_todays_choices(r):
            best[key, run] = min(best.get((key, run), ms), ms)
        elif r["system"] == "gemm-only" and r["date"] >= gemm.get(key, ("", 0.0, ""))[0]:
            gemm[key] = (r["date"], ms, run)     # a workload measured again: its latest run
    groups = collections.defaultdict(list)
    outside = 0
    for key, (_, gemm_ms, run) in gemm.items():
        if (key, run) not in best:       # MoK of the same run as its GEMMs alone, or none
            continue
        banded = [b for b in BANDS if b[1] <= key[2] <= b[2]]
        outside += not banded
        for band, _lo, _hi, goal in banded:
            groups[key[0], band, goal].append((best[key, run] / gemm_ms, key))
    rows = ["| preset | tokens/GPU | workloads | MoK / GEMMs median | worst (EP, tokens, routing) "
            "| within goal |", "|---|---|---:|---:|---|---:|"]
    order = [b[0] for b in BANDS]
    for (model, band, goal), xs in sorted(groups.items(), key=lambda g: (g[0][0], order.index(g[0][1]))):
        xs.sort()
        worst, wk = xs[-1]
        routing = wk[3] + (f":{wk[4]}" if wk[4] is not None else "")
        rows.append(f"| {model} | {band} | {len(xs)} | {xs[len(xs) // 2][0]:.2f} | {worst:.2f} "
                    f"(EP {wk[1]}, {wk[2]}, {routing}) | {sum(x <= goal for x, _ in xs)}/{len(xs)} "
                    f"(<= {goal}x) |")
    if outside:       # token counts between the bands (e.g. 768): the goals do not name them
        rows.append(f"({outside} workload{'s' if outside != 1 else ''} at token counts outside "
                    f"both bands not shown)")
    return rows


def main(argv: list[str] | None = None) -> int:
    p = MokParser(prog="benchmarks/kernel_space.py", description=__doc__,
                  formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+")
    try:
        a = p.parse_args(argv)
        rows = table(read_records(a.runs))
        if len(rows) == 2:      # the header alone: no workload paired
            raise MokInputError(f"no workload in {', '.join(a.runs)} has both a MoK record of "
                                f"today's kernel and a GEMMs-alone (gemm-only) record of the same "
                                f"run (BF16 forward); nothing to compare")
        print("\n".join(rows))
    except MokInputError as exc:
        print(f"{p.prog}: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
