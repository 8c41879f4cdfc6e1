"""MoK forward megakernel in Triton: one persistent launch fuses dispatch, shared and routed expert
SwiGLU FFNs, and combine; a small epilogue sums the k slots per token in a fixed order.

Roles. Program ids < comm_sms are communication programs, the rest compute programs.
- Dispatch, pull: comm programs gather the rows of each minibatch from the (emulated) peers' send
  buffers into the macrobatch ring buffer, then raise the minibatch's ready counter (release).
  Dispatch, push: the senders write their own tokens' rows into the receiver's ring and raise a
  per-(minibatch, sender) signal, so compute waits on P signals per minibatch instead of one.
  With P virtual ranks in one launch the senders' comm programs do this (lane l serves receiver
  l % P, minibatch by minibatch); with one emulated rank, whose senders are absent, the rank's
  own comm programs act for them (lane l copies peer l % P's rows). A pair's lanes split its
  rows of a minibatch evenly (``push_loop`` 'shares', copy_share), and copy no other pair's.
  Before overwriting ring rows, the writer waits until the receiver's compute has finished the
  gate/up tiles that read them (back-pressure of the ring buffer).
- Compute takes items from one atomic work counter, in a fixed list order: gate/up tiles of the
  shared expert, gate/up of minibatch 0, down of the shared expert, gate/up of minibatch 1, down
  of minibatch 0, ... (``list_lag`` L: the down items of minibatch i come after the gate/up items
  of minibatch i + L). Gate/up items wait (acquire) for their minibatch's ready signal(s); down
  items wait for all gate/up tiles of their row tile. Every dependency points backwards in the
  list and every taken item belongs to a running program, so the walk cannot deadlock. A program
  claims its next item after the current item's K loop. With push combine the comm programs
  join this walk once their dispatch is done (``join``).
- Gate and up weights are packed interleaved per BN_GU-column block, so one (BK x 2*BN_GU) tile
  and one tensor-core instruction per k-step feed both (``fuse_gu``).
- A down item walks ``dn_blocks`` column blocks of its row tile in one flattened K loop, storing
  each block when its last K step is done, so a short K loop's next block is loading while this
  one stores (chosen from the shape: tiles.py forward_dn_blocks).
- Combine, push: down tiles store their rows straight into the home combine buffer slot
  (token, k). Combine, pull: down tiles store into a staging buffer and raise a per-minibatch
  counter; comm programs, after dispatch, copy staged rows into the combine slots (in group mode
  the home's comm programs read the owners' staged rows).
Every spin-wait is bounded: past ``max_spin`` polls it writes an error code and the minibatch,
tile or rank it waited on into an error word and later waits give up at once; the epilogue then
writes NaN and traps the launch (``on_error="trap"``) or the forward raises MegakernelStallError
naming the stalled wait (``on_error="raise"``).

Peers. Send rows and combine slots are addressed through per-rank offset tables (peers.py), so the
same kernel runs: ``group=G`` across real GPUs, one process each, and ``group=LocalGroup(P)`` as
P concurrent launches on one GPU: every buffer a peer touches lives in one arena per rank
(symmetric memory on real GPUs), a prologue exchanges routing and enters the pass on epoch flags,
and every cross-rank signal inside the megakernel is a system-scope release/acquire (``GROUP``);
``rank=r`` on one GPU as rank r of an EP-P group whose peers' send buffers (and home combine
buffers) live in local memory; ``rank=None`` as P virtual ranks in one launch, each with its own
programs (a 1/P slice of the grid), schedule, ring, activations, sync words and experts.
Triton is imported lazily so the package imports without it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import torch

from mok_model.errors import MokInputError, check_whole
from mok_model.scenario import KNOB_MAX, MAX_DN_BLOCKS, MAX_LIST_LAG, SOURCE_ORDERS, plain
from mok_model.workload import parse_routing

from .buffers import SPLIT_WS_MAX_BYTES, ring_rows, split_workspace_elements, stage_rows
from .peers import (ArenaLayout, LocalGroup, SymmetricArena, check_same_on_every_rank,
                    emulated_offsets)
from .reference import MoEWeights, check_weights, integer_ids
from .schedule import (CapacityOverflowError, Schedule, build_schedule, group_overflow,
                       stack_schedules)
from .trace import TRACE_COLUMNS
from .tiles import (forward_dn_blocks, forward_group_m, forward_split_dn, padded_width,
                    shape_refusal)

STALL_CODES = {
    1: "compute wait for the pull-dispatch ready counter of minibatch {info}",
    2: "compute wait for a push-dispatch per-peer signal of minibatch {info}",
    3: "down-projection wait for the SwiGLU tile counter of tile {info}",
    4: "comm ring-buffer back-pressure wait on minibatch {info}",
    5: "pull-combine wait for the down-projection counter of minibatch {info}",
    6: "wait for rank {info}'s schedule of this pass",
    7: "epilogue wait for rank {info}'s combine rows",
    8: "pass-entry wait for rank {info} to finish the previous pass",
    9: "routing-exchange wait for rank {info}'s tokens and ids",
}


FP8_KERNELS = ("v1", "v2", "v3", "v4", "v5", "gluon")   # KernelConfig.fp8_kernel
FP8_KERNEL_DEFAULT = "v2"                                # the only one a bf16 config holds
PUSH_LOOPS = ("tiles", "shares")                         # KernelConfig.push_loop


class MegakernelStallError(RuntimeError):
    """A bounded spin-wait inside the megakernel gave up."""


@dataclass
class KernelConfig:
    """The six MoK knobs plus tile shapes. A knob left None is chosen by MoKLayer from the model
    (or a knob table) before launch; validate() checks the knobs that are set."""

    # the six knobs: None = chosen by MoKLayer before launch (mok_kernels/knobs.py)
    dispatch: str | None = None     # pull | push
    combine: str | None = None      # push | pull
    minibatch: int | None = None    # routed rows per pipeline step
    comm_sms: int | None = None     # communication programs
    macrobatch: int | None = None   # ring-buffer rows (raised to minibatch + block_m if smaller)
    capacity: float | None = None   # schedule capacity multiplier
    block_m: int | None = None      # rows per GEMM tile; None: 128, or 64 for fp8 (measured
                                    # 1.4-1.5x faster than 128 for fp8: bench_variants_s12.log)
    bn_gu: int = 128
    bn_dn: int = 256
    block_k: int | None = None      # K step of both GEMMs; None: 64, or 128 for fp8
    num_warps: int = 8
    num_stages: int | None = None   # software-pipeline stages; None: 4, or 3 for fp8 at block_m
                                    # 128 (4 stages of fp8 128x128 / 128x256 tiles exceed the
                                    # H200's shared memory; at block_m 64 they fit)
    copy_rows: int = 16
    split_dn: int | None = None     # down items split along K into this many slices (1, 2, 4,
                                    # 8 or 16), partial tiles summed in slice order by the item
                                    # that completes a block: more items where row tiles are few
                                    # (decode sizes, few wide experts). BF16 only; an fp32
                                    # workspace of every tile's blocks x slices. None: chosen
                                    # from the shape (tiles.py forward_split_dn; 1 in group mode)
    list_lag: int | None = None     # the work list puts minibatch i's down items after the
                                    # gate/up items of minibatch i + list_lag (1: right after
                                    # i+1's); a larger lag lets a down item find its row tile's
                                    # gate/up items done instead of holding its SM waiting
                                    # (narrow experts under a large H: gemm_table.list_period).
                                    # None: the tuner's, with the knobs it chooses, BF16 on one
                                    # GPU (knobs.resolve_layer); 1 where every knob is given, in
                                    # group mode and in FP8 (measured there: lag 1 only)
    group_m: int | None = None      # gate/up tiles taken in groups of group_m row tiles, column
                                    # by column, so a weight column block is read once per group
                                    # from HBM (1: row tile by row tile); the same bits either way.
                                    # None: chosen from the shape (tiles.py forward_group_m)
    max_spin: int | None = None     # polls before a wait gives up; None: 2**22 on one GPU,
                                    # 2**27 across real GPUs (a peer may be compiling a kernel)
    grid: int | None = None         # programs in the persistent grid (default: SM count)
    skip_copy: bool = False         # diagnostic only: pull dispatch signals without copying rows
    skip_gemm: bool = False         # diagnostic only: GEMM items store zero tiles and signal
                                    # without their K loops (the copies alone; output is zeros
                                    # where experts would write)
    trace: bool = False             # diagnostic only: every program stamps its phases (the GPU's
                                    # ns timer) into MoKLayer.last_trace (mok_kernels/trace.py)
    join: bool = True               # comm programs join compute after dispatch (push combine)
    fuse_gu: bool = True            # one dot per step on gate|up interleaved weights
    tma: bool = True                # weight tiles through TMA descriptors (needs fuse_gu)
    tma_a: bool = False             # BF16 activation tiles through TMA too: h rows of the down
                                    # GEMM always, routed ring rows of gate/up when the ring
                                    # never wraps (ring rows >= capacity); one GPU only (needs tma)
    dn_blocks: int | None = None    # down column blocks a work item walks in one flattened K
                                    # loop, so the next block's first loads are in flight while
                                    # this one stores (the same bits as 1); BF16, tma, split_dn
                                    # 1, one GPU. None: chosen from the shape (tiles.py
                                    # forward_dn_blocks; 1 in group mode)
    knob_routing: str | None = None  # the routing the unset knobs are chosen for (uniform,
                                    # zipf:S, hot:X (one-hot: hot:1/top_k), a file, as `mok predict --routing`
                                    # reads them: a router known to be skewed gets knobs for its
                                    # busiest rank) or "robust": the least worst regret over
                                    # uniform / zipf:1.2 / hot:0.1. None: robust from the tuner,
                                    # a knob table's own routing from a table
    on_error: str = "trap"          # stalled wait / overflow: trap the launch, or raise in forward
    precision: str = "bf16"         # bf16 | fp8 (e4m3 with 1x128 activation and 128x128 weight
                                    # block scales; fp8.py)
    fp8_kernel: str = FP8_KERNEL_DEFAULT  # fp8 only (another with bf16 is refused).
                                    # v2 (default): 128-column dots (gate, up, and each
                                    # half of a down tile) so the fresh dot result and the fp32
                                    # accumulators fit in registers, scales applied as one FFMA
                                    # per element; needs bn_gu=128, bn_dn 128 or 256. v1: one
                                    # 128 x 2*bn_gu dot per K block, then scaled (spills; 0.6-0.7x
                                    # v2's speed). Opt-in, timed slower than v2 (1.07-1.11x its
                                    # time, H200 2026-12-01, fp8_variants.jsonl), the same bits
                                    # as v2 and v2's rules: v3, v2 with the scaling of K block k-1 done
                                    # while block k's dots run; v4, gate|up in one dot per K
                                    # block and the down tile in one; v5, v4 with v3's
                                    # deferral. NOTES.md "FP8 forward", "FP8 v3-v5".
                                    # gluon: the whole pass as one persistent Gluon kernel
                                    # (mok_kernels/gluon_fp8, sm_90 only; 1.27x / 1.30x the
                                    # BF16 megakernel at kimi-k2 / glm-5 EP 8, 4,096 tokens, H200
                                    # 2026-12-02, where v2 runs ~0.84x): one emulated rank
                                    # (rank=r), pull dispatch, push combine, capacity 1.0, lag 1,
                                    # H a multiple of 128 (I any: zero-padded to
                                    # whole 128-column blocks); comm_sms are its comm programs,
                                    # minibatch its minibatch, join=False keeps the comm programs
                                    # out of the item list; its tiles are fixed (128 x 128 x 128,
                                    # 4 stages; block_m 128) and macrobatch is not used (its ring
                                    # holds every routed row); forward only (gluon_refusal)
    push_loop: str = "shares"       # push dispatch's lanes (no effect with pull): shares (a
                                    # lane copies every nsub-th CR-row chunk of its sender's
                                    # runs over all the minibatch's tiles: even shares however
                                    # the runs fall; copy_share) or tiles (the loop before
                                    # session 63: a lane copies its sender's run of every
                                    # nsub-th row tile, uneven where a sender's runs sit at the
                                    # same place in every expert's tiles; NOTES.md, session 63)
    source_order: str = "rank"      # an expert's received rows by source rank (rank), or with
                                    # each receiving rank's sources starting after itself
                                    # (rotated: with few experts per rank every rank's minibatch
                                    # k then reads a different slice of sources; docs/sim-study.md
                                    # "N"). The same output bits either way; not with
                                    # fp8_kernel='gluon'
    save_for_backward: bool = False  # training: every forward also stores the gate and up
                                    # pre-activations (bf16, (NS + C, 2I) per rank, a fresh tensor
                                    # per call: MoKLayer.saved_gu) so the backward megakernel
                                    # skips their recompute (BackwardTiles(saved_gu=True));
                                    # MoKLayer.forward(save_gu=False) skips it for one call. The
                                    # autograd path's default (autograd.MegakernelForward) saves
                                    # when autograd will run a backward; this dataclass's default
                                    # stays off (inference, mok bench)

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):      # numpy scalars as the values they hold (as Config)
            setattr(self, f.name, plain(getattr(self, f.name)))
        if self.block_k is None:
            self.block_k = 128 if self.precision == "fp8" else 64
        triton_fp8 = self.precision == "fp8" and self.fp8_kernel != "gluon"
        if self.block_m is None:
            self.block_m = 64 if triton_fp8 else 128
        if self.num_stages is None:
            # (a block_m that is not an integer is refused by validate(), not compared here)
            big = isinstance(self.block_m, int) and self.block_m > 64
            self.num_stages = 3 if triton_fp8 and big else 4

    @property
    def rotated(self) -> bool:
        """Whether each rank's sources of an expert start after it (source_order 'rotated')."""
        return self.source_order == "rotated"

    def knobs(self) -> dict[str, Any]:
        return {"dispatch": self.dispatch, "combine": self.combine, "minibatch": self.minibatch,
                "comm_sms": self.comm_sms, "macrobatch": self.macrobatch, "capacity": self.capacity}

    def validate(self) -> None:
        """Refuse, in one line naming the field and its rule (MokInputError, a ValueError), a
        config the kernel cannot run."""
        for name in ("skip_copy", "skip_gemm", "join", "fuse_gu", "tma", "tma_a",
                     "save_for_backward", "trace"):
            v = getattr(self, name)
            if type(v) not in (bool, int) or v not in (0, 1):    # tile grids spell them 0 / 1
                raise MokInputError(f"{name}={v!r}: True or False (or 1 / 0) is required")
        for name, low in (("minibatch", 1), ("comm_sms", 1), ("macrobatch", 1), ("grid", 1),
                          ("max_spin", 0), ("num_warps", 1), ("num_stages", 1),
                          ("block_m", 16), ("bn_gu", 16), ("bn_dn", 16), ("block_k", 16),
                          ("copy_rows", 16)):
            v = getattr(self, name)
            if v is None and name in ("minibatch", "comm_sms", "macrobatch", "grid", "max_spin"):
                continue        # chosen (a knob), or the default (grid, max_spin)
            if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= KNOB_MAX:
                raise MokInputError(f"{name}={v!r}: an integer from {low} to {KNOB_MAX} is "
                                    f"required" + (" (None: chosen)" if name in self.knobs() else ""))
        if self.num_warps not in (1, 2, 4, 8, 16, 32):      # a power of two, at most 1024 threads
            raise MokInputError(f"num_warps={self.num_warps!r}: a power of two from 1 to 32 is "
                                f"required")
        cap = self.capacity
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, (int, float))
                                or not 0 < cap <= 1):
            raise MokInputError(f"capacity={cap!r}: a number in (0, 1] is required, as for --capacity "
                                f"(1 holds every row a rank can receive; None: chosen)")
        if self.dispatch not in ("pull", "push", None):
            raise MokInputError(f"dispatch {self.dispatch!r}: allowed pull, push (None: chosen)")
        if self.combine not in ("push", "pull", None):
            raise MokInputError(f"combine {self.combine!r}: allowed push, pull (None: chosen)")
        if self.tma and not self.fuse_gu:
            raise MokInputError("tma=True needs fuse_gu=True")
        if self.tma_a and not self.tma:
            raise MokInputError("tma_a=True needs tma=True")
        if self.tma_a and self.precision != "bf16":
            raise MokInputError(f"tma_a=True with precision {self.precision!r}: activation tiles "
                             f"through TMA are BF16 only")
        if self.on_error not in ("trap", "raise"):
            raise MokInputError(f"on_error {self.on_error!r}: allowed trap, raise")
        if self.knob_routing is not None and not isinstance(self.knob_routing, str):
            raise MokInputError(f"knob_routing {self.knob_routing!r}: 'robust' or a routing spec "
                             f"such as uniform, zipf:1.2, hot:0.1 or a routing file")
        try:                        # the top-k bound of hot:X is checked when knobs are chosen
            if self.knob_routing not in (None, "robust"):
                parse_routing(self.knob_routing, 1)
        except MokInputError as exc:
            raise MokInputError(f"knob_routing: {exc}") from None
        for name in ("block_m", "bn_gu", "bn_dn", "block_k", "copy_rows"):
            v = getattr(self, name)
            if v < 16 or v & (v - 1):
                raise MokInputError(f"{name}={v}: tile sizes must be powers of two >= 16")
        d = self.dn_blocks
        if d is not None and (isinstance(d, bool) or not isinstance(d, int)
                              or not 1 <= d <= MAX_DN_BLOCKS):
            raise MokInputError(f"dn_blocks={d!r}: an integer from 1 to {MAX_DN_BLOCKS} is required "
                                f"(None: chosen)")
        if (d or 1) > 1 and (self.precision != "bf16" or not self.tma or self.skip_gemm):
            raise MokInputError(f"dn_blocks={d} needs precision 'bf16', tma=True and skip_gemm=False "
                             f"(its flattened K loop is the BF16 TMA-weight one)")
        if (d or 1) > 1 and self.split_dn not in (None, 1):
            raise MokInputError(f"dn_blocks={d} with split_dn={self.split_dn}: a down item walks "
                             f"whole blocks (split_dn 1)")
        if not (self.split_dn is None or type(self.split_dn) is int and self.split_dn in (1, 2, 4, 8, 16)):
            raise MokInputError(f"split_dn={self.split_dn!r}: allowed 1, 2, 4, 8, 16 (K slices of "
                             f"each down block; None: chosen from the shape)")
        if (self.split_dn or 1) > 1 and self.precision != "bf16":
            raise MokInputError(f"split_dn={self.split_dn} with precision {self.precision!r}: the "
                             f"down GEMM is split along K in BF16 only")
        lag = self.list_lag
        if lag is not None and (isinstance(lag, bool) or not isinstance(lag, int)
                                or not 1 <= lag <= MAX_LIST_LAG):
            raise MokInputError(f"list_lag={lag!r}: an integer from 1 to {MAX_LIST_LAG} is required "
                             f"(None: chosen)")
        g = self.group_m
        if g is not None and (isinstance(g, bool) or not isinstance(g, int) or not 1 <= g <= 64):
            raise MokInputError(f"group_m={g!r}: an integer from 1 to 64 is required (None: chosen)")
        if self.precision not in ("bf16", "fp8"):
            raise MokInputError(f"precision {self.precision!r}: allowed bf16, fp8")
        if self.precision == "fp8" and (self.block_k != 128 or self.bn_gu % 128 or not self.fuse_gu):
            raise MokInputError(f"precision='fp8' needs block_k=128 (one scale per 128 along K), bn_gu a "
                             f"multiple of 128 (whole weight scale blocks) and fuse_gu=True; got "
                             f"block_k={self.block_k}, bn_gu={self.bn_gu}, fuse_gu={self.fuse_gu}")
        if self.save_for_backward and self.precision != "bf16":
            raise MokInputError(f"save_for_backward=True with precision {self.precision!r}: the "
                             f"backward megakernel is BF16 only")
        if self.fp8_kernel not in FP8_KERNELS:
            raise MokInputError(f"fp8_kernel {self.fp8_kernel!r}: allowed {', '.join(FP8_KERNELS)}")
        if self.fp8_kernel != FP8_KERNEL_DEFAULT and self.precision != "fp8":
            raise MokInputError(f"fp8_kernel={self.fp8_kernel!r} with precision "
                                f"{self.precision!r}: the FP8 kernel variant needs "
                                f"precision='fp8' (a {self.precision} layer would ignore it)")
        if self.trace and self.precision == "fp8" and self.fp8_kernel == "gluon":
            raise MokInputError("trace=True with fp8_kernel='gluon': the stamps are the Triton "
                                "megakernel's")
        if self.push_loop not in PUSH_LOOPS:
            raise MokInputError(f"push_loop {self.push_loop!r}: allowed {', '.join(PUSH_LOOPS)}")
        if self.source_order not in SOURCE_ORDERS:
            raise MokInputError(f"source_order {self.source_order!r}: allowed {', '.join(SOURCE_ORDERS)}")
        if self.precision == "fp8" and self.fp8_kernel == "gluon":
            why = self.gluon_refusal()
            if why:
                raise MokInputError(why)
        if self.precision == "fp8" and self.fp8_kernel != "v1" and (
                self.bn_gu != 128 or self.bn_dn not in (128, 256)):
            raise MokInputError(f"fp8_kernel={self.fp8_kernel!r} needs bn_gu=128 and bn_dn 128 or 256 "
                             f"(128-column dots, one weight scale block each; fp8_kernel='v1' takes "
                             f"others); got bn_gu={self.bn_gu}, bn_dn={self.bn_dn}")

    def gluon_refusal(self) -> str | None:
        """Why fp8_kernel='gluon' cannot run this config, or None: its pass has one protocol and
        fixed tiles (a knob left None takes the Gluon pass's value)."""
        from .gluon_fp8.core import GROUP_ROWS
        rules = [("dispatch", self.dispatch in (None, "pull"), "pull dispatch only"),
                 ("combine", self.combine in (None, "push"), "push combine only"),
                 ("capacity", self.capacity in (None, 1.0),
                  "capacity 1.0 only (its ring holds every routed row)"),
                 ("list_lag", self.list_lag in (None, 1), "lag 1 only"),
                 ("block_m", self.block_m == 128, "its row tiles are 128 rows"),
                 ("group_m", self.group_m in (None, GROUP_ROWS),
                  f"its item order takes {GROUP_ROWS} row tiles a group"),
                 ("grid", self.grid is None, "one program an SM (grid None)"),
                 ("skip_copy", not self.skip_copy, "the diagnostic is the Triton kernel's"),
                 ("skip_gemm", not self.skip_gemm, "the diagnostic is the Triton kernel's"),
                 ("tma", self.tma, "its weights always go through TMA"),
                 ("source_order", self.source_order == "rank", "its schedule is in rank order")]
        for name, ok, rule in rules:
            if not ok:
                return f"{name}={getattr(self, name)!r} with fp8_kernel='gluon': {rule}"
        return None


_KERNELS: dict[str, Any] = {}


def _kernels() -> dict[str, Any]:
    """Define the Triton kernels on first use (Triton is imported lazily)."""
    if _KERNELS:
        return _KERNELS
    import triton
    import triton.language as tl

    @triton.jit
    def wait_geq(ptr, target, err_ptr, code, info, max_spin, SCOPE: tl.constexpr):
        """Spin (acquire at SCOPE: "gpu", or "sys" for words other GPUs write) until
        *ptr >= target; on timeout record (code, info) in err_ptr."""
        v = tl.atomic_add(ptr, 0, sem="acquire", scope=SCOPE)
        spins = 0
        while (v < target) & (spins < max_spin):
            v = tl.atomic_add(ptr, 0, sem="acquire", scope=SCOPE)
            spins += 1
            if (spins % 256) == 0:
                if tl.load(err_ptr, volatile=True) != 0:
                    spins = max_spin
        if v < target:
            tl.atomic_or(err_ptr, 1 << code)          # bit per kind of wait
            tl.atomic_xchg(err_ptr + code, info)      # what it waited on
        tl.debug_barrier()

    @triton.jit
    def tile_of(tt, shared, t_base, tile_row0_ptr, tile_rows_ptr, tile_exp_ptr, NS, EL, E_BASE,
                BM: tl.constexpr):
        """Row tile tt of a section: (tile id, first row, rows, expert in the stacked weights,
        first SwiGLU-activation row). The shared expert's tiles cover the NS home tokens."""
        tile = tl.where(shared, tt, t_base + tt)
        if shared:
            row0 = tt * BM
            nrows = tl.minimum(NS - row0, BM)
            e = tt * 0 + EL + E_BASE
            hrow0 = row0
        else:
            row0 = tl.load(tile_row0_ptr + tile)
            nrows = tl.load(tile_rows_ptr + tile)
            e = tl.load(tile_exp_ptr + tile) + E_BASE
            hrow0 = NS + row0
        return tile, row0, nrows, e, hrow0

    @triton.jit
    def signal(ptr, SCOPE: tl.constexpr):
        """Make this program's prior stores visible at SCOPE, then add 1 (release)."""
        tl.debug_barrier()
        tl.atomic_add(ptr, 1, sem="release", scope=SCOPE)

    @triton.jit
    def stamp():
        """The SM's global nanosecond timer (KernelConfig.trace)."""
        return tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64,
                                         is_pure=False, pack=1)

    @triton.jit
    def fence_async_proxy():
        """Order this thread's earlier generic-proxy accesses (an acquire of rows other programs
        stored) before its later TMA (async-proxy) loads of those rows."""
        tl.inline_asm_elementwise("fence.proxy.async.global;", "=r", [], dtype=tl.int32,
                                  is_pure=False, pack=1)

    @triton.jit
    def publish(flag_ptr, p32_ptr, idx, value, P):
        """Write ``value`` into word ``idx`` of every rank's flags (release, system scope)."""
        tl.debug_barrier()
        for q in range(0, P):
            tl.atomic_xchg(flag_ptr + tl.load(p32_ptr + q) + idx, value, sem="release", scope="sys")

    @triton.jit
    def peer_off(tab_ptr, q, stride, GROUP: tl.constexpr):
        """Element offset of rank q's copy of a per-rank array: from the rank's offset table in
        group mode (its arena), q * stride for virtual ranks stacked in one launch."""
        if GROUP:
            return tl.load(tab_ptr + q)
        else:
            return q.to(tl.int64) * stride

    @triton.jit
    def peer_row(off_ptr, gid, per_peer, H: tl.constexpr):
        """Element offset of global row gid: row gid % per_peer of peer gid // per_peer's buffer,
        whose start is off_ptr[peer] elements from the kernel's base pointer."""
        base = tl.multiple_of(tl.load(off_ptr + gid // per_peer), 16)
        return base + (gid % per_peer).to(tl.int64) * H

    @triton.jit
    def copy_rows(src_ptr, src_off, dst_ptr, dst_off, mask, H: tl.constexpr, CC: tl.constexpr):
        """Copy rows at element offsets src_off -> dst_off (int64, (CR,)), 16-byte vectors, CC
        columns a step. The next step's loads are issued before this step's stores, so two
        steps' loads are in flight: a comm program's copy is bound by load latency, and this
        copies 1.2-1.4x faster than a step at a time (mok_kernels/NOTES.md "Session 40")."""
        cols = tl.arange(0, CC)
        if CC <= H:                                 # the rows' (CR, 1) mask where a step is whole,
            m2 = mask[:, None]                      # else the columns past H masked too
        else:
            m2 = mask[:, None] & (cols[None, :] < H)
        v = tl.load(src_ptr + src_off[:, None] + cols[None, :], mask=m2)
        for h0 in tl.static_range(CC, H, CC):
            if h0 + CC <= H:
                mn = mask[:, None]
            else:
                mn = mask[:, None] & (cols[None, :] < H - h0)
            vn = tl.load(src_ptr + src_off[:, None] + h0 + cols[None, :], mask=mn)
            tl.store(dst_ptr + dst_off[:, None] + h0 - CC + cols[None, :], v, mask=m2)
            v, m2 = vn, mn
        tl.store(dst_ptr + dst_off[:, None] + ((H - 1) // CC) * CC + cols[None, :], v, mask=m2)

    @triton.jit
    def quant_rows(v, ROWS: tl.constexpr, COLS: tl.constexpr):
        """e4m3 of v (ROWS, COLS) fp32, one scale per row per 128 columns (fp8.py's rule, the
        same bits): (q (ROWS, COLS) fp8, scale (ROWS, COLS // 128) fp32)."""
        v3 = tl.reshape(v, (ROWS, COLS // 128, 128))
        amax = tl.maximum(tl.max(tl.abs(v3), axis=2), 1e-12)
        fmax = tl.full((ROWS, COLS // 128), 448.0, tl.float32)
        inv = tl.math.div_rn(fmax, amax)
        q = tl.clamp(v3 * inv[:, :, None], -448.0, 448.0).to(tl.float8e4nv)
        return tl.reshape(q, (ROWS, COLS)), tl.math.div_rn(amax, fmax)

    @triton.jit
    def copy_rows_q(src_ptr, src_off, dst_ptr, dst_off, sc_ptr, sc_off, mask, H: tl.constexpr,
                    CC: tl.constexpr, CR: tl.constexpr):
        """copy_rows into an FP8 ring: BF16 rows at src_off -> e4m3 rows at dst_off (elements)
        and their scales, H // 128 fp32 per row, at sc_off: quantized while copying (the next
        step's loads issued first, as copy_rows)."""
        cols = tl.arange(0, CC)
        scol = tl.arange(0, CC // 128)
        v = tl.load(src_ptr + src_off[:, None] + cols[None, :],
                    mask=mask[:, None] & (cols[None, :] < H), other=0.0)
        for h0 in tl.static_range(0, H, CC):       # the last chunk may pass H (a multiple of 128)
            m2 = mask[:, None] & (cols[None, :] < H - h0)
            ms = mask[:, None] & (scol[None, :] < (H - h0) // 128)
            if h0 + CC < H:                         # the next step's loads before this step's stores
                vn = tl.load(src_ptr + src_off[:, None] + h0 + CC + cols[None, :],
                             mask=mask[:, None] & (cols[None, :] < H - h0 - CC), other=0.0)
            q, sc = quant_rows(v.to(tl.float32), CR, CC)
            tl.store(dst_ptr + dst_off[:, None] + h0 + cols[None, :], q, mask=m2)
            tl.store(sc_ptr + sc_off[:, None] + h0 // 128 + scol[None, :], sc, mask=ms)
            if h0 + CC < H:
                v = vn

    @triton.jit
    def sender_run(tpeer, tm, tr0, sender, receiver, P, ROT: tl.constexpr, AXIS: tl.constexpr):
        """[lo, hi): the rows of `sender` in a row tile from row tr0 whose rows (mask tm) came
        from the sources tpeer, sorted in the receiver's source order: rank order, or (ROT)
        starting after the receiver (KernelConfig.source_order). AXIS 1: tiles by rows, (TT,
        BM), tr0 (TT,): one run per tile."""
        if ROT:
            tpeer = (tpeer + P - 1 - receiver) % P
            sender = (sender + P - 1 - receiver) % P
        lo = tr0 + tl.sum((tm & (tpeer < sender)).to(tl.int32), axis=AXIS)
        hi = tr0 + tl.sum((tm & (tpeer <= sender)).to(tl.int32), axis=AXIS)
        return lo, hi

    @triton.jit
    def copy_run(lo, hi, step, src_ptr, N_RANK, x_src_ptr, x_off_ptr, ring_ptr, ring_s_ptr,
                 ring_s_off, R, crow, FP8: tl.constexpr, H: tl.constexpr, HB: tl.constexpr,
                 CC: tl.constexpr, CR: tl.constexpr):
        """Copy the CR-row chunks from rows lo, lo + step, ... < hi of the ring (their sources
        at src_ptr) from the senders' buffers into the ring (step CR: rows [lo, hi)); FP8:
        quantized, the scales at ring_s_ptr + ring_s_off (unused in BF16, where ring_s_ptr is
        None)."""
        for c0 in range(lo, hi, step):
            rows = c0 + crow
            m = rows < hi
            src = tl.load(src_ptr + rows, mask=m, other=0)
            if FP8:
                copy_rows_q(x_src_ptr, peer_row(x_off_ptr, src, N_RANK, H),
                            ring_ptr, (rows % R).to(tl.int64) * H,
                            ring_s_ptr + ring_s_off, (rows % R).to(tl.int64) * HB, m, H, CC, CR)
            else:
                copy_rows(x_src_ptr, peer_row(x_off_ptr, src, N_RANK, H),
                          ring_ptr, (rows % R).to(tl.int64) * H, m, H, CC)

    @triton.jit
    def copy_share(t0, t1, sub, nsub, sender, receiver, P, tr0_ptr, trn_ptr, src_ptr, N_RANK,
                   x_src_ptr, x_off_ptr, ring_ptr, ring_s_ptr, ring_s_off, R, crow, ROT: tl.constexpr,
                   FP8: tl.constexpr, H: tl.constexpr, HB: tl.constexpr, CC: tl.constexpr,
                   CR: tl.constexpr, BM: tl.constexpr, TT: tl.constexpr):
        """Lane `sub` of `nsub` copies its share of `sender`'s rows in the receiver's row tiles
        [t0, t1) (KernelConfig.push_loop 'shares'): the sender's runs (sender_run) taken in tile
        order are cut into CR-row chunks numbered across the minibatch, and the lane copies the
        chunks k with k % nsub == sub, so the sender's lanes split its rows evenly whatever
        tiles they fall in. Each lane reads every tile's sources, TT tiles a load."""
        tt = tl.arange(0, TT)
        trow = tl.arange(0, BM)
        done = t0 * 0                                   # the sender's chunks in earlier tiles
        for b0 in range(t0, t1, TT):
            tm1 = b0 + tt < t1
            tr0v = tl.load(tr0_ptr + b0 + tt, mask=tm1, other=0)
            m2 = trow[None, :] < tl.load(trn_ptr + b0 + tt, mask=tm1, other=0)[:, None]
            peer = tl.load(src_ptr + tr0v[:, None] + trow[None, :], mask=m2, other=0) // N_RANK
            lov, hiv = sender_run(peer, m2, tr0v, sender, receiver, P, ROT, 1)
            nch = (hiv - lov + CR - 1) // CR
            first = done + tl.cumsum(nch, 0) - nch      # each run's first chunk number
            done += tl.sum(nch)
            skip = (sub - first % nsub + nsub) % nsub   # its chunks before this lane's first
            for i in range(0, tl.minimum(TT, t1 - b0)):
                sel = tt == i
                lo = tl.sum(tl.where(sel, lov + skip * CR, 0))
                hi = tl.sum(tl.where(sel, hiv, 0))
                copy_run(lo, hi, nsub * CR, src_ptr, N_RANK, x_src_ptr, x_off_ptr, ring_ptr,
                         ring_s_ptr, ring_s_off, R, crow, FP8, H, HB, CC, CR)

    @triton.jit
    def copy_sender(t0, t1, sub, nsub, sender, receiver, P, tr0_ptr, trn_ptr, src_ptr, N_RANK,
                    x_src_ptr, x_off_ptr, ring_ptr, ring_s_ptr, ring_s_off, R, crow, trow,
                    ROT: tl.constexpr, SHARES: tl.constexpr, FP8: tl.constexpr, H: tl.constexpr,
                    HB: tl.constexpr, CC: tl.constexpr, CR: tl.constexpr, BM: tl.constexpr,
                    TT: tl.constexpr):
        """Push lane `sub` of `nsub` copies `sender`'s rows of the receiver's row tiles [t0, t1)
        into its ring (a tile's rows are one expert's, in source order: schedule.py).
        SHARES (KernelConfig.push_loop 'shares'): copy_share's even share of the rows; else
        ('tiles') the sender's run of every nsub-th tile from t0 + sub."""
        if SHARES:
            copy_share(t0, t1, sub, nsub, sender, receiver, P, tr0_ptr, trn_ptr, src_ptr, N_RANK,
                       x_src_ptr, x_off_ptr, ring_ptr, ring_s_ptr, ring_s_off, R, crow, ROT, FP8,
                       H, HB, CC, CR, BM, TT)
        else:
            for t in range(t0 + sub, t1, nsub):
                tr0 = tl.load(tr0_ptr + t)
                tm = trow < tl.load(trn_ptr + t)
                tpeer = tl.load(src_ptr + tr0 + trow, mask=tm, other=0) // N_RANK
                lo, hi = sender_run(tpeer, tm, tr0, sender, receiver, P, ROT, 0)
                copy_run(lo, hi, CR, src_ptr, N_RANK, x_src_ptr, x_off_ptr, ring_ptr, ring_s_ptr,
                         ring_s_off, R, crow, FP8, H, HB, CC, CR)

    @triton.jit
    def gather_chunks(idx_ptr, r0, r1, c0, cstep, nchunk, per, keep, tab_ptr, src_ptr, dst_ptr,
                     sc_ptr, R, GATHER: tl.constexpr, FILTER: tl.constexpr, FP8: tl.constexpr,
                     H: tl.constexpr, CC: tl.constexpr, CR: tl.constexpr):
        """Copy the row chunks c0, c0 + cstep, ... < nchunk of rows [r0, r1), CR rows a chunk.
        GATHER: row r comes from row idx[r] of the buffers at src_ptr + tab[idx // per]
        (peer_row) into ring row r % R of dst_ptr (FP8: quantized, scales at sc_ptr); otherwise
        row r of src_ptr goes to slot idx[r] of the buffers at dst_ptr + tab[idx // per].
        FILTER: only rows whose idx // per is `keep`. A chunk's ids are loaded two chunks ahead
        and their offsets one ahead, so its row loads wait on neither dependent load."""
        crow = tl.arange(0, CR)
        rows = r0 + c0 * CR + crow
        m = rows < r1
        i0 = tl.load(idx_ptr + rows, mask=m, other=0)
        if FILTER:
            m = m & ((i0 // per) == keep)
        off = peer_row(tab_ptr, i0, per, H)
        rows1 = rows + cstep * CR
        m1 = rows1 < r1
        i1 = tl.load(idx_ptr + rows1, mask=m1, other=0)
        for _c in range(c0, nchunk, cstep):
            rows2 = rows1 + cstep * CR
            m2 = rows2 < r1
            i2 = tl.load(idx_ptr + rows2, mask=m2, other=0)
            if FILTER:
                m1 = m1 & ((i1 // per) == keep)
            off1 = peer_row(tab_ptr, i1, per, H)
            if GATHER:
                ring_row = (rows % R).to(tl.int64)
                if FP8:
                    copy_rows_q(src_ptr, off, dst_ptr, ring_row * H, sc_ptr, ring_row * (H // 128),
                                m, H, CC, CR)
                else:
                    copy_rows(src_ptr, off, dst_ptr, ring_row * H, m, H, CC)
            else:
                copy_rows(src_ptr, rows.to(tl.int64) * H, dst_ptr, off, m, H, CC)
            rows, m, off = rows1, m1, off1
            rows1, m1, i1 = rows2, m2, i2

    @triton.jit
    def gu_bf16(a_ptrs, rmask, w_ptrs, wgu_desc, e, nb, H: tl.constexpr, I: tl.constexpr,
                BM: tl.constexpr, BN_GU: tl.constexpr, BK: tl.constexpr):
        """Gate|up accumulator (BM, 2*BN_GU) fp32 of one BF16 tile, activations through pointers
        (a_ptrs + k, rows masked by rmask), weights through wgu_desc or pointers w_ptrs."""
        acc2 = tl.zeros((BM, 2 * BN_GU), dtype=tl.float32)
        for k0 in range(0, H, BK):
            a = tl.load(a_ptrs + k0, mask=rmask[:, None], other=0.0)
            if wgu_desc is None:
                bgu = tl.load(w_ptrs + k0 * (2 * I))
            else:
                bgu = wgu_desc.load([e * H + k0, nb * 2 * BN_GU])
            acc2 = tl.dot(a, bgu, acc2)
        return acc2

    @triton.jit
    def gu_fp8(a_ptrs, as_ptrs, rmask, wg_ptr, wgu_desc, wgu_s_ptr, e, nb, H: tl.constexpr,
               I: tl.constexpr, BM: tl.constexpr, BN_GU: tl.constexpr, BK: tl.constexpr,
               QA: tl.constexpr):
        """Gate|up accumulator (BM, 2*BN_GU) fp32 of one FP8 tile: per K block of 128,
        acc += dot(a, b) * a_scale[:, None] * b_scale[None, :]. a_ptrs: e4m3 ring rows whose
        scales are at as_ptrs (+ k block), or with QA BF16 rows quantized here (shared expert).
        Weights: (EL+1, 2I, H) e4m3, K contiguous; scales (EL+1, H/128, 2I/128) fp32."""
        rk = tl.arange(0, BK)
        rn2 = nb * 2 * BN_GU + tl.arange(0, 2 * BN_GU)
        NC: tl.constexpr = 2 * I // 128
        w_ptrs = wg_ptr + e.to(tl.int64) * (2 * I) * H + rn2[None, :].to(tl.int64) * H + rk[:, None]
        s_ptrs = wgu_s_ptr + e.to(tl.int64) * (H // 128) * NC + rn2 // 128
        acc = tl.zeros((BM, 2 * BN_GU), dtype=tl.float32)
        for k0 in range(0, H, BK):
            if QA:
                a, a_s = quant_rows(tl.load(a_ptrs + k0, mask=rmask[:, None], other=0.0).to(tl.float32),
                                    BM, BK)
                a_s = tl.reshape(a_s, (BM,))
            else:
                a = tl.load(a_ptrs + k0, mask=rmask[:, None], other=0.0)
                a_s = tl.load(as_ptrs + k0 // BK, mask=rmask, other=0.0)
            if wgu_desc is None:
                b = tl.load(w_ptrs + k0)
            else:
                b = tl.trans(wgu_desc.load([e * 2 * I + nb * 2 * BN_GU, k0]))
            b_s = tl.load(s_ptrs + (k0 // BK) * NC)
            acc += tl.dot(a, b) * a_s[:, None] * b_s[None, :]
        return acc

    @triton.jit
    def load_a_fp8(a_ptrs, as_ptrs, rmask, k0, BM: tl.constexpr, BK: tl.constexpr, QA: tl.constexpr):
        """One K block of FP8 A rows and their scales: e4m3 ring/h rows with scales at as_ptrs
        (+ k block), or (QA) BF16 rows quantized here."""
        if QA:
            a, a_s = quant_rows(tl.load(a_ptrs + k0, mask=rmask[:, None], other=0.0).to(tl.float32),
                                BM, BK)
            a_s = tl.reshape(a_s, (BM,))
        else:
            a = tl.load(a_ptrs + k0, mask=rmask[:, None], other=0.0)
            a_s = tl.load(as_ptrs + k0 // BK, mask=rmask, other=0.0)
        return a, a_s

    @triton.jit
    def gu_fp8_v2(a_ptrs, as_ptrs, rmask, wg_ptr, wgu_desc, wgu_s_ptr, e, nb, H: tl.constexpr,
                  I: tl.constexpr, BM: tl.constexpr, BN_GU: tl.constexpr, BK: tl.constexpr,
                  QA: tl.constexpr):
        """fp8_kernel="v2" gate/up (BN_GU = 128): (acc_g, acc_u) (BM, 128) fp32. Two 128-column
        dots per K block, gate then up, each scaled into its accumulator at once
        (acc += dot * (a_scale * b_scale)[:, None], b_scale one scalar: the 128 columns are one
        weight scale block), so at most one (BM, 128) dot result is live beside the two
        accumulators. Weights as in gu_fp8 (the [gate | up] 256-row block nb of (2I, H)); the TMA
        descriptor's tile is (128, BK)."""
        NC: tl.constexpr = 2 * I // 128
        rk = tl.arange(0, BK)
        rg = nb * 2 * BN_GU + tl.arange(0, BN_GU)          # gate rows of (2I, H); up: + BN_GU
        wg_ptrs = wg_ptr + e.to(tl.int64) * (2 * I) * H + rg[None, :].to(tl.int64) * H + rk[:, None]
        s_ptr = wgu_s_ptr + e.to(tl.int64) * (H // 128) * NC + nb * 2   # gate block; up: + 1
        row = e * 2 * I + nb * 2 * BN_GU
        acc_g = tl.zeros((BM, BN_GU), dtype=tl.float32)
        acc_u = tl.zeros((BM, BN_GU), dtype=tl.float32)
        for k0 in range(0, H, BK):
            a, a_s = load_a_fp8(a_ptrs, as_ptrs, rmask, k0, BM, BK, QA)
            sg = tl.load(s_ptr + (k0 // BK) * NC)
            su = tl.load(s_ptr + (k0 // BK) * NC + 1)
            if wgu_desc is None:
                bg = tl.load(wg_ptrs + k0)
                bu = tl.load(wg_ptrs + BN_GU * H + k0)
            else:
                bg = tl.trans(wgu_desc.load([row, k0]))
                bu = tl.trans(wgu_desc.load([row + BN_GU, k0]))
            acc_g += tl.dot(a, bg) * (a_s * sg)[:, None]
            acc_u += tl.dot(a, bu) * (a_s * su)[:, None]
        return acc_g, acc_u

    @triton.jit
    def dn_fp8_v2(a_ptrs_d, as_ptrs_d, rmask_d, wd_ptr, wd_desc, wd_s_ptr, e_d, nb_d,
                  H: tl.constexpr, I: tl.constexpr, BM: tl.constexpr, BN_DN: tl.constexpr,
                  BK: tl.constexpr):
        """fp8_kernel="v2" down tile (BM, BN_DN), BN_DN 128 or 256: one 128-column dot per half
        per K block, each scaled into its own accumulator at once (as gu_fp8_v2). Columns past H
        read zeros (pointers) or the next expert's rows (TMA): masked at the store."""
        IB: tl.constexpr = I // 128
        HB: tl.constexpr = H // 128
        rk = tl.arange(0, BK)
        c0 = nb_d * BN_DN
        rc = c0 + tl.arange(0, 128)
        w_ptrs = wd_ptr + e_d.to(tl.int64) * H * I + rc[None, :].to(tl.int64) * I + rk[:, None]
        ws_ptr = wd_s_ptr + e_d.to(tl.int64) * IB * HB + c0 // 128
        row = e_d * H + c0
        acc0 = tl.zeros((BM, 128), dtype=tl.float32)
        acc1 = tl.zeros((BM, 128), dtype=tl.float32)
        for k0 in range(0, I, BK):
            a, a_s = load_a_fp8(a_ptrs_d, as_ptrs_d, rmask_d, k0, BM, BK, False)
            s0 = tl.load(ws_ptr + (k0 // BK) * HB)
            if wd_desc is None:
                b0 = tl.load(w_ptrs + k0, mask=(rc < H)[None, :], other=0.0)
            else:
                b0 = tl.trans(wd_desc.load([row, k0]))
            acc0 += tl.dot(a, b0) * (a_s * s0)[:, None]
            if BN_DN == 256:
                s1 = tl.load(ws_ptr + (k0 // BK) * HB + 1, mask=c0 + 128 < H, other=0.0)
                if wd_desc is None:
                    b1 = tl.load(w_ptrs + 128 * I + k0, mask=(rc + 128 < H)[None, :], other=0.0)
                else:
                    b1 = tl.trans(wd_desc.load([row + 128, k0]))
                acc1 += tl.dot(a, b1) * (a_s * s1)[:, None]
        if BN_DN == 256:
            return tl.reshape(tl.permute(tl.join(acc0, acc1), (0, 2, 1)), (BM, BN_DN))
        else:
            return acc0

    @triton.jit
    def gu_fp8_v3(a_ptrs, as_ptrs, rmask, wg_ptr, wgu_desc, wgu_s_ptr, e, nb, H: tl.constexpr,
                  I: tl.constexpr, BM: tl.constexpr, BN_GU: tl.constexpr, BK: tl.constexpr,
                  QA: tl.constexpr):
        """fp8_kernel="v3" gate/up (BN_GU = 128): v2's dots and numerics with the promotion
        deferred by one K block. Step k issues the raw gate and up dots of block k, then adds
        block k-1's raw results times their combined scales (a_scale * b_scale, one FFMA per
        element) into the fp32 accumulators, so the tensor cores run block k while the FFMAs of
        block k-1 execute, and block k's scales are loaded a step before they are used. Same
        additions in the same order as v2 (acc = 0 + d_0 c_0, + d_1 c_1, ...): the same bits."""
        NC: tl.constexpr = 2 * I // 128
        rk = tl.arange(0, BK)
        rg = nb * 2 * BN_GU + tl.arange(0, BN_GU)
        wg_ptrs = wg_ptr + e.to(tl.int64) * (2 * I) * H + rg[None, :].to(tl.int64) * H + rk[:, None]
        s_ptr = wgu_s_ptr + e.to(tl.int64) * (H // 128) * NC + nb * 2
        row = e * 2 * I + nb * 2 * BN_GU
        acc_g = tl.zeros((BM, BN_GU), dtype=tl.float32)
        acc_u = tl.zeros((BM, BN_GU), dtype=tl.float32)
        dg = tl.zeros((BM, BN_GU), dtype=tl.float32)      # raw dots of the previous block
        du = tl.zeros((BM, BN_GU), dtype=tl.float32)
        cg = tl.zeros((BM,), dtype=tl.float32)            # and their combined scales
        cu = tl.zeros((BM,), dtype=tl.float32)
        for k0 in range(0, H, BK):
            a, a_s = load_a_fp8(a_ptrs, as_ptrs, rmask, k0, BM, BK, QA)
            sg = tl.load(s_ptr + (k0 // BK) * NC)
            su = tl.load(s_ptr + (k0 // BK) * NC + 1)
            if wgu_desc is None:
                bg = tl.load(wg_ptrs + k0)
                bu = tl.load(wg_ptrs + BN_GU * H + k0)
            else:
                bg = tl.trans(wgu_desc.load([row, k0]))
                bu = tl.trans(wgu_desc.load([row + BN_GU, k0]))
            ng = tl.dot(a, bg)
            nu = tl.dot(a, bu)
            acc_g += dg * cg[:, None]                     # block k-1 (zeros at k = 0)
            acc_u += du * cu[:, None]
            # + 0.0 (exact but for the sign of a zero, which the sums above never keep) makes
            # the up dot complete inside the step: a wgmma still in flight across the loop's
            # back edge makes ptxas serialize every wgmma of the kernel (its warning C7514)
            dg, du, cg, cu = ng, nu + 0.0, a_s * sg, a_s * su
        acc_g += dg * cg[:, None]
        acc_u += du * cu[:, None]
        return acc_g, acc_u

    @triton.jit
    def gu_fp8_v4(a_ptrs, as_ptrs, rmask, wg_ptr, wgu_desc, wgu_s_ptr, e, nb, H: tl.constexpr,
                  I: tl.constexpr, BM: tl.constexpr, BN_GU: tl.constexpr, BK: tl.constexpr,
                  QA: tl.constexpr, DEFER: tl.constexpr):
        """fp8_kernel "v4" and "v5" gate|up (BN_GU = 128): (BM, 2*BN_GU) fp32, one dot per K block
        on v1's interleaved [gate | up] weight tile (at block_m 64 each warpgroup's wgmma is
        64 x 128 where v2's are 64 x 64: one wgmma chain and one wait per step instead of two),
        scaled by v2's combined scale, a_scale * (gate or up weight scale) by column: one FFMA
        per element, the same bits as v2. DEFER (v5): v3's deferred promotion, block k-1's raw
        result is scaled and added while block k's dot runs."""
        NC: tl.constexpr = 2 * I // 128
        rk = tl.arange(0, BK)
        rn2 = nb * 2 * BN_GU + tl.arange(0, 2 * BN_GU)
        is_up = (tl.arange(0, 2 * BN_GU) >= BN_GU)[None, :]
        w_ptrs = wg_ptr + e.to(tl.int64) * (2 * I) * H + rn2[None, :].to(tl.int64) * H + rk[:, None]
        s_ptr = wgu_s_ptr + e.to(tl.int64) * (H // 128) * NC + nb * 2
        acc = tl.zeros((BM, 2 * BN_GU), dtype=tl.float32)
        d = tl.zeros((BM, 2 * BN_GU), dtype=tl.float32)   # DEFER: raw dot of the previous block
        cg = tl.zeros((BM,), dtype=tl.float32)            # and its combined scales by row
        cu = tl.zeros((BM,), dtype=tl.float32)
        for k0 in range(0, H, BK):
            a, a_s = load_a_fp8(a_ptrs, as_ptrs, rmask, k0, BM, BK, QA)
            sg = tl.load(s_ptr + (k0 // BK) * NC)
            su = tl.load(s_ptr + (k0 // BK) * NC + 1)
            if wgu_desc is None:
                b = tl.load(w_ptrs + k0)
            else:
                b = tl.trans(wgu_desc.load([e * 2 * I + nb * 2 * BN_GU, k0]))
            if DEFER:
                n = tl.dot(a, b)
                acc += d * tl.where(is_up, cu[:, None], cg[:, None])    # block k-1
                # + 0.0: the dot completes inside the step (see gu_fp8_v3)
                d, cg, cu = n + 0.0, a_s * sg, a_s * su
            else:
                acc += tl.dot(a, b) * tl.where(is_up, (a_s * su)[:, None], (a_s * sg)[:, None])
        if DEFER:
            acc += d * tl.where(is_up, cu[:, None], cg[:, None])
        return acc

    @triton.jit
    def dn_fp8_v3(a_ptrs_d, as_ptrs_d, rmask_d, wd_ptr, wd_desc, wd_s_ptr, e_d, nb_d,
                  H: tl.constexpr, I: tl.constexpr, BM: tl.constexpr, BN_DN: tl.constexpr,
                  BK: tl.constexpr):
        """fp8_kernel "v3" down tile: dn_fp8_v2 with the promotion deferred by one K block (as
        gu_fp8_v3; the same bits as v2)."""
        IB: tl.constexpr = I // 128
        HB: tl.constexpr = H // 128
        rk = tl.arange(0, BK)
        c0 = nb_d * BN_DN
        rc = c0 + tl.arange(0, 128)
        w_ptrs = wd_ptr + e_d.to(tl.int64) * H * I + rc[None, :].to(tl.int64) * I + rk[:, None]
        ws_ptr = wd_s_ptr + e_d.to(tl.int64) * IB * HB + c0 // 128
        row = e_d * H + c0
        acc0 = tl.zeros((BM, 128), dtype=tl.float32)
        acc1 = tl.zeros((BM, 128), dtype=tl.float32)
        d0 = tl.zeros((BM, 128), dtype=tl.float32)
        d1 = tl.zeros((BM, 128), dtype=tl.float32)
        c0s = tl.zeros((BM,), dtype=tl.float32)
        c1s = tl.zeros((BM,), dtype=tl.float32)
        for k0 in range(0, I, BK):
            a, a_s = load_a_fp8(a_ptrs_d, as_ptrs_d, rmask_d, k0, BM, BK, False)
            s0 = tl.load(ws_ptr + (k0 // BK) * HB)
            if wd_desc is None:
                b0 = tl.load(w_ptrs + k0, mask=(rc < H)[None, :], other=0.0)
            else:
                b0 = tl.trans(wd_desc.load([row, k0]))
            n0 = tl.dot(a, b0)
            if BN_DN == 256:
                s1 = tl.load(ws_ptr + (k0 // BK) * HB + 1, mask=c0 + 128 < H, other=0.0)
                if wd_desc is None:
                    b1 = tl.load(w_ptrs + 128 * I + k0, mask=(rc + 128 < H)[None, :], other=0.0)
                else:
                    b1 = tl.trans(wd_desc.load([row + 128, k0]))
                n1 = tl.dot(a, b1)
                acc1 += d1 * c1s[:, None]
                d1, c1s = n1 + 0.0, a_s * s1               # complete in the step (gu_fp8_v3)
            acc0 += d0 * c0s[:, None]
            d0, c0s = n0 + 0.0, a_s * s0
        acc0 += d0 * c0s[:, None]
        if BN_DN == 256:
            acc1 += d1 * c1s[:, None]
            return tl.reshape(tl.permute(tl.join(acc0, acc1), (0, 2, 1)), (BM, BN_DN))
        else:
            return acc0

    @triton.jit
    def dn_fp8_v4(a_ptrs_d, as_ptrs_d, rmask_d, wd_ptr, wd_desc, wd_s_ptr, e_d, nb_d,
                  H: tl.constexpr, I: tl.constexpr, BM: tl.constexpr, BN_DN: tl.constexpr,
                  BK: tl.constexpr, DEFER: tl.constexpr):
        """fp8_kernel "v4" and "v5" down tile (BM, BN_DN), BN_DN 128 or 256: one dot per K block
        over the whole tile (one wgmma chain and one wait per step; the TMA tile is (BN_DN, BK)),
        each column scaled by v2's combined scale a_scale * (weight scale of its 128-column
        block): the same bits as v2. DEFER (v5): v3's deferred promotion. Columns past H read
        zeros (pointers) or the next expert's rows (TMA): masked at the store."""
        IB: tl.constexpr = I // 128
        HB: tl.constexpr = H // 128
        rk = tl.arange(0, BK)
        c0 = nb_d * BN_DN
        rc = c0 + tl.arange(0, BN_DN)
        hi = (tl.arange(0, BN_DN) >= 128)[None, :]        # second 128-column block (BN_DN 256)
        w_ptrs = wd_ptr + e_d.to(tl.int64) * H * I + rc[None, :].to(tl.int64) * I + rk[:, None]
        ws_ptr = wd_s_ptr + e_d.to(tl.int64) * IB * HB + c0 // 128
        acc = tl.zeros((BM, BN_DN), dtype=tl.float32)
        d = tl.zeros((BM, BN_DN), dtype=tl.float32)       # DEFER: raw dot of the previous block
        c0s = tl.zeros((BM,), dtype=tl.float32)           # and its combined scales by row
        c1s = tl.zeros((BM,), dtype=tl.float32)
        for k0 in range(0, I, BK):
            a, a_s = load_a_fp8(a_ptrs_d, as_ptrs_d, rmask_d, k0, BM, BK, False)
            s0 = tl.load(ws_ptr + (k0 // BK) * HB)
            if BN_DN == 256:
                s1 = tl.load(ws_ptr + (k0 // BK) * HB + 1, mask=c0 + 128 < H, other=0.0)
            else:
                s1 = s0                                   # no second block: hi is all False
            if wd_desc is None:
                b = tl.load(w_ptrs + k0, mask=(rc < H)[None, :], other=0.0)
            else:
                b = tl.trans(wd_desc.load([e_d * H + c0, k0]))
            if DEFER:
                n = tl.dot(a, b)
                acc += d * tl.where(hi, c1s[:, None], c0s[:, None])     # block k-1
                d, c0s, c1s = n + 0.0, a_s * s0, a_s * s1              # (see gu_fp8_v3)
            else:
                acc += tl.dot(a, b) * tl.where(hi, (a_s * s1)[:, None], (a_s * s0)[:, None])
        if DEFER:
            acc += d * tl.where(hi, c1s[:, None], c0s[:, None])
        return acc

    @triton.jit
    def mok_kernel(
        x_src_ptr,        # bf16 base of the send buffers; peer s's (N, H) rows at + x_off[s]
        x_off_ptr,        # (P,) int64 element offsets (peer pointers, relative to x_src_ptr)
        x_loc_ptr,        # (NS, H) bf16: tokens the shared expert runs on
        ring_ptr,         # (R, H) bf16: macrobatch ring buffer
        h_ptr,            # (NS + C, I) bf16: SwiGLU activations, shared rows first
        gu_ptr,           # SAVE_GU: (NS + C, 2I) bf16 gate and up pre-activations, shared rows
                          # first, gate|up interleaved per BN_GU block (the backward's [dg|du]
                          # layout); unused (any tensor) otherwise
        y_ptr,            # (C, H) bf16: staging rows for pull combine
        comb_ptr,         # bf16 base of the home combine buffers; rank r's (N*k, H) slots
        comb_off_ptr,     # (P,) int64 at + comb_off[r]; slot (token, j) = token*k + j
        sh_out_ptr,       # (NS, H) bf16: shared-expert output
        wg_ptr, wu_ptr,   # (EL+1, H, I) bf16 gate / up; FUSE_GU: wg_ptr is (EL+1, H, 2I) gate|up
                          # interleaved in BN_GU-column blocks and wu_ptr is unused
        wd_ptr,           # (EL+1, I, H) bf16: down
        wgu_desc, wd_desc,  # TMA descriptors of the gate|up and down weights as 2-D, or None
        ring_desc, h_desc,  # TMA_A: descriptors of the ring (V*R, H) and h (V*H_ROWS, I) with
                            # (BM, BK) tiles; None otherwise
        ring_s_ptr, h_s_ptr, wgu_s_ptr, wd_s_ptr,  # FP8: scales (fp32) of the ring rows (R, H/128),
                          # of h (NS + C, I/128), of gate|up (EL+1, H/128, 2I/128) and of down
                          # (EL+1, I/128, H/128); None for BF16. FP8 ring, h and weights are e4m3,
                          # weights K-contiguous: gate|up (EL+1, 2I, H), down (EL+1, H, I)
        recv_src_ptr, recv_slot_ptr,                  # (C,) int32
        tile_exp_ptr, tile_row0_ptr, tile_rows_ptr,   # (T_max,) int32
        mb_tile_ptr, mb_row_ptr, nmb_ptr,             # (MB_max+1,), (MB_max+1,), (1,) int32
        sync_ptr, err_ptr,                            # int32 workspace (zeroed), (16,) int32
        split_ptr,        # SPLIT > 1: fp32 partial down tiles, (V, WS_T, NB_DN, SPLIT, BM, BN_DN)
        flag_ptr, p32_ptr,   # group: int32 epoch flags (never zeroed); (P,) int64 int32-element
                             # offsets of every rank's arena (x_off/comb_off: the bf16 ones)
        ME, SCHED_RDY, CDONE, EPOCH_W, DNALL_OFF,
        NS, R, N_RANK, SLOTS, P, EL, COMM, HAS_SHARED,
        READY_OFF, GU_OFF, DN_OFF, HC_OFF, SH_OFF,
        # the mode words are compile-time: as runtime ints (Triton specializes only the value
        # 1) a push combine built every mode's branches into one kernel, and push/push ran
        # 1.3-1.4x slower (mok_kernels/NOTES.md, session 35)
        PUSH_DISPATCH: tl.constexpr, PULL_COMBINE: tl.constexpr, STALL, max_spin, NO_COPY,
        WORK_OFF, JOIN: tl.constexpr,
        GRID_V, C_STRIDE, T_STRIDE, MB_STRIDE, SYNC_STRIDE, H_ROWS, Y_ROWS,
        H: tl.constexpr, I: tl.constexpr, BM: tl.constexpr, BN_GU: tl.constexpr,
        BN_DN: tl.constexpr, BK: tl.constexpr, CR: tl.constexpr, CC: tl.constexpr,
        FUSE_GU: tl.constexpr, GROUP: tl.constexpr, SC: tl.constexpr, FP8: tl.constexpr,
        F8V: tl.constexpr = 1,   # FP8 kernel version: 1, 2, 3 (KernelConfig.fp8_kernel)
        SAVE_GU: tl.constexpr = False,   # store g and u for the backward (save_for_backward)
        GM: tl.constexpr = 1,   # gate/up items in groups of GM row tiles, column-major (group_m)
        LAG: tl.constexpr = 1,  # down items of minibatch i after gate/up of i + LAG (list_lag)
        TMA_A: tl.constexpr = 0,   # BF16 A tiles through TMA: 1 = h rows (down), 2 = h rows
                                   # and routed ring rows (gate/up; the ring never wraps)
        SPLIT: tl.constexpr = 1,   # down items split along K (split_dn): SPLIT slices per
                                   # (row tile, column block), summed in slice order by the
                                   # item that completes the block
        SPLIT_OFF=0, WS_T=0,       # SPLIT > 1: its counters in the sync words; tiles per rank
        NO_GEMM: tl.constexpr = False,   # timing diagnostic (KernelConfig.skip_gemm): items
                                         # store zero tiles and signal, with no K loop
        DNB: tl.constexpr = 1,     # down column blocks per item (KernelConfig.dn_blocks)
        ROT: tl.constexpr = 0,     # 1: each rank's sources of an expert start after it
                                   # (KernelConfig.source_order 'rotated'; the push lanes find
                                   # a sender's run of a tile in that order)
        SHARES: tl.constexpr = 0,  # 1: push lanes copy even shares of a sender's rows
                                   # (copy_share; KernelConfig.push_loop 'shares'), 0: a run
                                   # per tile of every nsub-th tile
        TT: tl.constexpr = 16,     # SHARES: row tiles whose sources a lane loads at once
        trace_ptr=None, TRACE_STRIDE=0,   # TRACE: int64 (programs, TRACE_STRIDE) stamps, trace.py
        TRACE: tl.constexpr = 0,   # KernelConfig.trace (a diagnostic; 0 generates no stamps)
    ):
        # Virtual rank VR owns programs [VR*GRID_V, (VR+1)*GRID_V) and its own slice of every
        # per-rank buffer (one rank per launch: VR = 0). *0 pointers keep every rank's view.
        VR = tl.program_id(0) // GRID_V
        pid = tl.program_id(0) % GRID_V
        # KernelConfig.trace: a program's stamp slots (mok_kernels/trace.py SLOTS, the same)
        T_START: tl.constexpr = 0          # program start
        T_COMM_END: tl.constexpr = 1       # its dispatch loop done (a pull combine follows)
        T_COMPUTE_START: tl.constexpr = 2  # its first work-item claim
        T_COMPUTE_END: tl.constexpr = 3    # its item loop done
        T_WAIT_ROWS: tl.constexpr = 4      # ns its gate/up items waited for minibatch rows
        T_WAIT_GU: tl.constexpr = 5        # ns its down items waited for their h tiles
        T_ITEMS: tl.constexpr = 6          # work items it ran
        T_MB: tl.constexpr = 8             # + mb: a comm program's minibatch mb copied, signalled
        if TRACE:
            trace_ptr += tl.program_id(0).to(tl.int64) * TRACE_STRIDE
            tl.store(trace_ptr + T_START, stamp())
        vr = VR.to(tl.int64)
        ring0, sync0, src0, mbr0, mbt0, nmb0 = ring_ptr, sync_ptr, recv_src_ptr, mb_row_ptr, mb_tile_ptr, nmb_ptr
        tr00, trn0 = tile_row0_ptr, tile_rows_ptr    # every rank's tiles (the senders' push)
        HB: tl.constexpr = H // 128                   # FP8 scale columns of a token row
        IB: tl.constexpr = I // 128                   # and of an h row
        rings0 = ring_s_ptr
        if FP8:
            ring_s_ptr += vr * R * HB
            h_s_ptr += vr * H_ROWS * IB
        ring_ptr += vr * R * H
        h_ptr += vr * H_ROWS * I
        if SAVE_GU:
            gu_ptr += vr * H_ROWS * (2 * I)
        y_ptr += vr * Y_ROWS * H
        x_loc_ptr += vr * NS * H
        sh_out_ptr += vr * NS * H
        sync_ptr += vr * SYNC_STRIDE
        recv_src_ptr += vr * C_STRIDE
        recv_slot_ptr += vr * C_STRIDE
        tile_exp_ptr += vr * T_STRIDE
        tile_row0_ptr += vr * T_STRIDE
        tile_rows_ptr += vr * T_STRIDE
        mb_tile_ptr += vr * MB_STRIDE
        mb_row_ptr += vr * MB_STRIDE
        nmb_ptr += vr
        E_BASE = VR * (EL + 1)                        # this rank's experts in the stacked weights
        NB_GU: tl.constexpr = I // BN_GU
        NB_DN: tl.constexpr = (H + BN_DN - 1) // BN_DN    # last down block may pass H: masked
        NDI: tl.constexpr = (NB_DN + DNB - 1) // DNB      # down items of a row tile (DNB blocks)
        KS_DN: tl.constexpr = I // BK                     # K steps of a down block
        DK: tl.constexpr = ((I // BK + SPLIT - 1) // SPLIT) * BK   # K columns of a down slice
        nmb = tl.load(nmb_ptr)
        crow = tl.arange(0, CR)
        trow = tl.arange(0, BM)                       # a tile's rows (push lanes' runs)
        if GROUP:
            # one rank per GPU (or per launch): its id, and the pass's epoch set by the prologue
            me = ME
            epoch = tl.load(flag_ptr + EPOCH_W, volatile=True)
            if pid == 0:
                publish(flag_ptr, p32_ptr, SCHED_RDY + ME, epoch, P)  # peers may read my schedule
                if tl.load(mb_tile_ptr + nmb) == 0:                  # no routed rows to combine
                    publish(flag_ptr, p32_ptr, CDONE + ME, epoch, P)
        else:
            me = VR
            epoch = 0
        if (pid < COMM) & (PUSH_DISPATCH == 2):
            # ------- push dispatch by the senders: this rank's tokens into every receiver's ring -------
            if GROUP:
                for q in range(0, P):                  # receivers' schedules are built
                    wait_geq(flag_ptr + SCHED_RDY + q, epoch, err_ptr, 6, q, max_spin, "sys")
            nmb_all = nmb
            for q in range(0, P):
                nmb_all = tl.maximum(nmb_all, tl.load(nmb0 + peer_off(p32_ptr, q, 1, GROUP)))
            lanes = tl.maximum(COMM, P)
            for mb in range(0, nmb_all):               # minibatch-major: no sender runs ahead
                for lane in range(pid, lanes, COMM):
                    q = lane % P                       # receiver
                    nsub = (lanes - q + P - 1) // P
                    mbr_q = mbr0 + peer_off(p32_ptr, q, MB_STRIDE, GROUP)
                    mbt_q = mbt0 + peer_off(p32_ptr, q, MB_STRIDE, GROUP)
                    syn_q = sync0 + peer_off(p32_ptr, q, SYNC_STRIDE, GROUP)
                    src_q = src0 + peer_off(p32_ptr, q, C_STRIDE, GROUP)
                    tr0_q = tr00 + peer_off(p32_ptr, q, T_STRIDE, GROUP)
                    trn_q = trn0 + peer_off(p32_ptr, q, T_STRIDE, GROUP)
                    # R in int64 before the product: a virtual rank's ring of R rows x H passes
                    # 2^31 elements at large capacities (R x H in int32 would wrap)
                    ring_q = ring0 + peer_off(x_off_ptr, q, R.to(tl.int64) * H, GROUP)
                    if mb < tl.load(nmb0 + peer_off(p32_ptr, q, 1, GROUP)):
                        r1 = tl.load(mbr_q + mb + 1)
                        j = 0                          # receiver's ring back-pressure
                        while (j < mb) & (tl.load(mbr_q + j) < r1 - R):
                            need = (tl.load(mbt_q + j + 1) - tl.load(mbt_q + j)) * NB_GU
                            wait_geq(syn_q + GU_OFF + j, need, err_ptr, 4, j, max_spin, SC)
                            j += 1
                        # the receiver's tiles of the minibatch hold one expert's rows each,
                        # in source order (schedule.py): the lane copies this sender's run of
                        # each tile, none of the other rows (as the emulated lanes below)
                        t1 = tl.load(mbt_q + mb + 1)
                        ring_sq = peer_off(x_off_ptr, q, R.to(tl.int64) * HB, GROUP)  # FP8: not GROUP
                        copy_sender(tl.load(mbt_q + mb), t1, lane // P, nsub, me, q, P, tr0_q,
                                    trn_q, src_q, N_RANK, x_src_ptr, x_off_ptr, ring_q, rings0,
                                    ring_sq, R, crow, trow, ROT, SHARES, FP8, H, HB, CC, CR, BM, TT)
                        if (STALL == 0) | (mb > 0):
                            signal(syn_q + READY_OFF + mb * P + me, SC)
                if TRACE:
                    tl.store(trace_ptr + T_MB + mb, stamp())
            if TRACE:
                tl.store(trace_ptr + T_COMM_END, stamp())
        if (pid < COMM) & (PUSH_DISPATCH != 2):
            # ---------------- communication programs: pull (or emulated push) ----------------
            freed = 0
            for mb in range(0, nmb):
                r0 = tl.load(mb_row_ptr + mb)
                r1 = tl.load(mb_row_ptr + mb + 1)
                # ring back-pressure: rows < r1 - R must have been consumed by gate/up tiles
                busy = (freed < mb) & (tl.load(mb_row_ptr + freed) < r1 - R)
                while busy:
                    need = (tl.load(mb_tile_ptr + freed + 1) - tl.load(mb_tile_ptr + freed)) * NB_GU
                    wait_geq(sync_ptr + GU_OFF + freed, need, err_ptr, 4, freed, max_spin, "gpu")
                    freed += 1
                    busy = (freed < mb) & (tl.load(mb_row_ptr + freed) < r1 - R)
                if PUSH_DISPATCH == 0:
                    nchunk = (r1 - r0 + CR - 1) // CR
                    gather_chunks(recv_src_ptr, r0, r1, pid, COMM, nchunk * (1 - NO_COPY), N_RANK, 0,
                                 x_off_ptr, x_src_ptr, ring_ptr, ring_s_ptr, R, True, False, FP8,
                                 H, CC, CR)
                    if (STALL == 0) | (mb > 0):
                        signal(sync_ptr + READY_OFF + mb * P, "gpu")
                else:
                    lanes = tl.maximum(COMM, P)
                    for lane in range(pid, lanes, COMM):
                        s = lane % P
                        nsub = (lanes - s + P - 1) // P
                        # a tile's rows are one expert's, in source order (schedule.py): the
                        # lane copies its source's run of each tile, none of the other rows
                        t1 = tl.load(mb_tile_ptr + mb + 1)
                        copy_sender(tl.load(mb_tile_ptr + mb), t1, lane // P, nsub, s, me, P,
                                    tile_row0_ptr, tile_rows_ptr, recv_src_ptr, N_RANK, x_src_ptr,
                                    x_off_ptr, ring_ptr, ring_s_ptr, 0, R, crow, trow, ROT, SHARES,
                                    FP8, H, HB, CC, CR, BM, TT)
                        if (STALL == 0) | (mb > 0):
                            signal(sync_ptr + READY_OFF + mb * P + s, "gpu")
                if TRACE:
                    tl.store(trace_ptr + T_MB + mb, stamp())
            if TRACE:
                tl.store(trace_ptr + T_COMM_END, stamp())
        if GROUP:
            if (pid < COMM) & (PULL_COMBINE != 0):
                # pull combine across ranks: the home's comm programs read every owner's staged rows
                # of each finished minibatch and keep those whose combine slot is home here
                for q in range(0, P):
                    wait_geq(flag_ptr + SCHED_RDY + q, epoch, err_ptr, 6, q, max_spin, "sys")
                    o32 = tl.load(p32_ptr + q)
                    oy = tl.load(x_off_ptr + q)
                    for mb in range(0, tl.load(nmb_ptr + o32)):
                        r0 = tl.load(mb_row_ptr + o32 + mb)
                        r1 = tl.load(mb_row_ptr + o32 + mb + 1)
                        need = (tl.load(mb_tile_ptr + o32 + mb + 1) - tl.load(mb_tile_ptr + o32 + mb)) * NB_DN
                        wait_geq(sync_ptr + o32 + DN_OFF + mb, need, err_ptr, 5, mb, max_spin, "sys")
                        nchunk = (r1 - r0 + CR - 1) // CR
                        gather_chunks(recv_slot_ptr + o32, r0, r1, pid, COMM, nchunk, SLOTS, me,
                                     comb_off_ptr, y_ptr + oy, comb_ptr, None, 1, False, True, False,
                                     H, CC, CR)
        else:
            if (pid < COMM) & (PULL_COMBINE != 0):
                for mb in range(0, nmb):
                    r0 = tl.load(mb_row_ptr + mb)
                    r1 = tl.load(mb_row_ptr + mb + 1)
                    need = (tl.load(mb_tile_ptr + mb + 1) - tl.load(mb_tile_ptr + mb)) * NB_DN
                    wait_geq(sync_ptr + DN_OFF + mb, need, err_ptr, 5, mb, max_spin, "gpu")
                    nchunk = (r1 - r0 + CR - 1) // CR
                    gather_chunks(recv_slot_ptr, r0, r1, pid, COMM, nchunk, SLOTS, 0, comb_off_ptr,
                                 y_ptr, comb_ptr, None, 1, False, False, False, H, CC, CR)
        if (pid >= COMM) | ((JOIN != 0) & (PULL_COMBINE == 0)):
            # ---------------- compute (comm programs join once dispatch is done) ----------------
            # Items are taken from one atomic counter in list order: sections
            # gu(0=shared), dn(-LAG), gu(1), dn(1-LAG), gu(2), dn(2-LAG), ... (LAG 1: gu(0), dn(-1),
            # gu(1), dn(0), gu(2), dn(1), ...); batch b>=1 is minibatch b-1, empty sections skipped.
            # Without a shared expert its sections are empty (the epilogue reads no shared output).
            ns_tiles = tl.where(HAS_SHARED != 0, (NS + BM - 1) // BM, 0)
            tiles_used = tl.load(mb_tile_ptr + nmb)
            total = (ns_tiles + tiles_used) * (NB_GU + NDI * SPLIT)
            rm = tl.arange(0, BM)
            rk = tl.arange(0, BK)
            sec = -1
            sec_start = 0
            sec_end = 0
            sec_nt = 0                                   # row tiles of the current section
            waited = 0
            if TRACE:
                tl.store(trace_ptr + T_COMPUTE_START, stamp())
                wait_rows = (pid * 0).to(tl.int64)
                wait_gu = (pid * 0).to(tl.int64)
                items = pid * 0
            g = tl.atomic_add(sync_ptr + WORK_OFF, 1, sem="relaxed", scope="gpu")
            while g < total:
                # the next item is claimed after this one's K loop (its latency hidden by the
                # epilogue), not ahead of it: a claim held through a whole item would hand a
                # second wave to programs already busy while comm programs that join find none
                while g >= sec_end:
                    sec += 1
                    sec_start = sec_end
                    bb = sec // 2 - LAG * (sec % 2)    # batch of this section
                    bc = tl.minimum(tl.maximum(bb, 1), nmb)
                    ntb = tl.load(mb_tile_ptr + bc) - tl.load(mb_tile_ptr + bc - 1)
                    nt = tl.where(bb == 0, ns_tiles, tl.where((bb >= 1) & (bb <= nmb), ntb, 0))
                    sec_end += nt * tl.where(sec % 2 == 0, NB_GU, NDI * SPLIT)
                    sec_nt = nt
                item = g - sec_start
                is_gu = sec % 2 == 0
                b = sec // 2 - LAG * (sec % 2)
                mbi = tl.maximum(b - 1, 0)                  # minibatch index of batch b
                t_base = tl.load(mb_tile_ptr + tl.minimum(mbi, nmb))
                shared = b == 0
                if is_gu:
                    if (b > 0) & (waited < b):
                        if TRACE:
                            t_wait = stamp()
                        if PUSH_DISPATCH == 0:
                            wait_geq(sync_ptr + READY_OFF + mbi * P, COMM, err_ptr, 1, mbi, max_spin, "gpu")
                        else:
                            lanes = tl.maximum(COMM, P)
                            for s in range(0, P):
                                # lanes that raise signal (mbi, s): this rank's lanes for peer s
                                # (emulated push) or sender s's lanes for this rank (real push)
                                q = tl.where(PUSH_DISPATCH == 1, s, me)
                                nsub = (lanes - q + P - 1) // P
                                wait_geq(sync_ptr + READY_OFF + mbi * P + s, nsub, err_ptr, 2, mbi,
                                         max_spin, SC)
                        if TMA_A == 2:
                            fence_async_proxy()
                        waited = b
                        if TRACE:
                            wait_rows += stamp() - t_wait
                    if GM > 1:   # GM row tiles share each weight column block while it is in L2
                        grp0 = (item // (GM * NB_GU)) * GM
                        gsz = tl.minimum(sec_nt - grp0, GM)
                        within = item - grp0 * NB_GU
                        tt = grp0 + within % gsz
                        nb = within // gsz
                    else:
                        tt = item // NB_GU
                        nb = item % NB_GU
                    tile, row0, nrows, e, hrow0 = tile_of(tt, shared, t_base, tile_row0_ptr,
                                                          tile_rows_ptr, tile_exp_ptr, NS, EL,
                                                          E_BASE, BM)
                    if NO_GEMM:
                        rmask = rm < nrows
                        rn = nb * BN_GU + tl.arange(0, BN_GU)
                        acc_g = tl.zeros((BM, BN_GU), dtype=tl.float32)
                        acc_u = tl.zeros((BM, BN_GU), dtype=tl.float32)
                    elif FP8:
                        rmask = rm < nrows
                        rn = nb * BN_GU + tl.arange(0, BN_GU)
                        # shared rows are BF16 tokens, quantized in the loop; routed rows come
                        # quantized from the ring (the pointer types differ: two calls)
                        if F8V >= 4:
                            if shared:
                                acc2 = gu_fp8_v4(
                                    x_loc_ptr + (row0 + rm).to(tl.int64)[:, None] * H + rk[None, :],
                                    ring_s_ptr, rmask, wg_ptr, wgu_desc, wgu_s_ptr, e, nb, H, I, BM,
                                    BN_GU, BK, True, F8V == 5)
                            else:
                                ring_row = ((row0 + rm) % R).to(tl.int64)
                                acc2 = gu_fp8_v4(
                                    ring_ptr + ring_row[:, None] * H + rk[None, :],
                                    ring_s_ptr + ring_row * HB, rmask, wg_ptr, wgu_desc, wgu_s_ptr,
                                    e, nb, H, I, BM, BN_GU, BK, False, F8V == 5)
                            acc_g, acc_u = tl.split(tl.permute(tl.reshape(acc2, (BM, 2, BN_GU)), (0, 2, 1)))
                        elif F8V == 3:
                            if shared:
                                acc_g, acc_u = gu_fp8_v3(
                                    x_loc_ptr + (row0 + rm).to(tl.int64)[:, None] * H + rk[None, :],
                                    ring_s_ptr, rmask, wg_ptr, wgu_desc, wgu_s_ptr, e, nb, H, I, BM,
                                    BN_GU, BK, True)
                            else:
                                ring_row = ((row0 + rm) % R).to(tl.int64)
                                acc_g, acc_u = gu_fp8_v3(
                                    ring_ptr + ring_row[:, None] * H + rk[None, :],
                                    ring_s_ptr + ring_row * HB, rmask, wg_ptr, wgu_desc, wgu_s_ptr,
                                    e, nb, H, I, BM, BN_GU, BK, False)
                        elif F8V == 2:
                            if shared:
                                acc_g, acc_u = gu_fp8_v2(
                                    x_loc_ptr + (row0 + rm).to(tl.int64)[:, None] * H + rk[None, :],
                                    ring_s_ptr, rmask, wg_ptr, wgu_desc, wgu_s_ptr, e, nb, H, I, BM,
                                    BN_GU, BK, True)
                            else:
                                ring_row = ((row0 + rm) % R).to(tl.int64)
                                acc_g, acc_u = gu_fp8_v2(
                                    ring_ptr + ring_row[:, None] * H + rk[None, :],
                                    ring_s_ptr + ring_row * HB, rmask, wg_ptr, wgu_desc, wgu_s_ptr,
                                    e, nb, H, I, BM, BN_GU, BK, False)
                        else:
                            if shared:
                                acc2 = gu_fp8(x_loc_ptr + (row0 + rm).to(tl.int64)[:, None] * H + rk[None, :],
                                              ring_s_ptr, rmask, wg_ptr, wgu_desc, wgu_s_ptr, e, nb,
                                              H, I, BM, BN_GU, BK, True)
                            else:
                                ring_row = ((row0 + rm) % R).to(tl.int64)
                                acc2 = gu_fp8(ring_ptr + ring_row[:, None] * H + rk[None, :],
                                              ring_s_ptr + ring_row * HB, rmask, wg_ptr, wgu_desc,
                                              wgu_s_ptr, e, nb, H, I, BM, BN_GU, BK, False)
                            acc_g, acc_u = tl.split(tl.permute(tl.reshape(acc2, (BM, 2, BN_GU)), (0, 2, 1)))
                    else:
                        if shared:
                            a_ptrs = x_loc_ptr + (row0 + rm).to(tl.int64)[:, None] * H + rk[None, :]
                        else:
                            a_ptrs = ring_ptr + ((row0 + rm) % R).to(tl.int64)[:, None] * H + rk[None, :]
                        rmask = rm < nrows
                        rn = nb * BN_GU + tl.arange(0, BN_GU)
                        if FUSE_GU:
                            # gate|up interleaved per BN_GU block: one (BK x 2*BN_GU) tile per step
                            rn2 = nb * 2 * BN_GU + tl.arange(0, 2 * BN_GU)
                            w_off2 = e.to(tl.int64) * H * 2 * I + rk[:, None] * (2 * I) + rn2[None, :]
                            if TMA_A == 2:
                                if shared:
                                    acc2 = gu_bf16(a_ptrs, rmask, wg_ptr + w_off2, wgu_desc, e, nb,
                                                   H, I, BM, BN_GU, BK)
                                else:
                                    # rows past the tile's own are other rows (or zeros past
                                    # the ring): their outputs are masked at the stores
                                    a_row = (VR * R + row0).to(tl.int32)
                                    acc2 = tl.zeros((BM, 2 * BN_GU), dtype=tl.float32)
                                    for k0 in range(0, H, BK):
                                        a = ring_desc.load([a_row, k0])
                                        bgu = wgu_desc.load([e * H + k0, nb * 2 * BN_GU])
                                        acc2 = tl.dot(a, bgu, acc2)
                            else:
                                acc2 = gu_bf16(a_ptrs, rmask, wg_ptr + w_off2, wgu_desc, e, nb,
                                               H, I, BM, BN_GU, BK)
                            acc_g, acc_u = tl.split(tl.permute(tl.reshape(acc2, (BM, 2, BN_GU)), (0, 2, 1)))
                        else:
                            w_off = e.to(tl.int64) * H * I + rk[:, None] * I + rn[None, :]
                            acc_g = tl.zeros((BM, BN_GU), dtype=tl.float32)
                            acc_u = tl.zeros((BM, BN_GU), dtype=tl.float32)
                            for k0 in range(0, H, BK):
                                a = tl.load(a_ptrs + k0, mask=rmask[:, None], other=0.0)
                                bg = tl.load(wg_ptr + w_off + k0 * I)
                                bu = tl.load(wu_ptr + w_off + k0 * I)
                                acc_g = tl.dot(a, bg, acc_g)
                                acc_u = tl.dot(a, bu, acc_u)
                    g_next = tl.atomic_add(sync_ptr + WORK_OFF, 1, sem="relaxed", scope="gpu")
                    if SAVE_GU:
                        # g and u for the backward, bf16, where its [dg|du] of this row go
                        gu_rows = (hrow0 + rm).to(tl.int64)[:, None] * (2 * I)
                        g_cols = nb * 2 * BN_GU + tl.arange(0, BN_GU)
                        tl.store(gu_ptr + gu_rows + g_cols[None, :], acc_g.to(tl.bfloat16),
                                 mask=rmask[:, None])
                        tl.store(gu_ptr + gu_rows + (g_cols + BN_GU)[None, :],
                                 acc_u.to(tl.bfloat16), mask=rmask[:, None])
                    hval = acc_g * tl.sigmoid(acc_g) * acc_u
                    h_ptrs = h_ptr + (hrow0 + rm).to(tl.int64)[:, None] * I + rn[None, :]
                    if FP8:     # h quantized per row per 128 columns for the down GEMM
                        hq, hs = quant_rows(hval, BM, BN_GU)
                        tl.store(h_ptrs, hq, mask=rmask[:, None])
                        scol = nb * (BN_GU // 128) + tl.arange(0, BN_GU // 128)
                        tl.store(h_s_ptr + (hrow0 + rm).to(tl.int64)[:, None] * IB + scol[None, :], hs,
                                 mask=rmask[:, None])
                    else:
                        tl.store(h_ptrs, hval.to(tl.bfloat16), mask=rmask[:, None])
                    tl.debug_barrier()
                    if shared:
                        tl.atomic_add(sync_ptr + SH_OFF + tile, 1, sem="release", scope="gpu")
                    else:
                        tl.atomic_add(sync_ptr + HC_OFF + tile, 1, sem="release", scope="gpu")
                        tl.atomic_add(sync_ptr + GU_OFF + mbi, 1, sem="release", scope=SC)
                else:
                    if DNB > 1:
                        # DNB column blocks of one row tile in one flattened K loop: the next
                        # block's first loads are in flight while this block stores
                        tt_d = item // NDI
                        nb_lo = (item % NDI) * DNB
                        nblk_d = tl.minimum(NB_DN - nb_lo, DNB)
                        tile_d, row0_d, nrows_d, e_d, hrow0_d = tile_of(
                            tt_d, shared, t_base, tile_row0_ptr, tile_rows_ptr, tile_exp_ptr, NS, EL,
                            E_BASE, BM)
                        cnt_ptr_d = sync_ptr + tl.where(shared, SH_OFF, HC_OFF) + tile_d
                        if TRACE:
                            t_wait = stamp()
                        wait_geq(cnt_ptr_d, NB_GU, err_ptr, 3, tile_d, max_spin, "gpu")
                        if TRACE:
                            wait_gu += stamp() - t_wait
                        if TMA_A != 0:
                            fence_async_proxy()
                        rmask_d = rm < nrows_d
                        a_ptrs_d = h_ptr + (hrow0_d + rm).to(tl.int64)[:, None] * I + rk[None, :]
                        a_row_d = (VR * H_ROWS + hrow0_d).to(tl.int32)
                        if shared:
                            o_rows_d = sh_out_ptr + (row0_d + rm).to(tl.int64)[:, None] * H
                        elif PULL_COMBINE != 0:
                            o_rows_d = y_ptr + (row0_d + rm).to(tl.int64)[:, None] * H
                        else:
                            slot_d = tl.load(recv_slot_ptr + row0_d + rm, mask=rmask_d, other=0)
                            o_rows_d = comb_ptr + peer_row(comb_off_ptr, slot_d, SLOTS, H)[:, None]
                        acc_d = tl.zeros((BM, BN_DN), dtype=tl.float32)
                        for it in range(0, nblk_d * KS_DN):
                            kk = it % KS_DN
                            nb_d = nb_lo + it // KS_DN
                            if TMA_A != 0:
                                a_d = h_desc.load([a_row_d, kk * BK])
                            else:
                                a_d = tl.load(a_ptrs_d + kk * BK, mask=rmask_d[:, None], other=0.0)
                            bw_d = wd_desc.load([e_d * I + kk * BK, nb_d * BN_DN])
                            acc_d = tl.dot(a_d, bw_d, acc_d)
                            if kk == KS_DN - 1:
                                rn_d = nb_d * BN_DN + tl.arange(0, BN_DN)
                                omask_d = rmask_d[:, None] & (rn_d < H)[None, :]
                                tl.store(o_rows_d + rn_d[None, :], acc_d.to(tl.bfloat16), mask=omask_d)
                                acc_d = tl.zeros((BM, BN_DN), dtype=tl.float32)
                        g_next = tl.atomic_add(sync_ptr + WORK_OFF, 1, sem="relaxed", scope="gpu")
                        if PULL_COMBINE != 0:
                            # one release for the item's blocks, after the loop: a barrier inside
                            # it stalled the pipeline (pull combine ran 1.4-1.5x slower, call 6)
                            if b != 0:
                                tl.debug_barrier()
                                tl.atomic_add(sync_ptr + DN_OFF + mbi, nblk_d, sem="release",
                                              scope=SC)
                    else:
                        tt_d = item // (NB_DN * SPLIT)
                        nb_d = (item // SPLIT) % NB_DN
                        ks = item % SPLIT                           # K slice (0 unless split)
                        k_lo = ks * DK
                        k_hi = tl.minimum(k_lo + DK, I)
                        tile_d, row0_d, nrows_d, e_d, hrow0_d = tile_of(
                            tt_d, shared, t_base, tile_row0_ptr, tile_rows_ptr, tile_exp_ptr, NS, EL,
                            E_BASE, BM)
                        cnt_ptr_d = sync_ptr + tl.where(shared, SH_OFF, HC_OFF) + tile_d
                        if TRACE:
                            t_wait = stamp()
                        wait_geq(cnt_ptr_d, NB_GU, err_ptr, 3, tile_d, max_spin, "gpu")
                        if TRACE:
                            wait_gu += stamp() - t_wait
                        if TMA_A != 0:
                            fence_async_proxy()
                        rmask_d = rm < nrows_d
                        rn_d = nb_d * BN_DN + tl.arange(0, BN_DN)
                        cmask_d = rn_d < H
                        omask_d = rmask_d[:, None] & cmask_d[None, :]
                        a_ptrs_d = h_ptr + (hrow0_d + rm).to(tl.int64)[:, None] * I + rk[None, :]
                        w_off_d = e_d.to(tl.int64) * I * H + rk[:, None] * H + rn_d[None, :]
                        acc_d = tl.zeros((BM, BN_DN), dtype=tl.float32)
                        if NO_GEMM:   # the diagnostic: acc_d stays the zero tile above
                            acc_d = tl.zeros((BM, BN_DN), dtype=tl.float32)
                        elif FP8 and (F8V >= 4):
                            acc_d = dn_fp8_v4(h_ptr + (hrow0_d + rm).to(tl.int64)[:, None] * I + rk[None, :],
                                              h_s_ptr + (hrow0_d + rm).to(tl.int64) * IB, rmask_d, wd_ptr,
                                              wd_desc, wd_s_ptr, e_d, nb_d, H, I, BM, BN_DN, BK, F8V == 5)
                        elif FP8 and (F8V == 3):
                            acc_d = dn_fp8_v3(h_ptr + (hrow0_d + rm).to(tl.int64)[:, None] * I + rk[None, :],
                                              h_s_ptr + (hrow0_d + rm).to(tl.int64) * IB, rmask_d, wd_ptr,
                                              wd_desc, wd_s_ptr, e_d, nb_d, H, I, BM, BN_DN, BK)
                        elif FP8 and (F8V == 2):
                            acc_d = dn_fp8_v2(h_ptr + (hrow0_d + rm).to(tl.int64)[:, None] * I + rk[None, :],
                                              h_s_ptr + (hrow0_d + rm).to(tl.int64) * IB, rmask_d, wd_ptr,
                                              wd_desc, wd_s_ptr, e_d, nb_d, H, I, BM, BN_DN, BK)
                        elif FP8:
                            # K-contiguous down weights (EL+1, H, I); columns past H read zeros
                            # (pointers) or the next expert's rows (TMA): masked at the store
                            as_ptrs_d = h_s_ptr + (hrow0_d + rm).to(tl.int64) * IB
                            w_ptrs_d = wd_ptr + e_d.to(tl.int64) * H * I + rn_d[None, :].to(tl.int64) * I + rk[:, None]
                            ws_ptrs_d = wd_s_ptr + e_d.to(tl.int64) * IB * HB + rn_d // 128
                            for k0 in range(0, I, BK):
                                a_d = tl.load(a_ptrs_d + k0, mask=rmask_d[:, None], other=0.0)
                                a_s_d = tl.load(as_ptrs_d + k0 // BK, mask=rmask_d, other=0.0)
                                if wd_desc is None:
                                    bw_d = tl.load(w_ptrs_d + k0, mask=cmask_d[None, :], other=0.0)
                                else:
                                    bw_d = tl.trans(wd_desc.load([e_d * H + nb_d * BN_DN, k0]))
                                b_s_d = tl.load(ws_ptrs_d + (k0 // BK) * HB, mask=cmask_d, other=0.0)
                                acc_d += tl.dot(a_d, bw_d) * a_s_d[:, None] * b_s_d[None, :]
                        elif TMA_A != 0:
                            a_row_d = (VR * H_ROWS + hrow0_d).to(tl.int32)
                            for k0 in range(k_lo, k_hi, BK):
                                a_d = h_desc.load([a_row_d, k0])
                                bw_d = wd_desc.load([e_d * I + k0, nb_d * BN_DN])
                                acc_d = tl.dot(a_d, bw_d, acc_d)
                        else:
                            for k0 in range(k_lo, k_hi, BK):
                                a_d = tl.load(a_ptrs_d + k0, mask=rmask_d[:, None], other=0.0)
                                if wd_desc is None:
                                    bw_d = tl.load(wd_ptr + w_off_d + k0 * H, mask=cmask_d[None, :], other=0.0)
                                else:
                                    bw_d = wd_desc.load([e_d * I + k0, nb_d * BN_DN])
                                acc_d = tl.dot(a_d, bw_d, acc_d)
                        g_next = tl.atomic_add(sync_ptr + WORK_OFF, 1, sem="relaxed", scope="gpu")
                        finish = True
                        if SPLIT > 1:
                            # park this slice's partial tile; the item that completes the block
                            # sums the slices in slice order (the same bits whoever finishes last)
                            ws_tile = tl.where(shared, tile_d, ns_tiles + tile_d)
                            blk = ((vr * WS_T + ws_tile) * NB_DN + nb_d) * SPLIT
                            t_off = (rm[:, None] * BN_DN + tl.arange(0, BN_DN)[None, :]).to(tl.int64)
                            tl.store(split_ptr + (blk + ks) * (BM * BN_DN) + t_off, acc_d)
                            tl.debug_barrier()
                            prev = tl.atomic_add(sync_ptr + SPLIT_OFF + ws_tile * NB_DN + nb_d, 1,
                                                 sem="acq_rel", scope="gpu")
                            tl.debug_barrier()
                            finish = prev == SPLIT - 1
                            if finish:
                                acc_d = tl.load(split_ptr + blk * (BM * BN_DN) + t_off,
                                                cache_modifier=".cg")
                                for s in tl.static_range(1, SPLIT):
                                    acc_d += tl.load(split_ptr + (blk + s) * (BM * BN_DN) + t_off,
                                                     cache_modifier=".cg")
                        if finish:     # a split block's other slices only park their part
                            if shared:
                                s_ptrs_d = sh_out_ptr + (row0_d + rm).to(tl.int64)[:, None] * H + rn_d[None, :]
                                tl.store(s_ptrs_d, acc_d.to(tl.bfloat16), mask=omask_d)
                            else:
                                if PULL_COMBINE != 0:
                                    o_ptrs_d = y_ptr + (row0_d + rm).to(tl.int64)[:, None] * H + rn_d[None, :]
                                    tl.store(o_ptrs_d, acc_d.to(tl.bfloat16), mask=omask_d)
                                    signal(sync_ptr + DN_OFF + mbi, SC)
                                else:
                                    slot_d = tl.load(recv_slot_ptr + row0_d + rm, mask=rmask_d, other=0)
                                    c_off_d = peer_row(comb_off_ptr, slot_d, SLOTS, H)
                                    c_ptrs_d = comb_ptr + c_off_d[:, None] + rn_d[None, :]
                                    tl.store(c_ptrs_d, acc_d.to(tl.bfloat16), mask=omask_d)
                                    if GROUP:
                                        # the last routed down tile tells every home its rows have landed
                                        tl.debug_barrier()
                                        done = tl.atomic_add(sync_ptr + DNALL_OFF, 1, sem="acq_rel",
                                                             scope="sys")
                                        if done == tiles_used * NB_DN - 1:
                                            publish(flag_ptr, p32_ptr, CDONE + ME, epoch, P)
                if TRACE:
                    items += 1
                g = g_next
            if TRACE:
                tl.store(trace_ptr + T_COMPUTE_END, stamp())
                tl.store(trace_ptr + T_WAIT_ROWS, wait_rows)
                tl.store(trace_ptr + T_WAIT_GU, wait_gu)
                tl.store(trace_ptr + T_ITEMS, items.to(tl.int64))

    @triton.jit
    def trap():
        """Abort the whole launch: the caller's next synchronization raises a CUDA error."""
        tl.inline_asm_elementwise("trap; mov.u32 $0, 0;", "=r", [], dtype=tl.int32, is_pure=False,
                                  pack=1)

    @triton.jit(do_not_specialize=["TRAP"])    # trap or raise: one compiled variant
    def epilogue_kernel(sh_ptr, comb_ptr, w_ptr, out_ptr, err_ptr, over_ptr, tok0, HAS_SHARED,
                        TRAP, K: tl.constexpr, H: tl.constexpr, BH: tl.constexpr):
        """out[t] = shared[t] + sum_{j=0..k-1} w[t, j] * comb[t, j], fp32, fixed order.

        If the megakernel recorded a stalled wait or the schedule overflowed, the output is NaN
        and, with TRAP, the launch traps: no caller can use the result without knowing."""
        t = tl.program_id(0)
        cols = tl.program_id(1) * BH + tl.arange(0, BH)
        cm = cols < H
        g = (tok0 + t).to(tl.int64)
        acc = tl.load(sh_ptr + t.to(tl.int64) * H + cols, mask=cm, other=0.0).to(tl.float32)
        acc = tl.where(HAS_SHARED != 0, acc, 0.0)
        for j in tl.static_range(K):
            wj = tl.load(w_ptr + g * K + j)
            y = tl.load(comb_ptr + (g * K + j) * H + cols, mask=cm, other=0.0).to(tl.float32)
            acc += wj * y
        failed = (tl.load(err_ptr, volatile=True) | tl.load(over_ptr, volatile=True)) != 0
        acc = tl.where(failed, float("nan"), acc)
        tl.store(out_ptr + t.to(tl.int64) * H + cols, acc.to(tl.bfloat16), mask=cm)
        if (TRAP != 0) & failed:
            trap()

    @triton.jit
    def prologue_kernel(x_ptr, ids_ptr, send_ptr, ids_all_ptr, flag_ptr, p32_ptr, p64_ptr, err_ptr,
                        ME, P, N, NK, max_spin, FIN, RDY, EPOCH_W, ENTER,
                        H: tl.constexpr, CC: tl.constexpr, CR: tl.constexpr, BI: tl.constexpr):
        """Group mode, before each pass: wait until every rank has finished the previous pass
        (so its buffers may be reused), publish this rank's tokens in its send buffer and its
        top-k ids in every rank's routing region, then (last program) tell every rank and wait
        until every rank has done the same. Epoch flags only grow: nothing is reset, so a CUDA
        graph replays the pass."""
        pid = tl.program_id(0)
        G = tl.num_programs(0)
        epoch = tl.load(flag_ptr + EPOCH_W, volatile=True) + 1
        if pid == 0:
            publish(flag_ptr, p32_ptr, FIN + ME, epoch - 1, P)     # my previous pass is over
        for q in range(0, P):
            wait_geq(flag_ptr + FIN + q, epoch - 1, err_ptr, 8, q, max_spin, "sys")
        crow = tl.arange(0, CR)
        for c in range(pid, (N + CR - 1) // CR, G):
            rows = (c * CR + crow).to(tl.int64)
            copy_rows(x_ptr, rows * H, send_ptr, rows * H, rows < N, H, CC)
        cols = tl.arange(0, BI)
        for c in range(pid, (NK + BI - 1) // BI, G):
            j = c * BI + cols
            v = tl.load(ids_ptr + j, mask=j < NK)
            for q in range(0, P):
                tl.store(ids_all_ptr + tl.load(p64_ptr + q) + ME * NK + j, v, mask=j < NK)
        tl.debug_barrier()
        arrived = tl.atomic_add(flag_ptr + ENTER, 1, sem="acq_rel", scope="sys")
        if arrived == epoch * G - 1:                 # the last program of this rank's prologue
            publish(flag_ptr, p32_ptr, RDY + ME, epoch, P)
            for q in range(0, P):
                wait_geq(flag_ptr + RDY + q, epoch, err_ptr, 9, q, max_spin, "sys")
            tl.atomic_xchg(flag_ptr + EPOCH_W, epoch, sem="release", scope="gpu")

    @triton.jit
    def wait_combined_kernel(flag_ptr, err_ptr, P, CDONE, EPOCH_W, max_spin):
        """Group mode, push combine: wait until every rank's rows for this home have landed."""
        epoch = tl.load(flag_ptr + EPOCH_W, volatile=True)
        for q in range(0, P):
            wait_geq(flag_ptr + CDONE + q, epoch, err_ptr, 7, q, max_spin, "sys")

    _KERNELS.update(mok=mok_kernel, epilogue=epilogue_kernel, prologue=prologue_kernel,
                    wait_combined=wait_combined_kernel, triton=triton,
                    # device helpers the backward megakernel (backward.py) calls
                    wait_geq=wait_geq, signal=signal, tile_of=tile_of, peer_row=peer_row,
                    copy_rows=copy_rows, trap=trap)
    return _KERNELS


# GPUs on which the GPU tests have compared the kernels with float32: sm_90 (H100 and H200). The
# forward and backward compile for sm_100 as well (benchmarks/cpu/compile_megakernel.py --arch
# 100) but have never run there.
CHECKED_ARCHS = ((9, 0),)
_WARNED_ARCHS: set = set()


def check_gpu(device: str, precision: str) -> None:
    """Refuse a GPU the kernel cannot run on (under sm_80: no BF16 tensor cores; FP8 under
    sm_89: no e4m3 tensor cores); warn once per architecture where the kernel compiles but has
    not been checked against float32 (CHECKED_ARCHS). A CUDA device where torch sees no CUDA GPU:
    MokInputError (require_cuda). Nothing on a device that is not a GPU."""
    dev = torch.device(device)
    if dev.type != "cuda":
        return
    from . import require_cuda
    require_cuda()          # one line naming the missing GPU, not torch's lazy-init assertion
    arch = tuple(torch.cuda.get_device_capability(dev))
    if arch in CHECKED_ARCHS:
        return
    gpu = f"{torch.cuda.get_device_name(dev)} (sm_{arch[0]}{arch[1]})"
    if arch < (8, 0):
        raise ValueError(f"the megakernel needs BF16 tensor cores (sm_80 or newer); {gpu} has none")
    if precision == "fp8" and arch < (8, 9):
        raise ValueError(f"precision='fp8' needs e4m3 tensor cores (sm_89 or newer); {gpu} has "
                         f"none: use precision='bf16'")
    if arch not in _WARNED_ARCHS:
        _WARNED_ARCHS.add(arch)
        import warnings

        warnings.warn(f"the megakernel has been checked against float32 on sm_90 GPUs (H100, H200) "
                      f"only; on {gpu} run `pytest -m gpu tests/test_kernels_gpu.py "
                      f"tests/test_autograd_gpu.py` before trusting its outputs", stacklevel=3)


def pointer_weight_refusal(h: int, ip: int) -> str | None:
    """Why weight tiles loaded through pointers cannot address one expert's weights, or None:
    their offsets inside an expert (k x 2*Ip + column, column x H + k) are int32, so an expert's
    gate|up matrix, H x 2*Ip elements, must stay below 2^31 (the BF16 forward with tma=False and
    the backward megakernel load weights this way; the expert's own start is int64)."""
    if h * 2 * ip >= 2**31:
        return (f"H x 2 x padded I = {h} x 2 x {ip} = {h * 2 * ip} elements: one expert's gate|up "
                f"weights must stay below 2^31 elements (int32 offsets inside an expert)")
    return None


def weights_key(w: MoEWeights) -> tuple:
    """What identifies the values of a layer's weights while no one writes them behind
    PyTorch's back: each tensor's address, version counter (bumped by every in-place write,
    optimizer steps included), shape, strides and dtype. The autograd backward re-packs only
    when a layer's buffers hold other weights than this key's (autograd itself refuses weights
    written in place between a forward and its backward)."""
    return tuple(None if t is None else (t.data_ptr(), t._version, tuple(t.shape), t.stride(),
                                         t.dtype, str(t.device))
                 for t in (w.wg, w.wu, w.wd, w.sg, w.su, w.sd))


@dataclass
class MoKLayer:
    """Megakernel forward of one rank (``rank=r``) or of P virtual ranks (``rank=None``).

    weights: all E experts (any dtype/device; packed to bf16 CUDA at construction).
    """

    weights: MoEWeights
    ep: int
    tokens: int                      # N: local tokens per rank
    topk: int
    rank: int | None
    cfg: KernelConfig = field(default_factory=KernelConfig)
    device: str = "cuda"
    local_weights: bool = False      # weights hold only this rank's E/P experts (benchmarks)
    group: Any = None                # torch.distributed group (real GPUs, symmetric memory) or
                                     # a peers.LocalGroup (P launches on one GPU)
    hardware: str | None = None      # preset the unset knobs are chosen for (default: from the GPU)
    knob_table: str | None = None    # knob table (`mok tune --table`) to take unset knobs from
    knob_params: str | None = None   # parameters file for the choice (default: the hardware's)
    allow_params_mismatch: bool = False  # take a knob_params file fitted for other hardware

    def __post_init__(self) -> None:
        self._check_args()
        self.cfg.validate()
        w, cfg = self.weights, self.cfg
        self.loaded_key = weights_key(w)     # which weights the packed buffers hold (load_weights)
        self.local_group = isinstance(self.group, LocalGroup)
        self.gluon = None            # fp8_kernel="gluon": the GluonFP8MoK that runs the pass
        if cfg.precision == "fp8" and cfg.fp8_kernel == "gluon":
            self._init_gluon()       # sm_90 only: it refuses every other GPU
            return
        if self.rank is not None and not 0 <= self.rank < self.ep:   # (the Gluon pass's own rule)
            raise MokInputError(f"rank={self.rank}: must be in 0..{self.ep - 1} (ep={self.ep}), "
                                f"or None for every rank in one launch")
        g = self.group              # (after the Gluon pass, which refuses any group itself)
        if g is not None and not isinstance(g, LocalGroup) and not (
                torch.distributed.is_available()
                and isinstance(g, torch.distributed.ProcessGroup)):
            raise MokInputError(f"group={g!r}: None, a peers.LocalGroup or a torch.distributed "
                                f"process group is required")
        check_gpu(self.device, cfg.precision)
        if self.local_group:
            if self.group.size != self.ep or self.rank is None or not 0 <= self.rank < self.ep:
                raise ValueError(f"LocalGroup of {self.group.size} ranks needs ep={self.group.size} "
                                 f"and rank in 0..{self.group.size - 1}; got ep={self.ep}, "
                                 f"rank={self.rank}")
        elif self.group is not None:
            import torch.distributed as dist
            size, me = dist.get_world_size(self.group), dist.get_rank(self.group)
            if size != self.ep or self.rank not in (None, me):
                raise ValueError(f"group of {size} ranks (this one {me}) but ep={self.ep}, rank={self.rank}")
            self.rank = me
        if cfg.save_for_backward and self.group is not None:
            raise ValueError("save_for_backward=True runs on one GPU (the backward megakernel has "
                             "no group mode)")
        if cfg.tma_a and self.group is not None:
            raise ValueError("tma_a=True runs on one GPU (rank=r emulation or rank=None virtual "
                             "ranks); group mode keeps pointer loads")
        if (cfg.dn_blocks or 1) > 1 and self.group is not None:
            raise ValueError(f"dn_blocks={cfg.dn_blocks} runs on one GPU (rank=r emulation or "
                             f"rank=None virtual ranks); group mode keeps dn_blocks=1")
        if (cfg.split_dn or 1) > 1 and self.group is not None:
            raise ValueError(f"split_dn={cfg.split_dn} runs on one GPU (rank=r emulation or "
                             f"rank=None virtual ranks); group mode keeps split_dn=1")
        if cfg.precision == "fp8" and self.group is not None:
            raise ValueError("precision='fp8' runs on one GPU (rank=r emulation or rank=None virtual "
                             "ranks); group mode (LocalGroup or real GPUs) is BF16 only")
        e, h, i = w.wg.shape
        if self.local_weights:
            e = e * self.ep
        self.H, self.I, self.E = int(h), int(i), int(e)
        if e % self.ep:
            raise MokInputError(f"E={e} not divisible by EP={self.ep}")
        ishared = 0 if w.sg is None else int(w.sg.shape[1])
        why = shape_refusal(self.H, self.I, ishared, cfg.block_k)
        if why:
            raise MokInputError(why)
        from .knobs import resolve_layer   # unset knobs: the model's choice (knobs.py)
        self.cfg, self.knob_source = resolve_layer(self)
        cfg = self.cfg
        if cfg.group_m is None:            # per shape class, measured (tiles.py)
            self.cfg = cfg = dataclasses.replace(
                cfg, group_m=forward_group_m(self.I, self.H, cfg.bn_gu, cfg.block_k))
        cfg.validate()
        # I is zero-padded to whole gate/up column blocks: padded columns give SwiGLU 0 and meet
        # zero rows of the down weights, so they add exactly nothing. The last down column block
        # may pass H: it is masked (and TMA fills the missing weight columns with zeros).
        self.Ip = padded_width(self.I, cfg.bn_gu, cfg.block_k)
        why = pointer_weight_refusal(self.H, self.Ip)
        if why and cfg.precision == "bf16" and not cfg.tma:
            raise MokInputError(f"tma=False: {why}; tma=True loads weight tiles by descriptor "
                                f"coordinates instead")
        self.has_shared = ishared > 0
        p, n, k = self.ep, self.tokens, self.topk
        self.el = e // p
        self.vranks = p if self.rank is None else 1          # ranks this launch serves
        if self.local_weights and self.rank is None:
            raise MokInputError("local_weights=True needs a rank (rank=None serves every rank's "
                                "experts)")
        dev, bf = self.device, torch.bfloat16
        ip = self.Ip
        # the copy loop's and the epilogue's column chunk: a power of two, the last one masked
        self.chunk = min(1024, 1 << (self.H - 1).bit_length())
        self.flag_epoch = 4 * p + self.FLAG_EPOCH      # group mode's epoch and prologue words
        self.flag_enter = 4 * p + self.FLAG_ENTER
        self.wg, self.wu, self.wd, self.wg_s, self.wd_s = self._pack(w)
        v = self.vranks
        self.ns = n                  # home tokens per rank (the shared expert's rows)
        # first home token of this launch in the send/combine/weight arrays it is given
        self.tok0 = 0 if self.rank is None or self.group is not None else self.rank * n
        sched = self.schedule(torch.zeros(p * n, k, dtype=torch.int64, device=dev))
        c, self.t_max, self.mb_max = sched.capacity, sched.max_tiles, sched.max_minibatches
        self.capacity = c            # rows per rank
        self.ring_rows = int(ring_rows(cfg.minibatch, cfg.macrobatch, c, cfg.block_m))
        self.y_rows = int(stage_rows(c, cfg.combine == "pull"))
        ns_tiles = (n + cfg.block_m - 1) // cfg.block_m
        self.off = {"ready": 0}      # sync words of one rank; rank r's start at r * sync_stride
        self.off["gu"] = self.mb_max * p
        self.off["dn"] = self.off["gu"] + self.mb_max + 1
        self.off["hc"] = self.off["dn"] + self.mb_max + 1
        self.off["sh"] = self.off["hc"] + self.t_max
        self.off["work"] = self.off["sh"] + ns_tiles + 1
        self.off["dnall"] = self.off["work"] + 1
        self.off["split"] = self.off["dnall"] + 1     # split_dn: one counter per down block
        self.ws_tiles = ns_tiles + self.t_max         # shared then routed row tiles
        nb_dn = -(-self.H // cfg.bn_dn)

        def ws_elements(split: int) -> int:           # split_dn's fp32 workspace
            return split_workspace_elements(v, n, self.t_max, self.H, split, cfg.block_m, cfg.bn_dn)
        if cfg.split_dn is None:     # per shape class, measured (tiles.py); never past the limit
            s = 1 if self.group is not None or (cfg.dn_blocks or 1) > 1 else forward_split_dn(
                n, k, self.E, p, self.H, self.I, cfg.block_m, cfg.bn_dn, cfg.precision)
            s = s if ws_elements(s) * 4 <= SPLIT_WS_MAX_BYTES else 1
            self.cfg = cfg = dataclasses.replace(cfg, split_dn=s)
        if cfg.dn_blocks is None:    # per shape class, measured (tiles.py)
            sms = self._programs_per_rank()
            d = 1 if (self.group is not None or not cfg.tma or cfg.skip_gemm
                      or sms is None) else forward_dn_blocks(
                n, k, self.E, p, self.H, self.I, sms, cfg.block_m, cfg.bn_dn, cfg.block_k,
                cfg.bn_gu, cfg.precision, cfg.split_dn)
            self.cfg = cfg = dataclasses.replace(cfg, dn_blocks=d)
        self.sync_stride = self.off["split"] + (self.ws_tiles * nb_dn if cfg.split_dn > 1 else 0)
        n_ws = ws_elements(cfg.split_dn)
        if n_ws * 4 > SPLIT_WS_MAX_BYTES:    # refused before the layer's buffers are allocated
            raise ValueError(
                f"split_dn={cfg.split_dn} needs a {n_ws * 4 / 2**30:.1f} GiB fp32 workspace "
                f"({self.ws_tiles} row tiles per rank x {nb_dn} column blocks x "
                f"{cfg.split_dn} slices), over the {SPLIT_WS_MAX_BYTES / 2**30:.0f} GiB "
                f"limit: splitting pays where row tiles are few; use split_dn=1 here")
        fp8 = cfg.precision == "fp8"
        act = torch.float8_e4m3fn if fp8 else bf    # ring rows and SwiGLU activations
        self.hbuf = torch.empty(v * (n + c), ip, dtype=act, device=dev)
        # FP8: one fp32 scale per 128 columns of every ring row and h row; None for BF16
        self.h_s = torch.empty(v * (n + c), ip // 128, device=dev) if fp8 else None
        self.ring_s = None
        self.sh_out = torch.zeros(v * n, self.H, dtype=bf, device=dev)  # 0 without a shared expert
        self.out = torch.empty(v * n, self.H, dtype=bf, device=dev)
        self.err = torch.zeros(16, dtype=torch.int32, device=dev)  # [bitmask, info per code]
        if self.group is None:      # one GPU: every rank's buffers are slices of local tensors
            self.arena = None
            self.ring = torch.empty(v * self.ring_rows, self.H, dtype=act, device=dev)
            if fp8:
                self.ring_s = torch.empty(v * self.ring_rows, self.H // 128, device=dev)
            self.ystage = torch.empty(v * self.y_rows, self.H, dtype=bf, device=dev)
            self.comb = torch.randn(p * n * k, self.H, dtype=bf, device=dev)  # home combine buffers
            self.x_off = emulated_offsets(p, n, self.H, dev)
            self.comb_off = emulated_offsets(p, n * k, self.H, dev)
            self.sync = torch.zeros(v * self.sync_stride, dtype=torch.int32, device=dev)
            self.flags = self.p32 = self.sync    # unused placeholders outside group mode
        else:
            self._init_group()
        self.overflow_acc = torch.zeros(1, dtype=torch.int32, device=dev)  # sticky over forwards
        self.split_ws = None         # split_dn: fp32 partial down tiles
        if n_ws:
            self.split_ws = torch.empty(n_ws, dtype=torch.float32, device=dev)
        self.last_schedule: Schedule | None = None
        self.saved_gu: torch.Tensor | None = None   # save_for_backward: the last forward's g, u
        self.last_trace: torch.Tensor | None = None  # KernelConfig.trace: the last launch's stamps
        self.stall_test = 0
        # test hook: "sys" makes one GPU's pass release its cross-rank counters at system scope,
        # as group mode must (benchmarks/device/s57_scope.py times what that costs)
        self.signal_scope = "gpu"

    def _check_args(self) -> None:
        """Refuse, in one line (MokInputError, a ValueError), arguments of the wrong type or
        range before anything reads them: ep, tokens, topk (integers >= 1), rank (None or an
        integer; its range, 0 <= rank < ep, right after the Gluon pass's own check), cfg (a
        KernelConfig) and the weights (MoEWeights of 3-D routed tensors (E, H, I), (E, H, I),
        (E, I, H) and no shared expert or 2-D (H, Is), (H, Is), (Is, H))."""
        import numbers

        check_whole(ep=self.ep, tokens=self.tokens, topk=self.topk)
        for name in ("ep", "tokens", "topk"):
            setattr(self, name, int(getattr(self, name)))
        r = self.rank
        if r is not None:
            if isinstance(r, bool) or not isinstance(r, numbers.Integral):   # range: below
                raise MokInputError(f"rank={r!r}: an integer from 0 to ep-1 (or None: every "
                                    f"rank in one launch) is required")
            self.rank = int(r)
        if not isinstance(self.cfg, KernelConfig):
            raise MokInputError(f"cfg={self.cfg!r}: a KernelConfig is required")
        if not isinstance(self.allow_params_mismatch, bool):
            raise MokInputError(f"allow_params_mismatch={self.allow_params_mismatch!r}: True or "
                                f"False is required")
        if not isinstance(self.local_weights, bool):
            raise MokInputError(f"local_weights={self.local_weights!r}: True or False is required")
        try:
            torch.device(self.device)
        except (RuntimeError, TypeError):
            raise MokInputError(f"device={self.device!r}: a torch device such as 'cuda' or "
                                f"'cuda:0' is required") from None
        check_weights(self.weights)
        e = int(self.weights.wg.shape[0]) * (self.ep if self.local_weights else 1)
        if self.topk > e:       # a token's top-k ids are distinct experts
            raise MokInputError(f"topk={self.topk}: at most the layer's {e} experts")

    def _programs_per_rank(self) -> int | None:
        """Programs of one rank's share of the persistent grid (the GPU's SMs unless
        KernelConfig.grid, over the virtual ranks); None without a GPU (nothing launches)."""
        grid = self.cfg.grid
        if grid is None:
            dev = torch.device(self.device)
            if dev.type != "cuda" or not torch.cuda.is_available():
                return None
            grid = torch.cuda.get_device_properties(dev).multi_processor_count
        return max(grid // self.vranks, 1)

    def _init_gluon(self) -> None:
        """fp8_kernel="gluon": refuse what the Gluon pass cannot run, then build its GluonFP8MoK
        from the weights. Knobs: comm_sms are its comm programs, minibatch its minibatch (None:
        its measured defaults), join=False keeps its comm programs out of the item list; the
        rest are fixed (pull, push, capacity 1.0, lag 1: KernelConfig.gluon_refusal)."""
        from .gluon_fp8 import mok as gm
        cfg, w = self.cfg, self.weights
        if self.group is not None:
            raise ValueError("fp8_kernel='gluon' runs one emulated rank on one GPU (rank=r); group "
                             "mode (LocalGroup or real GPUs) is not supported")
        if self.rank is None:
            raise ValueError("fp8_kernel='gluon' runs one emulated rank (rank=r); rank=None (P "
                             "virtual ranks in one launch) is not supported")
        e, h, i = (int(d) for d in w.wg.shape)
        e *= self.ep if self.local_weights else 1
        why = gm.refusal(h, i, 0 if w.sg is None else int(w.sg.shape[1]), e, self.ep, self.rank)
        if why:
            raise ValueError(f"fp8_kernel='gluon': {why}")
        if gm.gluon is None:
            raise ValueError("fp8_kernel='gluon' needs Triton with Gluon "
                             "(triton.experimental.gluon)")
        dev = torch.device(self.device)
        cuda = dev.type == "cuda" and torch.cuda.is_available()
        arch = torch.cuda.get_device_capability(dev) if cuda else None
        if arch != (9, 0):
            raise ValueError(f"fp8_kernel='gluon' needs an sm_90 GPU (H100 / H200); device "
                             f"{self.device!r} is " + (f"sm_{arch[0]}{arch[1]}" if arch else
                                                       "not a CUDA GPU here"))
        sms = torch.cuda.get_device_properties(dev).multi_processor_count
        given = cfg.minibatch is not None and cfg.comm_sms is not None
        self.knob_source = "given" if given else "fp8_kernel='gluon' defaults"
        cfg = dataclasses.replace(
            cfg, dispatch="pull", combine="push", capacity=1.0, list_lag=1, split_dn=1,
            group_m=gm.GROUP_ROWS, minibatch=cfg.minibatch or gm.MINIBATCH,
            comm_sms=cfg.comm_sms or gm.COMM_SMS)
        if cfg.comm_sms >= sms:
            raise ValueError(f"comm_sms={cfg.comm_sms} leaves no compute programs (the Gluon "
                             f"pass runs one program on each of the {sms} SMs)")
        self.gluon = g = gm.GluonFP8MoK(
            w, self.ep, self.tokens, self.topk, self.rank, num_experts=e,
            local_weights=self.local_weights, minibatch=cfg.minibatch, comm=cfg.comm_sms,
            join=gm.JOIN if cfg.join else 1000, device=self.device)
        self.cfg = dataclasses.replace(cfg, macrobatch=cfg.macrobatch or g.cap)
        self.H, self.I, self.E, self.el, self.has_shared = h, i, e, g.el, g.has_shared
        self.capacity, self.vranks, self.ns = g.cap, 1, self.tokens
        self.comb, self.sh_out, self.out = g.comb, g.sh_out, g.out
        self.last_schedule: Schedule | None = None
        self.saved_gu: torch.Tensor | None = None

    def _pack(self, w: MoEWeights) -> tuple[torch.Tensor, ...]:
        """The kernel's weights on the device: each served rank's E/P experts then the shared
        expert (zeros when there is none), I zero-padded to Ip, and their FP8 scales (None for
        BF16). BF16: gate (V*(EL+1), H, Ip), up the same, down (V*(EL+1), Ip, H); with fuse_gu
        gate is (V*(EL+1), H, 2Ip), [gate block j | up block j] for each BN_GU block j, and up a
        placeholder view of it. FP8 (_quantize): the same matrices in e4m3 with 128 x 128 block
        scales, stored K-contiguous for the tensor cores."""
        served = range(self.ep) if self.rank is None else [self.rank]
        dev, bf, el = self.device, torch.bfloat16, self.el

        def pack(routed: torch.Tensor, shared: torch.Tensor | None, i_dim: int) -> torch.Tensor:
            extra = (shared if shared is not None else torch.zeros_like(routed[0])).to(dev, bf)[None]
            parts = []
            for r in served:
                lo = 0 if self.local_weights else r * el
                parts += [routed[lo:lo + el].to(dev, bf), extra]
            out = torch.cat(parts)
            if self.Ip != self.I:
                pad = [0, 0] * (out.dim() - 1 - i_dim) + [0, self.Ip - self.I]
                out = torch.nn.functional.pad(out, pad)
            return out.contiguous()

        wg = pack(w.wg, w.sg, 2)   # (V*(EL+1), H, Ip)
        wu = pack(w.wu, w.su, 2)   # (V*(EL+1), H, Ip)
        if self.cfg.fuse_gu:       # (V*(EL+1), H, 2Ip): [gate block j | up block j] for each j
            ne, bn, ip = wg.shape[0], self.cfg.bn_gu, self.Ip
            wg = torch.stack([wg.view(ne, self.H, ip // bn, bn), wu.view(ne, self.H, ip // bn, bn)],
                             dim=3).reshape(ne, self.H, 2 * ip).contiguous()
            wu = wg[:1, :1, :1]
        wd = pack(w.wd, w.sd, 1)   # down (V*(EL+1), Ip, H)
        if self.cfg.precision == "fp8":
            return self._quantize(wg, wd)
        return wg, wu, wd, None, None

    @staticmethod
    def _quantize(wg: torch.Tensor, wd: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """FP8 weights from the packed BF16 ones, one expert at a time (bounded float32 scratch):
        gate|up (NE, 2Ip, H) e4m3 with scales (NE, H/128, 2Ip/128), down (NE, H, Ip) e4m3 with
        scales (NE, Ip/128, H/128). Blocks are 128 x 128 of the (K, N) matrices; with bn_gu a
        multiple of 128 each gate|up block lies in one of gate or up, so the scales are those of
        gate and up quantized apart (as reference.swiglu_ffn(fp8=True) does)."""
        from .fp8 import quantize_weight
        out = []
        for t in (wg, wd):
            q, sc = zip(*(quantize_weight(m) for m in t))
            out += [torch.stack(q).transpose(1, 2).contiguous(), torch.stack(sc)]
        wgq, wgs, wdq, wds = out
        return wgq, wgq[:1, :1, :1], wdq, wgs, wds

    def load_weights(self, w: MoEWeights) -> None:
        """Replace the layer's weights in place (training changes them every step): the same
        packing as at construction, copied into the same buffers, so the TMA descriptors and any
        captured CUDA graph stay valid. ``w`` must have the construction's shapes."""
        check_weights(w)
        e = int(w.wg.shape[0]) * (self.ep if self.local_weights else 1)
        ishared = 0 if w.sg is None else int(w.sg.shape[1])
        want = (self.E, self.H, self.I, self.I if self.has_shared else 0)
        if (e, int(w.wg.shape[1]), int(w.wg.shape[2]), ishared) != want:
            raise MokInputError(f"load_weights: (E, H, I, shared width) {(e, *w.wg.shape[1:], ishared)} "
                             f"differ from the layer's {want}")
        if self.gluon is not None:
            self.gluon.load_weights(w)
            self.weights = w
            self.loaded_key = weights_key(w)
            return
        if self.cfg.precision == "fp8":
            wg, _, wd, wg_s, wd_s = self._pack(w)
            self.wg.copy_(wg)
            self.wd.copy_(wd)
            self.wg_s.copy_(wg_s)
            self.wd_s.copy_(wd_s)
        else:
            self._copy_into_packed(w)
        self.weights = w
        self.loaded_key = weights_key(w)

    def _copy_into_packed(self, w: MoEWeights) -> None:
        """BF16 load_weights: each matrix copied (and cast) straight into its place in the packed
        buffers, _pack's layout without its temporaries (one read and one write of the weights
        instead of four). The zero padding of I and a missing shared expert's zeros were written
        at construction and are never touched."""
        served = range(self.ep) if self.rank is None else [self.rank]
        el, h, i, ip, bn = self.el, self.H, self.I, self.Ip, self.cfg.bn_gu
        nf, rem = divmod(i, bn)                      # whole BN_GU blocks of I, then a part block
        fuse = self.cfg.fuse_gu
        gu = self.wg.view(self.vranks, el + 1, h, ip // bn, 2, bn) if fuse else None

        def gate_up(dst_half: int, src: torch.Tensor, v: int, e: slice | int) -> None:
            """src (..., H, I) into gate (0) or up (1) of rank slot v, expert slot(s) e."""
            if fuse:
                d = gu[v, e, ..., dst_half, :]                       # (..., H, Ip / bn, bn)
                if nf:
                    d[..., :nf, :].copy_(src[..., :nf * bn].unflatten(-1, (nf, bn)))
                if rem:
                    d[..., nf, :rem].copy_(src[..., nf * bn:])
            else:
                dst = (self.wg if dst_half == 0 else self.wu).view(self.vranks, el + 1, h, ip)
                dst[v, e, ..., :i].copy_(src)

        dd = self.wd.view(self.vranks, el + 1, ip, h)
        for v, r in enumerate(served):
            lo = 0 if self.local_weights else r * el
            experts = slice(0, el)
            gate_up(0, w.wg[lo:lo + el], v, experts)
            gate_up(1, w.wu[lo:lo + el], v, experts)
            dd[v, :el, :i].copy_(w.wd[lo:lo + el])
            if w.sg is not None:
                gate_up(0, w.sg, v, el)
                gate_up(1, w.su, v, el)
                dd[v, el, :i].copy_(w.sd)

    # pass-level flags of group mode (int32 words in each rank's arena; epochs, never reset)
    FLAG_FIN, FLAG_RDY, FLAG_SCHED, FLAG_CDONE = 0, 1, 2, 3     # x P words each
    FLAG_EPOCH, FLAG_ENTER = 0, 1                                  # after the 4*P words

    def _init_group(self) -> None:
        """Group mode: every buffer a peer touches lives in this rank's arena (same layout on
        every rank), mapped into every peer; offsets to each peer's arena in three units."""
        p, n, k, h, c = self.ep, self.tokens, self.topk, self.H, self.capacity
        bf, i32 = torch.bfloat16, torch.int32
        layout = ArenaLayout({
            "send": (bf, (n, h)), "ring": (bf, (self.ring_rows, h)), "comb": (bf, (n * k, h)),
            "ystage": (bf, (self.y_rows, h)), "ids": (torch.int64, (p * n, k)),
            "recv_src": (i32, (c,)), "recv_slot": (i32, (c,)),
            "tile_row0": (i32, (self.t_max,)), "tile_rows": (i32, (self.t_max,)),
            "mb_tile": (i32, (self.mb_max + 1,)), "mb_row": (i32, (self.mb_max + 1,)),
            "nmb": (i32, (1,)), "sync": (i32, (self.sync_stride,)), "flags": (i32, (4 * p + 2,))})
        if self.local_group:
            buf, byte_off = self.group.arena(self.rank, layout.nbytes)
        else:
            check_same_on_every_rank(self.group, {
                "shape (E, H, I, top-k, shared)": (self.E, self.H, self.I, self.topk, self.has_shared),
                "tokens per rank": n, "arena bytes": layout.nbytes,
                "kernel config": {f.name: getattr(self.cfg, f.name)
                                  for f in dataclasses.fields(self.cfg)
                                  if f.name not in ("on_error", "max_spin")}})
            self._symm = SymmetricArena(self.group, layout.nbytes, self.device)
            buf, byte_off = self._symm.buf, self._symm.offsets
        self.arena = layout.views(buf)
        a = self.arena
        self.ring, self.ystage, self.comb, self.sync = a["ring"], a["ystage"], a["comb"], a["sync"]
        self.flags = a["flags"]
        self.x_off = self.comb_off = byte_off // 2     # bf16 elements (send, ring, comb, ystage)
        self.p32 = byte_off // 4                       # int32 elements (schedule, sync, flags)
        self.p64 = byte_off // 8                       # int64 elements (ids)

    @property
    def max_spin(self) -> int:
        """Polls before a spin-wait gives up (KernelConfig.max_spin, or its default here)."""
        if self.cfg.max_spin is not None:
            return self.cfg.max_spin
        return 1 << 27 if self.group is not None and not self.local_group else 1 << 22

    def schedule(self, ids_all: torch.Tensor) -> Schedule:
        """Build the GPU-side schedule of every rank this launch serves (stacked for P virtual ranks)."""
        if self.gluon is not None:
            return self.gluon.schedule(ids_all)
        ranks = range(self.ep) if self.rank is None else [self.rank]
        scheds = [build_schedule(ids_all, ep=self.ep, num_experts=self.E, rank=r,
                                 capacity_multiplier=self.cfg.capacity,
                                 minibatch=self.cfg.minibatch, block_m=self.cfg.block_m,
                                 rotated=self.cfg.rotated)
                  for r in ranks]
        return scheds[0] if len(scheds) == 1 else stack_schedules(scheds)

    def launch(self, x_all: torch.Tensor, sched: Schedule, x_loc: torch.Tensor | None = None,
               gu: torch.Tensor | None = None) -> None:
        """Zero the sync words and run the persistent megakernel (no host read-back). ``gu``:
        (V*(NS + C), 2Ip) bf16 that receives g and u (save_for_backward), or None."""
        if self.gluon is not None:
            self._sync_gluon()
            self.gluon.launch(x_all, sched)
            return
        ks, cfg, v = _kernels(), self.cfg, self.vranks
        self.sync.zero_()
        grid = cfg.grid or torch.cuda.get_device_properties(x_all.device).multi_processor_count
        if self.local_group and not cfg.grid:
            grid //= self.ep       # P concurrent launches share the one GPU's SMs
        per_rank = grid // v
        if cfg.comm_sms >= per_rank:
            raise ValueError(f"comm_sms={cfg.comm_sms} leaves no compute programs "
                             f"({per_rank} programs per rank, grid {grid}, {v} rank(s))")
        # push dispatch: the senders' own comm programs when they run in this launch (virtual
        # ranks); otherwise this rank's comm programs act for the absent senders (emulation)
        group = self.group is not None
        push = 0 if cfg.dispatch == "pull" else (2 if v > 1 or group else 1)
        if x_loc is None:
            x_loc = x_all[self.tok0:self.tok0 + v * self.ns]
        p = self.ep
        ks["mok"][(per_rank * v,)](
            x_all, self.x_off, x_loc, self.ring, self.hbuf, self.hbuf if gu is None else gu,
            self.ystage, self.comb, self.comb_off,
            self.sh_out, self.wg, self.wu, self.wd, *self.weight_descriptors(),
            *self.activation_descriptors(),
            self.ring_s, self.h_s, self.wg_s, self.wd_s,
            sched.recv_src, sched.recv_slot,
            sched.tile_expert, sched.tile_row0, sched.tile_rows,
            sched.mb_tile, sched.mb_row, sched.num_mb, self.sync, self.err,
            self.sync if self.split_ws is None else self.split_ws, self.flags, self.p32,
            self.rank if group else 0, self.FLAG_SCHED * p, self.FLAG_CDONE * p,
            self.flag_epoch, self.off["dnall"],
            self.ns, self.ring_rows, self.tokens, self.tokens * self.topk, self.ep, self.el,
            cfg.comm_sms, int(self.has_shared),
            self.off["ready"], self.off["gu"], self.off["dn"], self.off["hc"], self.off["sh"],
            push, int(cfg.combine == "pull"), self.stall_test, self.max_spin,
            int(cfg.skip_copy), self.off["work"], int(cfg.join),
            per_rank, self.capacity, self.t_max, self.mb_max + 1, self.sync_stride,
            self.ns + self.capacity, self.y_rows,
            H=self.H, I=self.Ip, BM=cfg.block_m, BN_GU=cfg.bn_gu, BN_DN=cfg.bn_dn, BK=cfg.block_k,
            CR=cfg.copy_rows, CC=self.chunk, FUSE_GU=cfg.fuse_gu, GROUP=group, SC="sys" if group else self.signal_scope,
            FP8=cfg.precision == "fp8", F8V=int(cfg.fp8_kernel[1:]),
            SAVE_GU=gu is not None, GM=cfg.group_m, LAG=cfg.list_lag, TMA_A=self.tma_a_mode(),
            SPLIT=cfg.split_dn, SPLIT_OFF=self.off["split"], WS_T=self.ws_tiles,
            NO_GEMM=cfg.skip_gemm, DNB=cfg.dn_blocks, ROT=int(cfg.rotated),
            SHARES=int(cfg.push_loop == "shares" and push != 0), TT=max(1, 2048 // cfg.block_m),
            **self._trace_args(per_rank * v),
            num_warps=cfg.num_warps,
            num_stages=cfg.num_stages)

    def _trace_args(self, programs: int) -> dict[str, Any]:
        """The launch's trace arguments: with KernelConfig.trace a fresh zeroed stamp buffer,
        one row per program (kept as last_trace, read by mok_kernels.trace), else none."""
        if not self.cfg.trace:
            return {}
        self.last_trace = torch.zeros(programs, TRACE_COLUMNS + self.mb_max, dtype=torch.int64,
                                      device=self.sync.device)
        return dict(trace_ptr=self.last_trace, TRACE_STRIDE=self.last_trace.shape[1], TRACE=1)

    def tma_a_mode(self) -> int:
        """TMA_A of the launch: 0 off, 1 h rows only, 2 h rows and ring rows (the ring holds
        every routed row: it never wraps). FP8 and group mode refuse tma_a at construction."""
        if not self.cfg.tma_a:
            return 0
        return 2 if self.ring_rows >= self.capacity else 1

    def activation_descriptors(self) -> tuple[Any, Any]:
        """Host TMA descriptors of the ring and of h with (block_m, block_k) tiles, or (None,
        None) when TMA_A is 0 (the buffers live as long as the layer)."""
        if not self.tma_a_mode():
            return None, None
        if not hasattr(self, "_adescs"):
            from triton.tools.tensor_descriptor import TensorDescriptor
            tile = [self.cfg.block_m, self.cfg.block_k]
            self._adescs = (TensorDescriptor.from_tensor(self.ring, tile),
                            TensorDescriptor.from_tensor(self.hbuf, tile))
        return self._adescs

    def weight_descriptors(self) -> tuple[Any, Any]:
        """Host TMA descriptors of the gate|up and down weights as 2-D matrices, or (None, None)."""
        if not self.cfg.tma:
            return None, None
        if not hasattr(self, "_descs"):
            from triton.tools.tensor_descriptor import TensorDescriptor
            cfg = self.cfg
            if cfg.precision == "fp8":      # K-contiguous: tiles (N, K), transposed in the kernel
                gu = self.wg.view(-1, self.H)
                dn = self.wd.view(-1, self.Ip)
                if cfg.fp8_kernel in ("v4", "v5"):      # one gate|up tile, one down tile
                    self._descs = (TensorDescriptor.from_tensor(gu, [2 * cfg.bn_gu, cfg.block_k]),
                                   TensorDescriptor.from_tensor(dn, [cfg.bn_dn, cfg.block_k]))
                elif cfg.fp8_kernel != "v1":            # 128-row tiles: gate, up, halves of down
                    self._descs = (TensorDescriptor.from_tensor(gu, [cfg.bn_gu, cfg.block_k]),
                                   TensorDescriptor.from_tensor(dn, [128, cfg.block_k]))
                else:
                    self._descs = (TensorDescriptor.from_tensor(gu, [2 * cfg.bn_gu, cfg.block_k]),
                                   TensorDescriptor.from_tensor(dn, [cfg.bn_dn, cfg.block_k]))
            else:
                gu = self.wg.view(-1, 2 * self.Ip)
                dn = self.wd.view(-1, self.H)
                self._descs = (TensorDescriptor.from_tensor(gu, [cfg.block_k, 2 * cfg.bn_gu]),
                               TensorDescriptor.from_tensor(dn, [cfg.block_k, cfg.bn_dn]))
        return self._descs

    def epilogue(self, w_all: torch.Tensor, sched: Schedule) -> torch.Tensor:
        """Sum the k combine slots of this launch's home tokens (fixed order) plus shared output;
        NaN output and (on_error="trap") a trapped launch if the pass failed."""
        if self.gluon is not None:
            self._sync_gluon()
            return self.gluon.epilogue(w_all, sched)
        ks = _kernels()
        ks["epilogue"][(self.vranks * self.ns, -(-self.H // self.chunk))](
            self.sh_out, self.comb, w_all, self.out, self.err, sched.overflow, self.tok0,
            int(self.has_shared), int(self.cfg.on_error == "trap"), K=self.topk, H=self.H, BH=self.chunk,
            num_warps=4)
        return self.out

    def forward(self, x_all: torch.Tensor, ids_all: torch.Tensor, w_all: torch.Tensor,
                save_gu: bool | None = None) -> torch.Tensor:
        """x_all (P*N, H) bf16, ids_all (P*N, k), w_all (P*N, k) fp32 -> home output (NS, H) bf16.

        With ``group`` (real GPUs) each rank passes only its own tokens: x (N, H), ids and w (N, k).
        A stalled wait or a capacity overflow never yields usable output: the output is NaN and,
        with ``on_error="trap"`` (default, no host synchronization, graph-capturable) the launch
        traps, so the caller's next synchronization raises a CUDA error; with
        ``on_error="raise"`` the forward reads the error word and raises MegakernelStallError or
        CapacityOverflowError naming the cause. ``check()`` reads it on demand.
        With ``save_for_backward`` the forward also leaves g and u of every served row in a new
        tensor, ``saved_gu`` ((V*(NS + C), 2Ip) bf16), for ``MoKBackward.run(saved_gu=...)``.
        ``save_gu=False`` skips that for this call (a forward no backward follows: inference,
        no_grad; ``saved_gu`` is then None); True needs ``save_for_backward``; None: the config's.
        """
        if not isinstance(save_gu, (bool, type(None))):
            raise MokInputError(f"save_gu={save_gu!r}: True, False or None is required")
        if save_gu and not self.cfg.save_for_backward:
            raise MokInputError("save_gu=True needs a layer built with KernelConfig(save_for_backward=True)")
        if self.group is None:
            self.check_inputs(x_all, ids_all, w_all)
        if self.gluon is None:
            self._check_runs_here()
        if self.gluon is not None:
            self._sync_gluon()
            out = self.gluon.forward(x_all, ids_all, w_all.float().contiguous())
            self.last_schedule = self.gluon.last_schedule
        elif self.group is not None:
            out = self._forward_group(x_all, ids_all, w_all)
        else:
            sched = self.schedule(ids_all)
            self.last_schedule = sched
            self.overflow_acc += sched.overflow
            gu = None
            if self.cfg.save_for_backward and save_gu is not False:
                # a fresh tensor: the caller keeps it for the backward
                gu = torch.empty(self.vranks * (self.ns + self.capacity), 2 * self.Ip,
                                 dtype=torch.bfloat16, device=x_all.device)
            self.saved_gu = gu
            self.launch(x_all, sched, gu=gu)
            out = self.epilogue(w_all.float().contiguous(), sched)
        if self.cfg.on_error == "raise" and not self.local_group:
            self.check()           # one host read per forward; raises before the output is used
        return out

    def _check_runs_here(self) -> None:
        """Refuse (MokInputError) a forward the Triton kernels cannot run: a layer built on a
        device other than a CUDA GPU (built anywhere, a layer plans its buffers, knobs and
        schedule: tests/test_buffers.py) or, before the kernels are first defined, no Triton."""
        if torch.device(self.device).type != "cuda":
            raise MokInputError(f"forward of a layer built with device={self.device!r}: the megakernel "
                                f"runs on a CUDA GPU (build the layer with device='cuda')")
        if not _KERNELS:
            from . import require_triton
            try:
                require_triton()
            except MokInputError as exc:
                raise MokInputError(f"MoKLayer.forward {exc}") from None

    def check_inputs(self, x_all: torch.Tensor, ids_all: torch.Tensor, w_all: torch.Tensor) -> None:
        """Refuse (MokInputError, host metadata only: no device read) inputs whose layout the
        kernels do not read as given: they address token rows of x_all as row * H of a dense
        bf16 (P*N, H) matrix, and build the schedule from ids_all's shape, so another row count,
        row stride, dtype or id shape would give wrong numbers rather than an error. One GPU
        (emulated or virtual ranks); group mode checks its own (N, H) inputs."""
        rows, h, k = self.ep * self.tokens, self.H, self.topk
        for name, t in (("x_all", x_all), ("ids_all", ids_all), ("w_all", w_all)):
            if not isinstance(t, torch.Tensor):
                raise MokInputError(f"{name}: a torch.Tensor is required, got {type(t).__name__}")
            if t.device != self.out.device:
                raise MokInputError(f"{name} on {t.device}: the layer's device {self.out.device} "
                                    f"is required (the kernels read their inputs there)")
        if not integer_ids(ids_all):
            raise MokInputError(f"ids_all dtype {ids_all.dtype}: integer expert ids are required")
        if not w_all.dtype.is_floating_point:
            raise MokInputError(f"w_all dtype {w_all.dtype}: floating-point router weights are "
                                f"required")
        if x_all.dim() != 2 or tuple(x_all.shape) != (rows, h):
            raise MokInputError(f"x_all {tuple(x_all.shape)}: ({rows}, {h}) is required (every "
                                f"rank's {self.tokens} tokens of width H={h})")
        if x_all.dtype != torch.bfloat16:
            raise MokInputError(f"x_all dtype {x_all.dtype}: torch.bfloat16 is required (the "
                                f"kernel reads the rows as bf16)")
        if x_all.stride(1) != 1 or (rows > 1 and x_all.stride(0) != h):
            raise MokInputError(f"x_all strides {x_all.stride()}: ({h}, 1) are required (dense "
                                f"rows; pass x_all.contiguous())")
        for name, t in (("ids_all", ids_all), ("w_all", w_all)):
            if tuple(t.shape) != (rows, k):
                raise MokInputError(f"{name} {tuple(t.shape)}: ({rows}, {k}) is required "
                                    f"(top-{k} of each of the {rows} tokens)")

    def _sync_gluon(self) -> None:
        """The config's error handling as the Gluon pass's next launch takes it (read at each
        launch, as the Triton kernel's)."""
        self.gluon.max_spin = self.max_spin
        self.gluon.trap = self.cfg.on_error == "trap"

    def _forward_group(self, x: torch.Tensor, ids: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        """One rank of a group: prologue (pass-entry wait, tokens and ids published to every
        rank), local schedule, one persistent megakernel whose signals cross GPUs, and (push
        combine) a one-program wait for every rank's rows before the epilogue. No host sync."""
        ks, cfg, a, p, n, k = _kernels(), self.cfg, self.arena, self.ep, self.tokens, self.topk
        if a is None:
            raise ValueError("this layer was closed (its symmetric arena went back to the pool)")
        if x.shape != (n, self.H) or ids.shape != (n, k) or w.shape != (n, k):
            raise ValueError(f"group mode takes this rank's x ({n}, {self.H}), ids and w ({n}, {k});"
                             f" got {tuple(x.shape)}, {tuple(ids.shape)}, {tuple(w.shape)}")
        if x.device != self.out.device or torch.cuda.current_device() != self.out.device.index:
            raise ValueError(f"group mode: x on {x.device} and the current CUDA device "
                             f"cuda:{torch.cuda.current_device()} must both be this rank's "
                             f"{self.out.device} (the kernels launch on the current device: "
                             f"torch.cuda.set_device)")
        x = x.to(torch.bfloat16).contiguous()
        cr = cfg.copy_rows
        ks["prologue"][(min(16, -(-n // cr)),)](
            x, ids.to(torch.int64).contiguous(), a["send"], a["ids"], self.flags, self.p32,
            self.p64, self.err, self.rank, p, n, n * k, self.max_spin,
            self.FLAG_FIN * p, self.FLAG_RDY * p, self.flag_epoch, self.flag_enter,
            H=self.H, CC=self.chunk, CR=cr, BI=1024,
            num_warps=4)
        # the epilogue and check() read the rows dropped on ANY rank: those a peer drops are
        # this rank's tokens, whose combine slots would otherwise keep stale values
        sched = dataclasses.replace(self.schedule(a["ids"]), overflow=group_overflow(
            a["ids"], ep=p, num_experts=self.E, capacity_multiplier=cfg.capacity))
        self.overflow_acc += sched.overflow
        for name, src in (("recv_src", sched.recv_src), ("recv_slot", sched.recv_slot),
                          ("tile_row0", sched.tile_row0), ("tile_rows", sched.tile_rows),
                          ("mb_tile", sched.mb_tile), ("mb_row", sched.mb_row),
                          ("nmb", sched.num_mb)):
            a[name].copy_(src)     # where peers read this rank's schedule
        sched = dataclasses.replace(sched, recv_src=a["recv_src"], recv_slot=a["recv_slot"],
                                    tile_row0=a["tile_row0"], tile_rows=a["tile_rows"],
                                    mb_tile=a["mb_tile"], mb_row=a["mb_row"], num_mb=a["nmb"])
        self.last_schedule = sched
        self.launch(a["send"], sched, x_loc=x)
        if cfg.combine == "push":
            ks["wait_combined"][(1,)](self.flags, self.err, p, self.FLAG_CDONE * p,
                                      self.flag_epoch, self.max_spin, num_warps=1)
        return self.epilogue(w.float().contiguous(), sched)

    def close(self) -> None:
        """Group mode on real GPUs: hand this rank's symmetric arena back to the pool, so the next
        layer of that size reuses it without a new rendezvous. Collective: every rank closes its
        layer at the same point. The layer cannot run afterwards. A no-op in the other modes."""
        if getattr(self, "_symm", None) is not None:
            self._symm.release()
            self._symm = self.arena = None

    def check(self) -> None:
        """Raise MegakernelStallError / CapacityOverflowError if the last forward failed; either
        way the error words are zeroed. In group mode on real GPUs it is collective (every rank
        calls it at the same point, as forward does with on_error="raise"): a rank whose peer's
        waits timed out raises too, since that peer's rows in its output are not usable."""
        if self.gluon is not None:
            self.gluon.check()
            return
        err = self.err.tolist()
        over = int(self.overflow_acc.item())
        self.err.zero_()
        self.overflow_acc.zero_()
        stalled = [self.rank] if err[0] else []
        if self.group is not None and not self.local_group:
            stalled = stalled_ranks(bool(err[0]), self.group, self.err.device)
        if err[0]:
            waits = [STALL_CODES[c].format(info=err[c]) for c in sorted(STALL_CODES) if err[0] >> c & 1]
            raise MegakernelStallError("megakernel spin-wait timed out: " + "; then ".join(waits))
        if stalled:
            raise MegakernelStallError(f"megakernel spin-wait timed out on rank(s) {stalled} of "
                                       f"the group: this rank's output holds their rows")
        if over:
            raise CapacityOverflowError(
                f"schedule capacity overflow: {over} routed rows did not fit in the fixed capacity "
                f"of {self.capacity} rows (multiplier {self.cfg.capacity}) or named no expert (an "
                f"id outside [0, {self.E})); raise --capacity, or check the router's ids")


def stalled_ranks(stalled: bool, group, device) -> list[int]:
    """The ranks of `group` (torch.distributed) whose last pass timed out in a wait, from each
    rank's own flag: a collective, every rank calls it at the same point."""
    import torch.distributed as dist
    flags = torch.zeros(dist.get_world_size(group), dtype=torch.int32, device=device)
    flags[dist.get_rank(group)] = int(stalled)
    dist.all_reduce(flags, group=group)
    return [r for r, f in enumerate(flags.tolist()) if f]


def group_forward(layers: list[MoKLayer], xs: list[torch.Tensor], ids: list[torch.Tensor],
                  ws: list[torch.Tensor]) -> list[torch.Tensor]:
    """One pass of every rank of a LocalGroup, each on its own stream (concurrent launches on
    one GPU); with on_error="raise", checks every rank after all were launched."""
    group = layers[0].group
    if not group.warm:
        _warm_up(layers, xs, ids, ws)
    cur = torch.cuda.current_stream()
    outs = []
    for layer, x, i, w, st in zip(layers, xs, ids, ws, group.streams):
        st.wait_stream(cur)
        with torch.cuda.stream(st):
            outs.append(layer.forward(x, i, w))
    for st in group.streams:
        cur.wait_stream(st)
    if layers[0].cfg.on_error == "raise":
        errors = []
        for layer in layers:     # every rank checked (and its words zeroed), the first raised
            try:
                layer.check()
            except (MegakernelStallError, CapacityOverflowError) as exc:
                errors.append(exc)
        if errors:
            raise errors[0]
    return outs


def _warm_up(layers: list[MoKLayer], xs: list[torch.Tensor], ids: list[torch.Tensor],
             ws: list[torch.Tensor]) -> None:
    """Load every kernel each rank launches before ranks run concurrently on one GPU.

    CUDA loads kernels lazily, and loading may synchronize the context: a rank whose first
    launch of a kernel waits for the GPU to drain, while another rank's kernel spins waiting for
    this one, deadlocks (the CUDA programming guide's lazy-loading caveat). So each rank runs one
    pass alone with waits that give up at once, then every arena and error word is zeroed."""
    group, cfg0 = layers[0].group, [(lay.cfg.max_spin, lay.cfg.on_error) for lay in layers]
    for lay, x, i, w in zip(layers, xs, ids, ws):
        lay.cfg.max_spin, lay.cfg.on_error = 256, "raise"   # same compiled variants, no trap
        lay.forward(x, i, w)
        torch.cuda.synchronize()
    for lay, (spin, mode) in zip(layers, cfg0):
        lay.cfg.max_spin, lay.cfg.on_error = spin, mode
        lay.err.zero_()
        lay.overflow_acc.zero_()
    for arena in group.arenas:
        arena.zero_()
    torch.cuda.synchronize()
    group.warm = True
