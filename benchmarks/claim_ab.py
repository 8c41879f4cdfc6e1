"""The megakernel's claim policy, A/B in one run (benchmarks/device/s19_ab.sh, one H200).

"ahead": a program claims its next work item at the top of the loop, before the current item's
K loop (the kernel before session 19); "late": after the current item's K loop. Both trees ran
drawn seed 4's sweep and the push-combine join workloads twice, interleaved (ahead, late, ahead,
late); each configuration's time is the better of its two runs.

    python benchmarks/claim_ab.py [mok_kernels/logs_s19]

The logs of sessions 12-30 are archived: `tar -xJf mok_kernels/logs_s12-s30.tar.xz` (from the
repository root) restores mok_kernels/logs_s19/ first.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mok_model.cli import doc_parser, run_tool  # noqa: E402
from mok_model.errors import MokInputError  # noqa: E402
from mok_model.fileio import file_text  # noqa: E402


def _times(path: Path) -> dict[tuple, float]:
    """MoK median latency (ms) per workload and knob setting."""
    out = {}
    for line in file_text(path).splitlines():     # plain or archived (.jsonl.gz)
        r = json.loads(line)
        if r["system"] != "mok":
            continue
        m, c = r["model"], r["config"]
        key = (m if isinstance(m, str) else m["name"], r["ep"], r["tokens"],
               json.dumps(r["routing"], sort_keys=True),
               c["dispatch"], c["combine"], c["minibatch"], c["comm_sms"])
        out[key] = r["latency_ms"]["median"]
    return out


def _best_of(paths: list[Path]) -> dict[tuple, float]:
    runs = [_times(p) for p in paths]
    return {k: min(r[k] for r in runs) for k in runs[0] if all(k in r for r in runs)}


def _geo(xs: list[float]) -> float:
    return math.exp(statistics.fmean(math.log(x) for x in xs))


def main(folder: str = "mok_kernels/logs_s19") -> None:
    d = Path(folder)
    need = [d / f"{kind}_{tree}_{i}.jsonl" for kind in ("drawn4", "join")
            for tree in ("ahead", "late") for i in (1, 2)]
    missing = [str(f) for f in need if not f.is_file()]
    if missing:
        raise MokInputError(f"FOLDER {folder!r}: needs the A/B's eight record files; missing "
                            f"{missing[0]}" + (f" and {len(missing) - 1} more" if len(missing) > 1
                                               else ""))
    for kind in ("drawn4", "join"):
        ahead = _best_of([d / f"{kind}_ahead_{i}.jsonl" for i in (1, 2)])
        late = _best_of([d / f"{kind}_late_{i}.jsonl" for i in (1, 2)])
        keys = sorted(k for k in ahead if k in late)
        ratio = [late[k] / ahead[k] for k in keys]
        print(f"{kind}: {len(keys)} configurations, late / ahead geomean {_geo(ratio):.3f}, "
              f"range {min(ratio):.3f} .. {max(ratio):.3f}")
        for lo, hi in ((0, 0.1), (0.1, 0.2), (0.2, 0.5), (0.5, math.inf)):
            r = [late[k] / ahead[k] for k in keys if lo <= ahead[k] < hi]
            if r:
                print(f"  ahead {lo}-{hi} ms: n {len(r)}, geomean {_geo(r):.3f}")
        work: dict[tuple, list] = {}
        for k in keys:
            work.setdefault(k[:4], []).append(k)
        best = [min(late[k] for k in v) / min(ahead[k] for k in v) for v in work.values()]
        print(f"  best configuration per workload: n {len(best)}, geomean {_geo(best):.3f}, "
              f"range {min(best):.3f} .. {max(best):.3f}")
        if kind == "join":
            for k in keys:
                print(f"  {k[0]} EP {k[1]} {k[2]} tokens, comm SMs {k[7]}: "
                      f"ahead {ahead[k]:.3f} ms, late {late[k]:.3f} ms")


if __name__ == "__main__":
    parser = doc_parser("benchmarks/claim_ab.py", __doc__)
    parser.add_argument("folder", nargs="?", default="mok_kernels/logs_s19",
                        help="the folder of the A/B's record files")
    sys.exit(run_tool(parser, lambda a: main(a.folder)))
