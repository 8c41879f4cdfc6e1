"""Session 66: the SM clock and power through each workload of a timed sweep. Joins a records
file (space_sweep's, one workload's records written together) with the clocks.csv that
benchmarks/device/drawn_seed.sh and s57_gemm_phases.sh log beside it (nvidia-smi every 200 ms:
timestamp, SM clock, power, temperature, throttle reasons). A workload's window runs from the
previous workload's last record to its own last one (record dates are whole seconds, so short
workloads share samples). Prints per workload the samples' median and minimum SM clock, median
power, the throttle-reason bits seen, and the slowest MoK record's time. A diagnostic.

    PYTHONPATH=. python mok_kernels/logs_s66/clock_join.py RECORDS.jsonl clocks.csv
"""
from __future__ import annotations

import csv
import datetime as dt
import sys

import numpy as np

from mok_model.records import read_records


def number(field: str) -> float:
    """'1980 MHz' -> 1980.0; '[N/A]' -> nan."""
    try:
        return float(field.strip().split()[0])
    except (ValueError, IndexError):
        return float("nan")


def read_clocks(path: str) -> list[tuple[dt.datetime, float, float, str]]:
    """(UTC time, SM MHz, power W, throttle reasons) per sample; lines that do not parse are
    skipped (the header, an error from nvidia-smi)."""
    out = []
    with open(path, newline="", encoding="utf-8") as f:
        for row in csv.reader(f):
            if len(row) < 5:
                continue
            try:
                t = dt.datetime.strptime(row[0].strip(), "%Y/%m/%d %H:%M:%S.%f")
            except ValueError:
                continue
            out.append((t.replace(tzinfo=dt.timezone.utc), number(row[1]), number(row[2]),
                        row[4].strip()))
    return out


def workloads(records: list[dict]) -> list[tuple[str, dt.datetime, list[dict]]]:
    """Consecutive records of one workload, in file order, with the last one's date."""
    groups: list[tuple[str, dt.datetime, list[dict]]] = []
    for r in records:
        rt = r["routing"] if isinstance(r["routing"], str) else r["routing"].get("kind")
        key = f"{r['model']['name']} ep {r['ep']} n {r['tokens']} {rt}"
        when = dt.datetime.fromisoformat(r["date"])
        if groups and groups[-1][0] == key:
            groups[-1] = (key, when, groups[-1][2] + [r])
        else:
            groups.append((key, when, [r]))
    return groups


def main(records_path: str, clocks_path: str) -> None:
    clocks = read_clocks(clocks_path)
    if not clocks:
        sys.exit(f"{clocks_path}: no clock samples")
    start = None
    print(f"{'workload':58s} samples  SM MHz median/min  power W  reasons  slowest MoK ms")
    for key, end, recs in workloads(read_records([records_path])):
        lo = start or end - dt.timedelta(seconds=1)
        win = [c for c in clocks if lo < c[0] <= end + dt.timedelta(seconds=1)]
        start = end
        mok = [r["latency_ms"]["median"] for r in recs if r["system"] == "mok"]
        if not win:
            print(f"{key:58s} {0:7d}")
            continue
        sm = np.array([c[1] for c in win])
        pw = np.array([c[2] for c in win])
        reasons = ",".join(sorted({c[3] for c in win}))
        print(f"{key:58s} {len(win):7d}  {np.nanmedian(sm):6.0f} / {np.nanmin(sm):5.0f}  "
              f"{np.nanmedian(pw):7.0f}  {reasons}  {max(mok) if mok else float('nan'):8.3f}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
