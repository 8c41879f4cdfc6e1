"""Chrome trace-event JSON (opens in Perfetto / chrome://tracing): one process per GPU, one
thread per SM group, operation stream and link; events named by phase and minibatch. The compute
SMs and the host are complete ("X") events that never overlap on their thread; the dispatch and
combine streams, the comm SMs' copies and the links' flows, which overlap in time (flows share
them), are async ("b"/"e") slices."""

from __future__ import annotations

import json
from pathlib import Path

from ..fileio import atomic_write_text, flush_warnings

# thread ids of one GPU's process
HOST, COMM_SMS, DISPATCH, COMBINE, COMPUTE_SMS = 0, 1, 2, 3, 4
LINK_TIDS = {("out", "nvlink"): 5, ("in", "nvlink"): 6, ("out", "nic"): 7, ("in", "nic"): 8}
ASYNC = {DISPATCH, COMBINE, COMM_SMS, *LINK_TIDS.values()}
THREAD_NAMES = {HOST: "host / prologue+epilogue", COMM_SMS: "comm SMs", DISPATCH: "dispatch stream",
                COMBINE: "combine stream", COMPUTE_SMS: "compute SMs", 5: "nvlink egress",
                6: "nvlink ingress", 7: "scale-out NIC egress", 8: "scale-out NIC ingress"}


def write_trace(path: str | Path, spans: list, gpus: frozenset, ep: int, meta: dict,
                args: dict | None = None) -> int:
    """Write spans [(gpu, tid, name, start_s, dur_s), ...] of the GPUs in `gpus`, with
    args[(gpu, name)] on the compute-SM events; return the number of events written."""
    args = args or {}
    events: list[dict] = []
    used = sorted({(g, t) for g, t, *_ in spans if g in gpus})
    for g in sorted({g for g, _ in used}):
        events.append({"name": "process_name", "ph": "M", "pid": g, "tid": 0,
                       "args": {"name": f"GPU {g}"}})
        events.append({"name": "process_sort_index", "ph": "M", "pid": g, "tid": 0,
                       "args": {"sort_index": g}})
    for g, t in used:
        events.append({"name": "thread_name", "ph": "M", "pid": g, "tid": t,
                       "args": {"name": THREAD_NAMES.get(t, str(t))}})
    n_async = 0
    for g, t, name, start, dur in spans:
        if g not in gpus:
            continue
        ts, d = round(float(start) * 1e6, 4), round(float(dur) * 1e6, 4)
        if t in ASYNC:  # operation streams, copies and flows overlap in time: async slices
            n_async += 1
            cat = THREAD_NAMES[t]
            events.append({"name": name, "ph": "b", "cat": cat, "id": n_async, "pid": g, "tid": t, "ts": ts})
            events.append({"name": name, "ph": "e", "cat": cat, "id": n_async, "pid": g, "tid": t,
                           "ts": round(ts + d, 4)})
            continue
        ev = {"name": name, "ph": "X", "pid": g, "tid": t, "ts": ts, "dur": d}
        if t == COMPUTE_SMS and (g, name) in args:
            ev["args"] = args[(g, name)]
        events.append(ev)
    doc = {"traceEvents": events, "displayTimeUnit": "ms",
           "metadata": {**meta, "traced_gpus": sorted(gpus), "ep": ep,
                        "note": (f"GPUs {sorted(gpus)} of {ep} are traced (the first ones and the "
                                 f"slowest)" if len(gpus) < ep else "all GPUs traced")}}
    flush_warnings()   # the simulation ran: a "--trace ... will be replaced" is said before the write
    atomic_write_text(path, json.dumps(doc))
    return len(events)
