"""group_m 8 over 1 per workload from s55_group_all.sh's tile-sweep logs, split by the rule's line
(a local expert expected to hold >= 2 row tiles, tiles.expected_row_tiles).

    PYTHONPATH=. python mok_kernels/logs_s55/group_all_table.py LOG [LOG ...]
"""
import re
import statistics
import sys

from mok_model.presets import load_model
from mok_kernels.tiles import expected_row_tiles, forward_group_m

LINE = re.compile(r"(\S+):(\d+):(\d+): gemm-only ([\d.]+); \S+/c\d+ ([\d.]+); \S+-G8/c\d+ ([\d.]+)")


def main(paths):
    ruled, other = [], []
    print("| workload | row tiles / local expert | shipped group_m | G1 ms | G8 ms | G8/G1 |")
    print("|---|---:|---:|---:|---:|---:|")
    for path in paths:
        for line in open(path):
            m = LINE.match(line)
            if not m:
                continue
            name, ep, n, _, a, b = m.groups()
            ep, n, a, b = int(ep), int(n), float(a), float(b)
            s = load_model(name)
            per = expected_row_tiles(n, s.top_k, s.routed_experts, ep) / max(s.routed_experts // ep, 1)
            gm = forward_group_m(s.expert_width, s.hidden)
            (ruled if per >= 2 else other).append((b / a, name, n))
            print(f"| {name} EP {ep} x {n} | {per:.1f} | {gm} | {a:.3f} | {b:.3f} | {b / a:.3f} |")
    for label, rows in (("ruled on (>= 2 row tiles an expert)", ruled), ("reported (< 2)", other)):
        r = [x[0] for x in rows]
        print(f"{label}: n {len(r)} median {statistics.median(r):.3f} min {min(r):.3f} max {max(r):.3f};"
              f" over 1.02: {[(x[1], x[2], round(x[0], 3)) for x in rows if x[0] > 1.02]}")


if __name__ == "__main__":
    main(sys.argv[1:])
