"""Where each rank's buffers live, as the megakernel addresses them.

The megakernel reads peer s's send rows at ``x_base + x_off[s]`` and writes home rank r's combine
slots at ``comb_base + comb_off[r]`` (element offsets, int64 on the GPU). Sources of tables:

- ``emulated_offsets``: one launch on one GPU; all ranks' buffers are slices of one local tensor.
- group mode: every buffer a peer touches (send, ring, combine slots, staged rows, routing ids,
  schedule, signal words) lives in one *arena* per rank with the same layout on every rank
  (``ArenaLayout``), so one table of arena offsets addresses any peer's copy of any region:
  ``SymmetricArena`` (real GPUs: torch symmetric memory, mapped into every peer) or
  ``LocalGroup`` (P concurrent launches on one GPU, arenas in local HBM: the same protocol).
"""

from __future__ import annotations

from typing import Any

import torch


def emulated_offsets(ep: int, rows_per_rank: int, hidden: int, device: Any) -> torch.Tensor:
    """Offsets of P equal slices of one (P * rows_per_rank, hidden) tensor."""
    return torch.arange(ep, dtype=torch.int64, device=device) * (rows_per_rank * hidden)


ALIGN_ELEMS = 16   # the kernels assume every buffer start is a multiple of 16 elements


def pointer_offsets(ptrs: list[int], local: torch.Tensor) -> torch.Tensor:
    """Peer pointers -> element offsets from ``local``'s data pointer, checked for alignment."""
    size = local.element_size()
    base = local.data_ptr()
    offs = []
    for r, p in enumerate(ptrs):
        d = p - base
        if d % (size * ALIGN_ELEMS):
            raise ValueError(f"peer {r}'s buffer at {p:#x} is not {size * ALIGN_ELEMS}-byte aligned "
                             f"relative to the local buffer at {base:#x}")
        offs.append(d // size)
    return torch.tensor(offs, dtype=torch.int64, device=local.device)


# --------------------------------------------------------------------------------------------
# Group mode: one arena per rank, identical layout on every rank, mapped into every peer.

ARENA_ALIGN = 256   # bytes; every region starts on this boundary


class ArenaLayout:
    """Byte offsets of the regions of one rank's arena (the same on every rank of the group).

    Regions, with their dtype and shape: ``send`` bf16 (N, H) tokens peers pull; ``ring`` bf16
    (R, H) rows pushed or pulled in; ``comb`` bf16 (N*k, H) combine slots; ``ystage`` bf16
    (Y, H) rows staged for pull combine; ``ids`` int64 (P*N, k) the exchanged routing;
    ``recv_src``/``recv_slot`` int32 (C,), ``mb_tile``/``mb_row`` int32 (MB+1,), ``nmb`` int32
    (1,) this rank's schedule as peers read it; ``sync`` int32 (S,) per-pass counters (zeroed
    locally before each pass); ``flags`` int32 (F,) pass-level epoch flags (never zeroed).
    """

    def __init__(self, regions: dict[str, tuple[torch.dtype, tuple[int, ...]]]) -> None:
        self.regions = regions
        self.offset: dict[str, int] = {}
        pos = 0
        for name, (dt, shape) in regions.items():
            self.offset[name] = pos
            nbytes = torch.Size(shape).numel() * torch.empty((), dtype=dt).element_size()
            pos += -(-max(nbytes, 1) // ARENA_ALIGN) * ARENA_ALIGN
        self.nbytes = pos

    def views(self, arena: torch.Tensor) -> dict[str, torch.Tensor]:
        """Typed views of a (nbytes,) uint8 arena."""
        out = {}
        for name, (dt, shape) in self.regions.items():
            o = self.offset[name]
            n = torch.Size(shape).numel() * torch.empty((), dtype=dt).element_size()
            out[name] = arena[o:o + n].view(dt).view(shape)
        return out


def byte_offsets(ptrs: list[int], base: int, device: Any) -> torch.Tensor:
    """Peer arena pointers -> int64 byte offsets from this rank's arena, checked for alignment."""
    offs = []
    for r, p in enumerate(ptrs):
        if (p - base) % ARENA_ALIGN:
            raise ValueError(f"rank {r}'s arena at {p:#x} is not {ARENA_ALIGN}-byte aligned "
                             f"relative to this rank's arena at {base:#x}")
        offs.append(p - base)
    return torch.tensor(offs, dtype=torch.int64, device=device)


def check_same_on_every_rank(group: Any, what: dict[str, Any]) -> None:
    """Collective: raise ValueError on every rank unless every rank of ``group`` passed equal
    ``what`` (shape, knobs, arena size: the protocol assumes one layout and one schedule rule).
    Naming the first value that differs and the ranks' values."""
    import torch.distributed as dist

    mine = sorted(what.items())
    every: list[Any] = [None] * dist.get_world_size(group)
    dist.all_gather_object(every, mine, group=group)
    for key, value in mine:
        seen = [dict(r)[key] for r in every]
        if any(v != value for v in seen):
            raise ValueError(f"ranks disagree on {key}: {', '.join(f'rank {q} {v!r}' for q, v in enumerate(seen))}; "
                             f"every rank of a group must build the layer with the same shape, "
                             f"tokens and knobs (a knob table or parameters file that differs "
                             f"between hosts does this)")


class LocalGroup:
    """P ranks of an EP group on one GPU, each a separate launch on its own stream with its own
    arena: the group protocol exactly as on real GPUs, but the peers' memory is local HBM.

    Pass one LocalGroup as ``group=`` to P MoKLayers (ranks 0..P-1) and run their forwards on
    ``streams[r]`` (see ``mok_kernels.megakernel.group_forward``)."""

    def __init__(self, ep: int, device: Any = "cuda") -> None:
        from mok_model.errors import MokInputError

        from . import require_cuda
        if isinstance(ep, bool) or not isinstance(ep, int) or ep < 1:
            raise MokInputError(f"ep={ep!r}: an integer >= 1 is required")
        try:
            dev = torch.device(device)
        except (RuntimeError, TypeError):
            dev = None
        if dev is None or dev.type != "cuda":
            raise MokInputError(f"device={device!r}: a CUDA device is required (a LocalGroup runs "
                                f"its ranks on one GPU's streams)")
        require_cuda()
        self.size, self.device = ep, dev
        self.arenas: list[torch.Tensor] = []
        self.streams = [torch.cuda.Stream(self.device) for _ in range(ep)]
        self.warm = False          # group_forward loads every kernel once before concurrent runs

    def arena(self, rank: int, nbytes: int) -> tuple[torch.Tensor, torch.Tensor]:
        """This rank's zeroed arena and the byte offsets of every rank's arena from it."""
        if not self.arenas:
            self.arenas = [torch.zeros(nbytes, dtype=torch.uint8, device=self.device)
                           for _ in range(self.size)]
        if self.arenas[0].numel() != nbytes:
            raise ValueError(f"ranks of one LocalGroup need equal arenas ({self.arenas[0].numel()} "
                             f"vs {nbytes} bytes): same shape, EP, tokens and knobs on every rank")
        ptrs = [a.data_ptr() for a in self.arenas]
        return self.arenas[rank], byte_offsets(ptrs, ptrs[rank], self.device)

    def barrier(self) -> None:
        torch.cuda.synchronize(self.device)


_FREE_ARENAS: dict[tuple[str, str, int], list[tuple[torch.Tensor, Any]]] = {}


def size_class(nbytes: int) -> int:
    """Arena bytes actually allocated: nbytes rounded up to a power of two (at least 2 MiB), so
    layers of nearby shapes reuse one another's released arenas."""
    return max(1 << 21, 1 << (max(nbytes, 1) - 1).bit_length())


class SymmetricArena:
    """This rank's arena in torch symmetric memory, mapped into every peer of ``group``.

    Arenas are pooled per (group, device, size class): ``release()`` hands this one back, and the
    next arena of that class reuses it (zeroed behind a group barrier) with no new allocation and
    no new rendezvous. Symmetric memory is never freed while the process runs, so an address is
    never mapped twice (with an allocation and rendezvous per layer, a 2-GPU grid once stalled at
    a new layer's first pass; with the pool, the 384 layers of the next two grids did not).
    Every rank must create and release arenas in the same order: build and close layers
    collectively, as the whole group does with any collective."""

    def __init__(self, group: Any, nbytes: int, device: Any) -> None:
        import torch.distributed as dist
        import torch.distributed._symmetric_memory as symm_mem

        # Every rank idle and here before any symmetric allocation, rendezvous or GPU barrier.
        # Without this, host work between the caller's last collective and this point (the
        # tuner choosing knobs, a garbage collection) made one rank's GPU barrier below wait
        # forever at the second layer of a process (2 H200s, 2026-11-30: mok_kernels/NOTES.md).
        torch.cuda.synchronize(device)
        dist.barrier(group=group)
        self.key = (group.group_name, str(torch.device(device)), size_class(nbytes))
        free = _FREE_ARENAS.get(self.key)
        if free:
            whole, self._handle = free.pop()
        else:
            whole = symm_mem.empty(self.key[2], dtype=torch.uint8, device=device)
            self._handle = symm_mem.rendezvous(whole, group.group_name)
        self._whole = whole
        self.buf = whole[:nbytes]
        self.offsets = byte_offsets(list(self._handle.buffer_ptrs), whole.data_ptr(), device)
        self.barrier()             # a reused arena: every peer is done with its last user
        whole.zero_()
        self.barrier()             # every arena zeroed before any peer signals into it

    BARRIER_TIMEOUT_MS = 60_000

    def barrier(self) -> None:
        """GPU-side barrier of the group on the current stream (construction only); a peer
        that never arrives traps the kernel after BARRIER_TIMEOUT_MS instead of hanging."""
        self._handle.barrier(channel=0, timeout_ms=self.BARRIER_TIMEOUT_MS)

    def release(self) -> None:
        """Hand the arena back to the pool (once); the layer that held it must not run again."""
        if self._whole is not None:
            torch.cuda.synchronize(self._whole.device)
            _FREE_ARENAS.setdefault(self.key, []).append((self._whole, self._handle))
            self._whole = self.buf = None
