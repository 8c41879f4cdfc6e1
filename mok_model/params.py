"""Model parameters: every efficiency or overhead constant, with provenance, in a JSON file.

A parameters file names the hardware it was made for, the runs it was fitted on, and for each
value its source. predict/simulate/tune read one; calibration writes one. What a fit reports
beside the values (residuals, metrics, stages: nothing a prediction reads) goes to a fit record
of its own, fit/NAME beside the file, which the file names (`read_fit_record`).
"""

from __future__ import annotations

import json
import math
import numbers
import os
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from .errors import MokInputError
from .fileio import atomic_write_text, loads_json

PARAMS_DIR = Path(__file__).parent / "params"
SCHEMA = "mok-params/1"
FIT_SCHEMA = "mok-params-fit/1"

# name -> (lower bound, upper bound): the physically meaningful range of each parameter.
BOUNDS: dict[str, tuple[float, float]] = {
    "gemm_eff": (0.05, 0.9),  # fraction of peak tensor rate a full tile sustains per SM
    "sm_scaling": (0.3, 1.0),  # GEMM rate grows as (SMs used)^sm_scaling (1: linear)
    "tile_aligned_minibatches": (0.0, 1.0),  # 1: minibatches are cut on row-tile boundaries
    "wave_sync": (0.0, 1.0),  # 1: each minibatch's GEMM tiles run in whole waves; 0: they stream
    "gemm_tile_m": (16, 256),  # rows of a compute tile
    "gemm_tile_n": (16, 256),  # columns of a compute tile
    "hbm_eff": (0.3, 1.0),  # fraction of spec HBM bandwidth reached by weight and epilogue reads
    "copy_gbps_per_sm": (1.0, 400.0),  # bytes per second one communication SM moves
    "push_copy_scale": (0.05, 1.0),  # a pushing comm SM's copy rate relative to a pulling one's
    "copy_slowdown_beside_gemm": (0.0, 0.5),  # share of the comm SMs' copy rate lost while the
    # compute SMs run GEMMs on the same GPU (HBM / L2 contention; analytic.copy_beside_gemm)
    "link_eff": (0.3, 1.0),  # fraction of fabric bandwidth a well-fed copy reaches
    "signal_local_us": (0.0, 20.0),  # release/acquire of a GPU-local counter
    "signal_remote_us": (0.0, 50.0),  # one remote completion signal (fence + flag over the fabric)
    "push_signal_per_peer_us": (0.0, 10.0),  # extra wait per peer a push consumer must hear from
    "push_scan_us": (0.0, 20.0),  # a comm program's visit of one chunk it scans for its rows
    # (push dispatch lanes; our pull combine across GPUs: analytic.push_scan, pull_scan_chunks)
    "push_scan_step_us": (0.0, 5.0),  # more per column step of the visited chunk's masked row loop
    # (analytic.copy_steps: H in steps of up to 1,024 columns, each issued whether masked or not)
    "push_pass_us": (0.0, 200.0),  # a push dispatch's time per pass beyond its copies and scans
    # (the compute's later first rows and the dispatch's later end: analytic.mok_terms "fixed")
    "serial_copy_scale": (0.3, 1.0),  # the copy rate of a comm loop that loads its row ids and
    # peer offsets step by step, over the pull copies' that load them ahead (analytic.copy_load)
    "pipe_copy_scale": (1.0, 2.0),  # today's pull copies' rate (two column steps' loads in
    # flight) over the loop before (one step at a time) where a row has 2+ steps (copy_load)
    "minibatch_overhead_us": (0.0, 100.0),  # per-minibatch pipeline step (barriers, lookups)
    "schedule_us": (0.0, 500.0),  # routing all-gather and schedule kernels, fixed part
    "schedule_ns_per_route": (0.0, 10.0),  # schedule building per routed row in the EP group
    "ring_wrap_us": (0.0, 100.0),  # one wrap of the macrobatch ring buffer (slot recycling sync)
    "ring_refill_overlap": (0.0, 1.0),  # share of a minibatch's gate/up a tight ring's refill overlaps
    "capacity_headroom": (1.0, 4.0),  # capacity must exceed the largest observed load by this
    "comm_join_share": (0.0, 1.0),  # share of comm SMs that join the compute after the dispatch
    "combine_in_epilogue": (0.0, 1.0),  # 1: push combine stores from the down-GEMM epilogue
    "combine_after_dispatch": (0.0, 1.0),  # 1: comm SMs finish every dispatch before pull combines
    "combine_owner_order": (0.0, 1.0),  # 1: a home pulls the owners' rows owner after owner
    "push_release_lanes": (0.0, 1.0),  # 1: a push dispatch's comm programs each release the
    # receivers they copied for; 0: one writer releases every receiver in turn (push_release)
    "push_lanes_bound": (0.0, 1.0),  # 1: a push dispatch's comm programs each copy one pair of
    # ranks' rows (analytic.push_lane_rows); 0: a sender's rows spread over all its comm SMs
    "source_order_rotated": (0.0, 1.0),  # 1: each GPU's sources of an expert start after itself
    "mok_fixed_us": (0.0, 2000.0),  # residual per-pass overhead of the megakernel
    "mok_exposed_launches": (0.0, 10.0),  # host launches not hidden behind GPU work (no sync)
    "host_launch_scale": (0.5, 10.0),  # host launch time relative to the preset's launch_us
    "host_sync_us": (0.0, 500.0),  # one device-to-host count read (sync + copy)
    "bwd_gemm_eff_scale": (0.3, 1.5),  # backward GEMM efficiency relative to forward
    "wgrad_bytes_per_weight": (0.0, 16.0),  # HBM bytes of weight-gradient traffic per weight
    "nccl_eff": (0.05, 1.0),  # NCCL all-to-all bandwidth fraction of the fabric
    "nccl_peer_gbps": (1.0, 10000.0),  # GB/s NCCL's channels move to one peer (send/recv)
    "nccl_ops": (1, 200),  # host-launched ops after the count sync (nccl-torch)
    "deepep_sms": (1, 132),  # SMs a DeepEP dispatch/combine kernel takes
    "deepep_ops": (1, 200),  # host-launched ops after the sync (deepep+torch)
    "hybridep_sms": (1, 132),  # SMs a HybridEP kernel takes
    "hybridep_ops": (1, 200),  # host-launched ops after the sync (hybridep+megatron)
    "comet_overhead": (0.0, 1.0),  # Comet's fine-grained scheduling overhead, fraction of compute
    "comet_sms": (1, 132),  # SMs Comet reserves for communication
    "gemm_row_share": (0.0, 1.0),  # share of a tile's time that grows with its valid rows
    "nccl_collective_us": (0.0, 500.0),  # host time of one torch.distributed collective call
    "torch_gemm_eff": (0.05, 0.9),  # the library grouped GEMM's fraction of peak tensor rate
    "torch_hbm_eff": (0.3, 1.0),  # the library grouped GEMM's weight-read fraction of spec HBM
    # backward pass of the megakernel (analytic.expert_ffn_parts, docs/calibration.md "Backward
    # and FP8 terms")
    "bwd_recompute": (0.0, 1.0),  # 1: the backward recomputes gate/up (4HI of its 16HI FLOPs/row)
    "wgrad_eff_scale": (0.1, 2.0),  # weight-gradient tiles' rate relative to the data-gradient tiles'
    "wgrad_tile_us": (0.0, 50.0),  # fixed time per 128x128 weight-gradient block per expert, one SM
    "bwd_dispatch_rows": (1.0, 2.0),  # rows dispatched per route backward (2: x and dOut)
    # the backward on the layer's training tiles (Scenario.bwd_tiles "training"; no recompute)
    "bwd_train_eff_scale": (0.3, 1.5),  # its tiles' rate relative to the forward's for the shape
    "bwd_train_wgrad_tile_us": (0.0, 50.0),  # its fixed time per 128x128 weight-gradient block
    # FP8 forward of the megakernel
    "fp8_gemm_eff": (0.05, 0.9),  # fraction of the FP8 peak tensor rate a full FP8 tile sustains
    "fp8_scale_cost": (0.0, 2.0),  # per-128-K scale FFMAs' time relative to the FP8 MMA at peak
    "fp8_tile_m": (16, 256),  # rows of an FP8 compute tile
    "fp8_quant_in_copy": (0.0, 1.0),  # 1: rows quantized while the comm SMs copy them (no pass)
    "fp8_quant_copy_scale": (0.05, 1.0),  # a quantizing comm SM's copy rate relative to a plain one
    # the Gluon FP8 forward (Scenario.fp8_kernel "gluon", mok_kernels/gluon_fp8/mok.py)
    "fp8_gluon_gemm_eff": (0.05, 0.9),  # fraction of the FP8 peak a full Gluon FP8 tile sustains
    "fp8_gluon_tile_m": (16, 256),  # rows of a Gluon FP8 compute item
    "fp8_gluon_scale_cost": (0.0, 2.0),  # its scale FFMAs' time beside the MMA (fp8_scale_cost's)
    "fp8_gluon_copy_scale": (0.05, 1.0),  # its comm programs' quantizing copy rate / copy_gbps_per_sm
    "fp8_gluon_copy_exp": (0.1, 1.0),  # their summed rate grows as (comm programs)^this
    "fp8_gluon_fixed_us": (0.0, 200.0),  # a Gluon pass's own fixed time beyond mok_fixed_us
    "fp8_gluon_stream_scale": (0.2, 1.5),  # its weight stream rate / the megakernel's
}
# parameters that count (tile rows and columns, host operations, SMs): whole numbers
COUNTS = frozenset({"gemm_tile_m", "gemm_tile_n", "fp8_tile_m", "fp8_gluon_tile_m", "nccl_ops",
                    "deepep_sms", "deepep_ops", "hybridep_sms", "hybridep_ops", "comet_sms"})

# Parameters added to the model after parameter files were first written: name -> (prior,
# source). A file that lacks one of them still loads: the parameter takes this prior, its source
# says that the file lacks it, and Params.filled names it (predictions carry a note). Each prior
# is the value under which the model predicts as it did before the parameter existed, or a
# measured value where none does (its source says which); calibration/priors.py starts every fit
# from the same entries. Any other parameter missing from a file is an error.
ADDED: dict[str, tuple[float, str]] = {
    "nccl_peer_gbps": (50.0, "facts: NCCL's all-to-all is a send and a receive a peer, each on "
                             "its p2p channels per peer (2 in NCCL's init log on NVLink systems: "
                             "'8 p2p channels, 2 p2p channels per peer', NVIDIA/nccl issue 1189), "
                             "one SM each; at the 25 GB/s one copy program moved over NVLink "
                             "between two H200s (h200-hgx8 copy_gbps_per_sm, measured), 50 GB/s "
                             "a peer (7 peers: 350 GB/s, near 8xH100's ~370 of 450 GB/s bus "
                             "bandwidth, nccl_eff's source)"),
    "gemm_row_share": (0.0, "prior: a compute tile costs the same however many of its rows hold "
                            "data (the MMA runs on the whole tile), until a fit says otherwise"),
    "nccl_collective_us": (0.0, "prior: a torch.distributed collective costs the host one small-op "
                                "launch (counted in nccl_ops), until a fit says otherwise"),
    "torch_gemm_eff": (0.74, "probe: torch._grouped_mm, 8 experts 7168 -> 4096, 730 TF/s at 2048 "
                             "rows per expert of 989 TF/s peak (shared data/h200_probe.json)"),
    "torch_hbm_eff": (0.875, "prior: the megakernel's weight-read fraction (probe: device copy 4.20 "
                             "of 4.8 TB/s) until the library GEMM's own is fitted"),
    # backward and FP8 terms (docs/calibration.md, "Backward and FP8 terms"); each prior keeps
    # the predictions of a file written before them, except fp8_gemm_eff (see its source)
    "bwd_recompute": (0.0, "prior: the backward saves gate/up from the forward (12HI FLOPs per "
                           "row: data and weight gradients, twice the forward's 6HI)"),
    "wgrad_eff_scale": (1.0, "prior: weight-gradient tiles run at the data-gradient tiles' rate"),
    "wgrad_tile_us": (0.0, "prior: a weight-gradient tile costs only its FLOPs"),
    "bwd_dispatch_rows": (1.0, "prior: the backward dispatches one BF16 row per route (the output "
                               "gradient; the forward's x kept)"),
    "fp8_gemm_eff": (0.76, "prior: the BF16 probe fraction (bf16 GEMM 752 of 989 TF/s, shared "
                           "data/h200_probe.json) applied to the FP8 peak, until FP8 runs are fitted"),
    "fp8_scale_cost": (0.0, "prior: the FP8 scales cost nothing beside the MMA"),
    "fp8_tile_m": (128, "prior: FP8 tiles have gemm_tile_m's 128 rows"),
    "fp8_quant_in_copy": (0.0, "prior: BF16 rows are quantized in a pass of their own before the "
                               "dispatch (QUANTIZE_BYTES), FP8 rows cross the fabric, the shared "
                               "expert stays BF16"),
    "fp8_quant_copy_scale": (1.0, "prior: quantizing does not slow the copy (unused while "
                                  "fp8_quant_in_copy is 0)"),
    # the Gluon FP8 forward's terms (docs/calibration.md, "The Gluon FP8 kernel (session 26)");
    # they change only scenarios on that kernel (Scenario.fp8_kernel "gluon"), which no file
    # written before them predicted
    "fp8_gluon_gemm_eff": (0.76, "prior: the BF16 probe fraction (bf16 GEMM 752 of 989 TF/s, "
                                 "shared data/h200_probe.json) applied to the FP8 peak, as "
                                 "fp8_gemm_eff's prior, until Gluon FP8 runs are fitted"),
    "fp8_gluon_tile_m": (128, "design: mok_kernels/gluon_fp8/core.py BM = 128: a Gluon gate/up or "
                              "down item holds <= 128 rows of one expert (mok.py: the schedule is "
                              "built with block_m 128)"),
    "fp8_gluon_scale_cost": (0.0, "design: the Gluon kernel's scale FFMAs run under an MMA "
                                  "(mok_kernels/gluon_fp8/core.py _ffn_gate_up_tile: each scale "
                                  "step under the other math warpgroup's MMA; mok.py _dn_step: two "
                                  "MMAs in flight, block k's scales under block k+1's MMA), not "
                                  "after it as fp8_kernel v2's (fp8_scale_cost)"),
    "fp8_gluon_copy_scale": (0.73, "prior: the Triton FP8 kernel's derived quantizing-copy rate "
                                   "(fp8_quant_copy_scale 0.73 of copy_gbps_per_sm), assumed for the "
                                   "Gluon kernel's comm programs until Gluon FP8 runs are fitted"),
    "fp8_gluon_copy_exp": (1.0, "prior: the Gluon comm programs' summed copy rate grows in "
                                "proportion to their count (fp8_gluon_copy_scale per program at "
                                "every count)"),
    "fp8_gluon_fixed_us": (0.0, "prior: a Gluon FP8 pass costs no fixed time beyond the "
                                "megakernel's (mok_fixed_us, the launch and the schedule)"),
    "fp8_gluon_stream_scale": (1.0, "prior: the Gluon FP8 pass streams expert weights at the "
                                    "megakernel's rate (weight_stream_bps)"),
    # the training tiles' terms (docs/calibration.md, "Session 33: the training backward's pass
    # group"); they change only scenarios on those tiles (Scenario.bwd_tiles "training"), which
    # no file written before them predicted
    "bwd_train_eff_scale": (0.83, "derived: the same rank's backward GEMMs alone (gemm-only: "
                                  "torch grouped GEMMs, dgrad + wgrad, the 12HI FLOPs a row the "
                                  "training tiles run) at 607 / 648 TF/s, kimi-k2 / glm-5 EP 8 "
                                  "rank 0, 4,096 tokens (calibration/runs/h200/"
                                  "bwd_a_epi_s32.jsonl), over gemm_eff's 752 TF/s: 0.81 / 0.86, "
                                  "their mean; the training tiles at the library's backward rate "
                                  "until fitted"),
    "bwd_train_wgrad_tile_us": (1.0, "prior: wgrad_tile_us's per-item model (calibration/priors.py "
                                     "OUR_PASSES: ~2 us per 128x256 weight-gradient item, 1 us per "
                                     "128x128 block) until fitted"),
    "push_scan_us": (0.0, "prior: a push dispatch (and our pull combine across GPUs) costs only "
                          "the bytes it copies, as before the per-chunk scan was modelled; "
                          "h200-1's prior in calibration/priors.py"),
    "push_scan_step_us": (0.0, "prior: a chunk visit costs push_scan_us whatever the hidden size, "
                               "as before the masked row loop's column steps were modelled; "
                               "h200-1's fitted in calibration/priors.py"),
    "push_pass_us": (0.0, "prior: a push dispatch costs its copies, scans and signals only, as "
                          "before its per-pass time was modelled (docs/calibration.md "
                          "\"Session 75\")"),
    "serial_copy_scale": (1.0, "prior: a copy step that loads its row ids and peer offsets "
                               "before its rows copies as fast as one that loaded them ahead, "
                               "as the model read every copy before session 39 "
                               "(analytic.copy_load)"),
    "pipe_copy_scale": (1.0, "prior: a row copy with two column steps' loads in flight copies as "
                             "fast as one a step at a time, as the model read every copy before "
                             "session 40 (analytic.copy_load); measured on our kernel: h200-1"),
    "copy_slowdown_beside_gemm": (0.0, "prior: comm SMs copy as fast beside running GEMMs as "
                                       "alone (no interference), until a fit says otherwise"),
    "source_order_rotated": (0.0, "design: mok_kernels/schedule.py sorts each expert's received "
                                  "rows by source rank, so where an expert's rows outnumber a "
                                  "minibatch every GPU's minibatch k comes from the same slice of "
                                  "sources (1: a what-if schedule whose sources start after the "
                                  "receiver; docs/sim-study.md \"N\")"),
    "combine_owner_order": (0.0, "design: the published pull combine copies each minibatch's "
                                 "outputs as its owner finishes it, every owner's interleaved "
                                 "(mok-system.md); 1 for our kernel across GPUs (calibration/priors.py)"),
    "push_lanes_bound": (0.0, "design: the published push dispatch copies a sender's rows with "
                              "every comm SM it has, whichever receiver they go to "
                              "(mok-system.md); 1 for our kernel (calibration/priors.py), as the "
                              "model read every push dispatch before session 63"),
    "push_release_lanes": (0.0, "design: the published push dispatch has every receiver wait for "
                                "a completion signal from each peer (mok-system.md); a writer "
                                "releases its P - 1 receivers in turn, as the one-writer NVLink "
                                "microbenchmark measured them (analytic.push_release); 1 for our "
                                "kernel (calibration/priors.py)"),
}
# parameters older files may hold that no longer exist, and where their meaning went: skipped
RETIRED: dict[str, str] = {
    "empty_shared_slot": "the zero shared expert our kernel ran before 2026-12-01 is a property of "
                         "the run record now (mok_model/records.py record_zero_shared_slot)",
}


@dataclass(frozen=True)
class Params:
    """Parameter values plus provenance."""

    values: dict[str, float]
    hardware: str
    path: str | None = None
    fitted_on: list = field(default_factory=list)
    sources: dict = field(default_factory=dict)
    # the fit's parameter samples (see UNCERTAINTY_METHODS and docs/calibration.md), or None
    uncertainty: dict | None = None
    # parameters the file lacked (written before they existed), filled with their ADDED prior
    filled: tuple = ()
    # measured GEMM efficiencies by shape (mok_model/gemm_table.py) in place of gemm_eff for the
    # megakernel's GEMMs, or None; a file names it in "gemm_table" (a path beside the file)
    gemm_table: object = None

    def __getitem__(self, name: str) -> float:
        return self.values[name]

    def with_values(self, **changes: float) -> "Params":
        """The same parameters with some values changed; the fit's samples no longer describe
        them, so the copy has no uncertainty block."""
        unknown = sorted(set(changes) - set(BOUNDS))
        if unknown:
            raise MokInputError(f"with_values: unknown parameters {unknown}; known: {sorted(BOUNDS)}")
        changes = {name: _within_bounds(name, v) for name, v in changes.items()}
        return Params({**self.values, **changes}, self.hardware, None, self.fitted_on, self.sources,
                      None, tuple(f for f in self.filled if f not in changes), self.gemm_table)

    def with_design(self, **changes: float) -> "Params":
        """A what-if of design parameters (ADDED "design:" values such as source_order_rotated)
        that the fit did not free: its samples still describe the fitted values, so the copy
        keeps the file's path and uncertainty block (a band under the what-if); otherwise as
        with_values."""
        copy = self.with_values(**changes)
        u = self.uncertainty
        if u is None or set(changes) & set(u.get("free", ())):
            return copy
        return dataclasses.replace(copy, path=self.path, uncertainty=u)

    def with_table(self, table) -> "Params":
        """The same parameters with a GEMM efficiency table (None: gemm_eff for every shape)."""
        return Params(self.values, self.hardware, self.path, self.fitted_on, self.sources,
                      self.uncertainty, self.filled, table)

    def samples(self) -> list["Params"]:
        """One Params per sampled parameter vector of the uncertainty block ([] without one)."""
        u = self.uncertainty
        if not u:
            return []
        return [Params({**self.values, **dict(zip(u["free"], row))}, self.hardware, None,
                       self.fitted_on, self.sources, None, self.filled, self.gemm_table)
                for row in u["samples"]]

    def filled_note(self) -> str | None:
        """What a prediction must say when the parameters file lacked parameters (None if not)."""
        if not self.filled:
            return None
        return (f"parameters file {self.path or '(given)'} lacks "
                + ", ".join(f"{f} (using its prior {self.values[f]:g})" for f in self.filled)
                + ": written before the parameter existed; see mok_model/params.py ADDED")


def _within_bounds(name: str, v) -> float:
    """A changed value (with_values) as a float within its BOUNDS: a real number (numpy's too,
    never a bool or NaN); one a rounding past a bound (a bounded fit's scaled step) is put back
    on it; any other value outside is refused (a NaN link efficiency or a negative fixed cost
    gave NaN and negative latencies)."""
    lo, hi = BOUNDS[name]
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(float(v)):
        raise MokInputError(f"with_values: {name}={v!r} must be a number in [{lo}, {hi}]")
    v, slack = float(v), 1e-9 * max(1.0, abs(lo), abs(hi))
    if not lo - slack <= v <= hi + slack:
        raise MokInputError(f"with_values: {name}={v!r} must be a number in [{lo}, {hi}]")
    v = min(max(v, lo), hi)
    if name in COUNTS and v != int(v):
        raise MokInputError(f"with_values: {name}={v!r} must be a whole number (it counts) in "
                            f"[{lo}, {hi}]")
    return int(v) if name in COUNTS else v


def _check(values: dict, where: str) -> None:
    missing = sorted(set(BOUNDS) - set(values))
    if missing:
        raise MokInputError(f"{where}: parameters missing: {missing}")
    for name, v in values.items():
        if name not in BOUNDS:
            raise MokInputError(f"{where}: unknown parameter {name!r}; known: {sorted(BOUNDS)}")
        lo, hi = BOUNDS[name]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo <= v <= hi:  # nan fails
            raise MokInputError(f"{where}: {name}={v!r} must be a number in [{lo}, {hi}]")
        if name in COUNTS and v != int(v):
            raise MokInputError(f"{where}: {name}={v!r} must be a whole number (it counts) in "
                                f"[{lo}, {hi}]")


# how an uncertainty block's samples were drawn (calibration/fit.py estimate_uncertainty)
UNCERTAINTY_METHODS = ("bootstrap", "bootstrap-linear")


def check_uncertainty(block, where: str) -> dict:
    """Validate an optional "uncertainty" block: method, seed, n, free (parameter names) and
    samples (n vectors, one value per free parameter, each within its bounds)."""
    def bad(why: str):
        return MokInputError(f"{where}: uncertainty block {why}")
    if not isinstance(block, dict):
        raise bad("must be an object")
    if block.get("method") not in UNCERTAINTY_METHODS:
        raise bad(f"method {block.get('method')!r} must be one of {UNCERTAINTY_METHODS}")
    free, samples, n = block.get("free"), block.get("samples"), block.get("n")
    if not isinstance(free, list) or not free or any(f not in BOUNDS for f in free) \
            or len(set(free)) != len(free):
        raise bad(f"free {free!r} must be a list of distinct parameter names")
    if not isinstance(samples, list) or isinstance(n, bool) or not isinstance(n, int) \
            or n < 2 or len(samples) != n:
        raise bad(f"needs n >= 2 and n sample vectors (n={n!r}, "
                  f"{len(samples) if isinstance(samples, list) else 'no'} samples)")
    if isinstance(block.get("seed"), bool) or not isinstance(block.get("seed"), int):
        raise bad(f"seed {block.get('seed')!r} must be an integer")
    for i, row in enumerate(samples):
        if not isinstance(row, list) or len(row) != len(free):
            raise bad(f"sample {i} must list {len(free)} values (one per free parameter)")
        for name, v in zip(free, row):
            lo, hi = BOUNDS[name]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo <= v <= hi \
                    or name in COUNTS and v != int(v):
                raise bad(f"sample {i}: {name}={v!r} must be a number in [{lo}, {hi}]"
                          + (" (a whole number: it counts)" if name in COUNTS else ""))
    return block


def read_params(path: str | Path) -> Params:
    """Read and validate a parameters file."""
    if not str(path).strip():
        raise MokInputError(f"--params {str(path)!r} is empty; name a parameters file")
    path = Path(path)
    if not path.is_file():
        raise MokInputError(f"--params {str(path)!r}: no such file"
                            + (" (it is a folder)" if path.is_dir() else ""))
    try:
        doc = loads_json(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise MokInputError(
            f"--params {str(path)!r}: not JSON ({exc.msg}, line {exc.lineno})") from None
    except UnicodeDecodeError:
        raise MokInputError(f"--params {str(path)!r}: not UTF-8 text; a parameters file is JSON") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise MokInputError(f"--params {str(path)!r}: schema must be {SCHEMA!r}")
    entries = doc.get("values", {})
    if not isinstance(entries, dict):
        raise MokInputError(f"--params {str(path)!r}: values must be an object of name -> "
                            f"{{value, source}}")
    bad = [k for k, e in entries.items() if isinstance(e, dict) and "value" not in e]
    if bad:
        raise MokInputError(f"--params {str(path)!r}: {bad[0]} has no 'value'")
    if not isinstance(doc.get("hardware", ""), str):
        raise MokInputError(f"--params {str(path)!r}: hardware must be a preset name")
    fitted_on = doc.get("fitted_on", [])
    if not (isinstance(fitted_on, list) and all(isinstance(f, str) for f in fitted_on)):
        raise MokInputError(f"--params {str(path)!r}: fitted_on={fitted_on!r} must be a list of "
                            f"run-record files")
    entries = {k: e for k, e in entries.items() if k not in RETIRED}
    values = {k: (e["value"] if isinstance(e, dict) else e) for k, e in entries.items()}
    sources = {k: e.get("source", "") for k, e in entries.items() if isinstance(e, dict)}
    filled = tuple(sorted(k for k in ADDED if k not in values))
    for k in filled:  # a file written before the parameter existed: its prior, said so
        values[k] = ADDED[k][0]
        sources[k] = (f"not in {path} (written before this parameter existed): the prior of "
                      f"mok_model/params.py ADDED, {ADDED[k][1]}")
    _check(values, str(path))
    block = doc.get("uncertainty")
    if block is not None:
        check_uncertainty(block, f"--params {str(path)!r}")
    table = None
    ref = doc.get("gemm_table")
    if ref is not None:
        from .gemm_table import read_table

        if not isinstance(ref, str):
            raise MokInputError(f"--params {str(path)!r}: gemm_table must be a file name")
        table = read_table(path.parent / ref)
        _same_gpu(table, doc.get("hardware", ""), path)
    return Params(values, doc.get("hardware", ""), str(path), fitted_on, sources,
                  block, filled, table)


def _same_gpu(table, hardware: str, path: Path) -> None:
    """Refuse a GEMM table measured on another GPU than the parameters' hardware (both presets;
    h100-hgx8 reading h100-1's table is one GPU): its efficiencies are another card's."""
    from .presets import hardware_names, load_hardware

    names = hardware_names()
    if hardware not in names or table.hardware not in names:
        return
    mine, theirs = load_hardware(hardware).gpu, load_hardware(table.hardware).gpu
    if mine != theirs:
        raise MokInputError(f"--params {str(path)!r}: its gemm_table {table.path!r} was measured on "
                            f"{table.hardware} ({theirs}), the parameters are for {hardware} ({mine}): "
                            f"name a table of the same GPU")


def write_params(path: str | Path, params: Params, notes: str, extra: dict | None = None) -> None:
    """Write a parameters file with provenance (values, sources, fitted_on, notes) and, when the
    parameters carry one, the fit's uncertainty block (last); `extra` fields (the fit's
    residuals and metrics) go to its fit record, fit/NAME beside it, which the file names."""
    _check(params.values, str(path))
    if params.uncertainty is not None:
        check_uncertainty(params.uncertainty, str(path))
    doc = {"schema": SCHEMA, "hardware": params.hardware, "notes": notes,
           "fitted_on": params.fitted_on,
           "values": {k: {"value": params.values[k], "source": params.sources.get(k, "")}
                      for k in sorted(params.values)}}
    if params.gemm_table is not None:
        if params.gemm_table.path is None:
            raise MokInputError(f"{path}: its GEMM table must be written to a file first")
        doc["gemm_table"] = os.path.relpath(params.gemm_table.path, Path(path).resolve().parent)
    if extra:
        record = fit_record_path(path)
        record.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(record, json.dumps({"schema": FIT_SCHEMA, "hardware": params.hardware,
                                              **extra}, indent=1) + "\n")
        doc["fit_record"] = f"{record.parent.name}/{record.name}"
    if params.uncertainty is not None:
        doc["uncertainty"] = params.uncertainty
    atomic_write_text(path, json.dumps(doc, indent=1) + "\n")


def fit_record_path(path: str | Path) -> Path:
    """Where a parameters file's fit record goes: fit/NAME in the file's folder."""
    path = Path(path)
    return path.parent / "fit" / path.name


def read_fit_record(path: str | Path) -> dict:
    """The fit record a parameters file names (its `extra` fields as write_params got them:
    residuals, metrics, stages), or {} where it names none."""
    path = Path(path)
    doc = loads_json(path.read_text(encoding="utf-8"))    # a parameters file its reader passed
    ref = doc.get("fit_record") if isinstance(doc, dict) else None
    if ref is None:
        return {}
    if not isinstance(ref, str) or not ref.strip():
        raise MokInputError(f"{path}: fit_record={ref!r} must name a file beside it")
    if not (path.parent / ref).is_file():
        raise MokInputError(f"{path}: its fit record {ref!r} is missing (written beside it by "
                            f"calibration; copy it with the parameters file)")
    try:
        record = loads_json((path.parent / ref).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise MokInputError(f"{path.parent / ref}: the fit record of {path} is not JSON "
                            f"({getattr(exc, 'msg', exc)})") from None
    if not isinstance(record, dict) or record.get("schema") != FIT_SCHEMA:
        raise MokInputError(f"{path.parent / ref}: schema must be {FIT_SCHEMA!r}")
    return {k: v for k, v in record.items() if k not in ("schema", "hardware")}


def provenance(params: Params) -> dict:
    """Where a parameters file's values come from, for a user weighing its predictions: "fit"
    (fitted to the run files it names), "transfer" (another hardware's fit moved by stated
    ratios: `from` names it, `own_runs` the run files measured on this hardware or fabric that
    the transfer also read; calibration/transfer.py and calibration/defaults.py say how) or
    "priors" (no record behind it)."""
    src = (params.uncertainty or {}).get("transferred_from")
    kind = "transfer" if src else "fit" if params.fitted_on else "priors"
    out = {"kind": kind, "from": src, "fitted_on": list(params.fitted_on)}
    if src:   # run files of its own, beyond the parameters files and the source's own runs
        inherited = set(read_params(PARAMS_DIR / f"{src}.json").fitted_on) \
            if (PARAMS_DIR / f"{src}.json").is_file() else set()
        out["own_runs"] = [f for f in params.fitted_on
                           if f not in inherited and not f.startswith("mok_model/params/")]
    return out


def load_params(path: str | Path | None, hardware_name: str, allow_other_hardware: bool = False) -> Params:
    """The parameters for a hardware: a given file, or the shipped default for that preset.

    A file made for another hardware is refused unless allow_other_hardware is set.
    """
    if not isinstance(path, (str, os.PathLike, type(None))):
        raise MokInputError(f"--params {path!r}: name a parameters file (JSON)")
    if path is None:
        default = PARAMS_DIR / f"{hardware_name}.json"
        if not default.is_file():
            raise MokInputError(
                f"no default parameters for hardware {hardware_name!r}; pass --params FILE "
                f"(shipped: {sorted(p.stem for p in PARAMS_DIR.glob('*.json'))}) with "
                f"--allow-params-mismatch, or fit one with `mok calibrate`")
        params = read_params(default)
        if params.hardware != hardware_name:  # a fit of other hardware written under its name
            raise MokInputError(
                f"the default parameters {str(default)!r} of {hardware_name} were fitted for "
                f"hardware {params.hardware!r}; restore the file (git checkout) or pass --params")
        return params
    params = read_params(path)
    if params.hardware != hardware_name and not allow_other_hardware:
        raise MokInputError(
            f"--params {str(path)!r} was fitted for hardware {params.hardware!r}, not "
            f"{hardware_name!r}; name that hardware's file (the mok commands take "
            f"--allow-params-mismatch to use it anyway; Python: allow_other_hardware=True; MoKLayer "
            f"and knobs.choose_knobs: allow_params_mismatch=True)")
    return params
