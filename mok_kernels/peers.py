"""Where each rank's send buffer and home combine buffer live, as the megakernel addresses them.

The megakernel reads peer s's send rows at ``x_base + x_off[s]`` and writes home rank r's combine
slots at ``comb_base + comb_off[r]`` (element offsets, int64 on the GPU). Two sources of tables:

- ``emulated_offsets``: one GPU; all ranks' buffers are slices of one local tensor.
- ``SymmetricPeers``: real GPUs of one scale-up domain; buffers are torch symmetric-memory
  allocations mapped into every peer's address space, and the offsets are the peer pointers
  relative to this rank's own buffer.
"""

from __future__ import annotations

from typing import Any

import torch

ALIGN_ELEMS = 16   # the kernel assumes every buffer start is a multiple of 16 elements (32 bytes)


def emulated_offsets(ep: int, rows_per_rank: int, hidden: int, device: Any) -> torch.Tensor:
    """Offsets of P equal slices of one (P * rows_per_rank, hidden) tensor."""
    return torch.arange(ep, dtype=torch.int64, device=device) * (rows_per_rank * hidden)


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


class SymmetricPeers:
    """Send and home combine buffers of one EP group in torch symmetric memory (any GPU count).

    ``send`` (N, H) and ``comb`` (N*k, H) are this rank's buffers; every rank maps every peer's.
    ``barrier()`` is a GPU-side barrier of the group on the current stream (no host sync).
    """

    def __init__(self, group: Any, tokens: int, topk: int, hidden: int, device: Any) -> None:
        import torch.distributed as dist
        import torch.distributed._symmetric_memory as symm_mem

        self.group = group
        self.rank, self.size = dist.get_rank(group), dist.get_world_size(group)
        name = group.group_name
        bf = torch.bfloat16
        self.send = symm_mem.empty(tokens, hidden, dtype=bf, device=device)
        self.comb = symm_mem.empty(tokens * topk, hidden, dtype=bf, device=device)
        self._send_handle = symm_mem.rendezvous(self.send, name)
        self._comb_handle = symm_mem.rendezvous(self.comb, name)
        self.x_off = pointer_offsets(list(self._send_handle.buffer_ptrs), self.send)
        self.comb_off = pointer_offsets(list(self._comb_handle.buffer_ptrs), self.comb)

    def barrier(self) -> None:
        """Every rank's prior writes (local and remote) are visible to every rank after this."""
        self._send_handle.barrier(channel=0)

    def all_gather(self, t: torch.Tensor) -> torch.Tensor:
        """(N, ...) on every rank -> (P*N, ...) in rank order, on the GPU (no host read-back)."""
        import torch.distributed as dist
        out = torch.empty((self.size * t.shape[0], *t.shape[1:]), dtype=t.dtype, device=t.device)
        dist.all_gather_into_tensor(out, t.contiguous(), group=self.group)
        return out
