"""Hugging Face transformers MoE blocks on MoK: ``replace_moe_blocks(model)``.

``MoKSparseMoE(block)`` is built from an existing sparse-MoE block and replaces it in place: it
keeps the block's router module (``gate``: same object, same parameter names, so routing, the
router's hooks and its training are the block's own), copies the expert weights into MoK's
layout as trainable parameters (reference.MoEWeights: ``wg``/``wu`` (E, H, I), ``wd`` (E, I, H),
shared ``sg``/``su`` (H, Is), ``sd`` (Is, H)), and runs the experts through
``mok_kernels.autograd.mok_moe`` (on CUDA where the shape allows it the megakernel forward and
the backward megakernel, else the float32 PyTorch forward and deterministic backward; see that
module). By default (``backend="auto"``) a training forward keeps the gate/up pre-activations
for the backward (the fastest backward measured, about 1.2-1.4x faster than recomputing them;
bf16 (N + N*k) x 2I per MoE layer until its backward); nothing is kept under no_grad or in
inference. ``backend=MegakernelForward(save_for_backward=False)`` opts out (less memory).
It returns what the block returns.

Supported blocks, in both expert layouts of transformers (4.x: one MLP module per expert; 5.x:
3-D ``gate_up_proj`` (E, 2I, H) = [gate; up] and ``down_proj`` (E, H, I)):
- ``Qwen3MoeSparseMoeBlock``: softmax over all experts in float32, top-k, renormalized over the
  top k when ``norm_topk_prob``, cast to the hidden dtype. 4.x returns (hidden, router_logits).
- ``MixtralSparseMoeBlock``: the same softmax and top-k, always renormalized (= softmax over the
  top-k logits); multiplicative router jitter in training when ``router_jitter_noise`` > 0.
  4.x returns (hidden, router_logits).
- ``DeepseekV3MoE``: sigmoid scores, grouped top-k (n_group groups, topk_group kept, scored by
  their two best experts) on scores + ``e_score_correction_bias``, weights gathered from the
  scores (without the bias), renormalized when ``norm_topk_prob``, times
  ``routed_scaling_factor``; plus the shared expert (width moe_intermediate_size x
  n_shared_experts). Returns hidden.
Routing is computed by the block's own router module where transformers has one (5.x: all
three; 4.x: DeepSeek-V3), and here, in the block's words, where the 4.x block routes inline
(Qwen3-MoE, Mixtral: its ``gate`` is a Linear). In 5.x the router logits that the model collects
(``output_router_logits``) come from hooks on the router module, which is kept; in 4.x from the
block's second output, collected by ``isinstance`` on the block's class: so the replacement is an
instance of a subclass of both MoKSparseMoE and the block's class (made per class, holding none
of the block's code: MoKSparseMoE's methods come first).

Refused with the reason: other blocks (e.g. Qwen2-MoE, whose shared expert is scaled by a
sigmoid gate), an activation other than SiLU, expert biases, transposed or interleaved 5.x expert
layouts. ``restore_moe_blocks(model)`` writes the trained weights back into the original
blocks and puts them back (to save a checkpoint that transformers loads).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from mok_model.errors import MokInputError

from .autograd import Forward, mok_moe
from .reference import MoEWeights

SUPPORTED = {"Qwen3MoeSparseMoeBlock": "qwen3_moe", "MixtralSparseMoeBlock": "mixtral",
             "DeepseekV3MoE": "deepseek_v3"}
# per-expert module attribute names of the 4.x layout: gate, up, down
_MLP_NAMES = {"qwen3_moe": ("gate_proj", "up_proj", "down_proj"), "mixtral": ("w1", "w3", "w2"),
              "deepseek_v3": ("gate_proj", "up_proj", "down_proj")}


def family_of(block: nn.Module) -> str:
    """The supported family of a block ("qwen3_moe", "mixtral", "deepseek_v3"); ValueError
    names the supported classes otherwise."""
    name = type(block).__name__
    if name not in SUPPORTED:
        extra = (" (Qwen2-MoE scales its shared expert by a sigmoid gate, which the MoK layer does "
                 "not have)" if name == "Qwen2MoeSparseMoeBlock" else "")
        raise ValueError(f"{name} is not a supported MoE block{extra}; supported: {', '.join(SUPPORTED)}")
    return SUPPORTED[name]


def _is_silu(act: Any) -> bool:
    return isinstance(act, nn.SiLU) or type(act).__name__ == "SiLUActivation" or act is F.silu


def _linear_weight(mod: nn.Module, what: str) -> nn.Parameter:
    if not isinstance(mod, nn.Linear) or mod.bias is not None:
        raise ValueError(f"{what}: a Linear without bias is required, got {mod}")
    return mod.weight


def _mlp_params(mlp: nn.Module, names: tuple[str, str, str], what: str) -> list[nn.Parameter]:
    """A SwiGLU MLP module's (gate, up, down) Linear weights: (I, H), (I, H), (H, I)."""
    if not _is_silu(getattr(mlp, "act_fn", None)):
        raise ValueError(f"{what}: the MoK layer computes SwiGLU with SiLU; got activation "
                         f"{getattr(mlp, 'act_fn', None)!r}")
    return [_linear_weight(getattr(mlp, n), f"{what}.{n}") for n in names]


def _check_fused(experts: nn.Module) -> None:
    """A 5.x fused experts module in the layout this file reads: [gate; up] concatenated, not
    transposed, no biases, SiLU."""
    bad = [f"{flag}={getattr(experts, flag)!r}" for flag, ok in
           (("is_transposed", False), ("is_concatenated", True), ("has_bias", False), ("has_gate", True))
           if getattr(experts, flag, ok) != ok]
    if bad or not _is_silu(getattr(experts, "act_fn", None)):
        raise ValueError(f"{type(experts).__name__}: expected a [gate; up] (E, 2I, H) layout without "
                         f"biases and SiLU; got {', '.join(bad) or repr(getattr(experts, 'act_fn', None))}")


def block_weights(block: nn.Module, *, grad: bool = False) -> MoEWeights:
    """The block's expert weights (``grad=True``: their gradients, zeros where None) in MoK's
    layout, as new float tensors of the block's dtype: wg/wu (E, H, I), wd (E, I, H), shared
    sg/su (H, Is), sd (Is, H) or None."""
    fam = family_of(block)
    pick = (lambda p: p.grad if p.grad is not None else torch.zeros_like(p)) if grad else (lambda p: p)
    ex = block.experts
    if isinstance(ex, nn.ModuleList):                      # transformers 4.x: one MLP per expert
        per = [_mlp_params(m, _MLP_NAMES[fam], f"experts[{j}]") for j, m in enumerate(ex)]
        if not per:
            raise MokInputError(f"{type(block).__name__}: its experts ModuleList is empty")
        for j, p in enumerate(per):         # gate, up (I, H) and down (H, I), as expert 0's
            want = [tuple(q.shape) for q in per[0]]
            if [tuple(q.shape) for q in p] != want or len(want[0]) != 2 or want[1] != want[0] \
                    or want[2] != want[0][::-1] or 0 in want[0]:
                raise MokInputError(f"experts[{j}]: gate, up, down weights "
                                    f"{[tuple(q.shape) for q in p]}: (I, H), (I, H), (H, I) "
                                    f"as every expert's are required (a block released by "
                                    f"replace_moe_blocks holds none until restored)")
        wg, wu, wd = (torch.stack([pick(p[j]).detach().t() for p in per]).contiguous() for j in range(3))
    else:                                                  # 5.x: 3-D tensors
        _check_fused(ex)
        gu, dn = pick(ex.gate_up_proj).detach(), pick(ex.down_proj).detach()   # (E, 2I, H), (E, H, I)
        i = gu.shape[1] // 2
        wg, wu = gu[:, :i].transpose(1, 2).contiguous(), gu[:, i:].transpose(1, 2).contiguous()
        wd = dn.transpose(1, 2).contiguous()
    sg = su = sd = None
    if fam == "deepseek_v3":
        g, u, d = _mlp_params(block.shared_experts, _MLP_NAMES[fam], "shared_experts")
        sg, su, sd = (pick(p).detach().t().contiguous() for p in (g, u, d))
    return MoEWeights(wg, wu, wd, sg, su, sd)


def _write_block_weights(block: nn.Module, w: MoEWeights) -> None:
    """Inverse of block_weights: put MoK-layout weights into the block's own parameters, in the
    MoK weights' dtype and device (the module may have been moved or cast since the swap)."""
    fam = family_of(block)
    ex = block.experts
    with torch.no_grad():
        if isinstance(ex, nn.ModuleList):
            for e, m in enumerate(ex):
                for p, src in zip(_mlp_params(m, _MLP_NAMES[fam], f"experts[{e}]"), (w.wg, w.wu, w.wd)):
                    p.data = src[e].detach().t().contiguous()
        else:
            ex.gate_up_proj.data = torch.cat([w.wg.detach().transpose(1, 2),
                                              w.wu.detach().transpose(1, 2)], dim=1).contiguous()
            ex.down_proj.data = w.wd.detach().transpose(1, 2).contiguous()
        if fam == "deepseek_v3":
            for p, src in zip(_mlp_params(block.shared_experts, _MLP_NAMES[fam], "shared_experts"),
                              (w.sg, w.su, w.sd)):
                p.data = src.detach().t().contiguous()


def _release_block_weights(block: nn.Module) -> None:
    """Free the block's expert tensors (the MoK module holds the copies) until restored."""
    family_of(block)
    for p in [p for n, p in block.named_parameters() if n.startswith(("experts.", "shared_experts."))]:
        p.data = torch.empty(0, dtype=p.dtype, device=p.device)


_SUBCLASSES: dict[type, type] = {}


def _subclass_for(block_cls: type) -> type:
    """MoKSparseMoE's subclass that is also an instance of the block's class (see the module
    docstring: transformers 4.x collects router logits by isinstance on the block class)."""
    sub = _SUBCLASSES.get(block_cls)
    if sub is None:
        sub = type(f"MoK{block_cls.__name__}", (MoKSparseMoE, block_cls),
                   {"__module__": __name__, "__doc__": f"MoKSparseMoE replacing a {block_cls.__name__}."})
        _SUBCLASSES[block_cls] = sub
    return sub


class MoKSparseMoE(nn.Module):
    """A Hugging Face sparse-MoE block (Qwen3-MoE, Mixtral, DeepSeek-V3) computed by the MoK
    layer; same inputs and outputs as the block (module docstring).

    block: the block to replace (its router module is shared, its expert weights copied);
    backend: ``mok_moe``'s ("auto": the megakernel on CUDA where it can, g/u saved for the
    backward in training, else PyTorch; ``autograd.MegakernelForward(save_for_backward=False)``
    saves nothing, ``MegakernelForward(ep=P, cfg=..., bwd_tiles=...)`` chooses the rest);
    release: free the block's expert tensors after copying them (replace_moe_blocks does; then
    only ``to_block()`` makes the block usable again).
    """

    def __new__(cls, block: nn.Module | None = None, *args: Any, **kwargs: Any) -> "MoKSparseMoE":
        if cls is MoKSparseMoE and block is not None:
            cls = _subclass_for(type(block))
        return nn.Module.__new__(cls)

    def __init__(self, block: nn.Module, backend: str | Forward = "auto", release: bool = False) -> None:
        nn.Module.__init__(self)        # not the block class's __init__: nothing of it is kept
        if not callable(backend) and backend not in ("auto", "torch", "megakernel"):
            raise MokInputError(f"backend {backend!r}: allowed auto, megakernel, torch, or a "
                                f"forward callable")
        if not isinstance(release, bool):
            raise MokInputError(f"release={release!r}: True or False is required")
        self.family = family_of(block)
        w = block_weights(block)
        self.gate = block.gate
        self.inline_router = isinstance(self.gate, nn.Linear)      # 4.x Qwen3-MoE / Mixtral
        top_k = getattr(block, "top_k", None)
        top_k = getattr(self.gate, "top_k", None) if top_k is None else top_k
        if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= w.num_experts:
            raise MokInputError(f"{type(block).__name__}.top_k={top_k!r}: an integer from 1 to "
                                f"{w.num_experts} (its experts) is required")
        self.top_k = top_k
        self.norm_topk_prob = bool(getattr(block, "norm_topk_prob", self.family == "mixtral"))
        if self.family == "mixtral":
            self.norm_topk_prob = True
        self.jitter_noise = float(getattr(block, "jitter_noise", 0.0) or 0.0)
        self.num_experts = w.num_experts
        self.wg, self.wu, self.wd = (nn.Parameter(t) for t in (w.wg, w.wu, w.wd))
        for name, t in (("sg", w.sg), ("su", w.su), ("sd", w.sd)):
            self.register_parameter(name, None if t is None else nn.Parameter(t))
        self.backend = backend
        self._block = [block]           # a list: not a submodule (its weights are not ours)
        if release:
            _release_block_weights(block)

    @property
    def weights(self) -> MoEWeights:
        """The expert weights in MoK's layout (the module's parameters, not copies)."""
        return MoEWeights(self.wg, self.wu, self.wd, self.sg, self.su, self.sd)

    def route(self, h: torch.Tensor) -> tuple[torch.Tensor | None, torch.Tensor, torch.Tensor]:
        """(router_logits or None, top-k weights (T, k), top-k ids (T, k)) for tokens h (T, H)."""
        if self.inline_router:          # 4.x Qwen3-MoE / Mixtral: the block's own lines
            logits = self.gate(h)
            probs = F.softmax(logits, dim=1, dtype=torch.float)
            top_w, top_i = torch.topk(probs, self.top_k, dim=-1)
            if self.norm_topk_prob:
                top_w = top_w / top_w.sum(dim=-1, keepdim=True)
            return logits, top_w.to(h.dtype), top_i
        out = self.gate(h)
        if len(out) == 3:               # 5.x routers: (logits, weights, ids)
            return out[0], out[1], out[2]
        ids, wts = out                  # 4.x DeepSeek-V3 router: (ids, weights)
        return None, wts, ids

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        shape = hidden_states.shape
        if self.training and self.jitter_noise > 0:         # Mixtral's router jitter
            hidden_states = hidden_states * torch.empty_like(hidden_states).uniform_(
                1.0 - self.jitter_noise, 1.0 + self.jitter_noise)
        h = hidden_states.reshape(-1, shape[-1])
        logits, top_w, top_i = self.route(h)
        out = mok_moe(h, top_i, top_w, self.weights, backend=self.backend).reshape(shape)
        if self.inline_router:
            return out, logits
        return out

    def to_block(self) -> nn.Module:
        """The original block with this module's (trained) weights written back into it."""
        block = self._block[0]
        _write_block_weights(block, self.weights)
        return block

    def extra_repr(self) -> str:
        return (f"family={self.family}, experts={self.num_experts}, top_k={self.top_k}, "
                f"hidden={self.wg.shape[1]}, expert_width={self.wg.shape[2]}, "
                f"shared_width={0 if self.sg is None else self.sg.shape[1]}, backend={self.backend!r}")


def _swap(model: nn.Module, want: Any, make: Any) -> int:
    hits = [(name, mod) for name, mod in model.named_modules() if name and want(mod)]
    for name, mod in hits:
        parent_name, _, child = name.rpartition(".")
        setattr(model.get_submodule(parent_name) if parent_name else model, child, make(mod))
    return len(hits)


def replace_moe_blocks(model: nn.Module, *, backend: str | Forward = "auto", release: bool = True) -> int:
    """Replace every supported sparse-MoE block of ``model`` (SUPPORTED) by a MoKSparseMoE, in
    place; returns how many it replaced (0: none found; unsupported blocks are left as they
    are). Build the optimizer after this call: the expert weights are new parameters."""
    if not isinstance(model, nn.Module):
        raise MokInputError(f"model: a torch.nn.Module is required, got {type(model).__name__}")
    return _swap(model, lambda m: type(m).__name__ in SUPPORTED and not isinstance(m, MoKSparseMoE),
                 lambda m: MoKSparseMoE(m, backend=backend, release=release))


def restore_moe_blocks(model: nn.Module) -> int:
    """Put the original blocks back, with the trained weights written into them; returns how
    many it restored."""
    return _swap(model, lambda m: isinstance(m, MoKSparseMoE), lambda m: m.to_block())
