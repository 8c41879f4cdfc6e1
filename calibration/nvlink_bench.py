"""NVLink microbenchmarks (GPU): copy rate per SM, link bandwidth, cross-GPU signals, interference.

    # 2+ GPUs, one process per GPU (rank 0 measures against rank 1; other ranks stay idle)
    PYTHONPATH=. torchrun --nproc-per-node 2 calibration/nvlink_bench.py --out runs.jsonl [--quick]
    PYTHONPATH=. python3 calibration/nvlink_bench.py --gpus 2 --out runs.jsonl   # spawns itself
    # one GPU: the "peer" buffer is local HBM (every record says emulated_peers: true)
    PYTHONPATH=. python3 calibration/nvlink_bench.py --emulate --quick --out runs.jsonl

Appends mok-run/1 records (README.md "Run records"; systems and "metrics" in docs/calibration.md):
micro-nvlink-copy (pull/push vs copy programs), micro-nvlink-bidir (both directions at once),
micro-nvlink-signal (system-scope flag round trip to P peer slots), micro-nvlink-gemm-copy (cuBLAS
GEMM rate while k programs copy), micro-copy-beside-gemm (the copy's rate beside a tiled GEMM, one
launch split as the megakernel splits its SMs; --gemm-shapes), micro-nvlink-alltoall (every rank
exchanging with every peer at once, real GPUs only: the switch's saturation; written for issue 15,
not yet run on a GPU), micro-nccl-alltoall (NCCL's all_to_all_single to 1 .. world - 1 peers,
0.25-64 MiB a peer, real GPUs only: the nccl-torch baseline's exchange; written in session 52,
not yet run on a GPU).
Peer memory is torch symmetric memory, addressed as element offsets from the local buffer's pointer
(mok_kernels/peers.py). Timing: CUDA events per iteration after warm-up, a GPU-side barrier of both
ranks before each, fresh random source rows each iteration; the raw per-iteration times are in
latency_ms.samples. Progress goes to stderr; --deadline-s stops between measurement points and a
watchdog ends a hung process.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import faulthandler
import functools
import math
import os
import sys
import time
import uuid
from typing import Any, Callable

import torch

from mok_kernels.bench import MAX_ITERS, _software, check_records_out, stats, time_events
from mok_kernels.peers import pointer_offsets
from mok_model.cli import MokParser, deadline_arg, distinct, int_at_least
from mok_model.errors import MokInputError
from mok_model.records import append_records

H, CR, CC, WARPS = 7168, 16, 1024, 8     # the megakernel's copy step: 16 rows x 1024 bf16, 8 warps
STRIDE = 32                              # int32 flag slots 128 bytes apart
PMAX = 16                                # most signal slots (virtual peers) measured
MAX_SPIN = 1 << 24                       # polls per launch before a wait gives up (err flag)
_K: dict[str, Any] = {}


def kernels() -> dict[str, Any]:
    """Define the Triton kernels on first use (Triton is imported lazily)."""
    if _K:
        return _K
    import triton
    import triton.language as tl

    @triton.jit
    def copy_chunks(base, src, dst, c0, chunks, step, nrows, H: tl.constexpr, CR: tl.constexpr,
                    CC: tl.constexpr):
        """Copy row chunks c0, c0 + step, ... < chunks from base+src to base+dst; chunk c is
        CR rows from row (c mod the chunks of nrows) * CR (chunks past them: repeat passes)."""
        nch = (nrows + CR - 1) // CR
        cols = tl.arange(0, CC)
        for c in range(c0, chunks, step):
            rows = (c % nch) * CR + tl.arange(0, CR)
            m = rows < nrows
            off = rows.to(tl.int64)[:, None] * H + cols[None, :]
            for h0 in tl.static_range(0, H, CC):
                v = tl.load(base + src + off + h0, mask=m[:, None])
                tl.store(base + dst + off + h0, v, mask=m[:, None])

    @triton.jit
    def copy_kernel(base, offs_ptr, nrows, reps, split, H: tl.constexpr, CR: tl.constexpr,
                    CC: tl.constexpr):
        """Programs [0, split) copy rows base+offs[0] -> base+offs[1]; programs [split, grid)
        copy base+offs[2] -> base+offs[3]. Row chunks of CR rows, round-robin, `reps` passes."""
        pid = tl.program_id(0)
        second = pid >= split
        sel = second.to(tl.int32) * 2
        src = tl.multiple_of(tl.load(offs_ptr + sel), 16)
        dst = tl.multiple_of(tl.load(offs_ptr + sel + 1), 16)
        first = tl.where(second, split, 0)
        step = tl.where(second, tl.num_programs(0) - split, split)
        copy_chunks(base, src, dst, pid - first, reps * ((nrows + CR - 1) // CR), step, nrows,
                    H, CR, CC)

    @triton.jit
    def stamp():
        """The SM's global nanosecond timer."""
        return tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64,
                                         is_pure=False, pack=1)

    @triton.jit
    def copy_beside_gemm_kernel(base, offs_ptr, nrows, reps, S, a_ptr, b_ptr, c_ptr, M, N, K,
                                gemm_reps, stamps_ptr, DO_COPY: tl.constexpr,
                                DO_GEMM: tl.constexpr, H: tl.constexpr, CR: tl.constexpr,
                                CC: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                                BK: tl.constexpr):
        """The megakernel's split in one persistent launch: programs [0, S) copy rows
        base+offs[0] -> base+offs[1] (`reps` passes, CR-row chunks round-robin), the others
        walk the tiles of C = A B (M x K by K x N, bf16) `gemm_reps` times; every program
        stamps its start and end (ns) at stamps[2 pid], stamps[2 pid + 1]."""
        pid = tl.program_id(0)
        t0 = stamp()
        if pid < S:
            if DO_COPY:
                src = tl.multiple_of(tl.load(offs_ptr), 16)
                dst = tl.multiple_of(tl.load(offs_ptr + 1), 16)
                copy_chunks(base, src, dst, pid, reps * ((nrows + CR - 1) // CR), S, nrows, H,
                            CR, CC)
        else:
            if DO_GEMM:
                tn = (N + BN - 1) // BN
                tiles = ((M + BM - 1) // BM) * tn
                rm, rn, rk = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
                for t in range(pid - S, gemm_reps * tiles, tl.num_programs(0) - S):
                    row = ((t % tiles) // tn) * BM + rm
                    col = ((t % tiles) % tn) * BN + rn
                    acc = tl.zeros((BM, BN), dtype=tl.float32)
                    for k0 in range(0, K, BK):
                        a = tl.load(a_ptr + row.to(tl.int64)[:, None] * K + (k0 + rk)[None, :],
                                    mask=(row[:, None] < M) & ((k0 + rk)[None, :] < K), other=0.0)
                        b = tl.load(b_ptr + (k0 + rk).to(tl.int64)[:, None] * N + col[None, :],
                                    mask=((k0 + rk)[:, None] < K) & (col[None, :] < N), other=0.0)
                        acc = tl.dot(a, b, acc)
                    tl.store(c_ptr + row.to(tl.int64)[:, None] * N + col[None, :],
                             acc.to(tl.bfloat16), mask=(row[:, None] < M) & (col[None, :] < N))
        tl.store(stamps_ptr + 2 * pid, t0)
        tl.store(stamps_ptr + 2 * pid + 1, stamp())

    @triton.jit
    def copy_pairs_kernel(base, offs_ptr, npairs, nrows, H: tl.constexpr, CR: tl.constexpr,
                          CC: tl.constexpr):
        """Program p serves pair p % npairs: copy nrows rows base+offs[2j] -> base+offs[2j+1]
        (all pairs at once: one rank's exchange with every peer), CR-row chunks round-robin."""
        pid = tl.program_id(0)
        j = pid % npairs
        lane = pid // npairs
        lanes = (tl.num_programs(0) - j + npairs - 1) // npairs
        src = tl.multiple_of(tl.load(offs_ptr + 2 * j), 16)
        dst = tl.multiple_of(tl.load(offs_ptr + 2 * j + 1), 16)
        copy_chunks(base, src, dst, lane, (nrows + CR - 1) // CR, lanes, nrows, H, CR, CC)

    @triton.jit
    def spin_geq(ptr, target, spins, max_spin):
        """Poll *ptr (acquire, system scope) until >= target; spins counts polls per launch."""
        v = tl.atomic_add(ptr, 0, sem="acquire", scope="sys")
        while (v < target) & (spins < max_spin):
            v = tl.atomic_add(ptr, 0, sem="acquire", scope="sys")
            spins += 1
        return spins

    @triton.jit
    def pingpong(flags, out_ptr, n_out, in_ptr, n_in, ack_ptr, n_acks, rounds, role_base,
                 err_ptr, max_spin):
        """Role 0 signals n_out slots (release, sys) then waits for n_acks acks; a responder
        waits for each of its n_in slots to reach the round, then acks. Offsets from `flags`."""
        role = role_base + tl.program_id(0)
        spins = tl.program_id(0) * 0
        ack = tl.load(ack_ptr)
        if role == 0:
            for r in range(rounds):
                for j in range(n_out):
                    tl.atomic_add(flags + tl.load(out_ptr + j), 1, sem="release", scope="sys")
                spins = spin_geq(flags + ack, (r + 1) * n_acks, spins, max_spin)
        else:
            for r in range(rounds):
                for j in range(n_in):
                    spins = spin_geq(flags + tl.load(in_ptr + j), r + 1, spins, max_spin)
                tl.atomic_add(flags + ack, 1, sem="release", scope="sys")
        if spins >= max_spin:
            tl.atomic_add(err_ptr, 1)

    _K.update(copy_pairs=copy_pairs_kernel, copy=copy_kernel, pingpong=pingpong,
              copy_gemm=copy_beside_gemm_kernel)
    return _K


class Fabric:
    """This rank's view: buffers (local, or local HBM standing in for the peer), peer offsets,
    a GPU-side barrier, progress, the deadline, and the records it writes."""

    def __init__(self, a: argparse.Namespace) -> None:
        self.a, self.t0, self.emulate = a, time.monotonic(), a.emulate
        self.rows = 4096 if a.quick else 8192
        R = self.rows
        if self.emulate:
            self.rank, self.world, self.dev = 0, 1, torch.device("cuda", 0)
            torch.cuda.set_device(self.dev)
            self.buf = torch.empty(4 * R, H, dtype=torch.bfloat16, device=self.dev)
            self.peer_off = 2 * R * H               # the "peer" is the upper half of one tensor
            reg = (1 + PMAX) * STRIDE
            self.flags = torch.zeros(2 * reg, dtype=torch.int32, device=self.dev)
            self.flag_off = [0, reg]                # rank r's flag region, from self.flags
            self._handle = None
        else:
            import torch.distributed as dist
            import torch.distributed._symmetric_memory as symm_mem
            self.rank, self.world = dist.get_rank(), dist.get_world_size()
            self.dev = torch.device("cuda", torch.cuda.current_device())
            name = dist.group.WORLD.group_name
            if hasattr(symm_mem, "enable_symm_mem_for_group"):
                symm_mem.enable_symm_mem_for_group(name)
            self.buf = symm_mem.empty(2 * R, H, dtype=torch.bfloat16, device=self.dev)
            self._handle = symm_mem.rendezvous(self.buf, name)
            boffs = pointer_offsets(list(self._handle.buffer_ptrs), self.buf).tolist()
            self.buf_off = boffs                    # every rank's buffer (all-to-all)
            self.peer_off = boffs[1 - self.rank] if self.rank < 2 else 0
            self.flags = symm_mem.empty((1 + PMAX) * STRIDE, dtype=torch.int32, device=self.dev)
            fh = symm_mem.rendezvous(self.flags, name)
            self.flag_off = pointer_offsets(list(fh.buffer_ptrs), self.flags).tolist()
        self.err = torch.zeros(1, dtype=torch.int32, device=self.dev)
        props = torch.cuda.get_device_properties(self.dev)
        self.sms = props.multi_processor_count
        self.hardware = {"preset": "h200-1" if self.emulate else "h200-hgx8", "gpu": props.name,
                         "gpus": self.world, "sms": self.sms,
                         "fabric": "local-hbm" if self.emulate else "nvlink4",
                         "driver": f"cuda {torch.version.cuda}"}
        if not self.emulate and self.world > 1:
            self.hardware["p2p"] = bool(torch.cuda.can_device_access_peer(0, 1)) \
                if torch.cuda.device_count() > 1 else None
        self.software = _software()

    # --- coordination -------------------------------------------------------------------
    def log(self, msg: str) -> None:
        if self.rank == 0:
            print(f"[nvlink_bench {time.monotonic() - self.t0:6.1f}s] {msg}", file=sys.stderr,
                  flush=True)

    def agree(self, ok: bool) -> bool:
        """True only if every rank says ok (host sync; never inside a timed region)."""
        if self.world == 1:
            return ok
        import torch.distributed as dist
        t = torch.tensor([0 if ok else 1], dtype=torch.int32, device=self.dev)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return int(t.item()) == 0

    def time_left(self, what: str) -> bool:
        ok = self.agree(time.monotonic() - self.t0 < self.a.deadline_s)
        if not ok:
            self.log(f"deadline {self.a.deadline_s:.0f}s reached: skipping {what}")
        return ok

    def barrier(self) -> None:
        """GPU-side barrier of all ranks on the current stream (no-op when emulated)."""
        if self._handle is not None:
            self._handle.barrier(channel=0)

    def gather_max(self, ts: list[float]) -> list[float]:
        """Per-iteration max over ranks (the slowest rank's time)."""
        if self.world == 1:
            return ts
        import torch.distributed as dist
        allts: list[Any] = [None] * self.world
        dist.all_gather_object(allts, ts)
        return [max(x) for x in zip(*allts)]

    def rank0(self, obj: Any) -> Any:
        """Rank 0's value on every rank (measurements where only rank 0 works)."""
        if self.world == 1:
            return obj
        import torch.distributed as dist
        box = [obj]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def refresh(self, i: int = 0) -> None:
        """Barrier (no rank still reads or writes the last iteration's rows), fresh random
        source rows on this rank (and its emulated peer), barrier."""
        R = self.rows
        self.barrier()
        self.buf[:R].normal_()
        if self.emulate:
            self.buf[2 * R:3 * R].normal_()
        self.barrier()

    def reset_flags(self, i: int = 0) -> None:
        """Barrier, zero this rank's flag slots, barrier (no flag write is in flight)."""
        self.barrier()
        self.flags.zero_()
        self.barrier()

    # --- kernels --------------------------------------------------------------------------
    def offsets(self, direction: str) -> tuple[int, int]:
        """(src, dst) element offsets from self.buf: pull reads the peer's rows into the local
        upper half; push writes the local rows into the peer's upper half."""
        R = self.rows
        if direction == "pull":
            return self.peer_off, R * H
        return 0, self.peer_off + R * H

    def copy(self, programs: int, pairs: list[tuple[int, int]], reps: int = 1,
             split: int | None = None) -> Callable[[], None]:
        """A launch of `programs` copy programs over (src, dst) pairs (one, or two split)."""
        flat = [x for p in (pairs * 2)[:2] for x in p]
        offs = torch.tensor(flat, dtype=torch.int64, device=self.dev)
        k, sp = kernels()["copy"], programs if split is None else split
        return lambda: k[(programs,)](self.buf, offs, self.rows, reps, sp, H=H, CR=CR, CC=CC,
                                      num_warps=WARPS)

    def record(self, system: str, times: list[float], metrics: dict[str, Any], note: str,
               config: dict[str, Any], between: str | None = None) -> dict[str, Any]:
        st = dict(stats(times))
        st["samples"] = [round(t, 6) for t in times]
        return {"schema": "mok-run/1", "id": f"{system}-{uuid.uuid4().hex[:12]}",
                "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                "hardware": self.hardware, "software": self.software, "system": system,
                "model": {"hidden": H}, "ep": 2 if self.emulate else self.world,
                "emulated_peers": self.emulate, "tokens": self.rows, "pass": "fwd",
                "precision": "bf16", "config": config, "routing": {"kind": "uniform", "seed": 0},
                "latency_ms": st, "breakdown_ms": {}, "metrics": metrics, "source": "measured",
                "note": ("EMULATED: the peer buffer is local HBM on one GPU. " if self.emulate
                         else f"{between or 'rank 0 <-> rank 1'} of {self.world} GPUs over "
                              f"NVLink. ") + note}


def copy_config(f: Fabric, programs: int) -> dict[str, Any]:
    return {"programs": programs, "rows_per_step": CR, "cols_per_step": CC, "num_warps": WARPS,
            "rows": f.rows, "hidden": H}


def sms_list(f: Fabric) -> list[int]:
    full = [1, 2, 4, 8, 16, 24, 32, 48, 64, 96, f.sms]
    return [s for s in ([1, 4, 16, 32, 64, f.sms] if f.a.quick else full) if s <= f.sms]


def bench_copy(f: Fabric, out: list) -> None:
    """Copy rate over NVLink vs programs (one per SM): pull (remote reads) and push (remote
    writes), rank 0 copying R rows x 7168 bf16 while rank 1 only holds its buffer."""
    nbytes = f.rows * H * 2
    for direction in ("pull", "push"):
        for s in sms_list(f):
            if not f.time_left(f"copy {direction} sms={s}"):
                return
            step = f.copy(s, [f.offsets(direction)])
            run = step if f.rank == 0 else (lambda: None)
            ts = f.rank0(time_events(run, f.refresh, f.a.iters, 2))
            gbs = nbytes / stats(ts)["median"] / 1e6
            out.append(f.record("micro-nvlink-copy", ts,
                                {"direction": direction, "sms": s, "bytes": nbytes, "GBps": gbs,
                                 "GBps_per_sm": gbs / s},
                                f"{direction}: {f.rows} rows x {H} bf16 ({nbytes / 1e6:.0f} MB) "
                                f"with {s} copy programs: {gbs:.1f} GB/s ({gbs / s:.2f} per SM); "
                                f"bytes = bytes moved one way", copy_config(f, s)))
            f.log(f"copy {direction:4s} sms={s:4d} {gbs:8.1f} GB/s ({gbs / s:6.2f} GB/s/SM)")


def bench_bidir(f: Fabric, out: list) -> None:
    """Both directions at once: ranks 0 and 1 each push (or pull) R rows with all SMs; the
    iteration time is the slower rank's. Emulated: one launch, half the programs each way."""
    nbytes = f.rows * H * 2
    for direction in ("push", "pull"):
        if not f.time_left(f"bidir {direction}"):
            return
        s = f.sms
        if f.emulate:   # a -> "peer" and "peer" -> a, each with s // 2 programs
            R = f.rows
            back = (f.peer_off, R * H) if direction == "push" else (0, f.peer_off + R * H)
            step = f.copy(s, [f.offsets(direction), back], split=s // 2)
        else:
            step = f.copy(s, [f.offsets(direction)]) if f.rank < 2 else (lambda: None)
        ts = f.gather_max(time_events(step, f.refresh, f.a.iters, 2))
        gbs = nbytes / stats(ts)["median"] / 1e6
        out.append(f.record("micro-nvlink-bidir", ts,
                            {"direction": direction, "sms": s, "bytes": nbytes, "GBps": gbs,
                             "GBps_total": 2 * gbs},
                            f"both directions at once, {direction}: {nbytes / 1e6:.0f} MB each way, "
                            f"{gbs:.1f} GB/s per direction (slowest rank's time)",
                            copy_config(f, s)))
        f.log(f"bidir {direction:4s} sms={s:4d} {gbs:8.1f} GB/s per direction")


def signal_tables(f: Fabric, P: int) -> tuple[list[int], list[int], int, int]:
    """Slot j of P lives on responder 1 + j % (world - 1) (emulated: the one stand-in peer).
    Returns (initiator's slot offsets, this rank's own slot offsets, ack offset, responders)."""
    nresp = 1 if f.emulate else f.world - 1
    dest = [1 + j % nresp for j in range(P)]
    outs = [f.flag_off[d] + (1 + j) * STRIDE for j, d in enumerate(dest)]
    me = 1 if f.emulate else f.rank
    ins = [f.flag_off[me] + (1 + j) * STRIDE for j, d in enumerate(dest) if d == me]
    return outs, ins, f.flag_off[0], min(P, nresp)


def _pingpong_step(f: Fabric, outs: list[int], ins: list[int], ack: int, nacks: int,
                   rounds: int) -> Callable[[], None]:
    """One launch of `rounds` round trips: emulated, programs 0 (initiator) and 1 (responder)
    of one grid; real, rank 0 initiates and every rank holding a slot responds."""
    t = lambda v: torch.tensor(v or [0], dtype=torch.int64, device=f.dev)  # noqa: E731
    to, ti, ta = t(outs), t(ins), t([ack])
    grid, role = (2, 0) if f.emulate else ((1 if f.rank == 0 or ins else 0), min(f.rank, 1))
    k = kernels()["pingpong"]

    def step() -> None:
        if grid:
            k[(grid,)](f.flags, to, len(outs), ti, len(ins), ta, nacks, rounds, role, f.err,
                       MAX_SPIN, num_warps=1)
    return step


def bench_signal(f: Fabric, out: list) -> None:
    """Round trip: rank 0 releases a flag in each of P slots (system scope) and waits for the
    acks; each responder waits for its slots, then acks. P = 1 is the signal latency; the slope
    over P is the per-peer cost of push completion signalling (P > world-1 puts several slots on
    one GPU: one writer signalling P virtual peers)."""
    rounds = 300 if f.a.quick else 1000
    for P in ((1, 2, 8) if f.a.quick else (1, 2, 4, 8, 16)):
        if not f.time_left(f"signal P={P}"):
            return
        outs, ins, ack, nacks = signal_tables(f, P)
        f.err.zero_()
        ts = time_events(_pingpong_step(f, outs, ins, ack, nacks, rounds), f.reset_flags,
                         f.a.iters, 2)
        if not f.agree(int(f.err.item()) == 0):
            raise RuntimeError(f"signal P={P}: a wait polled {MAX_SPIN} times without seeing its "
                               f"flag (rank {f.rank} err={int(f.err.item())}): peer not running, "
                               f"or system-scope atomics not reaching it")
        ts = [x / rounds for x in f.rank0(ts)]
        us = stats(ts)["median"] * 1e3
        out.append(f.record("micro-nvlink-signal", ts,
                            {"peers": P, "responders": nacks, "rounds": rounds, "roundtrip_us": us},
                            f"flag round trip, release/acquire at system scope, {P} slot(s) on "
                            f"{nacks} responder(s): {us:.3f} us per round (launch time / {rounds})",
                            {"peers": P, "rounds": rounds, "num_warps": 1, "slot_bytes": 4 * STRIDE}))
        f.log(f"signal P={P:3d} round trip {us:7.3f} us")


def bench_gemm_copy(f: Fabric, out: list) -> None:
    """cuBLAS bf16 GEMMs (8192 x 7168 -> 4096) on rank 0 while k copy programs pull from the
    peer on a second stream, sized to outlast the GEMMs; GEMM rate relative to alone."""
    M, K, N, n = 8192, 7168, 4096, (2 if f.a.quick else 4)
    a = torch.randn(M, K, device=f.dev, dtype=torch.bfloat16)
    b = torch.randn(K, N, device=f.dev, dtype=torch.bfloat16)
    flop = 2.0 * M * K * N * n
    main, side = torch.cuda.current_stream(f.dev), torch.cuda.Stream(f.dev)

    def gemms() -> None:
        for _ in range(n):
            torch.matmul(a, b)

    def fresh(i: int) -> None:
        main.wait_stream(side)
        a.normal_()
        f.refresh(i)
    solo = f.rank0(time_events(gemms if f.rank == 0 else (lambda: None), fresh, f.a.iters, 2))
    t_solo = stats(solo)["median"]
    for s in ((8, 32) if f.a.quick else (4, 8, 16, 32, 64)):
        if not f.time_left(f"gemm+copy k={s}") or s >= f.sms:
            return
        one = f.copy(s, [f.offsets("pull")])
        t_copy = stats(f.rank0(time_events(one if f.rank == 0 else (lambda: None), fresh,
                                           3, 1)))["median"]
        reps = int(math.ceil(1.3 * t_solo / t_copy)) + 1
        cp = f.copy(s, [f.offsets("pull")], reps=reps)
        ts, covered = [], []
        for i in range(-2, f.a.iters):
            fresh(i)
            e0, e1, e2 = (torch.cuda.Event(enable_timing=True) for _ in range(3))
            e0.record(main)
            if f.rank == 0:
                side.wait_stream(main)
                with torch.cuda.stream(side):
                    cp()
                    e2.record(side)
                gemms()
            else:
                e2.record(main)
            e1.record(main)
            torch.cuda.synchronize(f.dev)
            if i >= 0:
                ts.append(e0.elapsed_time(e1))
                covered.append(e0.elapsed_time(e2) >= e0.elapsed_time(e1))
        ts, ok = f.rank0(ts), all(f.rank0(covered))
        tf = flop / stats(ts)["median"] / 1e9
        out.append(f.record("micro-nvlink-gemm-copy", ts,
                            {"copy_sms": s, "TFLOPs": tf, "TFLOPs_alone": flop / t_solo / 1e9,
                             "ratio": t_solo / stats(ts)["median"], "copy_outlasted_gemm": ok,
                             "gemm_alone_ms": t_solo, "gemm_alone_samples": solo},
                            f"{n} cuBLAS GEMMs {M}x{K}x{N} bf16 beside {s} copy programs pulling "
                            f"from the peer: {tf:.0f} TF/s vs {flop / t_solo / 1e9:.0f} alone "
                            f"(copy outlasted the GEMMs in every iteration: {ok}; cuBLAS may "
                            f"place CTAs on SMs that host a copy program)",
                            {"copy_sms": s, "gemm_shape": [M, K, N], "gemms": n, "copy_reps": reps}))
        f.log(f"gemm+copy k={s:3d} {tf:6.0f} TF/s (alone {flop / t_solo / 1e9:.0f}), covered {ok}")


# GEMM shapes (M, K, N) the copy is measured beside: a decode GEMM that streams its weights, the
# gate/up and down GEMMs of one expert of session 37's regret case (2,688 rows, H 3,328, I 1,280),
# a large square-ish one and a wide weight-bound one (H 7,936, 2I 13,696)
COPY_GEMM_SHAPES = ((128, 7168, 4096), (2688, 3328, 2560), (2688, 1280, 3328),
                    (8192, 7168, 4096), (512, 7936, 13696))
GEMM_TILE = (128, 128, 128)   # BM, BN, BK; two stages of bf16 A and B tiles (128 KB): one
                              # program per SM, as the megakernel's


def bench_copy_gemm(f: Fabric, out: list) -> None:
    """The copy's rate beside GEMMs (the model's copy_slowdown_beside_gemm): one persistent
    launch whose first k programs pull rows from the peer while the other programs run a tiled
    GEMM of one shape, as the megakernel splits its SMs; the copy alone, the GEMM alone and both,
    timed by each program's global-timer stamps. Where the copy outlasts the GEMMs, slowdown =
    (copy beside - copy alone) / GEMM time beside: the share of its rate the copy loses while the
    GEMMs run; where it does not, 1 - copy alone / copy beside."""
    for M, K, N in f.a.gemm_shapes or (COPY_GEMM_SHAPES[:3] if f.a.quick else COPY_GEMM_SHAPES):
        for S in ((8, 32) if f.a.quick else (8, 16, 32)):
            if not f.time_left(f"copy beside gemm {M}x{K}x{N} k={S}") or S >= f.sms:
                return
            rec = copy_beside_gemm_point(f, M, K, N, S)
            if rec is not None:
                out.append(rec)


def copy_beside_gemm_point(f: Fabric, M: int, K: int, N: int, S: int) -> dict[str, Any] | None:
    """One point of bench_copy_gemm: S copy programs beside an M x K x N GEMM (rank 0's record;
    None on the other ranks, which only take part in the barriers)."""
    BM, BN, BK = GEMM_TILE
    k = kernels()["copy_gemm"]
    stamps = torch.zeros(2 * f.sms, dtype=torch.int64, device=f.dev)
    offs = torch.tensor(f.offsets("pull"), dtype=torch.int64, device=f.dev)
    a = torch.randn(M, K, device=f.dev, dtype=torch.bfloat16)
    b = torch.randn(K, N, device=f.dev, dtype=torch.bfloat16)
    c = torch.empty(M, N, device=f.dev, dtype=torch.bfloat16)

    def spans(reps: int, gemm_reps: int, copy: bool, gemm: bool) -> tuple[float, float]:
        """(copy, GEMM) ms from the launch's first start stamp to each role's last end."""
        k[(f.sms,)](f.buf, offs, f.rows, reps, S, a, b, c, M, N, K, gemm_reps, stamps,
                    DO_COPY=copy, DO_GEMM=gemm, H=H, CR=CR, CC=CC, BM=BM, BN=BN, BK=BK,
                    num_warps=WARPS, num_stages=2)
        st = stamps.view(-1, 2).cpu()
        t0 = int(st[:, 0].min())
        return (int(st[:S, 1].max()) - t0) / 1e6, (int(st[S:, 1].max()) - t0) / 1e6

    def timed(*args) -> list[tuple[float, float]]:
        """Rank 0's spans over the iterations, fresh rows before each (every rank takes part
        in the refresh's barriers; only rank 0 launches), after one warm-up launch."""
        if f.rank == 0:
            spans(*args)
        res = []
        for i in range(f.a.iters):
            f.refresh(i)
            a.normal_()
            res.append(spans(*args) if f.rank == 0 else (0.0, 0.0))
        return f.rank0(res)

    one = stats([g for _, g in timed(1, 1, False, True)])["median"]
    gemm_reps = max(1, math.ceil(1.5 / max(one, 1e-3)))          # ~1.5 ms of GEMMs
    gemm_alone = [g for _, g in timed(1, gemm_reps, False, True)]
    t_copy1 = stats([cp for cp, _ in timed(1, 1, True, False)])["median"]
    reps = max(1, math.ceil(1.3 * stats(gemm_alone)["median"] / max(t_copy1, 1e-3)))
    copy_alone = [cp for cp, _ in timed(reps, 1, True, False)]
    both = timed(reps, gemm_reps, True, True)
    if f.rank != 0:
        return None
    ca, cb = stats(copy_alone)["median"], stats([cp for cp, _ in both])["median"]
    ga, gb = stats(gemm_alone)["median"], stats([g for _, g in both])["median"]
    outlasted = all(cp >= g for cp, g in both)
    slow = (cb - ca) / gb if outlasted else 1.0 - ca / cb
    nbytes = 2.0 * (M * K + K * N + M * N) * gemm_reps
    f.log(f"copy beside gemm {M}x{K}x{N} k={S:3d}: copy {ca:.3f} -> {cb:.3f} ms, "
          f"gemm {ga:.3f} -> {gb:.3f} ms, slowdown {slow:.3f}")
    return f.record(
        "micro-copy-beside-gemm", [cp for cp, _ in both],
        {"copy_sms": S, "copy_alone_ms": ca, "copy_beside_ms": cb, "gemm_alone_ms": ga,
         "gemm_beside_ms": gb, "copy_slowdown": slow, "copy_outlasted_gemm": outlasted,
         "gemm_TFLOPs_alone": 2.0 * M * K * N * gemm_reps / ga / 1e9,
         "gemm_min_GBps_alone": nbytes / ga / 1e6, "copy_alone_samples": copy_alone,
         "gemm_alone_samples": gemm_alone, "gemm_beside_samples": [g for _, g in both]},
        f"{S} programs pull {reps} x {f.rows} rows x {H} bf16 from the peer while {f.sms - S} "
        f"run {gemm_reps} x a {M}x{K}x{N} bf16 GEMM ({BM}x{BN}x{BK} tiles) in one launch: copy "
        f"{ca:.3f} ms alone, {cb:.3f} beside; GEMMs {ga:.3f} alone, {gb:.3f} beside; slowdown "
        f"{slow:.3f} (latency = the copy beside the GEMMs)",
        {"copy_sms": S, "gemm_shape": [M, K, N], "gemm_reps": gemm_reps, "copy_reps": reps,
         "gemm_tile": [BM, BN, BK]})


def alltoall_pairs(f: Fabric, direction: str) -> tuple[list[tuple[int, int]], int]:
    """(src, dst) element offsets of this rank's exchange with each peer, and rows per pair.
    Source rows [0, R) are cut in world slices of S rows (slice q is for rank q); rank p's rows
    land in slice p of the receiver's upper half [R, 2R). Push writes slice q into peer q's
    upper half; pull reads peer q's slice for this rank into this rank's upper half."""
    R, me = f.rows, f.rank
    S = R // f.world
    pairs = []
    for q in range(f.world):
        if q == me:
            continue
        if direction == "push":
            pairs.append((q * S * H, f.buf_off[q] + (R + me * S) * H))
        else:
            pairs.append((f.buf_off[q] + me * S * H, (R + q * S) * H))
    return pairs, S


def bench_alltoall(f: Fabric, out: list) -> None:
    """All-to-all through the switch: every rank pushes (or pulls) R / world rows to (from) each
    of its world - 1 peers at once, its copy programs spread round-robin over the peers; the
    iteration time is the slowest rank's. Rate per rank = bytes it sends (push) or receives
    (pull) over that time: its share of the fabric when every GPU exchanges with every GPU."""
    if f.emulate or f.world < 2:
        f.log("alltoall: needs 2 or more real GPUs; skipped")
        return
    k = kernels()["copy_pairs"]
    for direction in ("push", "pull"):
        pairs, S = alltoall_pairs(f, direction)
        offs = torch.tensor([x for p in pairs for x in p], dtype=torch.int64, device=f.dev)
        nbytes = len(pairs) * S * H * 2
        for s in sms_list(f):
            if s < len(pairs) or not f.time_left(f"alltoall {direction} sms={s}"):
                continue

            step = functools.partial(k[(s,)], f.buf, offs, len(pairs), S, H=H, CR=CR, CC=CC,
                                     num_warps=WARPS)
            ts = f.gather_max(time_events(step, f.refresh, f.a.iters, 2))
            gbs = nbytes / stats(ts)["median"] / 1e6
            out.append(f.record("micro-nvlink-alltoall", ts,
                                {"direction": direction, "sms": s, "peers": len(pairs),
                                 "bytes_per_rank": nbytes, "GBps_per_rank": gbs,
                                 "GBps_per_peer": gbs / len(pairs), "GBps_per_sm": gbs / s},
                                f"all-to-all {direction}: each rank {S} rows x {H} bf16 to each of "
                                f"{len(pairs)} peers at once ({nbytes / 1e6:.0f} MB per rank) with "
                                f"{s} copy programs: {gbs:.1f} GB/s per rank (slowest rank's time)",
                                {**copy_config(f, s), "rows_per_peer": S},
                                between="every rank <-> every rank"))
            f.log(f"alltoall {direction:4s} sms={s:4d} {gbs:8.1f} GB/s per rank, "
                  f"{len(pairs)} peers")


def nccl_peer_sets(world: int, quick: bool) -> list[int]:
    """Peer counts the NCCL sweep measures (world >= 2): 1, powers of two below world - 1, and
    world - 1 (every peer, the layer's all-to-all); quick: 1 and world - 1."""
    top = world - 1
    ks = {1, top} if quick else {1, top, *(2 ** i for i in range(1, top.bit_length()) if 2 ** i < top)}
    return sorted(ks)


def nccl_splits(world: int, rank: int, peers: int, n: int) -> tuple[list[int], list[int]]:
    """all_to_all_single split sizes (elements) when every rank sends n elements to each of the
    `peers` ranks after it (rank + 1 .. rank + peers, mod world) and so receives n from each of
    the `peers` ranks before it; nothing to itself or to the other ranks."""
    send = [n if 1 <= (q - rank) % world <= peers else 0 for q in range(world)]
    recv = [n if 1 <= (rank - q) % world <= peers else 0 for q in range(world)]
    return send, recv


def _fresh(f: Fabric, src: torch.Tensor, i: int) -> None:
    """Fresh random rows to send, then a GPU-side barrier of every rank."""
    src.normal_()
    f.barrier()


NCCL_MB = (0.25, 1, 4, 16, 64)          # message per peer (MiB) of the NCCL sweep
NCCL_MB_QUICK = (1, 16)


def bench_nccl(f: Fabric, out: list) -> None:
    """NCCL's all-to-all (torch.distributed.all_to_all_single, the nccl-torch baseline's
    exchange) with each rank sending to `peers` of its world - 1 peers (1 .. world - 1) and a
    message per peer of 0.25-64 MiB; the iteration time is the slowest rank's. Measures NCCL's
    rate per peer (nccl_peer_gbps: few channels a peer, so one peer cannot fill the link) and
    its share of the link with every peer at once (nccl_eff); calibration/fit_fabric.py fits both."""
    if f.emulate or f.world < 2:
        f.log("nccl: needs 2 or more real GPUs; skipped")
        return
    import torch.distributed as dist
    top_mb = max(NCCL_MB_QUICK if f.a.quick else NCCL_MB)
    elems = int(top_mb * 2 ** 20) // 2
    send = torch.empty((f.world - 1) * elems, dtype=torch.bfloat16, device=f.dev)
    recv = torch.empty_like(send)
    for peers in nccl_peer_sets(f.world, f.a.quick):
        for mb in (NCCL_MB_QUICK if f.a.quick else NCCL_MB):
            if not f.time_left(f"nccl peers={peers} {mb} MiB"):
                return
            n = int(mb * 2 ** 20) // 2
            s_split, r_split = nccl_splits(f.world, f.rank, peers, n)
            src, dst = send[:peers * n], recv[:peers * n]
            step = functools.partial(dist.all_to_all_single, dst, src, r_split, s_split)
            ts = f.gather_max(time_events(step, functools.partial(_fresh, f, src), f.a.iters, 2))
            nbytes = peers * n * 2
            gbs = nbytes / stats(ts)["median"] / 1e6
            out.append(f.record("micro-nccl-alltoall", ts,
                                {"peers": peers, "bytes_per_peer": n * 2, "bytes_per_rank": nbytes,
                                 "GBps_per_rank": gbs, "GBps_per_peer": gbs / peers},
                                f"NCCL all_to_all_single: each rank sends {mb:g} MiB to each of "
                                f"{peers} peer(s) and receives as much from {peers}: {gbs:.1f} "
                                f"GB/s per rank (slowest rank's time)",
                                {"peers": peers, "bytes_per_peer": n * 2, "dtype": "bf16",
                                 "collective": "all_to_all_single",
                                 "nccl": ".".join(map(str, torch.cuda.nccl.version()))},
                                between="every rank -> its next `peers` ranks"))
            f.log(f"nccl peers={peers:3d} {mb:6g} MiB/peer {gbs:8.1f} GB/s per rank")


BENCHES = {"copy": bench_copy, "bidir": bench_bidir, "signal": bench_signal,
           "gemm_copy": bench_gemm_copy, "copy_gemm": bench_copy_gemm, "alltoall": bench_alltoall,
           "nccl": bench_nccl}


def run(a: argparse.Namespace) -> int:
    faulthandler.dump_traceback_later(a.deadline_s + 60, exit=True)   # a hang ends the process
    f = Fabric(a)
    f.log(f"{'emulated peer (local HBM)' if f.emulate else f'{f.world} GPUs'}, "
          f"{f.sms} SMs, deadline {a.deadline_s:.0f}s, out {a.out}")
    failed = []
    for name in a.only.split(","):
        out: list = []
        try:
            BENCHES[name](f, out)
        except Exception as exc:  # keep the other measurements (and what this one wrote)
            failed.append(name)
            f.log(f"{name}: FAILED {exc!r}")
        if out and f.rank == 0:
            append_records(a.out, out)
            f.log(f"{name}: {len(out)} records -> {a.out}")
    f.log(f"done in {time.monotonic() - f.t0:.1f}s" + (f"; failed: {failed}" if failed else ""))
    return 1 if failed else 0


def _worker(rank: int, world: int, port: int, a: argparse.Namespace) -> None:
    _init(rank, world, rank, f"tcp://127.0.0.1:{port}")
    rc = run(a)
    _finish()
    if rc:
        sys.exit(rc)


def _init(rank: int, world: int, local: int, method: str | None) -> None:
    import torch.distributed as dist
    dev = torch.device("cuda", local)
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", init_method=method, rank=rank, world_size=world, device_id=dev)


def _finish() -> None:
    import torch.distributed as dist
    dist.barrier()
    dist.destroy_process_group()


def torchrun_ranks() -> tuple[int, int, int]:
    """(RANK, WORLD_SIZE, LOCAL_RANK) as torchrun sets them, each an integer, the rank below the
    world size; else one line naming the variable (int() used to raise a traceback)."""
    values = {}
    for name, default in (("RANK", None), ("WORLD_SIZE", None), ("LOCAL_RANK", "0")):
        text = os.environ.get(name, default)
        if text is None or not text.strip().isdigit():
            raise MokInputError(f"environment variable {name}={text!r} must be an integer >= 0 "
                                f"(torchrun sets RANK, WORLD_SIZE and LOCAL_RANK)")
        values[name] = int(text)
    if not values["RANK"] < values["WORLD_SIZE"]:
        raise MokInputError(f"environment variables RANK={values['RANK']} and WORLD_SIZE="
                            f"{values['WORLD_SIZE']}: the rank must be below the world size")
    return values["RANK"], values["WORLD_SIZE"], values["LOCAL_RANK"]


PROG = "calibration/nvlink_bench.py"   # how it is run: its error lines start "PROG: error: "


def gemm_shapes(text: str) -> tuple[tuple[int, int, int], ...]:
    """--gemm-shapes MxKxN,...: each dimension a whole number 1-65,536."""
    shapes: list[tuple[int, ...]] = []
    for item in text.split(","):
        dims = item.lower().split("x") if item else []
        if len(dims) != 3 or not all(d.isdigit() and 1 <= int(d) <= 65536 for d in dims):
            raise argparse.ArgumentTypeError(
                f"{item!r}: a GEMM shape is MxKxN, each a whole number 1-65536")
        if tuple(int(d) for d in dims) in shapes:
            raise argparse.ArgumentTypeError(f"{item!r} named twice: each shape once")
        shapes.append(tuple(int(d) for d in dims))
    return tuple(shapes)  # type: ignore[return-value]


def main(argv: list[str]) -> int:
    p = MokParser(prog=PROG, description=__doc__,
                  formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="JSONL file the records are appended to")
    p.add_argument("--emulate", action="store_true", help="one GPU, peer buffer in local HBM")
    p.add_argument("--gpus", type=int_at_least(0), default=0,
                   help="without torchrun: spawn this many ranks (0: one per GPU here)")
    p.add_argument("--quick", action="store_true", help="fewer points, rows and iterations")
    p.add_argument("--iters", type=int_at_least(1, MAX_ITERS), default=None,
                   help="timed iterations (default 10, quick 5)")
    p.add_argument("--deadline-s", type=deadline_arg, default=500.0,
                   help="stop starting new points")
    p.add_argument("--only", default=",".join(BENCHES), help=f"subset of {','.join(BENCHES)}")
    p.add_argument("--gemm-shapes", type=gemm_shapes, default=None,
                   help="copy_gemm: GEMM shapes MxKxN,... (default: five, three with --quick)")
    try:
        a = p.parse_args(argv)
        check_records_out(a.out)      # records are appended: a .jsonl of valid records
        if a.emulate and a.gpus:
            raise MokInputError(f"--gpus {a.gpus} with --emulate: the emulated run is one GPU "
                                f"(drop --gpus)")
        bad = [n for n in distinct("--only", a.only) if n not in BENCHES]
        if bad:
            raise MokInputError(f"--only {a.only!r}: {bad} not in {','.join(BENCHES)}")
        if "RANK" in os.environ:      # torchrun's variables, named before the GPU check
            torchrun_ranks()
    except MokInputError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    a.iters = a.iters or (5 if a.quick else 10)
    have = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if have == 0:
        print(f"{PROG}: error: needs a CUDA GPU (no GPU here)", file=sys.stderr)
        return 2
    if a.emulate:
        return run(a)
    if "RANK" in os.environ:                       # torchrun
        rank, world, local = torchrun_ranks()
        if world < 2:
            print(f"{PROG}: error: torchrun with 1 process: use --nproc-per-node 2+ or "
                  "--emulate", file=sys.stderr)
            return 2
        _init(rank, world, local, None)
        rc = run(a)
        _finish()
        return rc
    world = a.gpus or have
    if world < 2 or world > have:
        print(f"{PROG}: error: --gpus {world}: need 2..{have} GPUs (or --emulate on one GPU)",
              file=sys.stderr)
        return 2
    import socket

    import torch.multiprocessing as mp
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    try:
        mp.start_processes(_worker, args=(world, port, a), nprocs=world, start_method="spawn")
    except Exception as exc:  # a rank failed: its messages are above
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
