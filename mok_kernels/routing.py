"""Synthetic routing and model shapes for the kernel backend (tensor ops only, any device)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

# Shapes from shared data/facts.md (SwiGLU experts): hidden, expert width, experts, top-k, shared width.
SHAPES: dict[str, tuple[int, int, int, int, int]] = {
    "deepseek-v3": (7168, 2048, 256, 8, 2048),
    "kimi-k2": (7168, 2048, 384, 8, 2048),
    "glm-4.5": (5120, 1536, 160, 8, 1536),
    "glm-5": (6144, 2048, 256, 8, 2048),
    "qwen3-235b-a22b": (4096, 1536, 128, 8, 0),
    "qwen3-30b-a3b": (2048, 768, 128, 8, 0),
    "gpt-oss-120b": (2880, 2880, 128, 4, 0),
    "mixtral-8x7b": (4096, 14336, 8, 2, 0),
    "minimax-m2": (3072, 1536, 256, 8, 0),
}
ALIASES = {"kimi-k2.7-code": "kimi-k2", "glm-5.2": "glm-5"}


@dataclass(frozen=True)
class Shape:
    """An MoE layer's geometry."""

    hidden: int
    inter: int
    experts: int
    topk: int
    shared: int

    def as_dict(self) -> dict[str, int]:
        return {"hidden": self.hidden, "expert_width": self.inter, "experts": self.experts,
                "topk": self.topk, "shared_width": self.shared}


def shape_of(name: str) -> Shape:
    """Look up a preset shape by name (aliases allowed); ValueError names the allowed ones."""
    name = ALIASES.get(name, name)
    if name not in SHAPES:
        raise ValueError(f"unknown model {name!r}; allowed: {', '.join(sorted(SHAPES))}")
    return Shape(*SHAPES[name])


def parse_routing(spec: str) -> tuple[str, float]:
    """'uniform' | 'zipf:S' | 'hot:F' | 'onehot' -> (kind, parameter)."""
    if spec in ("uniform", "onehot"):
        return spec, 0.0
    kind, _, val = spec.partition(":")
    if kind in ("zipf", "hot") and val:
        return kind, float(val)
    raise ValueError(f"bad routing {spec!r}; allowed: uniform, zipf:S, hot:F, onehot")


def make_routing(n: int, e: int, k: int, spec: str, seed: int,
                 device: str | torch.device = "cpu",
                 popularity_seed: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Draw top-k routes: ids (n, k) int64 distinct per token, router weights (n, k) float32 (sum 1).

    uniform: every expert equally likely; zipf:S: expert popularity ~ 1/rank^S over a random
    permutation; hot:F: a fraction F of tokens put slot 0 on expert 0; onehot: every token's
    slot 0 is expert 0 (the rest uniform). The zipf popularity order is drawn from
    ``popularity_seed`` (default: ``seed``), so a benchmark can keep one expert popularity and
    draw fresh tokens per iteration.
    """
    kind, par = parse_routing(spec)
    dev = torch.device(device)
    g = torch.Generator(device=dev).manual_seed(seed)
    logp = torch.zeros(e, device=dev)
    if kind == "zipf":
        gp = torch.Generator(device=dev).manual_seed(seed if popularity_seed is None else popularity_seed)
        ranks = torch.randperm(e, generator=gp, device=dev).float() + 1.0
        logp = -par * torch.log(ranks)
    u = torch.rand(n, e, generator=g, device=dev).clamp_min(1e-20)
    score = logp[None, :] - torch.log(-torch.log(u))  # Gumbel-top-k: k distinct draws
    if kind in ("hot", "onehot"):
        frac = 1.0 if kind == "onehot" else par
        hot = torch.rand(n, generator=g, device=dev) < frac
        score[:, 0] = torch.where(hot, torch.full_like(score[:, 0], float("inf")), score[:, 0])
    ids = score.topk(k, dim=1).indices  # (n, k); slot 0 holds the largest score
    wts = torch.softmax(torch.randn(n, k, generator=g, device=dev), dim=1)
    return ids, wts
