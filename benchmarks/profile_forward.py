"""Per-kernel GPU times of one MoK forward (schedule kernels, megakernel, epilogue) via
torch.profiler, for finding what the forward spends outside the megakernel.

    PYTHONPATH=. python3 benchmarks/profile_forward.py [--model kimi-k2] [--tokens 2048] [--ep 16]
"""

from __future__ import annotations

import sys

import torch

from mok_kernels import require_cuda
from mok_model.cli import doc_parser, int_at_least, run_tool
from mok_model.presets import load_model


def main(argv: list[str]) -> int:
    p = doc_parser("benchmarks/profile_forward.py", __doc__)
    p.add_argument("--model", default="kimi-k2")
    p.add_argument("--tokens", type=int_at_least(1), default=2048)
    p.add_argument("--ep", type=int_at_least(1), default=16)
    p.add_argument("--minibatch", type=int_at_least(1, 131072), default=4096,
                   help="rows per step, at most the ring's 131072")
    p.add_argument("--comm-sms", type=int_at_least(1), default=16)
    return run_tool(p, run, argv)


def run(a) -> int:
    """One profiled forward (flags checked first; a CUDA GPU)."""
    from mok_kernels.bench import check_knobs, check_workloads

    load_model(a.model)
    check_workloads([a.model], [a.ep], [a.tokens])
    check_knobs(dict(minibatch=a.minibatch, comm_sms=a.comm_sms, tma=True), "--minibatch / --comm-sms")
    require_cuda()
    from torch.profiler import ProfilerActivity, profile

    from mok_kernels.bench import Workload
    from mok_kernels.megakernel import KernelConfig, MoKLayer
    wl = Workload(a.model, a.ep, a.tokens, "uniform", 0, 0)
    cfg = KernelConfig(minibatch=a.minibatch, comm_sms=a.comm_sms, tma=True, dispatch="pull",
                       combine="push", macrobatch=131072, capacity=0.5)
    layer = MoKLayer(wl.w, wl.ep, wl.tokens, wl.shape.topk, 0, cfg, local_weights=True)
    for _ in range(3):
        layer.forward(wl.x, wl.ids, wl.wts)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for i in range(5):
            wl.refresh(i)
            layer.forward(wl.x, wl.ids, wl.wts)
        torch.cuda.synchronize()
    layer.check()
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=25, max_name_column_width=60))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
