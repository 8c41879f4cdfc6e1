"""Float32 reference MoE layer (CPU or GPU, autograd works).

One MoE layer: a shared SwiGLU expert on every token plus k routed SwiGLU experts per token,
summed with the router weights in a fixed slot order j = 0..k-1 (so results are deterministic).
``fp8=True`` gives the FP8 megakernel's reference: tokens, weights and SwiGLU activations rounded
through e4m3 with the kernel's block scales (fp8.py), every product and sum in float32.

Multi-rank semantics (expert parallelism over P ranks): rank r owns the global experts
r*E/P .. (r+1)*E/P - 1. ``served_outputs`` computes what one rank's experts produce for every
route any rank sends to it; ``rank_output`` assembles rank r's layer output from the served
outputs of all owner ranks, exactly as dispatch + expert FFN + combine + epilogue do.
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral

import torch
import torch.nn.functional as F

from mok_model.errors import MokInputError, check_whole


@dataclass
class MoEWeights:
    """Weights of one MoE layer. Routed experts (E, H, I) x2 and (E, I, H); shared (H, Is), (Is, H)."""

    wg: torch.Tensor  # (E, H, I) gate projections
    wu: torch.Tensor  # (E, H, I) up projections
    wd: torch.Tensor  # (E, I, H) down projections
    sg: torch.Tensor | None = None  # (H, Is) shared gate, None when the model has no shared expert
    su: torch.Tensor | None = None  # (H, Is) shared up
    sd: torch.Tensor | None = None  # (Is, H) shared down

    @property
    def num_experts(self) -> int:
        return int(self.wg.shape[0])

    def to(self, dtype: torch.dtype | None = None, device: torch.device | str | None = None) -> "MoEWeights":
        """Return a copy with every tensor moved/cast."""
        f = lambda t: None if t is None else t.to(device=device, dtype=dtype)  # noqa: E731
        return MoEWeights(f(self.wg), f(self.wu), f(self.wd), f(self.sg), f(self.su), f(self.sd))


def random_weights(e: int, h: int, i: int, i_shared: int, *, seed: int = 0,
                   device: str | torch.device = "cpu", dtype: torch.dtype = torch.float32) -> MoEWeights:
    """Random weights scaled so activations stay O(1) (std 1/sqrt(fan_in)). E, H, I: integers
    >= 1; i_shared: the shared expert's width (0: none); seed: a generator's (0 to 2**64 - 1)."""
    check_whole(e=e, h=h, i=i)
    check_whole(0, i_shared=i_shared)
    check_seed(seed)
    g = torch.Generator(device="cpu").manual_seed(seed)

    def r(*shape: int, fan_in: int) -> torch.Tensor:
        return (torch.randn(*shape, generator=g) / fan_in ** 0.5).to(device=device, dtype=dtype)

    sg = su = sd = None
    if i_shared > 0:
        sg, su, sd = r(h, i_shared, fan_in=h), r(h, i_shared, fan_in=h), r(i_shared, h, fan_in=i_shared)
    return MoEWeights(r(e, h, i, fan_in=h), r(e, h, i, fan_in=h), r(e, i, h, fan_in=i), sg, su, sd)


def check_seed(seed: object, name: str = "seed") -> None:
    """Refuse (MokInputError) a seed a torch generator does not take as given: an integer from 0
    to 2**64 - 1 (a float failed inside torch, a negative one wrapped around)."""
    if isinstance(seed, bool) or not isinstance(seed, Integral) or not 0 <= seed < 2**64:
        raise MokInputError(f"{name}={seed!r}: an integer from 0 to 2**64 - 1 is required")


def swiglu_ffn(x: torch.Tensor, wg: torch.Tensor, wu: torch.Tensor, wd: torch.Tensor,
               fp8: bool = False) -> torch.Tensor:
    """(silu(x Wg) * (x Wu)) Wd in float32. x (M, H) -> (M, H). fp8: x and the SwiGLU output
    quantized per 1 x 128 block, the weights per 128 x 128 block, as the FP8 megakernel does."""
    if not fp8:
        x = x.float()
        return (F.silu(x @ wg.float()) * (x @ wu.float())) @ wd.float()
    from .fp8 import BLOCK, fake_quant
    x = fake_quant(x, 1, BLOCK)
    wg, wu, wd = (fake_quant(t, BLOCK, BLOCK) for t in (wg, wu, wd))
    h = fake_quant(F.silu(x @ wg) * (x @ wu), 1, BLOCK)
    return h @ wd


def shared_output(x: torch.Tensor, w: MoEWeights, fp8: bool = False) -> torch.Tensor:
    """Shared-expert output (N, H) float32; zeros when the model has none."""
    check_weights(w)
    if not isinstance(x, torch.Tensor) or x.dim() != 2 or not x.dtype.is_floating_point \
            or x.shape[1] != w.wg.shape[1]:
        got = (f"{tuple(x.shape)} {x.dtype}" if isinstance(x, torch.Tensor) else type(x).__name__)
        raise MokInputError(f"x {got}: a floating-point (N, H) tensor with H = {w.wg.shape[1]} "
                            f"(the weights') is required")
    for name in ("sg", "su", "sd"):
        t = getattr(w, name)
        if t is not None and t.device != x.device:
            raise MokInputError(f"{name} on {t.device}: x's device {x.device} is required")
    return _shared(x, w, fp8)


def _shared(x: torch.Tensor, w: MoEWeights, fp8: bool) -> torch.Tensor:
    """shared_output on inputs already checked."""
    if w.sg is None:
        return torch.zeros(x.shape[0], x.shape[1], dtype=torch.float32, device=x.device)
    return swiglu_ffn(x, w.sg, w.su, w.sd, fp8)


def check_weights(w: MoEWeights) -> None:
    """Refuse (MokInputError, one line) weights a layer cannot hold: a MoEWeights of
    floating-point tensors holding values (not on the meta device), 3-D routed (E, H, I),
    (E, H, I), (E, I, H) and no shared expert or 2-D (H, Is), (H, Is), (Is, H)."""
    if not isinstance(w, MoEWeights):
        raise MokInputError(f"weights: a MoEWeights (mok_kernels.reference) is required, got "
                            f"{type(w).__name__}")
    for name, dims in (("wg", 3), ("wu", 3), ("wd", 3)):
        t = getattr(w, name)
        if not isinstance(t, torch.Tensor) or t.dim() != dims:
            got = (f"shape {tuple(t.shape)}" if isinstance(t, torch.Tensor)
                   else type(t).__name__)
            raise MokInputError(f"weights.{name}: a {dims}-D tensor "
                                f"{'(E, I, H)' if name == 'wd' else '(E, H, I)'} is "
                                f"required, got {got}")
    e, h, i = w.wg.shape
    if min(e, h, i) < 1:
        raise MokInputError(f"weights.wg shape {tuple(w.wg.shape)}: E, H and I must be >= 1")
    if w.wu.shape != w.wg.shape or tuple(w.wd.shape) != (e, i, h):
        raise MokInputError(f"weights: wg {tuple(w.wg.shape)}, wu {tuple(w.wu.shape)}, wd "
                            f"{tuple(w.wd.shape)}: wg and wu must be (E, H, I) and wd "
                            f"(E, I, H) = {(e, i, h)}")
    shared = (w.sg, w.su, w.sd)
    if any(t is not None for t in shared):
        if not all(isinstance(t, torch.Tensor) and t.dim() == 2 for t in shared):
            got = ", ".join(f"{n} " + (str(tuple(t.shape)) if isinstance(t, torch.Tensor)
                                       else type(t).__name__)
                            for n, t in zip(("sg", "su", "sd"), shared))
            raise MokInputError(f"weights' shared expert: sg, su and sd must all be 2-D "
                                f"tensors (or all None), got {got}")
        hs, js = w.sg.shape
        if hs != h or w.su.shape != w.sg.shape or tuple(w.sd.shape) != (js, h):
            raise MokInputError(f"weights' shared expert: sg {tuple(w.sg.shape)}, su "
                                f"{tuple(w.su.shape)}, sd {tuple(w.sd.shape)}: sg and su "
                                f"must be (H, Is) and sd (Is, H) with H={h}")
    for name in ("wg", "wu", "wd", "sg", "su", "sd"):
        t = getattr(w, name)
        if t is not None and (not t.dtype.is_floating_point or t.is_meta):
            raise MokInputError(f"weights.{name}: dtype {t.dtype} on {t.device}: floating-point "
                                f"weights holding values (not on the meta device) are required")


def integer_ids(t: torch.Tensor) -> bool:
    """Whether tensor `t` holds integer expert ids (not floating point, complex or bool)."""
    return not (t.dtype.is_floating_point or t.dtype.is_complex or t.dtype == torch.bool)


def check_layer_inputs(x: torch.Tensor, topk_ids: torch.Tensor, w: MoEWeights,
                       topk_w: torch.Tensor | None = None) -> None:
    """Refuse (MokInputError, one line) inputs the reference would compute wrongly or fail on
    deep inside: x (N, H) floating point, topk_ids (N, k) integer ids in [0, E) (an id outside
    was silently left out of the sum), distinct in each token's row (as mok_moe and MoKLayer
    take them), topk_w (N, k) floating point, and weights of the layer's shapes
    (MoEWeights: wg/wu (E, H, I), wd (E, I, H), shared sg/su (H, Is), sd (Is, H) or all None),
    all on x's device. Reads the ids' range on the host (the reference syncs anyway)."""
    check_weights(w)
    for name, t in (("x", x), ("topk_ids", topk_ids), ("topk_w", topk_w)):
        if (t is not None or name != "topk_w") and not isinstance(t, torch.Tensor):
            raise MokInputError(f"{name}: a torch.Tensor is required, got {type(t).__name__}")
    if x.dim() != 2 or not x.dtype.is_floating_point:
        raise MokInputError(f"x {tuple(x.shape)} {x.dtype}: a floating-point (N, H) tensor is required")
    n, h = x.shape
    if w.wg.shape[1] != h:
        raise MokInputError(f"weights wg {tuple(w.wg.shape)}: (E, H, I) with H = {h} (x's width) "
                            f"is required")
    if topk_ids.dim() != 2 or topk_ids.shape[0] != n:
        raise MokInputError(f"topk_ids {tuple(topk_ids.shape)}: ({n}, k) is required (x has {n} "
                            f"tokens)")
    if not integer_ids(topk_ids):
        raise MokInputError(f"topk_ids dtype {topk_ids.dtype}: integer expert ids are required")
    if topk_w is not None and tuple(topk_w.shape) != tuple(topk_ids.shape):
        raise MokInputError(f"topk_w {tuple(topk_w.shape)}: {tuple(topk_ids.shape)} is required "
                            f"(one router weight per id)")
    if topk_w is not None and not topk_w.dtype.is_floating_point:
        raise MokInputError(f"topk_w dtype {topk_w.dtype}: floating-point router weights are "
                            f"required")
    for name, t in (("topk_ids", topk_ids), ("topk_w", topk_w), *(
            (k, getattr(w, k)) for k in ("wg", "wu", "wd", "sg", "su", "sd"))):
        if t is not None and t.device != x.device:
            raise MokInputError(f"{name} on {t.device}: x's device {x.device} is required")
    e = int(w.wg.shape[0])
    if topk_ids.numel() and (int(topk_ids.min()) < 0 or int(topk_ids.max()) >= e):
        raise MokInputError(f"topk_ids in [{int(topk_ids.min())}, {int(topk_ids.max())}]: expert "
                            f"ids in [0, {e}) are required")
    dup = int((topk_ids.sort(dim=1).values.diff(dim=1) == 0).sum()) if topk_ids.shape[1] > 1 else 0
    if dup:     # as mok_moe (autograd.group_routes) and MoKLayer: a token picks an expert once
        raise MokInputError(f"{dup} routes repeat an expert already picked by the same token; "
                            f"each token's top-k ids must be distinct")


def routed_outputs(x: torch.Tensor, topk_ids: torch.Tensor, w: MoEWeights,
                   experts: range | None = None, fp8: bool = False) -> torch.Tensor:
    """Per-route expert outputs y (N, k, H) float32: y[n, j] = FFN_{ids[n,j]}(x[n]).

    Routes whose expert is not in ``experts`` (default: all; a range or a list of ids) are left
    zero.
    """
    check_weights(w)
    if experts is not None and (not isinstance(experts, (range, list, tuple)) or any(
            isinstance(e, bool) or not isinstance(e, Integral) or not 0 <= e < w.num_experts
            for e in experts)):
        raise MokInputError(f"experts {experts!r}: ids in [0, {w.num_experts}) are required (a "
                            f"range or a list of integers)")
    check_layer_inputs(x, topk_ids, w)
    return _routed(x, topk_ids, w, experts, fp8)


def _routed(x: torch.Tensor, topk_ids: torch.Tensor, w: MoEWeights, experts: range | None,
            fp8: bool) -> torch.Tensor:
    """routed_outputs on inputs already checked (each public entry checks once)."""
    n, k = topk_ids.shape
    y = torch.zeros(n, k, x.shape[1], dtype=torch.float32, device=x.device)
    experts = range(w.num_experts) if experts is None else experts
    for e in experts:
        rows, slots = (topk_ids == e).nonzero(as_tuple=True)  # host sync: reference only
        if rows.numel() == 0:
            continue
        val = swiglu_ffn(x[rows], w.wg[e], w.wu[e], w.wd[e], fp8)  # (m, H)
        y = y.index_put((rows, slots), val)  # out of place: autograd-safe
    return y


def combine(shared: torch.Tensor, y: torch.Tensor, topk_w: torch.Tensor) -> torch.Tensor:
    """Epilogue: shared + sum_j w[:, j] * y[:, j], accumulated in the fixed order j = 0..k-1."""
    out = shared.float()
    for j in range(y.shape[1]):
        out = out + topk_w[:, j:j + 1].float() * y[:, j]
    return out


def moe_reference(x: torch.Tensor, topk_ids: torch.Tensor, topk_w: torch.Tensor,
                  w: MoEWeights, fp8: bool = False) -> torch.Tensor:
    """Whole-layer reference output (N, H) float32 for tokens x (N, H)."""
    if not isinstance(topk_w, torch.Tensor):
        raise MokInputError(f"topk_w: a torch.Tensor is required, got {type(topk_w).__name__}")
    check_layer_inputs(x, topk_ids, w, topk_w)
    return combine(_shared(x, w, fp8), _routed(x, topk_ids, w, None, fp8), topk_w)


def owned_experts(rank: int, num_experts: int, ep: int) -> range:
    """Global expert ids owned by ``rank`` in an EP group of ``ep`` ranks."""
    for name, v, low in (("ep", ep, 1), ("num_experts", num_experts, 1), ("rank", rank, 0)):
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            raise MokInputError(f"{name}={v!r}: an integer >= {low} is required")
    if rank >= ep:
        raise MokInputError(f"rank={rank}: must be in 0..{ep - 1} (ep={ep})")
    if num_experts % ep:
        raise MokInputError(f"E={num_experts} is not divisible by EP={ep}")
    el = num_experts // ep
    return range(rank * el, (rank + 1) * el)


def _check_ranks(x_all: torch.Tensor, ids_all: torch.Tensor, ep: int) -> None:
    if not isinstance(ids_all, torch.Tensor) or ids_all.dim() != 3 or not isinstance(
            x_all, torch.Tensor) or x_all.dim() != 3 or x_all.shape[:2] != ids_all.shape[:2]:
        raise MokInputError(f"x_all (P, N, H) and ids_all (P, N, k) are required; got "
                            f"{tuple(getattr(x_all, 'shape', ()))}, "
                            f"{tuple(getattr(ids_all, 'shape', ()))}")
    if ids_all.shape[0] != ep:
        raise MokInputError(f"ids_all {tuple(ids_all.shape)}: {ep} ranks (ep={ep}) are required")


def served_outputs(rank: int, x_all: torch.Tensor, ids_all: torch.Tensor, w: MoEWeights,
                   ep: int) -> tuple[torch.Tensor, torch.Tensor]:
    """What rank ``rank``'s experts produce for all ranks' routes.

    x_all (P, N, H), ids_all (P, N, k) -> (y (P, N, k, H) float32, served mask (P, N, k) bool).
    y[s, n, j] is the output for source rank s, token n, slot j when rank ``rank`` owns that expert.
    """
    _check_ranks(x_all, ids_all, ep)
    own = owned_experts(rank, w.num_experts, ep)
    _check_flat(x_all, ids_all, w)
    return _served(own, x_all, ids_all, w)


def _check_flat(x_all: torch.Tensor, ids_all: torch.Tensor, w: MoEWeights) -> None:
    """check_layer_inputs on every rank's tokens as one (P*N) batch."""
    p, n, k = ids_all.shape
    check_layer_inputs(x_all.reshape(p * n, -1), ids_all.reshape(p * n, k), w)


def _served(own: range, x_all: torch.Tensor, ids_all: torch.Tensor,
            w: MoEWeights) -> tuple[torch.Tensor, torch.Tensor]:
    """served_outputs of the experts `own` on inputs already checked."""
    p, n, k = ids_all.shape
    y = _routed(x_all.reshape(p * n, -1), ids_all.reshape(p * n, k), w, own, False)
    mask = (ids_all >= own.start) & (ids_all < own.stop)
    return y.reshape(p, n, k, -1), mask


def rank_output(rank: int, x_all: torch.Tensor, ids_all: torch.Tensor, w_all: torch.Tensor,
                w: MoEWeights, ep: int) -> torch.Tensor:
    """Layer output (N, H) float32 of rank ``rank`` given every rank's inputs.

    x_all (P, N, H), ids_all (P, N, k), w_all (P, N, k). Each owner rank q serves its routes
    (served_outputs); the combine brings rank ``rank``'s rows home; the epilogue sums slots in order.
    """
    owned_experts(rank, w.num_experts, ep)         # rank, ep checked
    _check_ranks(x_all, ids_all, ep)
    if not isinstance(w_all, torch.Tensor) or not isinstance(ids_all, torch.Tensor) \
            or tuple(w_all.shape) != tuple(ids_all.shape):
        raise MokInputError(f"w_all {tuple(getattr(w_all, 'shape', ()))}: ids_all's shape "
                            f"{tuple(getattr(ids_all, 'shape', ()))} is required")
    if not w_all.dtype.is_floating_point:
        raise MokInputError(f"w_all dtype {w_all.dtype}: floating-point router weights are required")
    _check_flat(x_all, ids_all, w)          # once, not once per serving rank
    y_home = torch.zeros(ids_all.shape[1], ids_all.shape[2], x_all.shape[2],
                         dtype=torch.float32, device=x_all.device)
    for q in range(ep):
        yq, _ = _served(owned_experts(q, w.num_experts, ep), x_all, ids_all, w)
        y_home = y_home + yq[rank]  # each route is served by exactly one owner
    return combine(_shared(x_all[rank], w, False), y_home, w_all[rank])
