"""Run the megakernel and nccl-torch on the real GPUs of one host: one process per GPU, the MoK
buffers in torch symmetric memory, NCCL for the baseline; check every rank against the float32
reference and time both with CUDA events.

    python -m mok_kernels.group_check [--gpus N] [--tokens 200] [--dispatch pull,push]
        [--combine push,pull] [--iters 10]
Each MoK configuration is also captured in a CUDA graph and replayed (bits must not change).

Exit status 0 when every rank's output is within 1e-2 of the reference and bit-identical over
repeats; 1 otherwise; 2 on bad input (for example fewer GPUs than asked for).
"""

from __future__ import annotations

import argparse
import socket
import sys

import torch

from mok_model.cli import doc_parser, int_at_least, run_tool
from mok_model.errors import MokInputError
from mok_model.scenario import KNOB_MAX, MAX_SEED
from mok_model.workload import check_routing_memory

from . import require_cuda
from .bench import MAX_ITERS
from .routing import parse_routing

E, K, H, I = 32, 4, 256, 128    # small shape: correctness of the protocol, not speed


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.float(), b.float()
    return float((a - b).norm() / b.norm()) if torch.isfinite(a).all() else float("inf")


def worker(rank: int, world: int, port: int, a: argparse.Namespace, results) -> None:
    """One rank: build the same inputs as every rank (CPU generator), run, compare, report."""
    import torch.distributed as dist

    from . import reference as ref
    from .baselines import LocalExperts, nccl_torch_forward
    from .bench import stats, time_events
    from .megakernel import KernelConfig, MoKLayer
    from .routing import make_routing

    dev = torch.device("cuda", rank)
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world, device_id=dev)
    n = a.tokens
    w = ref.random_weights(E, H, I, I, seed=a.seed).to(torch.bfloat16)
    wf = w.to(torch.float32)
    g = torch.Generator().manual_seed(a.seed + 7)
    x_all = torch.randn(world * n, H, generator=g).to(torch.bfloat16)
    ids_all, wts_all = make_routing(world * n, E, K, a.routing, a.seed, device="cpu")
    home = slice(rank * n, (rank + 1) * n)
    want = ref.moe_reference(x_all[home].float(), ids_all[home], wts_all[home], wf).to(dev)
    x, ids, wts = x_all[home].to(dev), ids_all[home].to(dev), wts_all[home].to(dev)
    x_t = x.clone()                                   # timed on fresh token values

    def median_ms(step) -> float:
        return stats(time_events(step, lambda i: x_t.normal_(), a.iters, 3))["median"]

    report = {"rank": rank}
    for dispatch in a.dispatch.split(","):
        for combine in a.combine.split(","):
            cfg = KernelConfig(dispatch=dispatch, combine=combine, minibatch=a.minibatch,
                               comm_sms=8, capacity=1.0, macrobatch=131072)
            layer = MoKLayer(w, world, n, K, None, cfg, device=str(dev), group=dist.group.WORLD)
            out = layer.forward(x, ids, wts).clone()
            torch.cuda.synchronize(dev)
            layer.check()
            same = all(torch.equal(layer.forward(x, ids, wts), out) for _ in range(3))
            # the pass replayed from a CUDA graph: epoch flags, nothing reset by the host
            side = torch.cuda.Stream(dev)
            side.wait_stream(torch.cuda.current_stream(dev))
            with torch.cuda.stream(side):
                layer.forward(x, ids, wts)
            torch.cuda.current_stream(dev).wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                out_g = layer.forward(x, ids, wts)
            for _ in range(3):
                graph.replay()
                same &= torch.equal(out_g, out)
            torch.cuda.synchronize(dev)
            layer.check()
            report[f"mok-{dispatch}-{combine}"] = {
                "rel_err": _rel(out, want), "bits_identical": same,
                "ms": median_ms(lambda lay=layer: lay.forward(x_t, ids, wts))}
            del graph, out_g       # the graph holds the layer's buffers
            torch.cuda.synchronize(dev)
            layer.close()          # the arena back to the pool, at the same point on every rank
    ex = LocalExperts(w, rank * E // world, (rank + 1) * E // world, dev, torch.bfloat16)
    y = nccl_torch_forward(x, ids, wts, ex, world)
    report["nccl-torch"] = {"rel_err": _rel(y, want), "bits_identical": True,
                            "ms": median_ms(lambda: nccl_torch_forward(x_t, ids, wts, ex, world))}
    results.put(report)
    dist.barrier()
    dist.destroy_process_group()


def main(argv: list[str]) -> int:
    p = doc_parser("python -m mok_kernels.group_check", __doc__)
    p.add_argument("--gpus", type=int_at_least(0, E), default=0,
                   help=f"ranks, one per GPU, dividing the {E} experts (default: all GPUs)")
    p.add_argument("--tokens", type=int_at_least(1, KNOB_MAX), default=200)
    p.add_argument("--minibatch", type=int_at_least(1, KNOB_MAX), default=300)
    p.add_argument("--routing", default="uniform")
    p.add_argument("--dispatch", default="pull,push")
    p.add_argument("--combine", default="push,pull")
    p.add_argument("--iters", type=int_at_least(1, MAX_ITERS), default=10)
    p.add_argument("--seed", type=int_at_least(0, MAX_SEED), default=0)
    return run_tool(p, check_group, argv)


def check_group(a) -> int:
    """Every dispatch x combine on every GPU (flags checked first; CUDA GPUs)."""
    for flag, modes in (("--dispatch", a.dispatch), ("--combine", a.combine)):
        items = modes.split(",")
        if any(m not in ("pull", "push") for m in items):
            raise MokInputError(f"{flag} {modes!r}: a comma list of pull, push")
        if len(set(items)) < len(items):
            raise MokInputError(f"{flag} {modes!r} names a mode twice: each once (a repeat would "
                                f"rerun the same configuration)")
    if a.gpus and E % a.gpus:
        raise MokInputError(f"--gpus {a.gpus} must divide the {E} experts (1, 2, 4, 8, 16, 32)")
    parse_routing(a.routing, K)
    check_routing_memory(max(a.gpus, 1), a.tokens, K, a.routing)
    require_cuda()
    have = torch.cuda.device_count()
    world = a.gpus or have
    if world > have or E % world:
        raise MokInputError(f"--gpus {world}: need 1..{have} GPUs dividing {E} experts")
    import torch.multiprocessing as mp
    ctx = mp.get_context("spawn")
    results = ctx.SimpleQueue()
    mp.start_processes(worker, args=(world, _free_port(), a, results), nprocs=world,
                       start_method="spawn")
    reports = sorted((results.get() for _ in range(world)), key=lambda r: r["rank"])
    ok = True
    for r in reports:
        for name, v in r.items():
            if name == "rank":
                continue
            good = v["rel_err"] <= 1e-2 and v["bits_identical"]
            ok &= good
            print(f"rank {r['rank']} {name:12s} rel_err {v['rel_err']:.2e} bits_identical "
                  f"{v['bits_identical']} median {v['ms']:.3f} ms {'ok' if good else 'FAIL'}")
    print(f"group_check: {world} GPU(s), {'all ranks ok' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
