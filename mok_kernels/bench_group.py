"""`mok bench --gpus N`: MoK and baselines on N real GPUs, one process per GPU (EP = N).

Every rank runs the same grid in lockstep. Per iteration each rank times its pass with CUDA
events (fresh token values and a fresh routing draw every iteration, untimed); the record's
latency is the slowest rank's time per iteration (median, p10, p90 over iterations of the max
over ranks), and the raw per-rank times are kept. Systems, all measured in the same run:

- ``mok``: the megakernel in group mode (symmetric memory, in-kernel signals), graph replay;
- ``nccl-torch``: all_to_all_single with host-read split sizes, eager;
- ``graph-a2a``: fixed-capacity NCCL all-to-all + grouped GEMMs + combine in one CUDA graph
  (no host sync: the strong unfused baseline);
- ``gemm-only``: the same rank's routed and shared GEMMs alone on ready inputs.

Before it is timed, every configuration's output is compared with a float32 reference on a
sample of each rank's tokens; a configuration that fails is not recorded and the run exits 1.
"""

from __future__ import annotations

import argparse
import faulthandler
import gc
import socket
import sys
from datetime import timedelta
from typing import Any

import torch

from mok_model.records import record_model

from .bench import (_ints, _software, auto_line, auto_record, capture_graph, forward_tiles,
                    make_record, refuse_overflowing_draws, routing_draw, stats, time_events)
from .knobs import preset_for_gpu
from .routing import shape_of

GROUP_SYSTEMS = ("mok", "nccl-torch", "graph-a2a", "gemm-only")
SAMPLE = 32          # tokens per rank checked against the float32 reference
TOL = 2e-2           # relative error allowed (bf16 activations and weights)


def _expert(shape, e: int, seed: int, device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Expert e's (wg, wu, wd) in bf16, the same on every rank (seeded by expert id); e = -1 is
    the shared expert."""
    h = shape.hidden
    i = shape.shared if e < 0 else shape.inter
    g = torch.Generator(device=device).manual_seed(seed * 1_000_003 + e + 7)
    r = lambda *s, fan: torch.randn(*s, generator=g, device=device) / fan ** 0.5  # noqa: E731
    return tuple(t.to(torch.bfloat16) for t in (r(h, i, fan=h), r(h, i, fan=h), r(i, h, fan=i)))


class RankWorkload:
    """This rank's experts, tokens and routing for one (model, tokens, routing) of the grid."""

    def __init__(self, model: str, ep: int, rank: int, tokens: int, routing: str, seed: int,
                 device) -> None:
        from .reference import MoEWeights
        self.shape = sh = shape_of(model)
        if sh.experts % ep:
            raise ValueError(f"{model} has {sh.experts} experts, not divisible by {ep} GPUs")
        self.model, self.ep, self.rank, self.tokens, self.routing, self.seed = (
            model, ep, rank, tokens, routing, seed)
        self.el, self.dev = sh.experts // ep, device
        parts = [_expert(sh, rank * self.el + j, seed, device) for j in range(self.el)]
        shared = _expert(sh, -1, seed, device) if sh.shared else (None,) * 3
        self.w = MoEWeights(*(torch.stack(t) for t in zip(*parts)), *shared)
        self.x = torch.empty(tokens, sh.hidden, dtype=torch.bfloat16, device=device)
        self.ids = torch.empty(tokens, sh.topk, dtype=torch.int64, device=device)
        self.wts = torch.empty(tokens, sh.topk, dtype=torch.float32, device=device)
        self.gen = torch.Generator(device=device)
        self.refresh(0)

    def refresh(self, i: int) -> None:
        """Fresh token values (per rank) and a fresh routing draw (the same on every rank)."""
        self.gen.manual_seed(self.seed * 7919 + self.rank * 104_729 + i + 1_000_000)
        self.x.normal_(generator=self.gen)
        ids, wts = routing_draw(self, i)
        home = slice(self.rank * self.tokens, (self.rank + 1) * self.tokens)
        self.ids.copy_(ids[home])
        self.wts.copy_(wts[home])

    def reference(self) -> torch.Tensor:
        """float32 output of the first SAMPLE home tokens, expert by expert."""
        from .reference import swiglu_ffn
        m = min(SAMPLE, self.tokens)
        x = self.x[:m].float()
        out = torch.zeros(m, self.shape.hidden, device=self.dev)
        if self.shape.shared:
            out += swiglu_ffn(x, *_expert(self.shape, -1, self.seed, self.dev))
        ids, wts = self.ids[:m].tolist(), self.wts[:m].float()
        for e in sorted({e for row in ids for e in row}):
            wg, wu, wd = _expert(self.shape, e, self.seed, self.dev)
            for t, row in enumerate(ids):
                for j, ej in enumerate(row):
                    if ej == e:
                        out[t] += wts[t, j] * swiglu_ffn(x[t:t + 1], wg, wu, wd)[0]
        return out


def _rel(got: torch.Tensor, want: torch.Tensor) -> float:
    got = got[:want.shape[0]].float()
    if not torch.isfinite(got).all():
        return float("inf")
    return float((got - want).norm() / want.norm())


def _time(step, wl: RankWorkload, iters: int, warmup: int) -> list[float]:
    import torch.distributed as dist
    dist.barrier()
    return time_events(step, wl.refresh, iters, warmup)


def _systems(a: argparse.Namespace, wl: RankWorkload):
    """Yield (system, knobs, step, check) for every configuration of one workload; for MoK,
    step builds the layer (the caller builds it after closing the previous one, on every rank
    at the same point: building and closing a layer are collective)."""
    import itertools

    import torch.distributed as dist

    from .baselines import CapacityA2A, LocalExperts, gemm_only
    from .megakernel import KernelConfig, MoKLayer
    systems = a.systems.split(",")
    ex = LocalExperts(wl.w, wl.rank * wl.el, (wl.rank + 1) * wl.el, wl.dev, torch.bfloat16,
                      local=True)
    base = dict(dispatch="pull", combine="push", minibatch=4096, comm_sms=32, macrobatch=131072,
                capacity=1.0)
    if "nccl-torch" in systems:
        from .baselines import nccl_torch_forward
        fwd = lambda: nccl_torch_forward(wl.x, wl.ids, wl.wts, ex, wl.ep)  # noqa: E731
        yield "nccl-torch", base, fwd, fwd
    if "graph-a2a" in systems:
        a2a = CapacityA2A(ex, wl.ep, wl.tokens, wl.shape.topk, wl.shape.hidden, wl.dev)
        fwd = lambda: a2a.forward(wl.x, wl.ids, wl.wts)  # noqa: E731
        yield "graph-a2a", base, capture_graph(fwd), fwd
    if "gemm-only" in systems:
        ids_all = torch.empty(wl.ep * wl.tokens, wl.shape.topk, dtype=wl.ids.dtype, device=wl.dev)
        dist.all_gather_into_tensor(ids_all, wl.ids)
        mine = ids_all.reshape(-1)
        mine = mine[(mine >= wl.rank * wl.el) & (mine < (wl.rank + 1) * wl.el)]
        le = torch.sort(mine - wl.rank * wl.el).values
        offs = torch.cumsum(torch.bincount(le, minlength=wl.el), 0).to(torch.int32)
        m, sh = int(le.numel()), wl.shape
        xs = torch.randn(m, sh.hidden, dtype=torch.bfloat16, device=wl.dev)
        hh = torch.randn(m, sh.inter, dtype=torch.bfloat16, device=wl.dev)
        hs = torch.randn(wl.tokens, sh.shared, dtype=torch.bfloat16, device=wl.dev) if sh.shared else None
        yield "gemm-only", base, lambda: gemm_only(xs, hh, offs, wl.x, hs, ex), None
    if "mok" not in systems:
        return
    for d, c, mb, cs, cap, so in itertools.product(
            a.dispatch.split(","), a.combine.split(","), _ints(a.minibatch), _ints(a.comm_sms),
            [float(v) for v in a.capacity.split(",")], a.source_order.split(",")):
        knobs = dict(dispatch=d, combine=c, minibatch=mb, comm_sms=cs,
                     macrobatch=int(a.macrobatch),      # one number (bench._check_args)
                     capacity=cap)
        build = lambda kn=knobs, so=so: MoKLayer(  # noqa: E731
            wl.w, wl.ep, wl.tokens, wl.shape.topk, None, KernelConfig(**kn, source_order=so),
            device=str(wl.dev), local_weights=True, group=dist.group.WORLD)
        yield "mok", knobs, build, None
    if a.auto:                  # every knob chosen by the model before launch (h200-hgx8)
        yield "mok-auto", {}, lambda: MoKLayer(
            wl.w, wl.ep, wl.tokens, wl.shape.topk, None, KernelConfig(), device=str(wl.dev),
            local_weights=True, group=dist.group.WORLD), None


def _refuse_overflow_on_every_rank(wl: RankWorkload, layer, a: argparse.Namespace, dev) -> None:
    """Raise CapacityOverflowError on every rank, before any pass, if a routing draw of the
    timing overflows some rank's schedule (bench.refuse_overflowing_draws): its launch would
    trap, and its peers would wait for it (collective: every rank calls this at the same point)."""
    import torch.distributed as dist

    from .schedule import CapacityOverflowError
    try:
        refuse_overflowing_draws(wl, layer.capacity, layer.cfg.capacity, a.iters, a.warmup)
        why = ""
    except CapacityOverflowError as exc:
        why = str(exc)
    over = torch.tensor([int(bool(why))], device=dev)
    dist.all_reduce(over, op=dist.ReduceOp.MAX)
    if over.item():
        raise CapacityOverflowError(why or "another rank's routing draws overflow its schedule")


def worker(rank: int, world: int, port: int, a: argparse.Namespace) -> None:
    """One GPU: run the grid; rank 0 gathers every rank's times and appends the records."""
    import itertools

    import torch.distributed as dist

    from mok_model.records import append_records
    dev = torch.device("cuda", rank)
    torch.cuda.set_device(dev)
    # a hung peer ends the run within the timeout instead of holding the machine
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world, device_id=dev, timeout=timedelta(seconds=a.timeout))
    props = torch.cuda.get_device_properties(dev)
    sms = props.multi_processor_count
    hw = {"preset": preset_for_gpu(props.name, True, sms) or "unknown", "gpu": props.name,
          "gpus": world, "sms": sms, "fabric": "nvlink4",
          "driver": f"cuda {torch.version.cuda}"}
    sw, cmd = _software(), a.note or "mok bench " + " ".join(a.argv)
    failures = 0
    for model, tokens, routing in itertools.product(a.model.split(","), _ints(a.tokens),
                                                    a.routing.split(",")):
        wl = RankWorkload(model, world, rank, tokens, routing, a.seed, dev)
        want = wl.reference()
        swept: list[float] = []             # MoK medians of this workload's sweep (--auto)
        for system, knobs, step, check in _systems(a, wl):
            err, times = float("inf"), []
            # free the previous configuration's buffers (symmetric memory included) at the same
            # point on every rank: Python's cyclic collector otherwise runs at points that differ
            # between ranks (rank 0 writes the records)
            gc.collect()
            torch.cuda.synchronize()
            dist.barrier()
            wl.refresh(0)        # the inputs `want` was computed on (timing refreshes them)
            # a rank still inside this configuration after most of the collective timeout
            # prints every thread's stack, so a hang names where each rank stands (re-armed per
            # configuration)
            faulthandler.dump_traceback_later(max(5, a.timeout * 3 // 4), exit=False)
            layer = None
            try:
                if system in ("mok", "mok-auto"):  # check eagerly; capture once all ranks pass
                    layer = step()
                    knobs = layer.cfg.knobs() if system == "mok-auto" else knobs
                    _refuse_overflow_on_every_rank(wl, layer, a, dev)
                    fwd = lambda lay=layer, w=wl: lay.forward(w.x, w.ids, w.wts)  # noqa: E731
                    layer.cfg.on_error = "raise"
                    err = _rel(fwd(), want)
                elif check is not None:
                    err = _rel(check(), want)
                else:
                    err = 0.0                             # gemm-only: nothing to compare
            except (RuntimeError, ValueError) as exc:     # stall, overflow, a refused knob
                print(f"rank {rank}: {model} n{tokens} {routing} {system} {knobs}: {exc}",
                      file=sys.stderr, flush=True)
            ok = torch.tensor([int(err <= TOL)], device=dev)
            dist.all_reduce(ok, op=dist.ReduceOp.MIN)     # every rank agrees before timing
            if not ok.item():
                if layer is not None:
                    layer.close()
                failures += 1
                if rank == 0:
                    print(f"{model} n{tokens} {routing} {system} {knobs}: FAILED "
                          f"(rank 0 relative error {err:.2e}, allowed {TOL})", flush=True)
                continue
            if layer is not None:
                # only now that every rank passed: a capture runs a pass, and one on a rank
                # whose peer failed its check would wait for that peer until it traps
                layer.cfg.on_error = "trap"               # no host sync inside the graph
                step = capture_graph(fwd)
            times = _time(step, wl, a.iters, a.warmup)
            if layer is not None:
                del step                                  # the graph holds the layer's buffers
                layer.close()
            per_rank: list[Any] = [None] * world
            errs: list[Any] = [None] * world
            dist.all_gather_object(per_rank, times)
            dist.all_gather_object(errs, err)
            if rank == 0:
                slowest = [max(r[i] for r in per_rank) for i in range(len(times))]
                rec = make_record(system=system.replace("-auto", ""), model=record_model(model),
                                  ep=world, tokens=tokens, knobs=knobs, routing=routing, seed=a.seed, times=slowest,
                                  breakdown={}, hardware=hw, software=sw,
                                  note=f"{world} real GPUs, one process each; latency = slowest "
                                       f"rank per iteration; {cmd}")
                rec["emulated_peers"] = False
                if system.startswith("mok"):
                    rec["tiles"] |= forward_tiles("bf16", wl, group=True,
                                                  source_order=layer.cfg.source_order)
                rec["rank_ms"] = per_rank
                rec["rel_err_vs_fp32"] = errs
                if system == "mok-auto":
                    rec = auto_record(rec, layer.knob_source, swept)
                append_records(a.out, [rec])
                rotated = system == "mok" and layer.cfg.rotated
                if system == "mok" and not rotated:     # --auto's pick runs rank order
                    swept.append(rec["latency_ms"]["median"])
                label = "/".join(str(knobs[k]) for k in ("dispatch", "combine", "minibatch",
                                                          "comm_sms")) if system == "mok" else ""
                label += " rotated" if rotated else ""
                if system == "mok-auto":
                    print(auto_line(rec, f"{model:8s} gpus{world} n{tokens:<5d} {routing:8s}"),
                          flush=True)
                else:
                    print(f"{model:8s} gpus{world} n{tokens:<5d} {routing:8s} {system:10s} "
                          f"{label:18s} {stats(slowest)['median']:.3f} ms (max rel err "
                          f"{max(errs):.1e})", flush=True)
        del wl
        torch.cuda.empty_cache()
    faulthandler.cancel_dump_traceback_later()
    dist.barrier()
    dist.destroy_process_group()
    if failures:
        sys.exit(1)


def run(a: argparse.Namespace) -> int:
    """Spawn one process per GPU; exit status 1 if any configuration failed its check."""
    import torch.multiprocessing as mp
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    try:
        mp.start_processes(worker, args=(a.gpus, port, a), nprocs=a.gpus, start_method="spawn")
    except mp.ProcessExitedException as exc:
        print(f"mok bench: a rank failed ({exc})", file=sys.stderr)
        return 1
    return 0
