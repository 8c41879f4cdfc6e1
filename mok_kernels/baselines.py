"""Baselines as real frameworks run them (these read counts back to the host).

- ``torch_grouped_rank``: one rank of an EP group with the peers' send buffers in local memory:
  gather received rows by expert, torch._grouped_mm gate/up, SwiGLU, grouped down, weighted
  scatter-reduce into the home rows, plus the shared expert.
- ``gemm_only``: the same routed + shared GEMMs alone (the floor a fused kernel is held to).
- ``nccl_torch_forward``: torch.distributed all_to_all_single dispatch and combine with host-read
  split sizes (any backend: NCCL on GPUs, gloo on CPU).
- ``BackwardGemms`` / ``torch_autograd_rank``: the backward pass's GEMMs alone, and torch
  autograd through the unfused rank forward (``mok bench --pass bwd``).
- ``CapacityA2A``: the strong unfused baseline: fixed-capacity all-to-all (worst-case rows per
  peer, so nothing is ever dropped) + grouped GEMMs + combine, all on the device with no host
  sync, so the whole forward is captured in one CUDA graph.
Without torch._grouped_mm for the dtype/device (e.g. float32), a per-expert loop is used.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .reference import MoEWeights


def grouped_mm(a: torch.Tensor, b: torch.Tensor, offs: torch.Tensor) -> torch.Tensor:
    """a (M, K) rows grouped by expert, b (G, K, N), offs (G,) int32 cumulative ends -> (M, N)."""
    if a.dtype == torch.bfloat16 and hasattr(torch, "_grouped_mm"):
        return torch._grouped_mm(a, b, offs=offs)
    out = torch.empty(a.shape[0], b.shape[2], dtype=a.dtype, device=a.device)
    ends = offs.tolist()
    start = 0
    for g, end in enumerate(ends):
        if end > start:
            out[start:end] = a[start:end] @ b[g]
        start = end
    return out


class LocalExperts:
    """One rank's experts packed for grouped GEMMs: gate|up fused (EL, H, 2I), down (EL, I, H)."""

    def __init__(self, w: MoEWeights, lo: int, hi: int, device: str | torch.device,
                 dtype: torch.dtype, local: bool = False) -> None:
        """Experts lo..hi-1 of w (or all of w when ``local``: w holds only these experts)."""
        self.lo, self.hi = lo, hi
        self.i = int(w.wg.shape[2])
        a, b = (0, hi - lo) if local else (lo, hi)
        self.wgu = torch.cat([w.wg[a:b], w.wu[a:b]], dim=2).to(device, dtype).contiguous()
        self.wd = w.wd[a:b].to(device, dtype).contiguous()
        self.sgu = None if w.sg is None else torch.cat([w.sg, w.su], 1).to(device, dtype).contiguous()
        self.sd = None if w.sd is None else w.sd.to(device, dtype).contiguous()

    def ffn(self, xs: torch.Tensor, offs: torch.Tensor) -> torch.Tensor:
        """Routed SwiGLU over rows grouped by local expert."""
        gu = grouped_mm(xs, self.wgu, offs)          # (M, 2I)
        h = F.silu(gu[:, :self.i]) * gu[:, self.i:]  # (M, I)
        return grouped_mm(h.contiguous(), self.wd, offs)  # (M, H)

    def shared(self, x: torch.Tensor) -> torch.Tensor | None:
        """Shared SwiGLU on local tokens, or None."""
        if self.sgu is None:
            return None
        gu = x @ self.sgu
        i = self.sgu.shape[1] // 2
        return (F.silu(gu[:, :i]) * gu[:, i:]) @ self.sd


def torch_grouped_rank(x_all: torch.Tensor, ids_all: torch.Tensor, w_all: torch.Tensor,
                       ex: LocalExperts, rank: int, tokens: int) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Rank ``rank``'s expert work plus shared expert, eager PyTorch with host syncs.

    x_all (P*N, H), ids_all (P*N, k), w_all (P*N, k) -> (weighted routed sums per source token
    (P*N, H) float32 — the combine's payload —, shared output (N, H) or None).
    """
    k = ids_all.shape[1]
    ids = ids_all.reshape(-1)
    local = (ids >= ex.lo) & (ids < ex.hi)
    sel = local.nonzero().squeeze(1)                      # host sync: row count
    le = ids[sel] - ex.lo
    le, order = torch.sort(le, stable=True)
    sel = sel[order]
    counts = torch.bincount(le, minlength=ex.hi - ex.lo)
    counts.tolist()                                       # host reads counts (split sizes)
    offs = torch.cumsum(counts, 0).to(torch.int32)
    xs = x_all[sel // k]                                  # gather (M, H)
    y = ex.ffn(xs, offs)                                  # (M, H)
    wt = w_all.reshape(-1)[sel].float()
    out = torch.zeros(x_all.shape[0], x_all.shape[1], dtype=torch.float32, device=x_all.device)
    out.index_add_(0, sel // k, y.float() * wt[:, None])  # weighted scatter-reduce
    x_loc = x_all[rank * tokens:(rank + 1) * tokens]
    return out, ex.shared(x_loc)


def gemm_only(xs: torch.Tensor, h: torch.Tensor, offs: torch.Tensor, x_loc: torch.Tensor,
              hs: torch.Tensor | None, ex: LocalExperts) -> None:
    """The routed grouped GEMMs (gate|up, down) and shared GEMMs alone, on ready inputs."""
    grouped_mm(xs, ex.wgu, offs)
    grouped_mm(h, ex.wd, offs)
    if ex.sgu is not None and hs is not None:
        x_loc @ ex.sgu
        hs @ ex.sd


def home_output(x: torch.Tensor, ys: torch.Tensor, wts: torch.Tensor, ex: LocalExperts) -> torch.Tensor:
    """Shared expert on the home tokens plus the k returned rows ys (N, k, H) weighted in slot
    order: (N, H) float32."""
    sh = ex.shared(x)
    out = torch.zeros(x.shape[0], x.shape[1], dtype=torch.float32, device=x.device) if sh is None else sh.float()
    for j in range(ys.shape[1]):
        out = out + wts[:, j:j + 1].float() * ys[:, j]
    return out


def nccl_torch_forward(x: torch.Tensor, ids: torch.Tensor, wts: torch.Tensor, ex: LocalExperts,
                       ep: int, group=None) -> torch.Tensor:
    """One rank of an EP group over torch.distributed: x (N, H), ids/wts (N, k) -> (N, H) float32.

    Dispatch and combine use all_to_all_single with split sizes read back to the host; one row
    is sent per route. The epilogue sums the k slots in order.
    """
    import torch.distributed as dist

    n, k = ids.shape
    el = ex.hi - ex.lo
    dest = (ids // el).reshape(-1)                        # (N*k,) owner rank of each route
    order = torch.sort(dest, stable=True).indices         # routes grouped by destination
    send_counts = torch.bincount(dest, minlength=ep)
    recv_counts = torch.empty_like(send_counts)
    dist.all_to_all_single(recv_counts, send_counts, group=group)
    sc, rc = send_counts.tolist(), recv_counts.tolist()   # host sync: split sizes
    send_rows = x[order // k].contiguous()
    send_eid = ids.reshape(-1)[order].contiguous()
    recv_rows = torch.empty(sum(rc), x.shape[1], dtype=x.dtype, device=x.device)
    recv_eid = torch.empty(sum(rc), dtype=send_eid.dtype, device=x.device)
    dist.all_to_all_single(recv_rows, send_rows, rc, sc, group=group)
    dist.all_to_all_single(recv_eid, send_eid, rc, sc, group=group)
    le, o = torch.sort(recv_eid - ex.lo, stable=True)
    offs = torch.cumsum(torch.bincount(le, minlength=el), 0).to(torch.int32)
    y_sorted = ex.ffn(recv_rows[o].contiguous(), offs)
    y = torch.empty_like(y_sorted)
    y[o] = y_sorted                                       # back to receive order
    back = torch.empty(n * k, x.shape[1], dtype=x.dtype, device=x.device)
    dist.all_to_all_single(back, y, sc, rc, group=group)
    ys = torch.empty_like(back)
    ys[order] = back                                      # slot order (token, j)
    ys = ys.view(n, k, -1).float()
    return home_output(x, ys, wts, ex)


class CapacityA2A:
    """One rank of the graph-capturable unfused forward: x (N, H), ids/wts (N, k) -> (N, H) fp32.

    Every peer gets a fixed block of ``cap = N * min(k, EL)`` rows (the most one rank can send to
    one peer), so split sizes are static: no count exchange, no host read, nothing dropped.
    Receivers sort the rows by local expert on the device (padding last) and run the grouped
    GEMMs; the outputs return in the same blocks and are summed in slot order.
    """

    def __init__(self, ex: LocalExperts, ep: int, tokens: int, topk: int, hidden: int,
                 device: torch.device | str, group=None, dtype: torch.dtype = torch.bfloat16) -> None:
        self.ex, self.ep, self.n, self.k, self.group = ex, ep, tokens, topk, group
        self.el = ex.hi - ex.lo
        self.cap = tokens * min(topk, self.el)
        self.send = torch.zeros(ep * self.cap, hidden, dtype=dtype, device=device)
        self.recv = torch.empty_like(self.send)
        self.back = torch.empty_like(self.send)
        self.send_eid = torch.empty(ep * self.cap, dtype=torch.int32, device=device)
        self.recv_eid = torch.empty_like(self.send_eid)

    def forward(self, x: torch.Tensor, ids: torch.Tensor, wts: torch.Tensor) -> torch.Tensor:
        import torch.distributed as dist

        n, k, p, cap, el = self.n, self.k, self.ep, self.cap, self.el
        flat = ids.reshape(-1)
        dest = flat // el                                     # (N*k,) owner of each route
        dest_s, order = torch.sort(dest, stable=True)         # routes grouped by owner
        counts = torch.zeros(p, dtype=torch.int64, device=x.device)
        counts.scatter_add_(0, dest, torch.ones_like(dest))
        start = torch.cumsum(counts, 0) - counts
        pos = torch.arange(n * k, device=x.device) - start[dest_s]
        slot = dest_s * cap + pos                             # row in the fixed send blocks
        self.send[slot] = x[order // k]
        self.send_eid.fill_(-1)
        self.send_eid[slot] = (flat[order] % el).to(torch.int32)
        dist.all_to_all_single(self.recv, self.send, group=self.group)
        dist.all_to_all_single(self.recv_eid, self.send_eid, group=self.group)
        key = torch.where(self.recv_eid < 0, el, self.recv_eid).to(torch.int64)
        key_s, o = torch.sort(key, stable=True)               # by local expert, padding last
        per = torch.zeros(el + 1, dtype=torch.int64, device=x.device)
        per.scatter_add_(0, key, torch.ones_like(key))
        offs = torch.cumsum(per[:el], 0).to(torch.int32)
        y_sorted = self.ex.ffn(self.recv[o], offs)            # rows past offs[-1]: padding
        self.recv[o] = y_sorted                               # outputs in the received blocks
        dist.all_to_all_single(self.back, self.recv, group=self.group)
        ys = torch.empty(n * k, x.shape[1], dtype=x.dtype, device=x.device)
        ys[order] = self.back[slot]                           # slot order (token, j)
        ys = ys.view(n, k, -1).float()
        return home_output(x, ys, wts, self.ex)


# ---------------------------------------------------------------------------------------------
# backward pass baselines (`mok bench --pass bwd`)

def wgrad_grouped(a: torch.Tensor, b: torch.Tensor, offs: torch.Tensor,
                  ends: list[int] | None = None) -> torch.Tensor:
    """Per-group a_g^T b_g: a (M, Ka), b (M, Nb) rows grouped by expert (offs (G,) int32 ends) ->
    (G, Ka, Nb). torch._grouped_mm's 2-D x 2-D form (groups along K) where it runs, else a loop
    over ``ends`` (the host copy of offs)."""
    if ends is None and a.dtype == torch.bfloat16 and hasattr(torch, "_grouped_mm"):
        return torch._grouped_mm(a.t(), b, offs=offs)
    ends = offs.tolist() if ends is None else ends
    out = torch.zeros(len(ends), a.shape[1], b.shape[1], dtype=a.dtype, device=a.device)
    start = 0
    for g, end in enumerate(ends):
        if end > start:
            out[g] = a[start:end].t() @ b[start:end]
        start = end
    return out


class BackwardGemms:
    """One rank's backward GEMMs alone on ready inputs (the floor the backward megakernel is held
    to): dgrad dA = dY Wd^T and dX = [dg|du] Wgu^T (grouped), wgrad dWd = h^T dY and
    dWgu = x^T [dg|du] (grouped along K), the shared expert's four on the home tokens. Weights
    are transposed once here (outside any timing), which favours the baseline."""

    def __init__(self, ex: LocalExperts, offs: torch.Tensor, m: int, tokens: int) -> None:
        self.ex, self.offs = ex, offs
        h, i2 = ex.wgu.shape[1], ex.wgu.shape[2]
        dev, dt = ex.wgu.device, ex.wgu.dtype
        self.wd_t = ex.wd.transpose(1, 2).contiguous()       # (EL, H, I)
        self.wgu_t = ex.wgu.transpose(1, 2).contiguous()     # (EL, 2I, H)
        r = lambda *s: torch.randn(*s, dtype=dt, device=dev)  # noqa: E731
        self.xs, self.dy, self.h, self.dgu = r(m, h), r(m, h), r(m, i2 // 2), r(m, i2)
        self.shared = ex.sgu is not None
        if self.shared:
            self.sd_t, self.sgu_t = ex.sd.t().contiguous(), ex.sgu.t().contiguous()
            self.xl, self.dyl = r(tokens, h), r(tokens, h)
            self.hl, self.dgul = r(tokens, i2 // 2), r(tokens, i2)
        self.ends: list[int] | None = None
        try:                                                   # grouped wgrad available?
            wgrad_grouped(self.h, self.dy, offs)
        except (RuntimeError, NotImplementedError):
            self.ends = offs.tolist()

    def refresh(self) -> None:
        for t in (self.xs, self.dy, self.h, self.dgu):
            t.normal_()

    def __call__(self) -> None:
        grouped_mm(self.dy, self.wd_t, self.offs)              # dA
        grouped_mm(self.dgu, self.wgu_t, self.offs)            # dX
        wgrad_grouped(self.h, self.dy, self.offs, self.ends)   # dWd
        wgrad_grouped(self.xs, self.dgu, self.offs, self.ends)  # dWg|dWu
        if self.shared:
            self.dyl @ self.sd_t
            self.dgul @ self.sgu_t
            self.hl.t() @ self.dyl
            self.xl.t() @ self.dgul


def torch_autograd_rank(x_all: torch.Tensor, ids_all: torch.Tensor, w_all: torch.Tensor,
                        dout_all: torch.Tensor, params: list[torch.Tensor], lo: int, hi: int,
                        rank: int, tokens: int) -> torch.Tensor:
    """The unfused rank forward of ``torch_grouped_rank`` built for torch autograd: gather the
    rows routed to experts lo..hi-1, grouped GEMMs gate|up and down, SwiGLU, the weighted
    scatter-reduce into every source token's combine payload, plus the shared expert on the
    rank's home tokens. params: leaf tensors [wgu (EL, H, 2I), wd (EL, I, H), and, with a shared
    expert, sgu (H, 2I), sd (I, H)]; x_all and w_all leaves too. Returns the scalar whose
    backward is the rank's backward pass: sum(dOut * outputs)."""
    k = ids_all.shape[1]
    ids = ids_all.reshape(-1)
    local = (ids >= lo) & (ids < hi)
    sel = local.nonzero().squeeze(1)
    le, order = torch.sort(ids[sel] - lo, stable=True)
    sel = sel[order]
    counts = torch.bincount(le, minlength=hi - lo)
    offs = torch.cumsum(counts, 0).to(torch.int32)
    wgu, wd = params[0], params[1]
    i = wgu.shape[2] // 2
    xs = x_all[sel // k]
    gu = grouped_mm(xs, wgu, offs)
    y = grouped_mm(F.silu(gu[:, :i]) * gu[:, i:], wd, offs)
    wt = w_all.reshape(-1)[sel].float()
    out = torch.zeros(x_all.shape[0], x_all.shape[1], dtype=torch.float32, device=x_all.device)
    out = out.index_add(0, sel // k, y.float() * wt[:, None])
    loss = (out * dout_all.float()).sum()
    if len(params) > 2:
        home = slice(rank * tokens, (rank + 1) * tokens)
        gs = x_all[home] @ params[2]
        i_s = params[2].shape[1] // 2
        ys = (F.silu(gs[:, :i_s]) * gs[:, i_s:]) @ params[3]
        loss = loss + (ys.float() * dout_all[home].float()).sum()
    return loss
