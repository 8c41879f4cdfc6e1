"""Session 45, call 3: the schedule builder of the tree (a memset and 3 Triton launches) against
the one of commit OLD (a memset and 5), interleaved in one process: each graph-replayed alone
(events, warm-up, medians of 30 on one ids tensor), its arrays compared bit for bit first.

    PYTHONPATH=. python3 benchmarks/device/s45_sched_ab.py OLD_COMMIT
"""
import dataclasses
import importlib.util
import statistics
import subprocess
import sys
import tempfile

import torch

from mok_kernels import schedule as new
from mok_kernels.bench import capture_graph, time_events
from mok_kernels.routing import make_routing

src = subprocess.run(["git", "show", f"{sys.argv[1]}:mok_kernels/schedule.py"], check=True,
                     capture_output=True, text=True).stdout
with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
    f.write(src)
spec = importlib.util.spec_from_file_location("old_schedule", f.name)
old = importlib.util.module_from_spec(spec)
sys.modules["old_schedule"] = old          # dataclasses look their module up
spec.loader.exec_module(old)

CASES = [  # (label, ep, rank, experts, tokens, k, minibatch)
    ("qwen3-30b EP 8 4,096", 8, 0, 128, 4096, 8, 8192),
    ("kimi-k2 EP 8 4,096", 8, 0, 384, 4096, 8, 12288),
    ("gpt-oss EP 16 2,048", 16, 0, 128, 2048, 4, 2048),
    ("qwen3-30b EP 32 256", 32, 0, 128, 256, 8, 4096),
    ("kimi-k2 EP 16 128", 16, 0, 384, 128, 8, 2048),
    ("virtual ranks EP 8 512", 8, None, 384, 512, 8, 1024)]
print("| workload | old (5 launches) us | new (3 launches) us | new / old |")
print("|---|---:|---:|---:|")
for label, ep, rank, e, n, k, mb in CASES:
    ids, _ = make_routing(ep * n, e, k, "uniform", 3, device="cuda")
    kw = dict(ep=ep, num_experts=e, rank=rank, capacity_multiplier=1.0, minibatch=mb, block_m=128)
    a, b = old.build_schedule(ids, **kw), new.build_schedule(ids, **kw)
    for fld in dataclasses.fields(a):
        x, y = getattr(a, fld.name), getattr(b, fld.name)
        if isinstance(x, torch.Tensor):
            assert torch.equal(x, y), (label, fld.name)
    steps = {m: capture_graph(lambda m=m, ids=ids, kw=kw: m.build_schedule(ids, **kw)) for m in (old, new)}
    t = {m: [] for m in steps}
    for _ in range(3):          # interleaved rounds
        for m, step in steps.items():
            t[m] += time_events(step, lambda i: None, 10, 3)
    o, w = (statistics.median(t[m]) * 1e3 for m in (old, new))
    print(f"| {label} | {o:.1f} | {w:.1f} | {w / o:.2f} |", flush=True)
