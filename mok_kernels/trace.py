"""Where one megakernel pass spends its time, from the programs' own stamps (KernelConfig.trace).

With trace=True every program of the launch writes the GPU's nanosecond timer (%globaltimer) at
fixed points into one row of MoKLayer.last_trace: when it started, when each minibatch's copies
were done and signalled (comm programs), when its work-item loop began and ended, and how long
its items waited for minibatch rows (gate/up) and for their h tiles (down). `summarize` turns
the rows into a per-pass picture, in microseconds from the launch's first stamp. A diagnostic:
the stamps cost a few loads and stores a program, off by default and in every timed record.

    layer = MoKLayer(..., KernelConfig(trace=True, ...)); layer.forward(x, ids, w)
    print(format_summary(summarize(layer.last_trace, comm_sms=layer.cfg.comm_sms,
                                   minibatches=int(layer.last_schedule.num_mb))))
"""

from __future__ import annotations

import numpy as np

# a program's stamp slots, as the megakernel writes them (mok_kernels/megakernel.py T_*)
SLOTS = {"start": 0, "comm_end": 1, "compute_start": 2, "compute_end": 3, "wait_rows": 4,
         "wait_gu": 5, "items": 6}
TRACE_COLUMNS = 8          # slots before the per-minibatch stamps (T_MB): column 8 + mb
STAMPS = [SLOTS[k] for k in ("start", "comm_end", "compute_start", "compute_end")]  # times


def summarize(trace, comm_sms: int, minibatches: int, programs_per_rank: int | None = None) -> dict:
    """The pass of one rank (the first `programs_per_rank` rows; all rows by default) as plain
    numbers, times in us from the first program's start:
    - `minibatch_ready_us`: the last comm program's stamp of each minibatch (its rows all in),
      and `minibatch_first_us`, the first's (the spread shows how evenly they shared it);
    - `comm_end_us`: the last comm program's dispatch loop end;
    - `compute_start_us` / `compute_end_us`: the first item loop's start, the last one's end;
    - `wait_rows_us`, `wait_gu_us`: the waits summed over every program that ran items (comm
      programs that joined too: `item_programs`), and the items each ran;
    - `pass_us`: the last stamp."""
    t = np.asarray(trace.cpu() if hasattr(trace, "cpu") else trace, dtype=np.int64)
    if programs_per_rank is not None:
        t = t[:programs_per_rank]
    if t.ndim != 2 or t.shape[1] < TRACE_COLUMNS + minibatches:
        raise ValueError(f"trace of shape {t.shape}: (programs, >= {TRACE_COLUMNS} + "
                         f"{minibatches}) stamps expected")
    t0 = t[:, SLOTS["start"]].min()
    us = lambda x: (np.asarray(x, dtype=np.float64) - t0) / 1e3  # noqa: E731
    comm, compute = t[:comm_sms], t[comm_sms:]
    ran = np.concatenate([comm[comm[:, SLOTS["items"]] > 0], compute])  # programs with items
    ready = comm[:, TRACE_COLUMNS:TRACE_COLUMNS + minibatches]
    return {
        "programs": int(t.shape[0]), "comm_sms": int(comm_sms), "minibatches": int(minibatches),
        "minibatch_ready_us": [float(x) for x in us(ready.max(axis=0))] if len(comm) else [],
        "minibatch_first_us": [float(x) for x in us(ready.min(axis=0))] if len(comm) else [],
        "comm_end_us": float(us(comm[:, SLOTS["comm_end"]].max())) if len(comm) else 0.0,
        "compute_start_us": float(us(compute[:, SLOTS["compute_start"]].min())),
        "compute_end_us": float(us(ran[:, SLOTS["compute_end"]].max())),
        "wait_rows_us": float(ran[:, SLOTS["wait_rows"]].sum() / 1e3),
        "wait_gu_us": float(ran[:, SLOTS["wait_gu"]].sum() / 1e3),
        "item_programs": int(len(ran)),
        "items_per_program": [int(ran[:, SLOTS["items"]].min()), int(ran[:, SLOTS["items"]].max())],
        "pass_us": float(us(t[:, STAMPS + list(range(TRACE_COLUMNS,
                                                      TRACE_COLUMNS + minibatches))].max())),
    }


def format_summary(s: dict) -> str:
    """One paragraph of `summarize`'s numbers."""
    ready = ", ".join(f"{a:.1f}-{b:.1f}" for a, b in zip(s["minibatch_first_us"],
                                                          s["minibatch_ready_us"]))
    n = s["item_programs"]
    return (f"{s['programs']} programs ({s['comm_sms']} comm), {s['minibatches']} minibatches; "
            f"minibatches copied (first-last comm program) at [{ready}] us, comm done "
            f"{s['comm_end_us']:.1f} us; compute "
            f"{s['compute_start_us']:.1f}-{s['compute_end_us']:.1f} us, waits for rows "
            f"{s['wait_rows_us'] / max(n, 1):.1f} us and for h tiles {s['wait_gu_us'] / max(n, 1):.1f}"
            f" us a program that ran items ({n}); items a program {s['items_per_program'][0]}-"
            f"{s['items_per_program'][1]}; last stamp {s['pass_us']:.1f} us")


def trace_pass(wl, knobs: dict, passes: int = 3, **tiles) -> list[dict]:
    """`passes` traced forwards of one emulated rank (mok_kernels.bench.Workload `wl`, rank
    wl.rank) with `knobs` and KernelConfig `tiles`, after an untraced warm-up pass, each on a
    fresh draw of the inputs; `summarize` of each. Eager launches (no graph): the stamps are
    relative to the kernel's own start, so the host's launch gap does not enter them."""
    import torch

    from .megakernel import KernelConfig, MoKLayer

    layer = MoKLayer(wl.w, wl.ep, wl.tokens, wl.shape.topk, wl.rank,
                     KernelConfig(**knobs, **tiles, trace=True), local_weights=True)
    out = []
    for i in range(passes + 1):
        wl.refresh(200 + i)
        layer.forward(wl.x, wl.ids, wl.wts)
        torch.cuda.synchronize()
        layer.check()
        if i:
            out.append(summarize(layer.last_trace, layer.cfg.comm_sms,
                                 int(layer.last_schedule.num_mb)))
    return out
