"""First-principles parameter values (priors) with their sources, before any fit.

`python -m calibration.defaults` turns these into the shipped parameter files; `mok calibrate`
starts from them.
"""

from __future__ import annotations

from mok_model.params import ADDED, Params

# name -> (value, source) shared by every hardware unless a family overrides it
COMMON = {
    "gemm_tile_m": (128, "design: the megakernel's compute tile is 128 rows"),
    "gemm_tile_n": (128, "design: the megakernel's compute tile is 128 columns"),
    "push_copy_scale": (1.0, "prior: pushing and pulling SMs copy equally fast until measured"),
    "sm_scaling": (1.0, "prior: GEMM throughput linear in the SMs used, until measured"),
    "signal_local_us": (0.43, "probe: flag ping-pong round trip 0.86 us between two CTAs, one way"),
    "minibatch_overhead_us": (2.0, "prior: about two grid-wide counter round trips (probe: 0.86 us each)"),
    "schedule_us": (15.0, "prior: three small routing/schedule kernels of ~5 us each"),
    "schedule_ns_per_route": (0.05, "prior: one 4-byte id sorted/scanned at ~80 GB/s effective"),
    "ring_wrap_us": (2.0, "prior: one slot-recycling barrier, about two counter round trips"),
    "ring_refill_overlap": (0.5, "prior: slots free tile by tile, so about half the gate/up overlaps the refill"),
    "capacity_headroom": (1.25, "policy: the schedule holds 25% more rows than the busiest GPU needs"),
    "mok_fixed_us": (0.0, "prior: no residual overhead until a fit says otherwise"),
    "mok_exposed_launches": (1.0, "design: no host sync, so only the first launch is exposed"),
    "host_launch_scale": (1.0, "x86 host: the preset's launch_us as measured"),
    "host_sync_us": (24.8, "probe: small op launch plus item() host sync, 24.8 us"),
    "bwd_gemm_eff_scale": (0.9, "prior: weight-gradient GEMMs reduce over rows, a little less efficient"),
    "wgrad_bytes_per_weight": (8.0, "prior: fp32 main-grad accumulation, one read and one write"),
    "nccl_eff": (0.82, "facts: 8xH100 NCCL all-to-all bus bandwidth ~370 of 450 GB/s"),
    "nccl_ops": (16, "count: host ops after the count sync in our nccl-torch baseline (mok_kernels/baselines.py)"),
    "deepep_sms": (24, "facts: DeepEP v2 EP8 dispatch with 24 SMs (DeepEP README)"),
    "deepep_ops": (20, "count: the 16 torch ops of the expert compute plus DeepEP's layout, dispatch, "
                       "combine and event calls"),
    "hybridep_sms": (16, "facts: HybridEP BF16 dispatch measured with 16 SMs (DeepEP Hybrid-EP docs)"),
    "hybridep_ops": (20, "count: as DeepEP+PyTorch, HybridEP's calls replacing DeepEP's inside Megatron"),
    "comet_overhead": (0.1, "assumption: Comet's tile scheduling costs ~10% of compute"),
    "comet_sms": (16, "assumption: Comet reserves 16 SMs for communication"),
    # parameters added after parameter files were first written: one prior, kept in
    # mok_model/params.py so that an older file lacking them loads with the same value
    **ADDED,
}

# Our backward megakernel and FP8 forward (mok_kernels/backward.py, megakernel.py with
# precision="fp8"): design facts and first-principles priors; calibration/passes.py fits the
# efficiencies to the H200 runs of the default kernel variants.
OUR_PASSES = {
    "bwd_recompute": (1.0, "design: mok_kernels/backward.py A items recompute g and u from the "
                           "dispatched x rows (16HI backward FLOPs per row instead of 12HI)"),
    "bwd_dispatch_rows": (2.0, "design: mok_kernels/backward.py comm programs pull each route's x "
                               "row and its dOut row (BF16)"),
    "wgrad_eff_scale": (1.0, "prior: weight-gradient tiles at the data-gradient tiles' rate until "
                             "fitted"),
    "wgrad_tile_us": (1.0, "prior: per-item model of the backward (NOTES.md, Backward megakernel): "
                           "~2 us per 128x256 weight-gradient item (pipeline fill 1 us, counter "
                           "acquire 0.5 us, dependent loads 0.5 us), 1 us per 128x128 block"),
    "fp8_tile_m": (64, "design: KernelConfig's FP8 default block_m 64 (fp8_kernel v2, 4 stages)"),
    "fp8_quant_in_copy": (1.0, "design: mok_kernels/megakernel.py quantizes routed rows while the "
                               "comm programs copy them (BF16 crosses the fabric) and the shared "
                               "expert's rows inside its gate/up K loop (FP8 shared expert)"),
    "fp8_scale_cost": (0.23, "derived: fp8_kernel v2 applies one FFMA per accumulator element per "
                             "128-wide K block after waiting for the wgmma (NOTES.md, FP8 forward): "
                             "1/128 clk per element on 128 FP32 lanes vs 256 FLOP per element at "
                             "the SM's FP8 rate (1979 TF/s / 132 SMs / 1.98 GHz = 7,570 FLOP/clk): "
                             "0.0078 / 0.0338 = 0.23"),
    "fp8_gluon_copy_exp": (0.737, "measured: the Gluon FP8 pass's comm programs alone "
                                  "(mode=comm) at 16 / 24 / 32 / 48 programs, kimi-k2 and glm-5 "
                                  "EP 8, 4,096 tokens: time ~ programs^-0.746 and ^-0.729 "
                                  "(benchmarks/device/s27_fourth.sh, "
                                  "mok_kernels/logs_s27/s27d/comm.log, H200, 2026-12-02); their "
                                  "mean"),
    "fp8_quant_copy_scale": (0.73, "derived: the quantizing copy's ~8.7 instructions per element "
                                   "(sm_90 compile, NOTES.md) issue at ~58 GB/s of BF16 rows per "
                                   "SM, serial with the plain copy's ~21.6 GB/s per SM (h200-1 fit): "
                                   "1 / (1 + 21.6/58) = 0.73 of the plain rate"),
}

# cross-GPU signalling over NVLink until measured (Hopper and Blackwell alike)
NVLINK_SIGNALS = {
    "signal_remote_us": (1.8, "facts: P2P write latency with software overhead 1.8-2.3 us (cuda-samples issue 230)"),
    "push_signal_per_peer_us": (1.2, "prior: a pushing sender releases its peers in turn, each system-scope "
                                     "release atomic waiting for the previous one's acknowledgment: one "
                                     "NVLink round trip, 2 x the preset's 0.6 us hop latency (facts: "
                                     "simulators use 500-700 ns, ASTRA-sim issue 59); not measured yet "
                                     "(calibration/fit_fabric.py fits it from micro-nvlink-signal)"),
}

HOPPER = {  # what our megakernel would be on a Hopper box
    "tile_aligned_minibatches": (1.0, "design: mok_kernels/schedule.py cuts minibatches on row-tile boundaries"),
    "wave_sync": (0.0, "design: mok_kernels/megakernel.py hands out tiles from a dynamic work counter "
                       "across minibatches"),
    "comm_join_share": (1.0, "design: mok_kernels/megakernel.py (join=True): comm programs take compute "
                             "items after the dispatch"),
    "combine_in_epilogue": (1.0, "design: mok_kernels/megakernel.py: push combine stores rows from the "
                                 "down-projection epilogue"),
    "combine_after_dispatch": (1.0, "design: mok_kernels/megakernel.py: comm programs run every "
                                    "minibatch's dispatch before the first pull-combine copy"),
    "combine_owner_order": (1.0, "design: mok_kernels/megakernel.py (group pull combine): a home's comm "
                                 "programs walk the owners in rank order, each owner's minibatches "
                                 "in order, so the later owners' rows are read after the first "
                                 "owner's last minibatch (emulated peers walk their own only)"),
    "push_lanes_bound": (1.0, "design: mok_kernels/megakernel.py (push dispatch): lane l serves the "
                              "pair of ranks l % P, and a pair's ceil((lanes - s) / P) lanes copy "
                              "its rows only, so a minibatch whose rows come from few senders is "
                              "copied by their lanes alone (analytic.push_lane_rows)"),
    "push_release_lanes": (1.0, "design: mok_kernels/megakernel.py (push dispatch): each comm "
                                "program copies its lanes' rows and releases that lane's receiver, "
                                "so a GPU's releases of a minibatch are spread over its comm "
                                "programs, ceil(P / comm SMs) apiece"),
    "gemm_eff": (0.76, "probe: bf16 GEMM 752 TF/s at m=8192 of 989 TF/s peak"),
    "hbm_eff": (0.875, "probe: device-to-device copy 4.20 of 4.8 TB/s"),
    "copy_gbps_per_sm": (12.4, "probe: row gather 12.4 GB/s per 256-thread block, linear to 132 blocks"),
    "link_eff": (0.83, "facts: HGX H100 peer copy 371-380 of 450 GB/s (NCCL issue 1264)"),
    **NVLINK_SIGNALS,
    **OUR_PASSES,
}

H200_LOCAL = {  # one H200 emulating its peers in local memory
    **HOPPER,
    # set into the shipped files by hand in session 40 and never here, so session 69's full
    # `calibration.defaults` run wrote the 1.0 prior in its place (mok calibrate keeps it fixed)
    "pipe_copy_scale": (1.25, "measured on our kernel (not fitted): the megakernel's copies alone "
                              "(KernelConfig.skip_gemm) with copy_rows one column step at a time "
                              "and with two steps' loads in flight, same run, seven pull-dispatch "
                              "settings (qwen3-30b-a3b EP 8 4,096 tokens at 8-32 comm SMs, seed "
                              "14's regret case, kimi-k2 EP 16): time ratio median 1.25 "
                              "(1.18-1.43); mok_kernels/logs_s40/pipe/pipe.jsonl "
                              "(benchmarks/device/s40_pipe.py, one H200, 2026-12-04)"),
    "link_eff": (0.78, "probe: row gather 1.64 TB/s at 132 blocks over the 2.1 TB/s copy ceiling"),
    "signal_remote_us": (0.43, "probe: emulated peers signal through local memory, one way 0.43 us"),
    "push_signal_per_peer_us": (0.1, "prior: emulated peers' flags are local: one L2-resident flag poll, "
                                     "~200 cycles at 1.98 GHz (probe clock)"),
    "push_scan_us": (0.7, "prior: an emulated push lane visits every chunk of a minibatch for its "
                          "peer's rows (analytic.push_scan_chunks): one dependent global load of "
                          "the chunk's 16 source indices, ~0.6-0.8 us HBM latency, then its "
                          "mostly masked row loop"),
    "push_scan_step_us": (0.1, "prior: each column step of a visited chunk's row loop (copy_rows: "
                               "a 16-row x up-to-1,024-column load and store, issued whether its "
                               "rows are masked or not; analytic.copy_steps) costs about 200 cycles "
                               "at 1.98 GHz"),
}

BLACKWELL = {  # the published kernel on Blackwell
    "tile_aligned_minibatches": (0.0, "design: a published minibatch is a fixed number of routed rows (mok-system.md)"),
    "wave_sync": (1.0, "design: a minibatch must fill every compute SM in whole waves (mok-system.md section 2)"),
    "comm_join_share": (0.0, "design: the published kernel's comm SMs only move data (mok-system.md section 2)"),
    "combine_in_epilogue": (0.0, "design: the published kernel's comm SMs push the outputs home (mok-system.md)"),
    "combine_after_dispatch": (0.0, "design: the published comm SMs interleave minibatch i's combine with "
                                    "the next dispatches (mok-system.md)"),
    "gemm_eff": (0.76, "prior: Hopper's measured fraction (probe) until fitted"),
    "hbm_eff": (0.875, "prior: Hopper's measured fraction (probe) until fitted"),
    "copy_gbps_per_sm": (50.0, "facts: DeepEP v2's SM-count formula assumes 50 GB/s written per SM"),
    "link_eff": (0.82, "facts: HybridEP kernel-only dispatch 735 of 900 GB/s on B200 EP8"),
    **NVLINK_SIGNALS,
}


def prior_params(hardware: str, family: dict) -> Params:
    table = {**COMMON, **family}
    return Params({k: v for k, (v, _) in table.items()}, hardware, None, [],
                  {k: s for k, (_, s) in table.items()})
