"""Synthetic routing and model shapes for the kernel backend (tensor ops only, any device)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from mok_model.errors import MokInputError, check_whole
from mok_model.presets import load_model
from mok_model.workload import parse_routing as model_routing
from mok_model.workload import check_hot_fits, zipf_order

from .reference import check_seed


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
    """A model preset's layer geometry (mok_model presets; aliases allowed). MokInputError (a
    ValueError) names the allowed ones."""
    m = load_model(name)
    shared = m.shared_width * m.shared_experts
    return Shape(m.hidden, m.expert_width, m.routed_experts, m.top_k, shared)


def parse_routing(spec: str, top_k: int | None = None,
                  experts: int | None = None) -> tuple[str, float]:
    """'uniform' | 'zipf:S' | 'hot:X' | 'onehot' -> (kind, parameter), as `mok predict` reads them.

    hot:X gives expert 0 a share X of all routes (at most 1/top_k); onehot routes every token
    once to expert 0 (hot:1/top_k). With the model's `experts`, hot:X is also refused where the
    other experts cannot fill a token's top_k (check_hot_fits, which make_routing applies on the
    GPU). MokInputError (a ValueError) names the rule.
    """
    if spec == "onehot":
        return "onehot", 0.0
    kind, arg = model_routing(spec, top_k or 1)
    if kind == "file":
        raise MokInputError(f"bad routing {spec!r}; the kernel takes uniform, zipf:S, hot:X, onehot")
    if kind == "hot" and top_k is not None and experts is not None:
        check_hot_fits(spec, top_k, experts)
    return kind, float(arg or 0.0)


def routing_record(spec: str, seed: int) -> dict:
    """The run record's routing object for a kernel routing spec: kind, seed and, for zipf and
    hot, "arg" as `mok predict --routing KIND:ARG` reads it (mok_model.records.routing_spec);
    zipf records say ``"order": "model"``: the expert popularity order is mok_model's; hot
    records ``"draw": "model"``: the tokens that do not put expert 0 first never pick it (the
    model's draw; records without it drew expert 0 among the others too: records.py)."""
    kind, par = parse_routing(spec)
    return ({"kind": kind, "seed": seed} | ({"arg": par} if kind in ("zipf", "hot") else {})
            | ({"order": "model"} if kind == "zipf" else {})
            | ({"draw": "model"} if kind == "hot" else {}))


def make_routing(n: int, e: int, k: int, spec: str, seed: int,
                 device: str | torch.device = "cpu",
                 popularity_seed: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Draw top-k routes: ids (n, k) int64 distinct per token, router weights (n, k) float32 (sum 1).

    uniform: every expert equally likely; zipf:S: expert popularity ~ 1/rank^S over the random
    permutation mok_model.workload.zipf_order draws from ``popularity_seed`` (default: ``seed``),
    so a benchmark keeps one expert popularity while drawing fresh tokens per iteration, and the
    model puts the popular experts on the same ranks (records before 2026-12-01 03:40 UTC used
    torch.randperm on the GPU; the model reads them with the permutations measured since,
    mok_model/presets/legacy_zipf_orders.json); hot:X: expert 0 takes a
    share X of all routes: a share X*k of the tokens put expert 0 first, the others draw among
    experts 1..E-1 only, as mok_model.workload draws it (before 2026-12-01 13:00 UTC the others
    drew expert 0 too, giving it X + (1 - X*k)/E of the routes: records.hot_reproduced); onehot:
    every token's slot 0 is expert 0 (the rest uniform). n >= 0, 1 <= k <= e and the seeds
    (0 to 2**64 - 1) are integers: MokInputError names one that is not.
    """
    check_whole(0, n=n)
    check_whole(e=e, k=k)
    if k > e:
        raise MokInputError(f"k={k}: at most the {e} experts (a token's top-k ids are distinct)")
    check_seed(seed)
    if popularity_seed is not None:
        check_seed(popularity_seed, "popularity_seed")
    kind, par = parse_routing(spec, k)
    dev = torch.device(device)
    g = torch.Generator(device=dev).manual_seed(seed)
    logp = torch.zeros(e, device=dev)
    if kind == "zipf":     # popularity rank r + 1 for expert order[r]: the model's order
        order = zipf_order(e, seed if popularity_seed is None else popularity_seed)
        ranks = torch.empty(e)
        ranks[torch.from_numpy(order)] = torch.arange(1, e + 1, dtype=torch.float32)
        logp = -par * torch.log(ranks.to(dev))
    u = torch.rand(n, e, generator=g, device=dev).clamp_min(1e-20)
    score = logp[None, :] - torch.log(-torch.log(u))  # Gumbel-top-k: k distinct draws
    if kind in ("hot", "onehot"):
        frac = 1.0 if kind == "onehot" else par * k
        if kind == "hot":
            check_hot_fits(spec, k, e)
        hot = torch.rand(n, generator=g, device=dev) < frac
        score[:, 0] = torch.where(hot, float("inf"), float("-inf"))
    ids = score.topk(k, dim=1).indices  # (n, k); slot 0 holds the largest score
    wts = torch.softmax(torch.randn(n, k, generator=g, device=dev), dim=1)
    return ids, wts
