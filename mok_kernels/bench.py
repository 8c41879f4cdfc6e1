"""`mok bench`: time MoK and baselines over a grid and append mok-run/1 records.

Every timing uses CUDA events after warm-up, on fresh random inputs each iteration (new token
values and new routes drawn from the routing kind with seed + iteration; a zipf workload keeps
the expert popularity order of its seed), and reports median,
p10, p90 and n. The MoK forward (schedule build + megakernel + epilogue) needs no host sync, so it
is captured once in a CUDA graph and replayed; torch-grouped runs eagerly with its host syncs.
Rank emulation: one rank of an EP-P group whose peers' send and combine buffers are in local HBM.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import itertools
import math
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any, Callable

import torch

from mok_model.cli import MokParser, distinct, number_list, plain_int
from mok_model.errors import MokInputError
from mok_model.fileio import archive_of, check_output_file, path_input_error
from mok_model.records import (GPU_STATE_NUMBERS, KERNEL_SYSTEMS, THROTTLE_REASONS,
                               append_records, record_model)
from mok_model.scenario import KNOB_MAX, MAX_LIST_LAG, MAX_SEED, check_source_orders
from mok_model.tuner import ROBUST

from .routing import Shape, make_routing, parse_routing, routing_record, shape_of

SYSTEMS = ("mok", "torch-grouped", "gemm-only", "mok-gemm")
# mok-gemm: the megakernel's own GEMM phases alone (its copies skipped; a diagnostic whose output
# is not a result), the records a GEMM efficiency table is read from (calibration/gemm_table.py)
GEMM_PHASE_KNOBS = dict(dispatch="pull", combine="push", minibatch=4096, comm_sms=32,
                        macrobatch=131072, capacity=1.0)
GEMM_PHASE_NOTE = ("DIAGNOSTIC: the megakernel's GEMM phases alone (dispatch copies skipped, ring "
                   "of random rows, launch only: no schedule, no epilogue); output not a result")
# --pass bwd: the backward megakernel, the same rank's backward GEMMs alone, torch autograd
# through the unfused rank forward (one GPU, rank emulation)
SYSTEMS_BWD = ("mok", "gemm-only", "torch-autograd")


def _floats(s: str, flag: str = "--capacity") -> list[float]:
    """A comma list of numbers in (0, 1] (the capacities), refused naming `flag` otherwise."""
    return number_list(s, flag, float, 0, 1, open_low=True)


def _ints(s: str, flag: str = "--tokens") -> list[int]:
    """A comma list of integers >= 1, refused naming `flag` otherwise."""
    return number_list(s, flag)


# limits of flags that bound how long a run takes or what a generator takes: past them a run
# would look like a hang (--iters, --warmup), overflow (--seed: torch takes 64-bit seeds, and
# the iterations add to it) or outlive any use (--timeout, with --gpus)
MAX_ITERS = 1_000_000
GROUP_TIMEOUT_S, MIN_TIMEOUT_S, MAX_TIMEOUT_S = 300, 10, 86_400


class BadInput(MokInputError):
    """A bad command-line value (exit status 2)."""


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = MokParser(prog="mok bench", description=__doc__)
    p.add_argument("--model", default="kimi-k2", help="comma list of model presets")
    p.add_argument("--ep", default=None,
                   help="comma list of EP sizes (emulated on one GPU; default 16); with --gpus N "
                        "the EP size is N")
    p.add_argument("--pass", dest="pass_", default="fwd",
                   help="fwd, or bwd: the backward pass (backward megakernel vs the backward "
                        "GEMMs alone and torch autograd; one GPU only)")
    p.add_argument("--gpus", type=plain_int, default=0,
                   help="N real GPUs, one process each (EP = N); 0: one GPU emulating its peers")
    p.add_argument("--tokens", default="1024", help="comma list of local tokens per GPU")
    p.add_argument("--dispatch", default="pull", help="comma list of pull|push")
    p.add_argument("--combine", default="push", help="comma list of push|pull")
    p.add_argument("--minibatch", default="4096", help="comma list of rows")
    p.add_argument("--comm-sms", default="32", help="comma list")
    p.add_argument("--macrobatch", default="131072",
                   help="comma list of rows, or 'half'/'all' (half / all of the expected rows)")
    p.add_argument("--capacity", default=None,
                   help="comma list of multipliers (default 0.5 on one GPU; 1.0 with --gpus, "
                        "which no routing overflows)")
    p.add_argument("--precision", default="bf16",
                   help="comma list of bf16|fp8 for MoK (fp8: e4m3 with 1x128 activation and "
                        "128x128 weight block scales; one GPU only); baselines run BF16")
    p.add_argument("--fp8-kernel", default=None,
                   help="comma list of FP8 kernel variants for --precision fp8: v1 (one dot per "
                        "gate|up K block), v2 (128-column dots), v3 (v2 with the scaling of K "
                        "block k-1 overlapping block k's dots), v4 (v2's scaling on one gate|up "
                        "dot and one down dot per K block) or v5 (v4 with v3's overlap; "
                        "KernelConfig.fp8_kernel; NOTES.md 'FP8 v3-v5'), at "
                        "block_m 128 and 3 stages, or with -bm64 at block_m 64 and 4 stages "
                        "(default v2-bm64, KernelConfig's fp8 default); or gluon, the whole pass "
                        "as one Gluon kernel (sm_90; pull dispatch, push combine, capacity 1.0, "
                        "lag 1 only: give --capacity 1.0)")
    p.add_argument("--routing", default="uniform",
                   help="comma list: uniform, zipf:S, hot:X (expert 0's share of routes), onehot")
    p.add_argument("--seed", type=plain_int, default=0)
    p.add_argument("--rank", type=plain_int, default=0, help="emulated rank")
    p.add_argument("--systems", default=None,
                   help=f"comma list of {SYSTEMS} (one GPU; default mok,torch-grouped) or, with "
                        f"--gpus, of mok, nccl-torch, graph-a2a, gemm-only (default all)")
    p.add_argument("--iters", type=plain_int, default=10)
    p.add_argument("--warmup", type=plain_int, default=3)
    p.add_argument("--no-graph", action="store_true", help="time MoK eagerly instead of a graph")
    p.add_argument("--breakdown", action="store_true", help="also time schedule/kernel/epilogue")
    p.add_argument("--bwd-tiles", default="default",
                   help="--pass bwd: semicolon list of backward-megakernel tile/option sets, each "
                        "'default' or field=value,... of backward.BackwardTiles (e.g. "
                        "'default;w_flat=1;w_flat=1,a_fuse_gu=1,bn_x=256'; diag=1/2/3 skip the "
                        "W / X items, for timing only: those records are marked diagnostic)")
    p.add_argument("--list-lag", default="1",
                   help="forward: comma list of the work list's lag (KernelConfig.list_lag, 1-8): "
                        "minibatch i's down items after minibatch i+lag's gate/up items")
    p.add_argument("--source-order", default="rank",
                   help="forward: comma list of rank|rotated (KernelConfig.source_order): an "
                        "expert's received rows sorted by source rank, or with each rank's "
                        "sources starting after it; rotated records name it in their tiles")
    p.add_argument("--out", required=True, help="RUNS.jsonl to append records to")
    p.add_argument("--note", default="", help="extra text for each record's note")
    p.add_argument("--auto", action="store_true",
                   help="also run MoK with every knob chosen by the model before launch and "
                        "print its regret against the best configuration of the sweep")
    p.add_argument("--auto-hint", action="store_true",
                   help="with --auto, on one GPU: also the pick the model makes told the "
                        "workload's routing (KernelConfig.knob_routing; --auto's own pick is the "
                        "layer's default, robust over uniform / zipf:1.2 / hot:0.1 "
                        "(tuner.robust_routings); each record's auto.knob_routing names its pick)")
    p.add_argument("--timeout", type=plain_int, default=None,
                   help=f"with --gpus: seconds a rank waits in a collective before the run fails "
                        f"(default {GROUP_TIMEOUT_S}; {MIN_TIMEOUT_S} to {MAX_TIMEOUT_S})")
    a = p.parse_args(argv)
    a.argv = list(argv)
    a.timeout_given = a.timeout is not None   # refused without --gpus (_check_args)
    if a.timeout is None:
        a.timeout = GROUP_TIMEOUT_S
    if not 0 <= a.gpus <= KNOB_MAX:   # before --gpus N sets the EP size (and --ep is named)
        raise BadInput(f"--gpus {a.gpus}: must be 0 (one GPU emulating its peers) to {KNOB_MAX}")
    if a.gpus:
        if a.ep not in (None, str(a.gpus)):
            raise BadInput(f"--ep {a.ep!r} with --gpus {a.gpus}: on real GPUs EP is the GPU count")
        a.ep = str(a.gpus)
    # only an absent flag takes its default: an empty value is refused by _check_args
    if a.capacity is None:
        a.capacity = "1.0" if a.gpus else "0.5"
    a.fp8_kernel_given = a.fp8_kernel is not None   # refused without --precision fp8
    if a.fp8_kernel is None:
        a.fp8_kernel = "v2-bm64"
    if a.systems is None:
        a.systems = ("mok,nccl-torch,graph-a2a,gemm-only" if a.gpus else
                     "mok,gemm-only,torch-autograd" if a.pass_ == "bwd" else "mok,torch-grouped")
    if a.ep is None:
        a.ep = "16"
    return a


def _digits(text: str) -> bool:
    """Whether `text` is a whole number in ASCII digits (str.isdigit also takes '²' and '٦')."""
    return text.isascii() and text.isdigit()


def _check_args(a: argparse.Namespace) -> None:
    for m in a.model.split(","):
        if not m.strip():
            raise BadInput(f"--model {a.model!r}: an empty name in the list (a comma list of "
                           f"model presets or .toml files)")
        shape_of(m)
    for d in a.dispatch.split(","):
        if d not in ("pull", "push"):
            raise BadInput(f"--dispatch {d!r}: allowed pull, push")
    for c in a.combine.split(","):
        if c not in ("push", "pull"):
            raise BadInput(f"--combine {c!r}: allowed push, pull")
    for pr in a.precision.split(","):
        if pr not in ("bf16", "fp8"):
            raise BadInput(f"--precision {pr!r}: allowed bf16, fp8")
    for v in a.fp8_kernel.split(","):
        if v not in FP8_VARIANTS:
            raise BadInput(f"--fp8-kernel {v!r}: allowed {', '.join(FP8_VARIANTS)}")
    if getattr(a, "fp8_kernel_given", False) and "fp8" not in a.precision.split(","):
        raise BadInput(f"--fp8-kernel {a.fp8_kernel} with --precision {a.precision}: the FP8 "
                       f"kernel variants run with --precision fp8 only (drop --fp8-kernel)")
    for flag in ("--model", "--ep", "--tokens", "--dispatch", "--combine", "--minibatch",
                 "--comm-sms", "--macrobatch", "--capacity", "--precision", "--fp8-kernel",
                 "--routing", "--systems", "--list-lag", "--source-order"):
        distinct(flag, str(getattr(a, flag[2:].replace("-", "_"))))   # '' named below
    if a.gpus and a.precision != "bf16":
        raise BadInput(f"--precision {a.precision} with --gpus: the FP8 megakernel runs on one GPU "
                       f"(rank emulation) only; real-GPU groups are bf16")
    for r in a.routing.split(","):
        if not r:
            raise BadInput(f"--routing {a.routing!r}: an empty item in the list (a comma list of "
                           f"uniform, zipf:S, hot:X, onehot)")
        for shape in map(shape_of, a.model.split(",")):
            parse_routing(r, shape.topk, shape.experts)
    if a.pass_ not in ("fwd", "bwd"):
        raise BadInput(f"--pass {a.pass_!r}: allowed fwd, bwd")
    if a.pass_ == "bwd" and a.precision != "bf16":
        raise BadInput(f"--pass bwd with --precision {a.precision}: the backward megakernel is "
                       f"BF16 only")
    if a.pass_ == "bwd" and a.auto:
        raise BadInput("--pass bwd with --auto: the knob choice is the forward's; give the knobs")
    if a.auto_hint and not a.auto:
        raise BadInput("--auto-hint adds a pick to --auto's: give --auto too")
    if a.auto_hint and a.gpus:
        raise BadInput("--auto-hint with --gpus: the told pick runs on one GPU emulating its "
                       "peers only; drop one of them")
    if a.pass_ == "bwd" and a.gpus:
        raise BadInput("--pass bwd with --gpus: the backward megakernel has no group mode yet; "
                       "it runs one GPU emulating its peers")
    from .bench_group import GROUP_SYSTEMS
    allowed = GROUP_SYSTEMS if a.gpus else SYSTEMS_BWD if a.pass_ == "bwd" else SYSTEMS
    for s in a.systems.split(","):
        if s not in allowed:
            raise BadInput(f"--systems {s!r}: allowed {', '.join(allowed)}"
                           + (" with --gpus" if a.gpus else ""))
    if a.gpus:
        for m in a.model.split(","):
            if shape_of(m).experts % a.gpus:
                raise BadInput(f"--gpus {a.gpus}: {m}'s {shape_of(m).experts} experts do not "
                               f"divide over {a.gpus} GPUs")
    if not MIN_TIMEOUT_S <= a.timeout <= MAX_TIMEOUT_S:
        raise BadInput(f"--timeout {a.timeout}: must be {MIN_TIMEOUT_S} to {MAX_TIMEOUT_S} seconds")
    if getattr(a, "timeout_given", False) and not a.gpus:
        raise BadInput(f"--timeout {a.timeout} without --gpus: one GPU has no collective to wait "
                       f"in (drop --timeout)")
    for v in a.list_lag.split(","):
        if not (_digits(v) and 1 <= int(v) <= MAX_LIST_LAG):
            raise BadInput(f"--list-lag {v!r}: an integer from 1 to {MAX_LIST_LAG} is required")
    if a.list_lag != "1" and a.pass_ == "bwd":
        raise BadInput(f"--list-lag {a.list_lag} with --pass bwd: the backward kernel's list has "
                       f"no lag (leave it at 1)")
    check_source_orders(a.source_order, a.pass_)
    if a.list_lag != "1" and a.gpus:
        raise BadInput(f"--list-lag {a.list_lag} with --gpus: the real-GPU bench does not sweep "
                       f"the lag yet (leave it at 1)")
    if a.gpus and not _digits(a.macrobatch):
        raise BadInput(f"--macrobatch {a.macrobatch!r} with --gpus: one whole number of ring rows "
                       f"is required (the real-GPU bench does not sweep it)")
    if a.gpus:
        for flag, given in (("--no-graph", a.no_graph), ("--breakdown", a.breakdown),
                            ("--rank", a.rank != 0)):
            if given:
                raise BadInput(f"{flag} with --gpus: the real-GPU bench runs every rank, from a "
                               f"CUDA graph, without a breakdown (leave {flag} out)")
    if a.bwd_tiles != "default" and a.pass_ != "bwd":
        raise BadInput("--bwd-tiles is for --pass bwd")
    for flag in ("--ep", "--tokens", "--minibatch", "--comm-sms"):
        _ints(getattr(a, flag[2:].replace("-", "_")), flag)
    number_list(a.minibatch, "--minibatch", high=KNOB_MAX)
    _floats(a.capacity, "--capacity")
    for flag, v, low, high in (("--iters", a.iters, 1, MAX_ITERS), ("--warmup", a.warmup, 0, MAX_ITERS),
                               ("--seed", a.seed, 0, MAX_SEED)):
        if v < low:
            raise BadInput(f"{flag} {v}: must be >= {low}")
        if v > high:
            raise BadInput(f"{flag} {v}: must be at most {high}"
                           + (" (torch generators take 64-bit seeds, and each iteration adds one)"
                              if flag == "--seed" else ""))
    commit = os.environ.get("MOK_COMMIT")
    if commit is not None and not re.fullmatch(r"[\x21-\x7e]{1,100}", commit):
        raise BadInput(f"environment variable MOK_COMMIT={commit!r}: the commit each record names "
                       f"(software.commit) must be 1-100 printable characters without spaces "
                       f"(unset: unknown)")
    if not 0 <= a.rank < min(_ints(a.ep, "--ep")):
        raise BadInput(f"--rank {a.rank}: must be in [0, EP) for every --ep {a.ep}")
    check_records_out(a.out, "--out")
    for m in a.macrobatch.split(","):
        if m not in ("half", "all") and not (_digits(m) and 1 <= int(m) <= KNOB_MAX):
            raise BadInput(f"--macrobatch {m!r}: allowed a row count >= 1 (at most {KNOB_MAX}), half, all")
    _check_grid(a)
    if a.gpus and not 1 <= a.gpus <= torch.cuda.device_count():   # the machine, checked last
        raise BadInput(f"--gpus {a.gpus}: this machine has {torch.cuda.device_count()} GPU(s)")


def check_records_out(path: str, flag: str = "--out") -> None:
    """Refuse, before any GPU work, a records file that append_records would refuse only after
    the first run: not a .jsonl name, a missing or unwritable folder, or an existing non-empty
    file whose lines are not valid run records (records are appended, never rewritten)."""
    from mok_model.records import read_records
    p = check_output_file(path, flag, ".jsonl")
    if archive_of(p).exists():
        raise MokInputError(f"{flag} {str(path)!r}: that file is archived as {p.name}.gz, which is "
                            f"read-only; write the records to a new .jsonl file")
    if p.is_file() and p.stat().st_size:
        try:
            read_records([p])
        except MokInputError as exc:
            raise MokInputError(f"{flag} {str(path)!r} exists and is not a valid run-records file "
                                f"(records are appended to it): {exc}") from None


def gpu_limits() -> tuple[int, float, str]:
    """(SMs, memory bytes, which GPU) the grid is checked against: device 0 where torch sees a
    CUDA GPU, else the h200-1 preset's (the GPU the bench records name; there is none to ask)."""
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        return props.multi_processor_count, float(props.total_memory), f"this {props.name}"
    from mok_model.presets import load_hardware
    hw = load_hardware("h200-1")
    return hw.sms, hw.hbm_gb * 1e9, "the h200-1 preset (no CUDA GPU here to ask)"


def check_comm_sms(values: list[int], flag: str = "--comm-sms") -> None:
    """Refuse comm_sms that leave the persistent grid (one program per SM) no compute
    programs (MoKLayer.launch would raise after the GPU work started)."""
    sms, _, where = gpu_limits()
    for cs in values:
        if cs >= sms:
            raise BadInput(f"{flag} {cs}: must leave compute programs, at most {sms - 1} of the "
                           f"{sms} SMs of {where}")


def input_bytes(sh: Shape, ep: int, tokens: int, group: bool = False) -> float:
    """A lower bound of the bytes a bench workload allocates before any kernel buffer: the
    rank's expert weights (bf16) and its input buffers: one GPU emulating EP ranks holds the
    peers' send buffers and output gradients (2 x EP x tokens rows of H, bf16) and their routes
    (int64 ids, fp32 weights); a real-GPU rank its own tokens and every rank's ids."""
    weights = 2.0 * 3 * (sh.experts // ep) * sh.hidden * sh.inter + 2.0 * 3 * sh.hidden * sh.shared
    if group:
        return weights + tokens * (2.0 * sh.hidden + 12 * sh.topk) + 8.0 * ep * tokens * sh.topk
    return weights + ep * tokens * (4.0 * sh.hidden + 12 * sh.topk)


def check_fits(model: str, ep: int, tokens: int, flag: str = "--tokens",
               group: bool = False) -> None:
    """Refuse a workload whose weights and input buffers alone (input_bytes) pass the GPU's
    memory: its allocation would fail only on the GPU."""
    _, mem, where = gpu_limits()
    need = input_bytes(shape_of(model), ep, tokens, group)
    if need > mem:
        raise BadInput(f"{flag} {tokens} at EP {ep} ({model}): the weights and input buffers alone "
                       f"need {need / 1e9:.4g} GB, more than the {mem / 1e9:.4g} GB of {where}; "
                       f"lower the tokens or the EP size")


def check_workloads(models: list[str], eps: list[int], tokens: list[int],
                    group: bool = False) -> None:
    """Refuse, before the GPU check, an EP size a model's experts do not divide and a workload
    whose buffers cannot fit (check_fits): every model x EP x tokens of a grid."""
    for m in models:
        for ep in eps:
            if shape_of(m).experts % ep:
                raise BadInput(f"--ep {ep}: {m}'s {shape_of(m).experts} experts do not divide over "
                               f"{ep} ranks")
            for n in tokens:
                check_fits(m, ep, n, group=group)


def check_knobs(knobs: dict, flag: str) -> None:
    """Refuse, before the GPU check, MoK knobs (KernelConfig fields) the kernel would refuse
    on the GPU: KernelConfig.validate(), and comm SMs that leave no compute (check_comm_sms)."""
    from .megakernel import KernelConfig
    try:
        KernelConfig(**knobs).validate()
    except (TypeError, ValueError) as exc:
        raise BadInput(f"{flag}: {exc}") from None
    if "comm_sms" in knobs:
        check_comm_sms([knobs["comm_sms"]], flag)


def check_bwd_tiles(spec: str, models: list[str]) -> None:
    """Refuse a --bwd-tiles set (semicolon list) with an empty item, a field that is not
    BackwardTiles', a value that is not an integer in plain ASCII digits, a field given twice, a
    set given twice (also spelt otherwise: 'w_flat=1' and 'w_flat=01'), or a value MoKBackward
    would refuse or clamp for any of `models` (tile sizes powers of two >= 16, bn_a at most the
    forward's bn_gu or 256 with a_epi, a_epi 0 or a power of two from 16 to bn_a with
    saved_gu=1, tiles that divide the padded expert width, booleans 0/1, diag 0-3, warps a power
    of two <= 32, stages >= 1)."""
    from .backward import parse_tiles, tile_fields
    from .megakernel import KernelConfig
    from .tiles import padded_width
    seen: dict[tuple, str] = {}     # each set's fields and values -> the set as first written
    for one in spec.split(";"):
        if not one.strip():
            raise BadInput(f"--bwd-tiles {spec!r}: an empty item (write 'default' for the "
                           f"defaults)")
        try:
            given = tile_fields(one, "--bwd-tiles")
        except MokInputError as exc:
            raise BadInput(str(exc)) from None
        key = tuple(sorted(given.items()))
        if key in seen:
            again = repr(one) if seen[key] == one else f"{seen[key]!r} (and as {one!r})"
            raise BadInput(f"--bwd-tiles {spec!r} names {again} twice: each tile set once (a "
                           f"repeated set would rerun the same points)")
        seen[key] = one
        if one == "default":
            continue
        t = parse_tiles(one)
        cfg = KernelConfig()
        if t.w_bf16 and not t.w_direct:
            raise BadInput(f"--bwd-tiles {one!r}: w_bf16=1 needs w_direct=1 (the packed "
                           f"weight-gradient buffers are float32)")
        if t.w_tma and not t.w_flat:
            raise BadInput(f"--bwd-tiles {one!r}: w_tma=1 needs w_flat=1 (one row loop per "
                           f"weight-gradient item)")
        if t.a_epi and not (t.saved_gu and 16 <= t.a_epi <= t.bn_a
                            and not t.a_epi & (t.a_epi - 1)):
            raise BadInput(f"--bwd-tiles {one!r}: a_epi={t.a_epi}: needs saved_gu=1 and a power "
                           f"of two from 16 to bn_a ({t.bn_a})")
        cap = 256 if t.a_epi else cfg.bn_gu
        if t.bn_a > cap:
            raise BadInput(f"--bwd-tiles {one!r}: bn_a={t.bn_a} must be at most "
                           + ("256 with a_epi" if t.a_epi else f"the forward's bn_gu {cfg.bn_gu}")
                           + f" (it would run at {cap})")
        for m in models:
            ip = padded_width(shape_of(m).inter, cfg.bn_gu, cfg.block_k)
            for name, v, width in (("bn_a", t.bn_a, ip), ("bk_x", t.bk_x, 2 * ip),
                                   ("bw", t.bw, ip)):
                if v and width % v:
                    raise BadInput(f"--bwd-tiles {one!r}: {name}={v} does not divide {m}'s padded "
                                   f"expert width ({width} columns)")


def check_kernel_shapes(models: list[str], variants: list[tuple[str, str | None]],
                        systems: list[str]) -> None:
    """Refuse a model whose shape the megakernel refuses (tiles.shape_refusal) at the
    K step of each (precision, --fp8-kernel variant) it runs, where `systems` run it: mok, and
    mok-gemm (BF16). The Gluon FP8 pass has its own shape rule (gluon_fp8.mok.refusal)."""
    from .megakernel import KernelConfig
    from .tiles import shape_refusal
    runs = [(pr, v) for pr, v in variants if "mok" in systems and v != "gluon"]
    runs += [("bf16", None)] if "mok-gemm" in systems else []
    for m in models:
        sh = shape_of(m)
        for pr, v in runs:
            block_k = KernelConfig(precision=pr, **fp8_variant_tiles(v)).block_k
            why = shape_refusal(sh.hidden, sh.inter, sh.shared, block_k)
            if why:
                raise BadInput(f"--model {m}" + (f" with --precision {pr}" if pr != "bf16" else "")
                               + f": {why}")


def _check_grid(a: argparse.Namespace) -> None:
    """The grid's values that only the GPU run used to refuse, named on any machine: model
    shapes the megakernel refuses (check_kernel_shapes), EP sizes that the experts do not
    divide, workloads whose buffers cannot fit, comm SMs that leave no compute, a ring smaller
    than a minibatch, backward tile values, the shapes the Gluon FP8 pass refuses (--fp8-kernel
    gluon), and every MoK grid point's KernelConfig.validate()."""
    from .megakernel import KernelConfig
    models, eps, tokens = a.model.split(","), _ints(a.ep, "--ep"), _ints(a.tokens, "--tokens")
    variants = [(pr, v) for pr in a.precision.split(",")
                for v in (a.fp8_kernel.split(",") if pr == "fp8" else [None])]
    check_kernel_shapes(models, variants, a.systems.split(","))
    check_workloads(models, eps, tokens, group=bool(a.gpus))
    minibatches, comm = _ints(a.minibatch, "--minibatch"), _ints(a.comm_sms, "--comm-sms")
    check_comm_sms(comm)
    macros = a.macrobatch.split(",")
    for mac in macros:
        for mb in minibatches:
            if _digits(mac) and int(mac) < mb:
                raise BadInput(f"--macrobatch {mac} with --minibatch {mb}: the ring must hold at "
                               f"least one minibatch (macrobatch >= minibatch; the kernel would "
                               f"silently enlarge it)")
    if a.pass_ == "bwd" and a.bwd_tiles != "default":
        check_bwd_tiles(a.bwd_tiles, models)
    if ("fp8", "gluon") in variants:
        from .gluon_fp8.mok import refusal
        for m in models:
            sh = shape_of(m)
            for ep in eps:
                why = refusal(sh.hidden, sh.inter, sh.shared, sh.experts, ep, a.rank)
                if why:
                    raise BadInput(f"--fp8-kernel gluon with --model {m} --ep {ep}: {why}")
    for (prec, f8v), d, c, mb, cs, mac, cap, lag, so in itertools.product(
            variants, a.dispatch.split(","), a.combine.split(","), minibatches, comm, macros,
            _floats(a.capacity), _ints(a.list_lag, "--list-lag"), a.source_order.split(",")):
        cfg = KernelConfig(dispatch=d, combine=c, minibatch=mb, comm_sms=cs,
                           macrobatch=int(mac) if _digits(mac) else None, capacity=cap,
                           precision=prec, **fp8_variant_tiles(f8v), list_lag=lag,
                           source_order=so)
        try:
            cfg.validate()
        except ValueError as exc:
            raise BadInput(f"grid point {prec}{'-' + f8v if f8v else ''} {d}/{c} minibatch {mb} "
                           f"comm-sms {cs} macrobatch {mac} capacity {cap} list-lag {lag} "
                           f"source-order {so}: {exc}") from None


def stats(ts: list[float]) -> dict[str, float | int]:
    """Median, p10, p90 and n of a list of times in ms."""
    s = sorted(ts)
    q = lambda f: s[min(len(s) - 1, int(round(f * (len(s) - 1))))]  # noqa: E731
    return {"median": q(0.5), "p10": q(0.1), "p90": q(0.9), "n": len(s)}


# Warm-up by time as well as by count (triton.testing.do_bench's 25 ms): two warm-up passes of
# a 0.3 ms decode-size pass are under 1 ms of GPU work. (It did not remove the +3.5% of the first
# setting a sweep times after a workload's setup: docs/calibration.md, "Session 31: the default
# setting at decode sizes".)
WARMUP_MS = 25.0
MAX_WARMUP_EXTRA = 1000


class Timings(list):
    """time_events' per-iteration times (ms), with the GPU's state read under them (records
    `gpu_state`: clock, power, throttle reasons; None where it could not be read)."""
    gpu_state: dict[str, Any] | None = None


def time_events(step: Callable[[], None], refresh: Callable[[int], None], iters: int,
                warmup: int) -> Timings:
    """Per-iteration CUDA-event times (ms) of step(), calling refresh(i) (untimed) before each,
    after `warmup` untimed iterations (each on fresh inputs) and, on the last inputs, as many
    more (at most MAX_WARMUP_EXTRA) as bring the warm-up to WARMUP_MS of GPU time (none when
    warmup is 0); the GPU's state is read while the timed iterations run (Timings.gpu_state)."""
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for i in range(warmup):
        refresh(-1 - i)
        step()
    e.record()
    e.synchronize()
    if warmup and (spent := s.elapsed_time(e)) < WARMUP_MS:    # more on the last inputs
        for _ in range(min(math.ceil((WARMUP_MS - spent) / max(spent / warmup, 1e-3)),
                           MAX_WARMUP_EXTRA)):
            step()
    torch.cuda.synchronize()
    evs = []
    for i in range(iters):
        refresh(i)
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        step()
        e.record()
        evs.append((s, e))
    probe = start_gpu_state_probe()     # the iterations are queued: the GPU runs them now
    try:
        torch.cuda.synchronize()
    finally:
        state = finish_gpu_state_probe(probe)
    times = Timings(s.elapsed_time(e) for s, e in evs)
    times.gpu_state = state
    return times


def capture_graph(fn: Callable[[], Any]) -> Callable[[], None]:
    """Capture fn() in a CUDA graph (after one warm-up call on a side stream); return its replay."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g.replay


def _hardware() -> dict[str, Any]:
    """The record's hardware: the GPU and the preset its emulated-rank runs are read against
    (knobs.preset_for_gpu; "unknown" for a GPU without one)."""
    from .knobs import preset_for_gpu

    props = torch.cuda.get_device_properties(0)
    sms = props.multi_processor_count
    return {"preset": preset_for_gpu(props.name, False, sms) or "unknown", "gpu": props.name,
            "gpus": 1, "sms": sms,
            "fabric": "local-hbm", "driver": f"cuda {torch.version.cuda}"}


KERNEL_PACKAGE = Path(__file__).resolve().parent


def kernel_source_digest(root: Path = KERNEL_PACKAGE) -> str:
    """The first 16 hex digits of a SHA-256 over the kernel package's Python modules (every *.py
    under `root` whose folders below `root` are packages, by relative path, path and bytes):
    which kernel a record timed, where the device's copy of the tree carries no usable git commit
    (session 35: the forward's mode words changed the kernel's speed, and records of the two
    kernels must be told apart). Since session 70 the session scripts in folders that are not
    packages (logs_s*/) do not count: before, every new log script changed the digest."""
    def module(f: Path) -> bool:
        parts = f.relative_to(root).parts
        return all(root.joinpath(*parts[:i], "__init__.py").exists() for i in range(1, len(parts)))

    h = hashlib.sha256()
    for f in sorted(filter(module, root.rglob("*.py")), key=lambda f: f.relative_to(root).as_posix()):
        h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def _software() -> dict[str, str]:
    try:
        import triton
        tv = triton.__version__
    except ImportError:  # pragma: no cover
        tv = "none"
    return {"torch": torch.__version__, "triton": tv, "commit": os.environ.get("MOK_COMMIT", "unknown"),
            "kernel_source": kernel_source_digest()}


# nvidia-smi's names of the gpu_state numbers (records.GPU_STATE_NUMBERS, in that order), then
# the clock's held reasons (a bit mask, records.THROTTLE_REASONS)
GPU_STATE_QUERY = "clocks.sm,clocks.max.sm,power.draw,power.limit,clocks_event_reasons.active"


def start_gpu_state_probe() -> subprocess.Popen | None:
    """Start nvidia-smi reading this process's GPU (GPU_STATE_QUERY), by UUID (CUDA_VISIBLE_DEVICES
    renumbers GPUs); None without CUDA or nvidia-smi. time_events starts it while the timed
    iterations run, so it reads the GPU under their load (or just after, for a window shorter
    than nvidia-smi's start)."""
    if not torch.cuda.is_available():
        return None
    try:
        gpu = f"GPU-{torch.cuda.get_device_properties(torch.cuda.current_device()).uuid}"
        return subprocess.Popen(["nvidia-smi", f"--query-gpu={GPU_STATE_QUERY}",
                                 "--format=csv,noheader,nounits", "-i", gpu],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    except (AttributeError, RuntimeError, OSError):
        return None


def finish_gpu_state_probe(probe: subprocess.Popen | None) -> dict[str, Any] | None:
    """The probe's gpu_state (parse_gpu_state), waiting at most 2 s for it; None if it failed."""
    if probe is None:
        return None
    try:
        out, _ = probe.communicate(timeout=2.0)
    except subprocess.TimeoutExpired:
        probe.kill()
        probe.communicate()
        return None
    return parse_gpu_state(out) if probe.returncode == 0 else None


def parse_gpu_state(text: str) -> dict[str, Any] | None:
    """gpu_state from GPU_STATE_QUERY's answer (csv, no header, no units): its first line of as
    many fields as the query names (a warning nvidia-smi prints first is passed over); a field
    the GPU does not report ("[N/A]", "[Not Supported]") is left out; None if none is usable."""
    lines = [[f.strip() for f in line.split(",")] for line in text.splitlines()]
    fields = next((f for f in lines if len(f) == len(GPU_STATE_NUMBERS) + 1), None)
    if fields is None:
        return None
    state: dict[str, Any] = {}
    for key, field in zip(GPU_STATE_NUMBERS, fields):
        try:
            v = float(field)
        except ValueError:
            continue
        if math.isfinite(v) and v >= 0:
            state[key] = v
    try:
        mask = int(fields[-1], 16)
    except ValueError:
        mask = None
    if mask is not None and mask >= 0:
        named = [name for bit, name in THROTTLE_REASONS.items() if mask & bit]
        state["throttle"] = named + (["other"] if mask & ~sum(THROTTLE_REASONS) else [])
    return state or None


def make_record(*, system: str, model: str | dict, ep: int, tokens: int, knobs: dict[str, Any],
                routing: str, seed: int, times: list[float], breakdown: dict[str, float],
                note: str, hardware: dict[str, Any], software: dict[str, str],
                pass_: str = "fwd", precision: str = "bf16",
                tiles: dict[str, Any] | None = None) -> dict[str, Any]:
    """One mok-run/1 record of a measured single-GPU rank-emulation run (``pass_`` fwd or bwd);
    ``tiles``: the kernel's tile options (MoK records), so fits can tell kernel variants apart;
    ``times`` from time_events carry the GPU's clock, power and throttle reasons read under the
    timed iterations (Timings.gpu_state): the record's `gpu_state` where they were read.
    ``model``: a preset name, or the shape dict of a model file (records.record_model)."""
    name = (model.get("name") or f"h{model.get('hidden')}") if isinstance(model, dict) else model
    rec = {
        "schema": "mok-run/1", "id": f"{system}-{name}-ep{ep}-n{tokens}-{uuid.uuid4().hex[:12]}",
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "hardware": hardware, "software": software, "system": system, "model": model, "ep": ep,
        "emulated_peers": ep > 1, "tokens": tokens, "pass": pass_, "precision": precision,
        "config": knobs, "routing": routing_record(routing, seed), "latency_ms": stats(times),
        "breakdown_ms": breakdown,
        "source": "measured", "note": note,
    }
    if system in KERNEL_SYSTEMS and pass_ == "fwd":
        # the forward runs no zero shared expert since 2026-12-01 (records.record_zero_shared_slot)
        tiles = {**(tiles or {}), "zero_shared_slot": 0}
    if tiles is not None:
        rec["tiles"] = tiles
    state = getattr(times, "gpu_state", None)
    if state is not None:
        rec["gpu_state"] = state
    return rec


def forward_tiles(precision: str, wl: "Workload", group: bool = False,
                  **options: Any) -> dict[str, Any]:
    """The forward megakernel's tile options as KernelConfig and MoKLayer resolve them for the
    workload's shape, EP and tokens (a record's ``tiles``; a record without group_m ran group_m
    1, one without split_dn or dn_blocks 1 of each); ``group``: real GPUs (group mode: neither).
    Callers that ran a layer pass ``split_dn`` and ``dn_blocks`` as it ran (run_mok's ``chosen``,
    run_mok_gemm's ``ran``): the layer falls back to 1 where the shape's split would pass its
    workspace limit."""
    from .megakernel import KernelConfig
    from .tiles import forward_dn_blocks, forward_group_m, forward_split_dn
    cfg = KernelConfig(precision=precision, **options)
    sh = wl.shape
    out = {k: getattr(cfg, k) for k in ("block_m", "bn_gu", "bn_dn", "block_k", "num_warps",
                                         "num_stages")}
    out["group_m"] = cfg.group_m or forward_group_m(sh.inter, sh.hidden, cfg.bn_gu, cfg.block_k)
    if cfg.tma_a and precision == "bf16":      # named only when on: older records ran without
        out["tma_a"] = 1
    if (cfg.list_lag or 1) != 1:               # named only when not 1, as tma_a
        out["list_lag"] = cfg.list_lag
    if cfg.rotated:                            # named only when not rank order, as tma_a
        out["source_order"] = cfg.source_order
    split = cfg.split_dn or (1 if group else forward_split_dn(
        wl.tokens, sh.topk, sh.experts, wl.ep, sh.hidden, sh.inter, cfg.block_m, cfg.bn_dn,
        precision))
    if split > 1:                              # named only when on, as tma_a
        out["split_dn"] = split
    blocks = cfg.dn_blocks or (1 if group else forward_dn_blocks(
        wl.tokens, sh.topk, sh.experts, wl.ep, sh.hidden, sh.inter,
        torch.cuda.get_device_properties(0).multi_processor_count, cfg.block_m, cfg.bn_dn,
        cfg.block_k, cfg.bn_gu, precision, split))
    if blocks > 1:                             # named only when on, as tma_a
        out["dn_blocks"] = blocks
    return out | ({"fp8_kernel": cfg.fp8_kernel} if precision == "fp8" else {})


def backward_tiles(spec: str) -> dict[str, Any]:
    """The backward megakernel's BackwardTiles of a --bwd-tiles spec (a record's ``tiles``; 0 =
    chosen from the layer's shape)."""
    from dataclasses import asdict

    from .backward import parse_tiles
    return {k: int(v) if isinstance(v, bool) else v for k, v in asdict(parse_tiles(spec)).items()}


def auto_record(rec: dict, source: str, swept: list[float], knob_routing: str) -> dict:
    """Mark a record as the automatic pick (``--auto``): where its knobs came from, the routing
    they were chosen for (``knob_routing``: "robust", the layer's default, or the workload's
    routing the pick was told with ``--auto-hint``; records written before session 44 lack it:
    their default pick was chosen for "uniform") and its regret against the best swept
    configuration of the same run (None without a sweep)."""
    rec["auto"] = {"knob_source": source, "knob_routing": knob_routing,
                   "best_swept_ms": min(swept) if swept else None,
                   "regret": rec["latency_ms"]["median"] / min(swept) - 1 if swept else None}
    return rec


def auto_line(rec: dict, label: str) -> str:
    """One log line for an automatic pick."""
    c, au = rec["config"], rec["auto"]
    regret = "no sweep" if au["regret"] is None else (
        f"regret {100 * au['regret']:+.1f}% vs best swept {au['best_swept_ms']:.3f} ms")
    lag = rec.get("tiles", {}).get("list_lag", 1)
    told = f" told {au['knob_routing']}" if au.get("knob_routing", ROBUST) != ROBUST else ""
    return (f"{label} mok AUTO{told} {c['dispatch']}/{c['combine']} mb{c['minibatch']} "
            f"c{c['comm_sms']} "
            f"r{c['macrobatch']} cap{c['capacity']}" + (f" lag{lag}" if lag != 1 else "")
            + f" {rec['latency_ms']['median']:.3f} ms; {regret}")


class Workload:
    """Weights of one rank's experts and fresh-input generators for one (model, EP, tokens)."""

    def __init__(self, model: str, ep: int, tokens: int, routing: str, seed: int, rank: int) -> None:
        from .reference import MoEWeights
        self.model, self.ep, self.tokens, self.routing, self.seed, self.rank = (
            model, ep, tokens, routing, seed, rank)
        sh: Shape = shape_of(model)
        self.shape = sh
        if sh.experts % ep:
            raise BadInput(f"--ep {ep}: {model} has {sh.experts} experts, not divisible")
        self.el = sh.experts // ep
        dev, bf = "cuda", torch.bfloat16
        g = torch.Generator(device=dev).manual_seed(seed + 12345)
        r = lambda *s, fan: (torch.randn(*s, generator=g, device=dev, dtype=bf) / fan ** 0.5)  # noqa
        h, i, s = sh.hidden, sh.inter, sh.shared
        self.w = MoEWeights(r(self.el, h, i, fan=h), r(self.el, h, i, fan=h), r(self.el, i, h, fan=i),
                            *(r(h, s, fan=h), r(h, s, fan=h), r(s, h, fan=s)) if s else (None,) * 3)
        pn = ep * tokens
        self.x = torch.empty(pn, h, dtype=bf, device=dev)            # peers' send buffers
        self.ids = torch.empty(pn, sh.topk, dtype=torch.int64, device=dev)
        self.wts = torch.empty(pn, sh.topk, dtype=torch.float32, device=dev)
        self.dout = torch.empty(pn, h, dtype=bf, device=dev)          # output gradients (bwd)
        self.refresh(0)

    def refresh(self, i: int) -> None:
        """Fresh token values, output gradients and a fresh routing draw (seed + i) into the
        static buffers."""
        self.x.normal_()
        self.dout.normal_()
        ids, wts = routing_draw(self, i)
        self.ids.copy_(ids)
        self.wts.copy_(wts)

    def expected_rows(self) -> int:
        """Rows one rank receives on average: P*N*k/P = N*k."""
        return self.tokens * self.shape.topk

    def flops(self) -> float:
        """Forward expert FLOPs of this rank: routed rows (expected) + shared on N tokens."""
        sh = self.shape
        return 6.0 * sh.hidden * sh.inter * self.expected_rows() + 6.0 * sh.hidden * sh.shared * self.tokens


def routing_draw(wl: Any, i: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Routing draw i of a workload (every rank's tokens: ids, weights), as refresh(i) takes it:
    a fresh draw per iteration, the expert popularity fixed by the workload's seed. ``wl``: a
    Workload, or bench_group's RankWorkload."""
    return make_routing(wl.ep * wl.tokens, wl.shape.experts, wl.shape.topk, wl.routing,
                        wl.seed + 1000 + i, device=wl.x.device, popularity_seed=wl.seed)


_MOST_ROWS: dict[tuple, int] = {}


def refuse_overflowing_draws(wl: Any, capacity_rows: int, capacity: float | None, iters: int,
                             warmup: int, breakdown: bool = False) -> None:
    """Raise CapacityOverflowError before any launch if a routing draw of this timing (the
    first, the warm-up's, the timed ones and the breakdown's: refresh(i)'s seeds) sends rank
    ``wl.rank`` more rows than its schedule holds: the launch would trap (on_error="trap"), which
    ends the process's CUDA context and every later workload of the run with it (session 43).
    ``wl``: a Workload, or bench_group's RankWorkload (the same routing fields)."""
    from .schedule import CapacityOverflowError
    draws = tuple(sorted({0, *range(-warmup, 0), *range(iters),
                          *(range(100, 103) if breakdown else ())}))
    sh = wl.shape
    key = (wl.ep * wl.tokens, sh.experts, sh.topk, wl.routing, wl.seed, wl.rank, wl.el, draws)
    if key not in _MOST_ROWS:
        lo, most = wl.rank * wl.el, 0
        for i in draws:
            ids, _ = routing_draw(wl, i)
            most = max(most, int(((ids >= lo) & (ids < lo + wl.el)).sum()))
        _MOST_ROWS[key] = most
    need = _MOST_ROWS[key]
    if need > capacity_rows:
        raise CapacityOverflowError(
            f"routing {wl.routing}: up to {need} routed rows reach rank {wl.rank} in this "
            f"timing's draws, beyond the schedule's {capacity_rows} (capacity {capacity}); "
            f"give a larger --capacity (1.0 never overflows)")


FP8_VARIANTS = (*(f"v{i}{bm}" for bm in ("", "-bm64") for i in range(1, 6)),
                "gluon")   # --fp8-kernel


def fp8_variant_tiles(variant: str | None) -> dict[str, Any]:
    """KernelConfig options of an --fp8-kernel variant (v1-v5, optionally -bm64, or gluon: its
    tiles are fixed); {} for None. 4 stages fit in shared memory at block_m 64 (~188 KB), 3 at
    block_m 128."""
    if variant is None:
        return {}
    if variant == "gluon":
        return {"fp8_kernel": "gluon"}
    bm64 = variant.endswith("-bm64")
    return {"fp8_kernel": variant.split("-")[0], "block_m": 64 if bm64 else 128,
            "num_stages": 4 if bm64 else 3}


def run_mok(wl: Workload, knobs: dict[str, Any], iters: int, warmup: int, graph: bool,
            breakdown: bool, chosen: dict | None = None,
            **tiles: Any) -> tuple[list[float], dict[str, float]]:
    """Time the MoK forward of one emulated rank; raises on stall or capacity overflow.

    Knobs left out of ``knobs`` are chosen by MoKLayer before launch; ``chosen``, if given, is
    filled with the knobs the layer ran ("knobs"), where they came from ("source"), the down
    split it ran ("split_dn": the shape's choice, or 1 where its workspace would pass the limit),
    the down blocks an item walks ("dn_blocks"),
    its work-list lag ("list_lag") and, for fp8_kernel="gluon", the record's tiles ("tiles";
    else None).
    ``tiles``: KernelConfig implementation options beyond the knobs (e.g. tma=True).
    """
    from .megakernel import KernelConfig, MoKLayer
    cfg = KernelConfig(**knobs, **tiles)
    layer = MoKLayer(wl.w, wl.ep, wl.tokens, wl.shape.topk, wl.rank, cfg, local_weights=True)
    refuse_overflowing_draws(wl, layer.capacity, layer.cfg.capacity, iters, warmup, breakdown)
    if chosen is not None:
        chosen.update(knobs=layer.cfg.knobs(), source=layer.knob_source,
                      split_dn=layer.cfg.split_dn, dn_blocks=layer.cfg.dn_blocks,
                      list_lag=layer.cfg.list_lag,
                      tiles=layer.gluon.tiles() if layer.gluon is not None else None)
    fwd = lambda: layer.forward(wl.x, wl.ids, wl.wts)  # noqa: E731
    fwd()
    torch.cuda.synchronize()
    layer.check()
    step = capture_graph(fwd) if graph else fwd
    times = time_events(step, wl.refresh, iters, warmup)
    layer.check()
    bd: dict[str, float] = {}
    if breakdown:
        bd = time_phases(wl, layer.schedule, lambda sched: layer.launch(wl.x, sched),
                         lambda sched: layer.epilogue(wl.wts, sched))
        layer.check()
    return times, bd


def time_phases(wl: Workload, schedule, launch, epilogue) -> dict[str, float]:
    """Median of 3 eager passes, each timed in three phases with events: schedule(ids) -> sched,
    launch(sched) (the megakernel), epilogue(sched)."""
    parts: dict[str, list[float]] = {"schedule": [], "megakernel": [], "epilogue": []}
    for i in range(3):
        wl.refresh(100 + i)
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
        ev[0].record()
        sched = schedule(wl.ids)
        ev[1].record()
        launch(sched)
        ev[2].record()
        epilogue(sched)
        ev[3].record()
        torch.cuda.synchronize()
        for j, k in enumerate(parts):
            parts[k].append(ev[j].elapsed_time(ev[j + 1]))
    return {k: sorted(v)[1] for k, v in parts.items()}


def run_torch_grouped(wl: Workload, iters: int, warmup: int) -> list[float]:
    """Time the eager torch-grouped rank forward."""
    from .baselines import LocalExperts, torch_grouped_rank
    el = wl.el
    ex = LocalExperts(wl.w, wl.rank * el, (wl.rank + 1) * el, "cuda", torch.bfloat16, local=True)
    step = lambda: torch_grouped_rank(wl.x, wl.ids, wl.wts, ex, wl.rank, wl.tokens)  # noqa: E731
    return time_events(step, wl.refresh, iters, warmup)


def run_gemm_only(wl: Workload, iters: int, warmup: int) -> list[float]:
    """Time the same routed (grouped) and shared GEMMs alone on this rank's received rows."""
    from .baselines import LocalExperts, gemm_only
    el, sh = wl.el, wl.shape
    ex = LocalExperts(wl.w, wl.rank * el, (wl.rank + 1) * el, "cuda", torch.bfloat16, local=True)
    ids = wl.ids.reshape(-1)
    local = (ids >= wl.rank * el) & (ids < (wl.rank + 1) * el)
    le = torch.sort(ids[local] - wl.rank * el).values
    offs = torch.cumsum(torch.bincount(le, minlength=el), 0).to(torch.int32)
    m = int(le.numel())
    xs = torch.randn(m, sh.hidden, dtype=torch.bfloat16, device="cuda")
    h = torch.randn(m, sh.inter, dtype=torch.bfloat16, device="cuda")
    hs = torch.randn(wl.tokens, sh.shared, dtype=torch.bfloat16, device="cuda") if sh.shared else None
    x_loc = wl.x[:wl.tokens]

    def refresh(i: int) -> None:
        xs.normal_()
        h.normal_()

    return time_events(lambda: gemm_only(xs, h, offs, x_loc, hs, ex), refresh, iters, warmup)


def run_mok_gemm(wl: Workload, iters: int, warmup: int, ran: dict | None = None,
                 **tiles: Any) -> list[float]:
    """Time the megakernel's GEMM phases alone on this rank: the published default knobs with
    the dispatch copies skipped (the comm programs join the compute at once), fresh random rows in
    the ring before each launch, one routing draw, graph replay of the launch (no schedule, no
    epilogue). ``ran``, if given, gets the down split and blocks the layer ran ("split_dn",
    "dn_blocks", as run_mok)."""
    from .megakernel import KernelConfig, MoKLayer
    cfg = KernelConfig(**GEMM_PHASE_KNOBS, skip_copy=True, **tiles)
    layer = MoKLayer(wl.w, wl.ep, wl.tokens, wl.shape.topk, wl.rank, cfg, local_weights=True)
    if ran is not None:
        ran["split_dn"], ran["dn_blocks"] = layer.cfg.split_dn, layer.cfg.dn_blocks
    layer.ring.normal_()
    return time_launch(layer, wl.x, layer.schedule(wl.ids), lambda i: layer.ring.normal_(),
                       iters, warmup)


def time_launch(layer, x: torch.Tensor, sched, refresh: Callable[[int], None], iters: int,
                warmup: int) -> list[float]:
    """CUDA-event times (ms) of the megakernel launch alone on a built schedule: one launch
    checked (stall, overflow), then graph replays with refresh(i) before each, checked again."""
    launch = lambda: layer.launch(x, sched)  # noqa: E731
    launch()
    torch.cuda.synchronize()
    layer.check()
    times = time_events(capture_graph(launch), refresh, iters, warmup)
    layer.check()
    return times


def run_mok_bwd(wl: Workload, knobs: dict[str, Any], iters: int, warmup: int, graph: bool,
                breakdown: bool, tiles: str = "default") -> tuple[list[float], dict[str, float]]:
    """Time the backward megakernel of one emulated rank (schedule build + megakernel +
    epilogue; the forward is not timed); raises on stall or capacity overflow. ``tiles``: a
    backward.parse_tiles spec."""
    from .backward import MoKBackward, parse_tiles
    from .megakernel import KernelConfig, MoKLayer
    bt = parse_tiles(tiles)
    layer = MoKLayer(wl.w, wl.ep, wl.tokens, wl.shape.topk, wl.rank,
                     KernelConfig(**knobs, save_for_backward=bt.saved_gu), local_weights=True)
    refuse_overflowing_draws(wl, layer.capacity, layer.cfg.capacity, iters, warmup, breakdown)
    bwd = MoKBackward(layer, bt)
    gu, refresh = None, wl.refresh
    if bt.saved_gu:
        # g and u of the current inputs from a saving forward, untimed, before each iteration
        # (copied into one static tensor: the graph replays fixed addresses)
        layer.forward(wl.x, wl.ids, wl.wts)
        gu = layer.saved_gu.clone()

        def refresh(i: int) -> None:
            wl.refresh(i)
            layer.forward(wl.x, wl.ids, wl.wts)
            gu.copy_(layer.saved_gu)
    step = lambda: bwd.run(wl.x, wl.ids, wl.wts, wl.dout, saved_gu=gu)  # noqa: E731
    step()
    torch.cuda.synchronize()
    bwd.check()
    times = time_events(capture_graph(step) if graph else step, refresh, iters, warmup)
    bwd.check()
    bd: dict[str, float] = {}
    if breakdown:
        bd = time_phases(wl, layer.schedule,
                         lambda sched: bwd.launch(wl.x, wl.dout, wl.wts.reshape(-1), sched, gu),
                         bwd.epilogue)
        bwd.check()
    return times, bd


def run_gemm_only_bwd(wl: Workload, iters: int, warmup: int) -> list[float]:
    """Time the same rank's backward GEMMs alone (dgrad + wgrad, grouped; shared expert too)."""
    from .baselines import BackwardGemms, LocalExperts
    el = wl.el
    ex = LocalExperts(wl.w, wl.rank * el, (wl.rank + 1) * el, "cuda", torch.bfloat16, local=True)
    ids = wl.ids.reshape(-1)
    local = (ids >= wl.rank * el) & (ids < (wl.rank + 1) * el)
    le = torch.sort(ids[local] - wl.rank * el).values
    offs = torch.cumsum(torch.bincount(le, minlength=el), 0).to(torch.int32)
    gemms = BackwardGemms(ex, offs, int(le.numel()), wl.tokens)
    return time_events(gemms, lambda i: gemms.refresh(), iters, warmup)


def run_torch_autograd(wl: Workload, iters: int, warmup: int) -> list[float]:
    """Time torch autograd's backward through the unfused rank forward (the forward, with its
    host syncs, runs untimed before each iteration)."""
    from .baselines import LocalExperts, torch_autograd_rank
    el = wl.el
    ex = LocalExperts(wl.w, wl.rank * el, (wl.rank + 1) * el, "cuda", torch.bfloat16, local=True)
    params = [t.detach().requires_grad_() for t in (ex.wgu, ex.wd, ex.sgu, ex.sd) if t is not None]
    state: dict[str, Any] = {}

    def refresh(i: int) -> None:
        wl.refresh(i)
        for t in params:
            t.grad = None
        x = wl.x.detach().requires_grad_()
        w = wl.wts.detach().requires_grad_()
        state["loss"] = torch_autograd_rank(x, wl.ids, w, wl.dout, params, wl.rank * el,
                                            (wl.rank + 1) * el, wl.rank, wl.tokens)

    return time_events(lambda: state["loss"].backward(), refresh, iters, warmup)


def macro_rows(spec: str, wl: Workload) -> int:
    """'half' / 'all' of the expected received rows, or a row count."""
    if spec == "half":
        return max(128, (wl.expected_rows() // 2 + 127) // 128 * 128)
    if spec == "all":
        return 131072 if wl.expected_rows() <= 131072 else wl.expected_rows()
    return int(spec)


def run_grid(a: argparse.Namespace, log: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """Run every grid point; return the records (also appended to a.out as they finish)."""
    hw, sw = _hardware(), _software()
    cmd = "mok bench " + " ".join(sys.argv[1:]) if not a.note else a.note
    systems = a.systems.split(",")
    recs: list[dict[str, Any]] = []
    mode = "single-GPU rank emulation: rank {r} of EP {ep}, peers' buffers in local HBM"
    for model, ep, tokens, routing in itertools.product(
            a.model.split(","), _ints(a.ep), _ints(a.tokens), a.routing.split(",")):
        wl = Workload(model, ep, tokens, routing, a.seed, a.rank)
        note0 = mode.format(r=a.rank, ep=ep)
        bwd = a.pass_ == "bwd"
        common = dict(model=record_model(model), ep=ep, tokens=tokens, routing=routing,
                      seed=a.seed, hardware=hw, software=sw, pass_=a.pass_)
        base_knobs = dict(dispatch="pull", combine="push", minibatch=4096, comm_sms=32,
                          macrobatch=131072, capacity=0.5)
        baselines = ((("gemm-only", run_gemm_only_bwd), ("torch-autograd", run_torch_autograd))
                     if bwd else (("torch-grouped", run_torch_grouped), ("gemm-only", run_gemm_only),
                                  ("mok-gemm", run_mok_gemm)))
        if bwd:
            note0 += ("; backward pass (forward not timed): pull dispatch of x and dOut rows, dX "
                      "pushed to the home slots, whatever dispatch/combine/macrobatch say")
        for sysname, fn in baselines:
            if sysname in systems:
                if sysname == "mok-gemm":
                    ran = {}
                    t = fn(wl, a.iters, a.warmup, ran)
                    rec = make_record(system=sysname, knobs=GEMM_PHASE_KNOBS, times=t,
                                      breakdown={}, note=f"{note0}; {GEMM_PHASE_NOTE}; {cmd}",
                                      tiles=forward_tiles("bf16", wl, split_dn=ran["split_dn"],
                                                          dn_blocks=ran["dn_blocks"]),
                                      **common)
                else:
                    t = fn(wl, a.iters, a.warmup)
                    rec = make_record(system=sysname, knobs=base_knobs, times=t, breakdown={},
                                      note=f"{note0}; knobs not used by this system; {cmd}",
                                      **common)
                append_records(a.out, [rec])
                recs.append(rec)
                log(f"{model:8s} ep{ep:<3d} n{tokens:<5d} {routing:8s} {sysname:14s} "
                    f"{rec['latency_ms']['median']:.3f} ms")
        if "mok" not in systems:
            continue
        variants = [(pr, v) for pr in a.precision.split(",")
                    for v in (a.fp8_kernel.split(",") if pr == "fp8" else [None])]
        swept: dict[tuple, list[float]] = {pv: [] for pv in variants}
        for (prec, f8v), d, c, mb, cs, mac, cap, bt, lag, so in itertools.product(
                variants, a.dispatch.split(","), a.combine.split(","),
                _ints(a.minibatch), _ints(a.comm_sms), a.macrobatch.split(","),
                _floats(a.capacity), a.bwd_tiles.split(";") if bwd else ["default"],
                _ints(a.list_lag, "--list-lag"), a.source_order.split(",")):
            opts = fp8_variant_tiles(f8v) | {"list_lag": lag} | (
                {"source_order": so} if so != "rank" else {})
            knobs = dict(dispatch=d, combine=c, minibatch=mb, comm_sms=cs,
                         macrobatch=macro_rows(mac, wl), capacity=cap)
            ran: dict = {}
            try:
                if bwd:
                    t, bd = run_mok_bwd(wl, knobs, a.iters, a.warmup, not a.no_graph, a.breakdown,
                                        bt)
                else:
                    t, bd = run_mok(wl, knobs, a.iters, a.warmup, not a.no_graph, a.breakdown,
                                    ran, precision=prec, **opts)
            except RuntimeError as exc:
                log(f"{model} ep{ep} n{tokens} {knobs}: FAILED {exc}")
                continue
            ring = ("every routed row (gluon)" if f8v == "gluon"
                    else max(knobs["macrobatch"], mb + 128))
            tl_note = ""
            if bwd and bt != "default":
                from .backward import parse_tiles, tiles_label
                tl_note = f"backward tiles {tiles_label(parse_tiles(bt))}; "
                if parse_tiles(bt).diag:
                    tl_note += ("DIAGNOSTIC: W and/or X items skipped, gradients incomplete, "
                                "timing of the remaining parts only; ")
            rec = make_record(system="mok", knobs=knobs, times=t, breakdown=bd,
                              note=f"{note0}; " + ("" if bwd else f"ring rows used {ring}; ") +
                                   (f"fp8 kernel {f8v}; " if f8v else "") + tl_note +
                                   f"{'graph replay' if not a.no_graph else 'eager'}; {cmd}",
                              precision=prec, tiles=backward_tiles(bt) if bwd else
                              ran["tiles"] or forward_tiles(prec, wl, split_dn=ran["split_dn"],
                                                            dn_blocks=ran["dn_blocks"], **opts),
                              **common)
            append_records(a.out, [rec])
            recs.append(rec)
            if so == "rank":            # --auto's pick runs rank order: its regret against those
                swept[(prec, f8v)].append(rec["latency_ms"]["median"])
            log(f"{model:8s} ep{ep:<3d} n{tokens:<5d} {routing:8s} mok {prec}{'-' + f8v if f8v else ''} "
                f"{d}/{c} mb{mb} c{cs} " + (f"[{bt}] " if bwd and bt != "default" else "") +
                (f"lag{lag} " if lag != 1 else "") + (f"{so} " if so != "rank" else "") +
                f"r{knobs['macrobatch']} {rec['latency_ms']['median']:.3f} ms "
                f"{wl.flops() / rec['latency_ms']['median'] / 1e9:.0f} TF/s")
        hints = [ROBUST] + ([routing] if a.auto_hint else [])
        for (prec, f8v), hint in itertools.product(variants if a.auto else [], hints):
            if hint != ROBUST and f8v == "gluon":       # its knobs are fixed: nothing to tell
                continue
            chosen: dict = {}
            label = prec + (f"-{f8v}" if f8v else "")
            try:
                t, bd = run_mok(wl, {}, a.iters, a.warmup, not a.no_graph, a.breakdown, chosen,
                                precision=prec, knob_routing=hint, **fp8_variant_tiles(f8v))
            except (RuntimeError, ValueError) as exc:     # a stall, or no knob choice possible
                told = f" told {hint}" if hint != ROBUST else ""
                log(f"{model} ep{ep} n{tokens} {label} auto{told}: FAILED {exc}")
                continue
            rec = auto_record(make_record(
                system="mok", knobs=chosen["knobs"], times=t, breakdown=bd,
                note=f"{note0}; " + (f"fp8 kernel {f8v}; " if f8v else "") +
                     f"{'graph replay' if not a.no_graph else 'eager'}; {cmd}",
                precision=prec, tiles=chosen["tiles"] or forward_tiles(
                    prec, wl, split_dn=chosen["split_dn"], dn_blocks=chosen["dn_blocks"],
                    list_lag=chosen["list_lag"],
                    **fp8_variant_tiles(f8v)), **common),
                chosen["source"], swept[(prec, f8v)], hint)
            append_records(a.out, [rec])
            recs.append(rec)
            log(auto_line(rec, f"{model:8s} ep{ep:<3d} n{tokens:<5d} {routing:8s} {label}"))
        del wl
        torch.cuda.empty_cache()
    return recs


def gluon_machine_refusal(a: argparse.Namespace) -> str | None:
    """Why this machine cannot run --fp8-kernel gluon (sm_90 and Triton with Gluon), or None."""
    if "fp8" not in a.precision.split(",") or "gluon" not in a.fp8_kernel.split(","):
        return None
    from .gluon_fp8.core import gluon
    if gluon is None:
        return "--fp8-kernel gluon needs Triton with Gluon (triton.experimental.gluon)"
    arch = torch.cuda.get_device_capability(0)
    if arch != (9, 0):
        return (f"--fp8-kernel gluon needs an sm_90 GPU (H100 / H200); this "
                f"{torch.cuda.get_device_name(0)} is sm_{arch[0]}{arch[1]}")
    return None


def cli(argv: list[str]) -> int:
    """Entry point of `mok bench`; returns the exit status."""
    try:
        a = parse_args(argv)
    except MokInputError as exc:
        print(f"mok bench: error: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:   # --help
        return int(exc.code or 0)
    try:
        _check_args(a)  # bad flags are named on any machine, before the GPU check
    except ValueError as exc:
        print(f"mok bench: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:      # a path too long for the file system (else not the input's)
        if (bad := path_input_error(exc)) is None:
            raise
        print(f"mok bench: error: {bad}", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("mok bench: error: needs a CUDA GPU, and torch.cuda.is_available() is False here",
              file=sys.stderr)
        return 2
    why = gluon_machine_refusal(a)
    if why:
        print(f"mok bench: error: {why}", file=sys.stderr)
        return 2
    if a.gpus:
        from .bench_group import run
        return run(a)
    try:
        run_grid(a)
    except BadInput as exc:
        print(f"mok bench: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(cli(sys.argv[1:]))
