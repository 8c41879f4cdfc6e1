"""Training with the MoK layer: an autograd Function over the megakernel forward.

``mok_moe(x, topk_ids, topk_w, weights)`` is one MoE layer (shared SwiGLU expert plus k routed
SwiGLU experts per token, summed with the router weights, as in reference.py) that autograd can
differentiate with respect to the tokens ``x``, the router weights ``topk_w`` (the top-k gate
values: the router that produced them stays in the caller's graph) and every expert weight
(routed gate/up/down and the shared expert's). ``topk_ids`` are integers and get no gradient.

Forward. On CUDA, where the shape allows it, the MoK megakernel (``MoKLayer.forward``) computes
the output on one GPU: EP 1 by default (one rank holding every expert), or P virtual ranks in one
launch (``MegakernelForward(ep=P)``). Its weights are re-packed to bf16 from the given tensors
at every forward (``MoKLayer.load_weights``), because training changes them every step. On the
CPU, or where the megakernel refuses the shape, the forward is the PyTorch one below, computed
in float32 from the given tensors and returned in x's dtype.

Backward. Two implementations, both bitwise identical from run to run on one machine:
- With the megakernel forward (``MegakernelForward``) on CUDA, where backward.py accepts the
  layer: the backward megakernel (backward.py: one persistent Triton launch, the forward's
  communication/compute roles, fixed-order sums, no atomics on data). By default the forward of
  a call that autograd will differentiate keeps the gate/up pre-activations g, u (bf16) and the
  backward reads them (``BackwardTiles(saved_gu=True, bn_a=128, bn_x=256)``, the fastest
  backward measured); ``MegakernelForward(save_for_backward=False)`` keeps nothing and the
  backward recomputes them from the saved inputs (less memory, 1.2-1.4x slower). BF16 operands
  (x, dOut, the bf16-packed weights, the bf16 [dg|du] and w*h it stores), float32 accumulation;
  every gradient returned in its input's dtype. Its error against float32 autograd is that of a
  bf16 kernel (tested <= 2e-2 relative norm).
- Otherwise (the PyTorch forward, CPU, a layer the backward megakernel refuses): a
  reference-quality PyTorch backward. It recomputes each expert's SwiGLU activations from the
  saved inputs (nothing but the inputs is kept from the forward), experts taken one at a time in
  increasing id order, the rows of each expert in increasing token order, every product and sum
  in float32, and each token's gradient gathered with plain indexed writes to distinct rows (no
  atomics, no scatter-add). They are the exact float32 gradients of the layer at the given
  (possibly bf16) inputs and weights.
Neither differentiates the bf16 rounding inside the megakernel's forward (as with any bf16 kernel
and a backward from the saved inputs).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections import OrderedDict
from typing import Any, Callable

import torch

from mok_model.errors import MokInputError, check_whole

from .reference import MoEWeights, check_weights, integer_ids
from .tiles import shape_refusal

Forward = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, MoEWeights], torch.Tensor]
Routes = tuple[torch.Tensor, torch.Tensor, list]     # group_routes: token, slot, routes per expert


# ---------------------------------------------------------------------------------------------
# routes grouped by expert (the one host synchronization of a pass)

def group_routes(topk_ids: torch.Tensor, num_experts: int) -> tuple[torch.Tensor, torch.Tensor, list[int]]:
    """Routes sorted by expert: (token (N*k,), slot (N*k,), routes per expert [E]).

    The sort is stable over the token-major route index, so each expert's rows come in
    increasing token order. ValueError names an id outside [0, E) or a token that picks one
    expert twice (a token routes to an expert at most once)."""
    n, k = topk_ids.shape
    flat = topk_ids.reshape(-1).long()
    order = torch.sort(flat, stable=True).indices
    counts = torch.bincount(flat.clamp(0, num_experts), minlength=num_experts + 1)
    bad = (flat < 0).sum() + counts[num_experts]
    dup = (topk_ids.sort(dim=1).values.diff(dim=1) == 0).sum() if k > 1 else bad * 0
    info = torch.cat([counts[:num_experts], torch.stack([bad, dup])]).tolist()   # one host sync
    if info[-2]:
        raise MokInputError(f"{info[-2]} expert ids outside [0, {num_experts})")
    if info[-1]:
        raise MokInputError(f"{info[-1]} routes repeat an expert already picked by the same token; "
                         f"each token's top-k ids must be distinct")
    return order // k, order % k, info[:num_experts]


def _expert_slices(counts: list[int]):
    start = 0
    for e, m in enumerate(counts):
        if m:
            yield e, start, start + m
        start += m


# ---------------------------------------------------------------------------------------------
# PyTorch forward and backward (float32)

def accumulation_dtype(x: torch.Tensor) -> torch.dtype:
    """float32, or float64 for float64 tokens (so gradcheck can check the backward)."""
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def torch_forward(x: torch.Tensor, topk_ids: torch.Tensor, topk_w: torch.Tensor,
                  w: MoEWeights, routes: Routes | None = None) -> torch.Tensor:
    """The layer in PyTorch, float32: shared expert, then each expert's weighted rows added in
    increasing expert order (deterministic; no atomics). x (N, H) -> (N, H) in x's dtype.
    ``routes``: group_routes(topk_ids, E) when already computed."""
    acc = accumulation_dtype(x)
    xf = x.to(acc)
    out = torch.zeros_like(xf)
    if w.sg is not None:
        out = _swiglu(xf, w.sg.to(acc), w.su.to(acc), w.sd.to(acc))
    tok, slot, counts = routes or group_routes(topk_ids, w.num_experts)
    for e, a, b in _expert_slices(counts):
        r, s = tok[a:b], slot[a:b]
        y = _swiglu(xf[r], w.wg[e].to(acc), w.wu[e].to(acc), w.wd[e].to(acc))   # (m, H)
        out[r] = out[r] + topk_w[r, s].to(acc)[:, None] * y       # distinct rows: plain writes
    return out.to(x.dtype)


def _swiglu(x: torch.Tensor, wg: torch.Tensor, wu: torch.Tensor, wd: torch.Tensor) -> torch.Tensor:
    return (torch.nn.functional.silu(x @ wg) * (x @ wu)) @ wd


def _ffn_backward(xe: torch.Tensor, dy: torch.Tensor, wg: torch.Tensor, wu: torch.Tensor,
                  wd: torch.Tensor, need_x: bool, need_w: tuple[bool, bool, bool],
                  want_y: bool) -> dict[str, torch.Tensor]:
    """Gradients of y = (silu(xe wg) * (xe wu)) wd given dy, activations recomputed; float32.
    Returns the requested ones among dx, dwg, dwu, dwd, and y itself when ``want_y``."""
    g, u = xe @ wg, xe @ wu                            # (m, I)
    sig = torch.sigmoid(g)
    s = g * sig                                        # silu(g)
    a = s * u                                          # (m, I) SwiGLU activation
    res: dict[str, torch.Tensor] = {}
    if want_y:
        res["y"] = a @ wd
    if need_w[2]:
        res["dwd"] = a.t() @ dy                        # (I, H)
    da = dy @ wd.t()                                   # (m, I)
    du = da * s
    dg = da * u * (sig * (1 + g * (1 - sig)))          # silu'(g) = sig (1 + g (1 - sig))
    if need_w[0]:
        res["dwg"] = xe.t() @ dg                       # (H, I)
    if need_w[1]:
        res["dwu"] = xe.t() @ du
    if need_x:
        res["dx"] = dg @ wg.t() + du @ wu.t()          # (m, H)
    return res


def torch_backward(gout: torch.Tensor, x: torch.Tensor, topk_ids: torch.Tensor,
                   topk_w: torch.Tensor, w: MoEWeights, needs: tuple[bool, ...],
                   routes: Routes | None = None) -> tuple[torch.Tensor | None, ...]:
    """Gradients (dx, dtopk_w, dwg, dwu, dwd, dsg, dsu, dsd) of sum(gout * layer(x)); None where
    ``needs`` (x, topk_w, wg, wu, wd, sg, su, sd) is False. Deterministic (experts in increasing
    id order, plain writes to distinct rows), float32 inside (float64 for float64 tokens), each
    gradient returned in its input's dtype."""
    need_x, need_tw, need_r = needs[0], needs[1], needs[2:5]
    need_s = needs[5:8] if w.sg is not None else (False, False, False)
    acc = accumulation_dtype(x)
    g, xf = gout.to(acc), x.to(acc)
    n, h = xf.shape
    dx = torch.zeros(n, h, dtype=acc, device=x.device) if need_x else None
    dtw = torch.zeros(topk_w.shape, dtype=acc, device=x.device) if need_tw else None
    zero = lambda t: torch.zeros(t.shape, dtype=acc, device=t.device)  # noqa: E731
    dr = [zero(t) if need else None for t, need in zip((w.wg, w.wu, w.wd), need_r)]
    ds: list[torch.Tensor | None] = [None, None, None]
    if w.sg is not None and (need_x or any(need_s)):   # shared expert: every token, weight 1
        res = _ffn_backward(xf, g, w.sg.to(acc), w.su.to(acc), w.sd.to(acc), need_x, need_s, False)
        ds = [res.get(name) for name in ("dwg", "dwu", "dwd")]
        if need_x:
            dx = dx + res["dx"]
    if need_x or need_tw or any(need_r):
        tok, slot, counts = routes or group_routes(topk_ids, w.num_experts)
        for e, a, b in _expert_slices(counts):
            r, s = tok[a:b], slot[a:b]
            xe, ge = xf[r], g[r]                       # (m, H)
            wts = topk_w[r, s].to(acc)                 # (m,)
            res = _ffn_backward(xe, ge * wts[:, None], w.wg[e].to(acc), w.wu[e].to(acc),
                                w.wd[e].to(acc), need_x, need_r, need_tw)
            if need_tw:
                dtw[r, s] = (ge * res["y"]).sum(dim=1)
            for d, name in zip(dr, ("dwg", "dwu", "dwd")):
                if d is not None:
                    d[e] = res[name]
            if need_x:
                dx[r] = dx[r] + res["dx"]              # distinct rows: plain writes
    cast = lambda d, t: None if d is None else d.to(t.dtype)  # noqa: E731
    return (cast(dx, x), cast(dtw, topk_w), *(cast(d, t) for d, t in zip(dr, (w.wg, w.wu, w.wd))),
            *(cast(d, t) for d, t in zip(ds, (w.sg, w.su, w.sd))))


# ---------------------------------------------------------------------------------------------
# forward backends

class TorchForward:
    """The PyTorch float32 forward (any device)."""

    name = "torch"

    def __call__(self, x: torch.Tensor, topk_ids: torch.Tensor, topk_w: torch.Tensor,
                 w: MoEWeights) -> torch.Tensor:
        return torch_forward(x, topk_ids, topk_w, w)


class MegakernelForward:
    """The forward on the MoK megakernel, one GPU.

    ep=1 (default): one rank holds every expert (``MoKLayer(rank=0)``); ep=P > 1: P virtual
    ranks in one launch (``rank=None``), the tokens split evenly between them (padded with
    zero-weight tokens up to a multiple of P). One MoKLayer is built per (tokens, shape, device)
    and kept (the ``max_layers`` most recent; building one asks the tuner, 0.1-0.5 s for a new
    token count), and layers of the same shape share it: the
    weights are re-packed into it at every call, so one layer's buffers serve every MoE layer of
    a model. Knobs left unset in ``cfg`` are chosen by the model at construction (knobs.py);
    the default config takes capacity 1.0 (a trained router is skewed, and at EP 1 every route
    lands on the one rank) and ``on_error="raise"`` (a failed pass raises instead of trapping
    the launch, at the price of one host read per forward). ``bucket``: tokens per rank are
    rounded up to a multiple of it (more zero-weight padding tokens, each costing k routed rows),
    so batches of varying length reuse a few layers instead of building one per length.

    Training default (since 2026-12-01): the fastest backward measured. When autograd will run a
    backward (grad enabled and some input requiring grad; MoKFunction says so per call), each
    forward also keeps its gate and up pre-activations (``KernelConfig(save_for_backward=True)``:
    a fresh bf16 (V*(n + C), 2I) tensor per call, held by the autograd graph until the backward;
    at EP 1 and capacity 1.0, (N + N*k) x 2I x 2 bytes per MoE layer, e.g. 302 MB at 4096
    tokens, top-8, I 2048), and the backward megakernel reads them instead of recomputing the
    gate/up GEMM, with ``backward.training_tiles()`` (saved_gu=1, bn_a=256 with a_epi=128 where
    256 divides the padded I, bn_x=256, w_direct=1: the routed weight gradients written by the
    kernel in the parameters' layout and dtype, w_bf16 for bf16 parameters, the bits a float32
    result cast to them has). One H200,
    kimi-k2 / glm-5 EP 8: backward 23.52 -> 17.36 ms and 19.25 -> 13.71 ms at 4096 tokens, for
    +1.1-3.7% on the forward (docs/kernels.md, "Backward megakernel and FP8 forward"); writing the
    weight gradients directly took the autograd backward from 34.5 to 26.8 ms (E 64, H 7168,
    I 2048, 4096 tokens, EP 1, bf16; 2026-12-02, benchmarks/bwd_autograd_cost.py). Under no_grad /
    inference_mode, or with nothing requiring grad, nothing is saved and the forward costs as
    without the option.

    Opting out / choosing: ``save_for_backward=False`` keeps nothing from the forward (less
    memory; the backward recomputes g and u with ``recompute_tiles()``, 1.2-1.4x slower);
    ``save_for_backward`` overrides ``cfg.save_for_backward``. Left None, it follows ``cfg`` when
    one is given (a ``cfg`` without save_for_backward recomputes), else ``bwd_tiles.saved_gu``
    when tiles are given, else True. ``bwd_tiles``: the backward's tiles (their saved_gu must
    match); None: ``training_tiles()`` when saving, else ``recompute_tiles()``. With w_direct
    tiles the backward sets w_bf16 from the parameters' dtype.
    """

    name = "megakernel"

    def __init__(self, ep: int = 1, cfg: Any = None, hardware: str | None = None,
                 knob_table: str | None = None, max_layers: int = 2, bucket: int = 1,
                 bwd_tiles: Any = None, save_for_backward: bool | None = None) -> None:
        from .backward import recompute_tiles, training_tiles
        from .megakernel import KernelConfig
        from .backward import BackwardTiles
        check_whole(ep=ep, bucket=bucket, max_layers=max_layers)
        ep, bucket, max_layers = int(ep), int(bucket), int(max_layers)   # numpy integers too
        if save_for_backward is not None and not isinstance(save_for_backward, bool):
            raise MokInputError(f"save_for_backward={save_for_backward!r}: True, False or None "
                                f"is required")
        if cfg is not None and not isinstance(cfg, KernelConfig):
            raise MokInputError(f"cfg={cfg!r}: a KernelConfig (or None) is required")
        if bwd_tiles is not None and not isinstance(bwd_tiles, BackwardTiles):
            raise MokInputError(f"bwd_tiles={bwd_tiles!r}: a BackwardTiles (or None; "
                                f"backward.parse_tiles reads one from a string) is required")
        self.ep, self.bucket = ep, bucket
        if save_for_backward is not None:
            save = bool(save_for_backward)
        elif cfg is not None:
            save = bool(getattr(cfg, "save_for_backward", False))
        elif bwd_tiles is not None:
            save = bool(bwd_tiles.saved_gu)
        else:
            save = True
        if cfg is None:
            cfg = KernelConfig(capacity=1.0, on_error="raise", save_for_backward=save)
        elif bool(cfg.save_for_backward) != save:
            cfg = dataclasses.replace(cfg, save_for_backward=save)
        cfg.validate()              # a bad field now, not at the first forward on the GPU
        if save and cfg.precision != "bf16":
            raise MokInputError(f"save_for_backward=True with precision {cfg.precision!r}: the backward "
                             f"megakernel is BF16 only (pass save_for_backward=False)")
        for diag in ("skip_copy", "skip_gemm"):
            if getattr(cfg, diag):
                raise MokInputError(f"{diag}=True in the autograd path: a timing diagnostic, whose "
                                 f"outputs are not the layer's")
        if cfg.precision == "fp8" and cfg.fp8_kernel == "gluon":
            raise MokInputError("fp8_kernel='gluon' in the autograd path: its backward runs on the "
                             "Triton forward's buffers and ep > 1 runs virtual ranks; use "
                             "MoKLayer(..., rank=r) for the Gluon forward (inference)")
        self.cfg, self.save = cfg, save
        self.hardware, self.knob_table, self.max_layers = hardware, knob_table, max_layers
        self.layers: OrderedDict[tuple, Any] = OrderedDict()
        if bwd_tiles is not None and bool(bwd_tiles.saved_gu) != self.save:
            raise MokInputError(f"bwd_tiles.saved_gu={bwd_tiles.saved_gu} but save_for_backward="
                             f"{self.save}: the backward reads saved g/u exactly when the forward "
                             f"saves them")
        self.bwd_tiles = bwd_tiles if bwd_tiles is not None else (
            training_tiles() if save else recompute_tiles())
        self._saved_gu: torch.Tensor | None = None    # the last forward's g, u (take_saved_gu)

    def tiles_for(self, saved: bool) -> Any:
        """The backward's tiles for a pass with (``saved``) or without the forward's g, u:
        ``bwd_tiles`` when its saved_gu matches, else that mode's default (training_tiles() /
        recompute_tiles())."""
        from .backward import recompute_tiles, training_tiles
        if bool(self.bwd_tiles.saved_gu) == saved:
            return self.bwd_tiles
        return training_tiles() if saved else recompute_tiles()

    def why_not(self, x: torch.Tensor, w: MoEWeights, topk: int) -> str | None:
        """Why this forward cannot take the inputs (None when it can)."""
        if not x.is_cuda:
            return f"x is on {x.device}, the megakernel runs on CUDA"
        e, h, i = (int(d) for d in w.wg.shape)
        ishared = 0 if w.sg is None else int(w.sg.shape[1])
        why = shape_refusal(h, i, ishared, self.cfg.block_k)
        if why:
            return why
        if e % self.ep:
            return f"{e} experts do not split over ep={self.ep}"
        if topk > e:
            return f"top-{topk} of {e} experts"
        try:
            import triton  # noqa: F401
        except ImportError:
            return "Triton is not installed"
        return None

    def layer_for(self, n: int, topk: int, w: MoEWeights, device: torch.device,
                  reload: bool = True) -> Any:
        """The cached MoKLayer for n tokens per rank (built on first use), weights loaded:
        always (``reload``, a forward: weights may have been written where no version counter
        sees it, e.g. a collective into their storage), else only where the layer's buffers
        hold other weights than ``w`` (the backward: autograd refuses weights written in place
        since the forward, and another layer of the same shape may have loaded its own)."""
        from .megakernel import MoKLayer, weights_key
        key = (n, topk, tuple(w.wg.shape), None if w.sg is None else tuple(w.sg.shape), str(device))
        layer = self.layers.pop(key, None)
        if layer is None:
            while len(self.layers) >= self.max_layers:
                self.layers.popitem(last=False)[1].close()
            layer = MoKLayer(w, self.ep, n, topk, 0 if self.ep == 1 else None,
                             dataclasses.replace(self.cfg), device=str(device),
                             hardware=self.hardware, knob_table=self.knob_table)
        elif reload or layer.loaded_key != weights_key(w):
            layer.load_weights(w)
        self.layers[key] = layer
        return layer

    def __call__(self, x: torch.Tensor, topk_ids: torch.Tensor, topk_w: torch.Tensor,
                 w: MoEWeights, save_for_backward: bool | None = None) -> torch.Tensor:
        """The layer's output (n, H) in x's dtype. ``save_for_backward``: False keeps nothing
        for this call (MoKFunction passes whether autograd will run a backward); None or True:
        g and u are kept (take_saved_gu) when this forward saves (``self.save``) and the backward
        megakernel accepts the layer."""
        from .backward import why_not_backward
        why = self.why_not(x, w, topk_ids.shape[1])
        if why is not None:
            raise MokInputError(f"the megakernel cannot run this layer: {why}")
        n_all, k = topk_ids.shape
        p = self.ep
        n = -(-max(1, -(-n_all // p)) // self.bucket) * self.bucket   # tokens per rank
        pad = n * p - n_all
        xb = x.to(torch.bfloat16)
        ids, wts = topk_ids.long(), topk_w.float()
        if pad:   # zero tokens with zero weights on k distinct experts: they add exactly nothing
            dev = x.device
            xb = torch.cat([xb, torch.zeros(pad, x.shape[1], dtype=xb.dtype, device=dev)])
            ids = torch.cat([ids, torch.arange(k, device=dev).expand(pad, k)])
            wts = torch.cat([wts, torch.zeros(pad, k, dtype=wts.dtype, device=dev)])
        layer = self.layer_for(n, k, w, x.device)
        keep = self.save and save_for_backward is not False and why_not_backward(layer) is None
        out = layer.forward(xb.contiguous(), ids.contiguous(), wts.contiguous(),
                            save_gu=keep)                  # (P*n, H) bf16
        self._saved_gu, layer.saved_gu = layer.saved_gu, None     # the layer keeps no reference
        return out[:n_all].to(x.dtype, copy=True)      # the layer reuses its output buffer


    def take_saved_gu(self) -> torch.Tensor | None:
        """The last forward's saved g and u (save_for_backward), handed over once; else None."""
        gu, self._saved_gu = self._saved_gu, None
        return gu

    def backward(self, gout: torch.Tensor, x: torch.Tensor, topk_ids: torch.Tensor,
                 topk_w: torch.Tensor, w: MoEWeights, needs: tuple[bool, ...],
                 saved_gu: torch.Tensor | None = None) -> tuple[torch.Tensor | None, ...] | None:
        """Gradients (dx, dtopk_w, dwg, dwu, dwd, dsg, dsu, dsd) of sum(gout * layer(x)) from the
        backward megakernel (backward.py) on the layer this forward ran, None where ``needs`` is
        False; or None when the backward megakernel cannot run this layer (the caller then runs
        the PyTorch backward). The layer's weights are re-packed first where another layer of
        the same shape loaded its own since (layer_for, reload=False); tokens are padded as in
        the forward (zero tokens, weights and output gradients).
        ``saved_gu``: that forward's take_saved_gu() (save_for_backward), read instead of
        recomputing g and u."""
        from .backward import MoKBackward, why_not_backward
        n_all, k = topk_ids.shape
        p = self.ep
        n = -(-max(1, -(-n_all // p)) // self.bucket) * self.bucket
        pad = n * p - n_all
        layer = self.layer_for(n, k, w, x.device, reload=False)
        if why_not_backward(layer) is not None:
            return None
        tiles = self.tiles_for(saved_gu is not None)
        if tiles.w_direct:      # routed weight gradients written in the parameters' dtype
            tiles = dataclasses.replace(
                tiles, w_bf16=all(t.dtype == torch.bfloat16 for t in (w.wg, w.wu, w.wd)))
        attr = "mok_backward" + ("" if saved_gu is None else "_saved") + (
            "_bf16" if tiles.w_bf16 else "")
        bwd = getattr(layer, attr, None)
        if bwd is None or bwd.tiles != tiles:
            bwd = MoKBackward(layer, tiles)
            setattr(layer, attr, bwd)
        xb, gb = x.to(torch.bfloat16), gout.to(torch.bfloat16)
        ids, wts = topk_ids.long(), topk_w.float()
        if pad:
            dev = x.device
            zeros = torch.zeros(pad, x.shape[1], dtype=torch.bfloat16, device=dev)
            xb, gb = torch.cat([xb, zeros]), torch.cat([gb, zeros])
            ids = torch.cat([ids, torch.arange(k, device=dev).expand(pad, k)])
            wts = torch.cat([wts, torch.zeros(pad, k, dtype=wts.dtype, device=dev)])
        res = bwd.run(xb.contiguous(), ids.contiguous(), wts.contiguous(), gb.contiguous(),
                      saved_gu=saved_gu)
        grads = (res.dx[:n_all], res.dw[:n_all], *bwd.weight_grads(res))
        like = (x, topk_w, w.wg, w.wu, w.wd, w.sg, w.su, w.sd)
        # the pass's fresh routed weight gradients (w_direct) are handed over as they are; the
        # rest are views of buffers the next pass overwrites
        fresh = (False, False, *(res.routed is not None,) * 3, False, False, False)
        return tuple(None if not need or g is None
                     else g if own and g.dtype == t.dtype else g.to(t.dtype, copy=True)
                     for g, t, need, own in zip(grads, like, needs, fresh))


_DEFAULT_MEGAKERNEL: MegakernelForward | None = None
_WARNED: set[str] = set()


def default_megakernel() -> MegakernelForward:
    """The process's shared EP-1 megakernel forward (``backend="megakernel"`` / ``"auto"``)."""
    global _DEFAULT_MEGAKERNEL
    if _DEFAULT_MEGAKERNEL is None:
        _DEFAULT_MEGAKERNEL = MegakernelForward()
    return _DEFAULT_MEGAKERNEL


def resolve_forward(backend: str | Forward, x: torch.Tensor, w: MoEWeights, topk: int) -> Forward:
    """backend "auto" (the megakernel where it can run these inputs, else PyTorch), "torch",
    "megakernel" (ValueError when it cannot run them), or any forward callable."""
    if callable(backend):
        return backend
    if backend == "torch":
        return TorchForward()
    if backend == "megakernel":
        mk = default_megakernel()
        why = mk.why_not(x, w, topk)
        if why is not None:
            raise MokInputError(f"backend='megakernel' cannot run this layer: {why}")
        return mk
    if backend == "auto":
        mk = default_megakernel()
        why = mk.why_not(x, w, topk)
        if why is None:
            return mk
        if x.is_cuda and why not in _WARNED:       # on a GPU the fallback is worth a word, once
            _WARNED.add(why)
            warnings.warn(f"mok: the megakernel cannot run this layer ({why}); the PyTorch forward "
                          f"runs it", stacklevel=3)
        return TorchForward()
    raise MokInputError(f"backend {backend!r}: allowed auto, megakernel, torch, or a forward callable")


# ---------------------------------------------------------------------------------------------
# the autograd Function

class MoKFunction(torch.autograd.Function):
    """forward: ``fwd(x, topk_ids, topk_w, weights)`` (the megakernel or PyTorch); backward: the
    backward megakernel when ``fwd`` is a MegakernelForward whose layer it accepts, else the
    deterministic PyTorch backward above (module docstring). Inputs: x
    (N, H), topk_ids (N, k) integer, topk_w (N, k), wg/wu (E, H, I), wd (E, I, H), sg/su
    (H, Is), sd (Is, H) or None (no shared expert), fwd, and ``backward_follows``: whether
    autograd will run this call's backward (grad enabled and some input requiring grad;
    mok_moe passes it: inside ``forward`` both ``torch.is_grad_enabled()`` and
    ``ctx.needs_input_grad`` cannot tell a no_grad call); a MegakernelForward keeps g and u
    only when it is True. Output (N, H) in x's dtype."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, topk_ids: torch.Tensor, topk_w: torch.Tensor,
                wg: torch.Tensor, wu: torch.Tensor, wd: torch.Tensor, sg: torch.Tensor | None,
                su: torch.Tensor | None, sd: torch.Tensor | None, fwd: Forward,
                backward_follows: bool = True) -> torch.Tensor:
        w = MoEWeights(wg, wu, wd, sg, su, sd)
        routes = group_routes(topk_ids, w.num_experts)     # checks the ids before any launch
        if isinstance(fwd, TorchForward):
            out = torch_forward(x, topk_ids, topk_w, w, routes)
        elif isinstance(fwd, MegakernelForward):
            out = fwd(x, topk_ids, topk_w, w, save_for_backward=bool(backward_follows))
        else:
            out = fwd(x, topk_ids, topk_w, w)
        # g and u of this call (a MegakernelForward that saves; else None), kept by the graph
        # until the backward; saved as a tensor of the graph (not a ctx attribute) so that
        # saved-tensor hooks (activation checkpointing, offloading) see it like the inputs
        gu = fwd.take_saved_gu() if isinstance(fwd, MegakernelForward) else None
        ctx.save_for_backward(x, topk_ids, topk_w, wg, wu, wd, sg, su, sd, gu)
        ctx.routes = routes                                 # the backward's expert grouping
        ctx.fwd = fwd
        return out

    @staticmethod
    def backward(ctx: Any, gout: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        x, ids, tw, wg, wu, wd, sg, su, sd, saved_gu = ctx.saved_tensors
        nig = ctx.needs_input_grad
        needs = (nig[0], nig[2], nig[3], nig[4], nig[5], nig[6], nig[7], nig[8])
        w = MoEWeights(wg, wu, wd, sg, su, sd)
        grads = None
        if isinstance(ctx.fwd, MegakernelForward) and gout.is_cuda and any(needs):
            grads = ctx.fwd.backward(gout, x, ids, tw, w, needs, saved_gu)
        if grads is None:
            grads = torch_backward(gout, x, ids, tw, w, needs, ctx.routes)
        dx, dtw, dwg, dwu, dwd, dsg, dsu, dsd = grads
        return dx, None, dtw, dwg, dwu, dwd, dsg, dsu, dsd, None, None


def mok_moe(x: torch.Tensor, topk_ids: torch.Tensor, topk_w: torch.Tensor, weights: MoEWeights,
            *, backend: str | Forward = "auto") -> torch.Tensor:
    """One MoE layer that autograd can train: x (N, H), topk_ids (N, k) distinct expert ids per
    token, topk_w (N, k) router weights, ``weights`` (reference.MoEWeights; any float dtype) ->
    (N, H) in x's dtype: shared expert + sum_j topk_w[:, j] * expert_{ids[:, j]}(x).

    backend: "auto" (the megakernel on CUDA where the shape allows it, else PyTorch), "torch",
    "megakernel", or a forward callable such as ``MegakernelForward(ep=4)``. Gradients flow to
    x, topk_w and every weight; the backward is the backward megakernel after a megakernel
    forward where it accepts the layer, else PyTorch (module docstring). With the megakernel
    (default ``MegakernelForward``) a call that autograd will differentiate keeps g and u for
    the backward (the fastest backward measured; ``MegakernelForward(save_for_backward=False)``
    keeps nothing); under no_grad / inference_mode nothing is kept."""
    for name, t in (("x", x), ("topk_ids", topk_ids), ("topk_w", topk_w)):
        if not isinstance(t, torch.Tensor):
            raise MokInputError(f"{name}: a torch.Tensor is required, got {type(t).__name__}")
    check_weights(weights)
    for name, t in (("x", x), ("topk_w", topk_w)):
        if not t.dtype.is_floating_point:
            raise MokInputError(f"{name} dtype {t.dtype}: a floating-point dtype is required")
    if not integer_ids(topk_ids):
        raise MokInputError(f"topk_ids must be integers, got {topk_ids.dtype}")
    for name, t in (("topk_w", topk_w), ("topk_ids", topk_ids), *(
            (f"weights.{n}", getattr(weights, n)) for n in ("wg", "wu", "wd", "sg", "su", "sd"))):
        if t is not None and t.device != x.device:
            raise MokInputError(f"{name} on {t.device}: every input must be on x's device "
                                f"({x.device})")
    if x.dim() != 2 or topk_ids.dim() != 2 or topk_ids.shape != topk_w.shape \
            or topk_ids.shape[0] != x.shape[0] or x.shape[1] != weights.wg.shape[1]:
        raise MokInputError(f"x (N, H), topk_ids and topk_w (N, k) with H = {weights.wg.shape[1]} "
                            f"(the weights') are required; got x {tuple(x.shape)}, ids "
                            f"{tuple(topk_ids.shape)}, w {tuple(topk_w.shape)}")
    fwd = resolve_forward(backend, x, weights, int(topk_ids.shape[1]))
    tensors = (x, topk_w, weights.wg, weights.wu, weights.wd, weights.sg, weights.su, weights.sd)
    follows = torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)
    return MoKFunction.apply(x, topk_ids, topk_w, weights.wg, weights.wu, weights.wd,
                             weights.sg, weights.su, weights.sd, fwd, follows)
