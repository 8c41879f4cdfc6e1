"""Who sends which rows where: seeded routing generators and the traffic they imply.

Tokens of GPU g are rows g*N .. (g+1)*N-1 of the routing matrix; expert e lives on GPU e // L
(L = experts per GPU) as local expert e % L. When EP does not divide the experts, the first
experts % EP GPUs hold one expert more (expert_home).
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
from numpy.random import default_rng  # with the module, not at the first draw (numpy loads it lazily)

from . import route_cache
from .errors import MokInputError, is_whole

ROUTING_KINDS = ("uniform", "zipf:S", "hot:F", "FILE (.npy, .csv or whitespace text of top-k ids)")
ROUTING_SUFFIXES = (".npy", ".txt", ".csv")
# Where zipf routing's expert popularity order comes from: "model" (zipf_order, what the kernels
# draw since 2026-12-01 03:40 UTC) or "torch-cuda-randperm" (the order the kernels drew before,
# measured on the GPU: presets/legacy_zipf_orders.json, legacy_zipf_order).
ZIPF_ORDERS = ("model", "torch-cuda-randperm")
LEGACY_ZIPF_ORDERS = Path(__file__).parent / "presets" / "legacy_zipf_orders.json"


def parse_routing(spec: str, top_k: int) -> tuple[str, float | str | None]:
    """Parse a --routing value into (kind, argument), or raise naming the rule."""
    if not is_whole(top_k):
        raise MokInputError(f"top_k={top_k!r} must be a whole number >= 1")
    if not isinstance(spec, str):
        raise MokInputError(f"--routing {spec!r}: a routing spec such as uniform, zipf:1.2, "
                            f"hot:0.1 or a routing file")
    if spec == "uniform":
        return "uniform", None
    if spec.startswith(("zipf:", "hot:")):
        kind, _, arg = spec.partition(":")
        try:
            if arg != arg.strip() or "_" in arg or not arg.isascii():  # float() takes ' 1_0 '
                raise ValueError(arg)
            value = float(arg)
        except ValueError:
            raise MokInputError(f"--routing {spec!r}: {kind} takes a number, as in "
                                f"{'zipf:1.2' if kind == 'zipf' else 'hot:0.1'}") from None
        if kind == "zipf" and not (0 < value <= 10):
            raise MokInputError(f"--routing {spec!r}: the Zipf exponent must be in (0, 10]")
        if kind == "hot" and not (0 < value <= 1 / top_k):
            raise MokInputError(
                f"--routing {spec!r}: the hot expert's share of routes must be in (0, 1/top_k = "
                f"{1 / top_k:.4g}], since a token routes to an expert at most once")
        return kind, value
    p = Path(spec)
    if p.is_file():
        return "file", spec
    if p.suffix in ROUTING_SUFFIXES or "/" in spec or p.exists():
        raise MokInputError(f"--routing file {spec!r} does not exist (or is not a file)")
    raise MokInputError(f"--routing {spec!r} is neither an existing file nor one of {ROUTING_KINDS}")


# Peak bytes per route (token x top-k slot) that drawing a routing and counting its traffic
# allocate: measured with tracemalloc at 16 x 65,536 tokens, top-8 (uniform 37, zipf:1.2 47).
ROUTE_BYTES = 48
# Peak bytes per (GPU, expert) pair of the EP group that counting a routing's traffic (rows per
# source, destination and expert) and the model's arrays over it take: maximum resident memory of
# `mok predict` on rubin-ultra-nvl576, 2^18 routed experts, 1 token, EP 16 / 64 / 256: 0.23 /
# 0.73 / 2.72 GB, about 40 bytes a pair (2^20 experts at EP 1024 took over 24 GB and was killed).
PAIR_BYTES = 40


def physical_memory_bytes() -> int:
    """This machine's physical memory (0 where the OS does not say)."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return 0


def routing_bytes(ep: int, tokens: int, top_k: int) -> float:
    """Estimated peak memory of drawing a seeded routing and counting its traffic, per route
    (check_routing_memory adds the counts per (GPU, expert) pair)."""
    return float(ep) * tokens * top_k * ROUTE_BYTES


def check_routing_memory(ep: int, tokens: int, top_k: int, spec: str, experts: int = 0) -> float:
    """Refuse a routing whose draw and counts would not fit in half this machine's memory;
    return their estimated bytes (a routing file's draw is the file itself: only its counts per
    (GPU, expert) pair are added)."""
    routes = 0.0 if parse_routing(spec, top_k)[0] == "file" else routing_bytes(ep, tokens, top_k)
    pairs = float(ep) * experts * PAIR_BYTES
    need = routes + pairs
    have = physical_memory_bytes()
    if have and need > have / 2:
        if pairs > routes:
            raise MokInputError(
                f"--ep {ep} with {experts} routed experts: counting rows per (GPU, expert) pair "
                f"({ep * experts} pairs) needs about {need / 1e9:.3g} GB, more than half of this "
                f"machine's {have / 1e9:.3g} GB; lower --ep or the model's routed_experts")
        raise MokInputError(
            f"--tokens {tokens} at --ep {ep}: drawing the routing ({ep * tokens} tokens x top-{top_k}) "
            f"needs about {need / 1e9:.3g} GB, more than half of this machine's {have / 1e9:.3g} GB; "
            f"lower --tokens or --ep")
    return need


# routes a routing's compares and counts take at a time (about a megabyte of temporaries)
CHUNK_ROUTES = 2 ** 16


def _later(cols: np.ndarray) -> np.ndarray:
    """Where an entry of `cols` (..., k, n: k columns of n rows) repeats an entry of an earlier
    column in its row: a bool array of the same shape, False at each value's first occurrence."""
    # For small k, k(k-1)/2 compares of contiguous columns are several times cheaper than
    # sorting every row.
    later = np.zeros(cols.shape, dtype=bool)
    for j in range(1, cols.shape[-2]):
        np.equal(cols[..., :j, :], cols[..., j, None, :]).any(axis=-2, out=later[..., j, :])
    return later


def _repeats(ids: np.ndarray, bound: int) -> np.ndarray:
    """_later of the columns of `ids` (rows, k; values in [0, bound)), copied out in the smallest
    dtype that holds the ids: a (rows, k) bool view."""
    small = ids.astype(np.min_scalar_type(max(bound - 1, 0)), copy=False)
    return _later(np.ascontiguousarray(small.T)).T


def _repeat_rows(ids: np.ndarray, bound: int) -> np.ndarray:
    """The rows of `ids` (values in [0, bound)) that hold a repeated id, ascending (in blocks of
    about CHUNK_ROUTES routes: the work stays in cache)."""
    step = max(1, CHUNK_ROUTES // ids.shape[1])
    return np.concatenate([a + np.flatnonzero(_repeats(ids[a:a + step], bound).any(axis=1))
                           for a in range(0, len(ids), step)] or [np.zeros(0, dtype=np.intp)])


def _distinct(draws: list, shape: tuple[int, int], bound: int) -> np.ndarray:
    """Each draw function (its own generator) draws ids (in [0, bound)) row-wise, then redraws
    repeated entries until every row holds k distinct ids: each id's first occurrence in a row
    is kept, the later ones are redrawn in row-major order of the rows that hold repeats.
    (len(draws), rows, k): the draws go through their rounds together (one pass of compares over
    all of them a round), each consuming its generator as it would alone."""
    n = shape[0]
    ids = np.concatenate([draw(shape) for draw in draws])     # (D * rows, k)
    rows = _repeat_rows(ids, bound)
    for _ in range(1000):
        if not rows.size:
            return ids.reshape(len(draws), *shape)
        sub = ids[rows]
        later = _repeats(sub, bound)
        need = np.bincount(rows[np.nonzero(later)[0]] // n, minlength=len(draws))
        sub[later] = np.concatenate([draws[d]((int(c),)) for d, c in enumerate(need) if c])
        ids[rows] = sub
        rows = rows[_repeat_rows(sub, bound)]  # only rows redrawn now can hold repeats
    raise MokInputError("--routing: could not draw top_k distinct experts per token from this "
                        "distribution in 1000 rounds; use a milder zipf:S or hot:F, or a file")


# Redrawing duplicates stalls when the experts outside a token's top_k - 1 likeliest hold under
# this share of the routes (zipf:3 and above at top-8): such routings draw each token's k
# distinct experts at once by the Gumbel-top-k trick (the same sampling without replacement).
GUMBEL_BELOW = 0.02


def hot_fits(top_k: int, experts: int) -> bool:
    """Whether hot routing can route this model: its other experts fill a token's top_k."""
    return top_k <= experts - 1


def check_hot_fits(spec: str, top_k: int, experts: int) -> None:
    """Refuse hot routing `spec` where the other experts cannot fill a token's top_k."""
    if not hot_fits(top_k, experts):
        raise MokInputError(f"--routing {spec!r}: the other {experts - 1} experts cannot fill a "
                            f"token's top_k = {top_k} slots; use uniform or zipf:S")


def _nearly_all(top_k: int, experts: int) -> bool:
    """A token takes nearly all of `experts` equally likely ones: redrawing its repeats would
    stall (the same rule as GUMBEL_BELOW for zipf), so its k are drawn without replacement."""
    return 1.0 - (top_k - 1) / experts < GUMBEL_BELOW


def _without_replacement(rng: np.random.Generator, p: np.ndarray, perm: np.ndarray,
                         shape: tuple[int, int]) -> np.ndarray:
    """k distinct ids per row, drawn with probabilities p without replacement (Gumbel-top-k)."""
    rows, k = shape
    logp = np.log(p)
    out = np.empty(shape, dtype=perm.dtype)
    step = max(1, 2 ** 22 // len(p))  # rows per chunk: about 32 MB of keys
    for s in range(0, rows, step):
        n = min(step, rows - s)
        keys = logp + rng.gumbel(size=(n, len(p)))
        out[s:s + n] = perm[np.argpartition(-keys, k - 1, axis=1)[:, :k]]
    return out


def zipf_order(experts: int, seed: int) -> np.ndarray:
    """Experts from the most to the least popular under zipf routing drawn with ``seed``: the
    first draw of the seed's generator, as make_routing takes it. The kernels' routing
    (mok_kernels/routing.py) uses this order, so the model puts the popular experts on the same
    ranks as the runs it predicts."""
    return default_rng(seed).permutation(experts)


@lru_cache(maxsize=1)
def legacy_zipf_table() -> dict:
    """presets/legacy_zipf_orders.json: the permutations torch.randperm drew on the GPU for the
    kernels' zipf routing before 2026-12-01 03:40 UTC, keyed "E:seed", with their source."""
    return json.loads(LEGACY_ZIPF_ORDERS.read_text())


def legacy_zipf_order(experts: int, seed: int) -> np.ndarray | None:
    """The kernels' expert popularity order before 2026-12-01 03:40 UTC, most popular first, or
    None where the table lacks (experts, seed). The kernel gave expert j the rank perm[j] + 1
    (logp[j] = -S log(perm[j] + 1)), so the expert of rank r + 1 is order[r] = argsort(perm)[r]."""
    perm = legacy_zipf_table()["perms"].get(f"{experts}:{seed}")
    return None if perm is None else np.argsort(np.asarray(perm, dtype=np.int64), kind="stable")


def popularity_order(experts: int, seed: int, order: str = "model") -> np.ndarray:
    """Experts from the most to the least popular under zipf routing: the model's draw
    (zipf_order) or the legacy table's ("torch-cuda-randperm")."""
    if order == "model":
        return zipf_order(experts, seed)
    if order == "torch-cuda-randperm":
        legacy = legacy_zipf_order(experts, seed)
        if legacy is None:
            raise MokInputError(f"no torch-cuda-randperm zipf order for {experts} experts, seed "
                                f"{seed} (presets/legacy_zipf_orders.json)")
        return legacy
    raise MokInputError(f"zipf order {order!r} must be one of {', '.join(ZIPF_ORDERS)}")


# buckets of [0, 1) in a zipf draw's guide table (_zipf_table): 2^14, so a draw's first question
# builds it in well under a millisecond and at most experts / 2^14 of the draws search the CDF
GUIDE_BITS = 14


@lru_cache(maxsize=64)
def _zipf_table(experts: int, s: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Zipf popularity by rank p (1/rank^s, normalized), its CDF and the CDF's guide table: for
    bucket b of [0, 1) cut in 2^GUIDE_BITS, the CDF entries below its two ends (read-only)."""
    p = 1.0 / np.arange(1, experts + 1) ** s
    p /= p.sum()
    cdf = np.cumsum(p)
    ends = np.searchsorted(cdf, np.arange((1 << GUIDE_BITS) + 1) / (1 << GUIDE_BITS))
    guide = np.stack([ends[:-1], ends[1:]])
    for a in (p, cdf, guide):
        a.setflags(write=False)
    return p, cdf, guide


def _cdf_index(cdf: np.ndarray, guide: np.ndarray, u: np.ndarray) -> np.ndarray:
    """np.searchsorted(cdf, u) for u in [0, 1), bit for bit, through the guide table: u times
    2^GUIDE_BITS is exact (a power of two), so u's bucket b is exact and the answer lies
    between the CDF entries below b's ends; where those differ (a CDF entry inside the
    bucket) the CDF is searched."""
    flat = u.reshape(-1)
    b = (flat * (1 << GUIDE_BITS)).astype(np.intp)
    lo, hi = guide[0][b], guide[1][b]
    open_ = np.flatnonzero(lo != hi)
    lo[open_] = np.searchsorted(cdf, flat[open_])
    return lo.reshape(u.shape)


def make_routing(spec: str, ep: int, tokens: int, experts: int, top_k: int, seed: int,
                 order: str = "model", draw: int | None = None) -> np.ndarray:
    """Top-k expert ids, int32 of shape (ep * tokens, top_k); deterministic in seed. Under zipf
    routing, `order` names the expert popularity order (popularity_order); the token draws are
    the same for every order (the model's permutation is drawn either way), only which expert
    holds which popularity rank differs. `draw`: another token draw under the seed's expert
    popularity (as the bench draws them)."""
    return next(make_routings(spec, ep, tokens, experts, top_k, seed, order, (draw,)))


# routes make_routings draws together at most (about 64 MB of int32 ids)
BATCH_ROUTES = 2 ** 24


def make_routings(spec: str, ep: int, tokens: int, experts: int, top_k: int, seed: int,
                  order: str = "model", draws=(None,)) -> Iterator[np.ndarray]:
    """make_routing of each of `draws` (None: the seed's own draw) in turn, drawn together in
    batches of about BATCH_ROUTES routes (one batch held at a time): the same arrays, in a
    fraction of the time when draws are many and small (the decode-size median over 64)."""
    kind, arg = parse_routing(spec, top_k)
    for name, v, low in (("ep", ep, 1), ("tokens", tokens, 1), ("experts", experts, top_k),
                         ("seed", seed, 0)):
        if not is_whole(v, low):
            raise MokInputError(f"make_routing: {name}={v!r} must be a whole number >= {low}"
                                + (" (top_k: a token routes to distinct experts)" if name == "experts" else "")
                                + (" (the same seed, the same draw; None would draw fresh bits)"
                                   if name == "seed" else ""))
    draws = list(draws)
    for d in draws:
        if d is not None and not is_whole(d, 0):
            raise MokInputError(f"make_routing: draw={d!r} must be None or a whole number >= 0")
    step = max(1, BATCH_ROUTES // (ep * tokens * top_k))
    for a in range(0, len(draws), step):
        yield from _routings(kind, arg, spec, ep * tokens, experts, top_k, seed, order,
                             draws[a:a + step])


def _routings(kind: str, arg, spec: str, rows: int, experts: int, top_k: int, seed: int,
              order: str, draws: list) -> list[np.ndarray]:
    """One batch of make_routings: the routing `kind` (parse_routing's) of each draw."""
    if kind == "file":
        return [_routing_file(str(arg), rows, experts, top_k) for _ in draws]
    # each draw's generator: the seed's own (after the zipf popularity draw), or one per draw
    rngs = [default_rng(seed) if d is None else default_rng([seed, DRAW_BASE + d]) for d in draws]
    # ids are drawn as int32, the same stream as int64 (numpy draws 32 bits for any range below
    # 2^32), which halves the memory a large routing touches
    if kind == "uniform":
        if _nearly_all(top_k, experts):
            flat = np.full(experts, 1.0 / experts)
            return [_without_replacement(r, flat, np.arange(experts, dtype=np.int32), (rows, top_k))
                    for r in rngs]
        return list(_distinct([lambda s, r=r: r.integers(0, experts, size=s, dtype=np.int32)
                               for r in rngs], (rows, top_k), experts))
    if kind == "zipf":
        # expert popularity falls as 1/rank^S; ranks are a seeded permutation of the experts
        p, cdf, guide = _zipf_table(experts, float(arg))
        perm = default_rng(seed).permutation(experts)         # = zipf_order(experts, seed)
        for r, d in zip(rngs, draws):
            if d is None:
                r.permutation(experts)        # the seed's own draw follows the popularity draw
        if order != "model":
            perm = popularity_order(experts, seed, order)
        perm = perm.astype(np.int32)
        if 1.0 - np.sort(p)[::-1][:top_k - 1].sum() < GUMBEL_BELOW:
            return [_without_replacement(r, p, perm, (rows, top_k)) for r in rngs]
        return list(_distinct([lambda s, r=r: perm[np.minimum(
            _cdf_index(cdf, guide, r.random(s)), experts - 1)] for r in rngs],
            (rows, top_k), experts))
    # hot: expert 0 takes a share F of all routes; the others share the rest uniformly
    share = float(arg)
    check_hot_fits(spec, top_k, experts)
    if _nearly_all(top_k, experts - 1):
        flat = np.full(experts - 1, 1.0 / (experts - 1))
        out = [_without_replacement(r, flat, np.arange(1, experts, dtype=np.int32), (rows, top_k))
               for r in rngs]
    else:
        out = list(_distinct([lambda s, r=r: r.integers(1, experts, size=s, dtype=np.int32)
                              for r in rngs], (rows, top_k), experts))
    for ids, r in zip(out, rngs):
        takes_hot = r.random(rows) < share * top_k
        slot = r.integers(0, top_k, size=rows)
        ids[np.nonzero(takes_hot)[0], slot[takes_hot]] = 0
    return out


def _load_ids(p: Path) -> np.ndarray:
    """The raw matrix of a routing file: .npy (integer array) or text (whitespace; .csv: commas)."""
    where = f"--routing file {str(p)!r}"
    if p.stat().st_size == 0:
        raise MokInputError(f"{where} is empty; it needs one line of top-k expert ids per token")
    if p.suffix == ".npy":
        try:
            ids = np.load(p, allow_pickle=False)
        except (ValueError, OSError, EOFError) as exc:
            raise MokInputError(f"{where}: not a NumPy .npy array ({str(exc).splitlines()[0]}); save "
                                f"one with numpy.save") from None
        if not isinstance(ids, np.ndarray) or ids.dtype.kind not in "iuf":
            raise MokInputError(f"{where}: holds {getattr(ids, 'dtype', type(ids))} values; it "
                                f"must hold integer expert ids")
        if ids.dtype.kind == "f":
            if ids.size and not (np.isfinite(ids).all() and (ids == np.round(ids)).all()):
                raise MokInputError(f"{where}: holds non-integer values (dtype {ids.dtype}); expert "
                                    f"ids must be whole numbers (save an integer array)")
            if ids.size and np.abs(ids).max() >= 2.0 ** 62:   # beyond int64: the cast would wrap
                raise MokInputError(f"{where}: holds ids as large as {np.abs(ids).max():g}; expert "
                                    f"ids are below the model's expert count")
        return ids.astype(np.int64)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.loadtxt(p, dtype=np.int64, delimiter="," if p.suffix == ".csv" else None,
                              ndmin=2)
    except (ValueError, UnicodeDecodeError) as exc:
        detail = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
        raise MokInputError(f"{where}: not a matrix of integer expert ids ({detail})") from None


def _routing_file(path: str, rows: int, experts: int, top_k: int) -> np.ndarray:
    p = Path(path)
    if not p.is_file():
        raise MokInputError(f"--routing file {path!r} does not exist")
    ids = _load_ids(p)
    if ids.ndim != 2 or ids.shape != (rows, top_k):
        raise MokInputError(
            f"--routing file {path!r} has shape {ids.shape}; it must be (ep*tokens, top_k) = ({rows}, {top_k})")
    if ids.min() < 0 or ids.max() >= experts:
        raise MokInputError(f"--routing file {path!r}: expert ids must lie in [0, {experts})")
    if (np.diff(np.sort(ids, axis=1), axis=1) == 0).any():
        raise MokInputError(f"--routing file {path!r}: a token lists the same expert twice")
    return ids.astype(np.int32)


@dataclass(frozen=True)
class Traffic:
    """Row counts implied by a routing. P GPUs, L local experts per GPU.

    rows[s, d, l]: routed rows from source GPU s to local expert l of destination GPU d.
    dedup_rows[s, d]: rows s sends to d when a token is sent once per destination GPU.
    """

    rows: np.ndarray  # (P, P, L) int64
    dedup_rows: np.ndarray  # (P, P) int64

    @property
    def ep(self) -> int:
        return self.rows.shape[0]

    def received(self) -> np.ndarray:
        """Routed rows each GPU computes, (P,)."""
        return self.rows.sum(axis=(0, 2))

    def expert_rows(self) -> np.ndarray:
        """Rows per (GPU, local expert), (P, L)."""
        return self.rows.sum(axis=0)


def expert_gpu(ids: np.ndarray, experts: int, ep: int) -> np.ndarray:
    """The GPU of each expert id in `ids` (a signed integer array; the result has its dtype).
    Experts are placed in order, as evenly as they go: when EP does not divide them, the first
    experts % EP GPUs hold one expert more."""
    q, r = divmod(experts, ep)
    if r == 0:
        return ids // q
    # on the first r GPUs, GPU e // (q + 1); past them, r + (e - r (q + 1)) // q = (e - r) // q;
    # each formula is the smaller one on the other's GPUs
    return np.maximum(ids // (q + 1), (ids - r) // max(q, 1))


def expert_home(experts: int, ep: int) -> tuple[np.ndarray, np.ndarray]:
    """(GPU, local slot) of every expert (expert_gpu's placement)."""
    e = np.arange(experts)
    gpu = expert_gpu(e, experts, ep)
    q, r = divmod(experts, ep)
    return gpu, e - (gpu * q + np.minimum(gpu, r))  # less the GPU's first expert


def traffic_from_routing(ids: np.ndarray, ep: int, tokens: int, experts: int) -> Traffic:
    """Count rows per (source, destination, local expert), with and without de-duplication.
    Every GPU has ceil(experts / ep) local slots; a GPU that holds fewer leaves one empty."""
    local = -(-experts // ep)
    gpu_of, slot_of = expert_home(experts, ep)
    k = ids.shape[1]
    # a token's route to a GPU it already reaches (an earlier column of its row) is no extra
    # row de-duplicated: count each source's routes per expert in two halves, the first routes
    # to a destination (bins 0..E-1) and the repeats (bins E..2E-1); no sort needed. Sources go
    # in blocks of about CHUNK_ROUTES routes (the work stays in cache), column by column (the
    # compares' layout; a count does not mind the order), in a small signed dtype that holds 2E
    small = np.min_scalar_type(-2 * experts)
    counts = np.empty((ep, 2 * experts), dtype=np.int64)
    step = max(1, CHUNK_ROUTES // (tokens * k))
    for a in range(0, ep, step):
        n = min(step, ep - a)
        block = ids[a * tokens:(a + n) * tokens].astype(small).reshape(n, tokens, k)
        cols = block.transpose(0, 2, 1).copy()  # (n, k, tokens)
        repeat = _later(expert_gpu(cols, experts, ep))  # a route to a GPU its token reaches
        cols += repeat.view(np.uint8) * small.type(experts)  # counted in bins E..2E-1
        for s in range(n):
            counts[a + s] = np.bincount(cols[s].ravel(), minlength=2 * experts)
    first = counts[:, :experts]
    # then each expert's routes go to its (GPU, local slot)
    slot = gpu_of * local + slot_of
    rows = np.zeros((ep, ep * local), dtype=np.int64)
    rows[:, slot] = first + counts[:, experts:]
    dedup = np.zeros((ep, ep * local), dtype=np.int64)
    dedup[:, slot] = first
    return Traffic(rows=rows.reshape(ep, ep, local),
                   dedup_rows=dedup.reshape(ep, ep, local).sum(axis=2))


# a run record's median is over fresh routing draws (mok_kernels/bench.py Workload.refresh: one
# per timed iteration). Where a rank's experts get few rows each, the draws differ in how many
# experts are active (whose weights a pass streams), so the model predicts the draw that is the
# median of DRAWS by the busiest GPU's active experts; elsewhere the draws agree and it takes the
# seed's own draw. One emulated rank (hardware.emulated_ranks: rank 0 alone is timed) is read by
# what its GEMMs cost: whole row tiles of its experts (the kernel's block_m rows each; a tile
# with one row costs a full tile's weight stream), then active experts, so where a local
# expert's expected rows are under FEW_TILES_PER_EXPERT tiles, the draw with rank 0's median row
# tiles (ties: active experts) is predicted: rank 0's seeded draw can sit a tile off the draws
# the record's median is over (mixtral-8x7b EP 8 at 64 tokens: 119 rows, one tile; 11 of 16
# draws 128-142 rows, two). That median is taken over TILE_DRAWS draws: 8 estimate it poorly
# (llama4-maverick EP 8 at 64 tokens, zipf:1.2: draws 0-7 give rank 0 13-14 active experts of
# 16, where the distribution's mean is 11.4 and the median of 64 draws 11). Real groups keep
# the active-experts rule over DRAWS draws (their straggler's tiles read worse:
# docs/calibration.md, sessions 30-31).
DRAWS = 8
TILE_DRAWS = 64
DRAW_BASE = 1000
FEW_ROWS_PER_EXPERT = 8.0
FEW_TILES_PER_EXPERT = 4.0
# rows of the kernel's compute tile (mok_kernels/megakernel.py KernelConfig.block_m): 128, and
# 64 for the Triton FP8 kernel's tiles (fp8_tile_m, v2-bm64)
TILE_ROWS = 128
FP8_TILE_ROWS = 64


def draw_tile_rows(scenario) -> int:
    """Rows of the emulated rank's compute tile that the draw rule counts tiles in."""
    fp8 = scenario.precision == "fp8" and getattr(scenario, "fp8_kernel", "triton") == "triton"
    return FP8_TILE_ROWS if fp8 else TILE_ROWS


@lru_cache(maxsize=64)
def _cached_traffic(spec, ep, tokens, experts, top_k, seed, order="model", draw=None) -> Traffic:
    """A routing's traffic, cached in the process and, for generated routings, across processes
    (route_cache: read where a sound entry exists, else drawn, counted and written)."""
    key = route_cache.entry_key(spec, ep, tokens, experts, top_k, seed, order, draw)
    if key is not None and (hit := route_cache.load(key)) is not None:
        return Traffic(*hit)
    ids = make_routing(spec, ep, tokens, experts, top_k, seed, order, draw)
    t = traffic_from_routing(ids, ep, tokens, experts)
    if key is not None:
        route_cache.store(key, t.rows, t.dedup_rows)
    return t


@lru_cache(maxsize=256)
def _median_draw(spec, ep, tokens, experts, top_k, seed, order, gpu, tile=None,
                 draws=DRAWS) -> int:
    """The draw (of `draws`) whose active experts on `gpu` (None: the busiest) are the median;
    with `tile` (rows of a compute tile; `gpu` given), the median by that GPU's row tiles (each
    expert's rows in whole tiles), ties broken by its active experts."""
    rule = {"median_of": draws, "gpu": gpu, "tile": tile}
    key = route_cache.choice_key(spec, ep, tokens, experts, top_k, seed, order, rule)
    if key is not None and (hit := route_cache.load_choice(key, draws)) is not None:
        return hit
    gpu_of, slot_of = expert_home(experts, ep)
    local = -(-experts // ep)

    def stat(ids: np.ndarray) -> tuple[int, int]:
        # rows per (GPU, local expert) of a draw: its routes counted by expert (Traffic.rows
        # summed over the sources, without drawing every candidate's full traffic)
        er = np.zeros((ep, local), dtype=np.int64)
        er[gpu_of, slot_of] = np.bincount(ids.ravel(), minlength=experts)
        per_gpu = (er > 0).sum(axis=1)                       # (P,) active local experts
        if tile is None:
            return 0, int(per_gpu.max() if gpu is None else per_gpu[gpu])
        return int(np.ceil(er[gpu] / tile).sum()), int(per_gpu[gpu])
    stats = [stat(ids) for ids in make_routings(spec, ep, tokens, experts, top_k, seed, order,
                                                range(draws))]
    median = sorted(range(draws), key=lambda i: stats[i])[draws // 2]   # stable: ties in order
    if key is not None:
        route_cache.store_choice(key, median)
    return median


def traffic(scenario) -> Traffic:
    """The traffic of a Scenario (cached: the tuner asks for it once per workload)."""
    m = scenario.model
    key = (scenario.routing, scenario.ep, scenario.tokens, m.routed_experts, m.top_k,
           scenario.seed, scenario.zipf_order)
    if parse_routing(scenario.routing, m.top_k)[0] == "file":
        return _cached_traffic(*key)
    per_expert = scenario.tokens * m.top_k / max(m.routed_experts // scenario.ep, 1)
    if scenario.hardware.emulated_ranks:
        tile = draw_tile_rows(scenario)
        if per_expert >= FEW_TILES_PER_EXPERT * tile:
            return _cached_traffic(*key)
        return _cached_traffic(*key, _median_draw(*key, 0, tile, TILE_DRAWS))
    if per_expert >= FEW_ROWS_PER_EXPERT:
        return _cached_traffic(*key)
    return _cached_traffic(*key, _median_draw(*key, None))
