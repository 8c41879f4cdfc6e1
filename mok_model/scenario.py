"""What is asked (Scenario: hardware, model, EP, tokens, pass, precision, routing) and the knobs
that answer it (Config). Both frozen, validated at construction with messages that name the rule."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .errors import MokInputError
from .presets import Hardware, MoEModel, plain

# the longest work-list lag our megakernel takes (KernelConfig.list_lag; Scenario.list_lag)
MAX_LIST_LAG = 8
# the down column blocks and K slices a down item of our megakernel may take (KernelConfig
# dn_blocks, split_dn; Scenario.dn_blocks, split_dn, where 0 is the layer's choice)
MAX_DN_BLOCKS = 64
SPLIT_DNS = (1, 2, 4, 8, 16)
PASSES = ("fwd", "bwd")
PRECISIONS = ("bf16", "fp8", "mxfp8")
MODES = ("pull", "push")
# our megakernel's FP8 forward kernels (mok_kernels KernelConfig.fp8_kernel): "triton", the
# Triton megakernel (fp8_kernel v1 / v2, the default), or "gluon", the one persistent Gluon kernel
# of mok_kernels/gluon_fp8/mok.py (pull dispatch, push combine, capacity 1.0, lag 1 only)
FP8_KERNELS = ("triton", "gluon")
# the knobs the Gluon FP8 pass runs with and refuses otherwise (mok_kernels/gluon_fp8/mok.py
# GluonFP8MoK: "pull dispatch, push combine, capacity 1.0 (the ring holds every routed row), lag 1")
GLUON_KNOBS = {"dispatch": "pull", "combine": "push", "capacity": 1.0}
# what the tuner takes for the Gluon FP8 pass where the caller leaves them open: the pass's
# measured defaults (mok_kernels/gluon_fp8/mok.py COMM_SMS, MINIBATCH), which the layer runs.
# The model's own pick among 24-64 comm programs was 8-16% from the best on nine of twelve
# workloads (docs/calibration.md "Session 27"): a prediction with the knob open is the layer's
# pass; --comm-sms predicts another count
GLUON_COMM_SMS = (40,)
GLUON_MINIBATCHES = (4096,)
HOPPER_GPUS = ("H100", "H200")   # the GPUs (Hardware.gpu) the Gluon FP8 kernel runs on (sm_90)
# the backward megakernel's tiles (Scenario.bwd_tiles): "recompute", BackwardTiles() (the A items
# recompute g and u; what `mok bench --pass bwd` times as "default" and the "bwd" pass group is
# fitted on), or "training", the tiles the layer trains with (mok_kernels/backward.py
# TRAINING_TILES: g and u saved by the forward, A items of 256 columns where 256 divides the
# padded expert width, else 128; weight gradients written directly; the "bwd-train" pass group)
BWD_TILES = ("recompute", "training")
# the order of an expert's received rows by source in our megakernel's schedule (mok_kernels
# KernelConfig.source_order, `mok bench --source-order`, a record's tiles.source_order): "rank"
# (source rank 0 first), or "rotated" (each rank's sources start after it; the model's what-if
# parameter source_order_rotated, `mok predict --source-order`)
SOURCE_ORDERS = ("rank", "rotated")
# our megakernel's comm copy loop (mok_kernels/megakernel.py gather_chunks and copy_rows), by the
# run records made with it (records.record_copy_loop): "shares", today's (from 2026-12-06 10:29
# UTC, KernelConfig.push_loop 'shares'), whose push lanes split their pair's rows evenly, every
# lane reading every row tile's sources (copy_share); "runs" (from 2026-12-04 12:34 UTC), the
# "pipe" loop whose push lanes copy their pair's run of every nsub-th row tile instead of
# scanning every chunk of the minibatch (emulated lanes; the senders' lanes across GPUs from
# commit 8ec638c); "pipe" (from 09:00 that day), whose row
# copies issue the next column step's loads before this step's stores; "ahead" (from 00:50 that
# day), whose pull dispatch and pull combine load a chunk's row ids and peer offsets ahead of its
# rows, one column step at a time; "serial", the loop before, that waited on both before every
# chunk. Push lanes load their indices step by step in all four.
COPY_LOOPS = ("shares", "runs", "pipe", "ahead", "serial")
SYSTEMS = ("mok", "nccl-torch", "deepep", "hybridep", "comet")
ENGINES = ("analytic", "sim")
# The largest row count or SM count a knob may take: the model's arrays hold them as 64-bit
# integers and multiply them by widths and byte sizes, so larger values would overflow.
KNOB_MAX = 2**31 - 1
# The largest seed a run on the GPU takes: torch generators take 64-bit seeds, and the bench adds
# the iteration to it (mok bench, calibration.register, group_check refuse more).
MAX_SEED = 2**63 - 1

# Bytes per activation/weight element moved or read, by precision. MXFP8: one E8M0 scale byte per
# 32 E4M3 elements (mok-system.md section 1). The combine always returns BF16 outputs.
ELEMENT_BYTES = {"bf16": 2.0, "fp8": 1.0, "mxfp8": 1.0 + 1.0 / 32}
# HBM bytes per element to quantize BF16 rows: FP8 with one scale per row reads the row twice
# (its absolute maximum, then the scaled values) and writes one byte; MXFP8 takes each
# 32-element block's scale in the same pass, so it reads once and writes 1 + 1/32 bytes.
QUANTIZE_BYTES = {"bf16": 0.0, "fp8": 2.0 + 2.0 + 1.0, "mxfp8": 2.0 + 1.0 + 1.0 / 32}


# the six knobs of a MoK pass (Config's fields), in the order records and tables list them
KNOBS = ("dispatch", "combine", "minibatch", "comm_sms", "macrobatch", "capacity")


def check_knob(knob: str, v) -> None:
    """One knob's own rule (Config's), also for a knob given alone: a tuner search's fixed
    knobs, a layer's given ones."""
    if knob in ("dispatch", "combine"):
        if not isinstance(v, str) or v not in MODES:
            raise MokInputError(f"--{knob} {v!r} must be one of {MODES}")
    elif knob in ("minibatch", "comm_sms", "macrobatch"):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise MokInputError(f"--{knob.replace('_', '-')} {v!r} must be an integer >= 1")
        if v > KNOB_MAX:
            raise MokInputError(f"--{knob.replace('_', '-')} {v} must be at most {KNOB_MAX}")
    elif knob == "capacity":
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1:
            raise MokInputError(f"--capacity {v!r} must be in (0, 1]")
    else:
        raise MokInputError(f"unknown knob {knob!r}; knobs are {', '.join(KNOBS)}")


def check_list_lag(lag) -> None:
    """The work-list lag's rule (KernelConfig.list_lag): an integer from 1 to MAX_LIST_LAG."""
    if isinstance(lag, bool) or not isinstance(lag, int) or lag < 1:
        raise MokInputError(f"list_lag {lag!r} must be an integer >= 1")
    if lag > MAX_LIST_LAG:
        raise MokInputError(f"--list-lag {lag} must be at most {MAX_LIST_LAG} "
                            f"(KernelConfig.list_lag)")


def check_ep_tokens(ep, tokens) -> None:
    """EP and tokens per GPU are integers >= 1 (a bool is not a count)."""
    for flag, v in (("ep", ep), ("tokens", tokens)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise MokInputError(f"--{flag} {v!r} must be an integer >= 1")


@dataclass(frozen=True, slots=True)
class Scenario:
    """One MoE layer pass: P = ep GPUs, each with `tokens` local tokens before dispatch."""

    hardware: Hardware
    model: MoEModel
    ep: int
    tokens: int
    pass_: str = "fwd"
    precision: str = "bf16"
    routing: str = "uniform"
    seed: int = 0
    # zipf routing's expert popularity order (workload.ZIPF_ORDERS): the model's draw, or
    # "torch-cuda-randperm" for run records measured before 2026-12-01 03:40 UTC
    zipf_order: str = "model"
    # run records of our megakernel's forward made before 2026-12-01 15:44 UTC, for a model
    # without a shared expert: that kernel also ran a zero shared expert of the routed width over
    # the home tokens (records.record_zero_shared_slot; analytic.shared_section)
    zero_shared_slot: bool = False
    # K slices of our megakernel's down GEMM where a run record's kernel ran other than the
    # layer's choice for the shape (records.record_split_dn); 0: the layer's choice
    # (mok_kernels/tiles.py forward_split_dn, gemm_table.split_dn)
    split_dn: int = 0
    # our megakernel's work list: minibatch i's down items after the gate/up items of minibatch
    # i + list_lag (mok_kernels KernelConfig.list_lag; a run record's tiles name it when not 1:
    # records.record_list_lag); a record that does not name it ran 1
    list_lag: int = 1
    # our megakernel's FP8 forward kernel (FP8_KERNELS; a run record's tiles.fp8_kernel "gluon":
    # records.record_fp8_kernel); "triton" for every other pass and precision
    fp8_kernel: str = "triton"
    # our backward megakernel's tiles (BWD_TILES; a run record's tiles: records.record_bwd_tiles);
    # "recompute" for every forward
    bwd_tiles: str = "recompute"
    # our megakernel's comm copy loop (COPY_LOOPS; records.record_copy_loop)
    copy_loop: str = "shares"
    # column blocks of our megakernel's down work items where a run record's kernel ran other
    # than the layer's choice for the shape (records.record_dn_blocks); 0: the layer's choice
    # (mok_kernels/tiles.py forward_dn_blocks, gemm_table.dn_blocks)
    dn_blocks: int = 0

    def __post_init__(self) -> None:
        for name in ("ep", "tokens", "seed", "list_lag", "split_dn", "dn_blocks"):
            object.__setattr__(self, name, plain(getattr(self, name)))  # numpy scalars as values
        hw, m = self.hardware, self.model
        if not isinstance(hw, Hardware) or not isinstance(m, MoEModel):
            raise MokInputError(f"Scenario({hw!r}, {m!r}, ...): a Hardware and a MoEModel "
                                f"(presets.load_hardware, load_model) are required")
        if not isinstance(self.zero_shared_slot, bool):
            raise MokInputError(f"zero_shared_slot {self.zero_shared_slot!r} must be True or False")
        if self.copy_loop not in COPY_LOOPS:
            raise MokInputError(f"copy_loop {self.copy_loop!r} must be one of "
                                f"{', '.join(COPY_LOOPS)}")
        if self.bwd_tiles not in BWD_TILES:
            raise MokInputError(f"--bwd-tiles {self.bwd_tiles!r} must be one of "
                                f"{', '.join(BWD_TILES)}")
        if self.bwd_tiles == "training" and (self.pass_ != "bwd" or self.precision != "bf16"):
            raise MokInputError(f"--bwd-tiles training with --pass {self.pass_} --precision "
                                f"{self.precision}: the training tiles are our BF16 backward "
                                f"megakernel's (--pass bwd --precision bf16)")
        if self.fp8_kernel not in FP8_KERNELS:
            raise MokInputError(f"--fp8-kernel {self.fp8_kernel!r} must be one of "
                                f"{', '.join(FP8_KERNELS)}")
        if self.fp8_kernel == "gluon":
            if self.precision != "fp8" or self.pass_ != "fwd":
                raise MokInputError(f"--fp8-kernel gluon with --precision {self.precision} --pass "
                                    f"{self.pass_}: the Gluon kernel runs the FP8 forward only "
                                    f"(--precision fp8 --pass fwd)")
            if not hw.gpu.startswith(HOPPER_GPUS):
                raise MokInputError(f"--fp8-kernel gluon on {hw.name} ({hw.gpu}): the Gluon FP8 "
                                    f"kernel is sm_90 only ({', '.join(HOPPER_GPUS)})")
            why = gluon_shape_refusal(m.hidden, m.expert_width, m.shared_width * m.shared_experts,
                                      m.routed_experts, self.ep)
            if why:
                raise MokInputError(f"--fp8-kernel gluon with model {m.name}, EP {self.ep}: {why}")
            if self.list_lag != 1:
                raise MokInputError(f"--list-lag {self.list_lag} with --fp8-kernel gluon: the "
                                    f"Gluon FP8 pass runs lag 1 only "
                                    f"(mok_kernels/gluon_fp8/mok.py)")
        check_list_lag(self.list_lag)
        check_ep_tokens(self.ep, self.tokens)
        if type(self.split_dn) is not int or self.split_dn not in (0, *SPLIT_DNS):
            raise MokInputError(f"split_dn {self.split_dn!r} must be 0 (the layer's choice) or one "
                                f"of {', '.join(map(str, SPLIT_DNS))}")
        if type(self.dn_blocks) is not int or not 0 <= self.dn_blocks <= MAX_DN_BLOCKS:
            raise MokInputError(f"dn_blocks {self.dn_blocks!r} must be an integer from 0 (the "
                                f"layer's choice) to {MAX_DN_BLOCKS}")
        if self.pass_ not in PASSES:
            raise MokInputError(f"--pass {self.pass_!r} must be one of {PASSES}")
        if self.precision not in PRECISIONS:
            raise MokInputError(f"--precision {self.precision!r} must be one of {PRECISIONS}")
        if hw.tflops(self.precision) <= 0:
            raise MokInputError(
                f"--precision {self.precision} needs tensor cores with that path; {hw.name} "
                f"({hw.gpu}) has none (mxfp8 needs Blackwell or later)")
        if self.ep > m.routed_experts:
            raise MokInputError(
                f"--ep {self.ep} is more than the {m.routed_experts} routed experts of {m.name}: "
                f"some GPUs would hold no expert; use --ep {m.routed_experts} or less")
        if self.ep > hw.domain_size and not hw.emulated_ranks and hw.scaleout_gbps <= 0:
            raise MokInputError(
                f"--ep {self.ep} is larger than {hw.name}'s scale-up domain of {hw.domain_size} "
                f"GPUs and the hardware has no scale-out link (scaleout_gbps)")
        weights = self.weight_bytes_per_gpu
        if weights > hw.hbm_gb * 1e9:
            raise MokInputError(
                f"--ep {self.ep} ({m.name}, {self.precision}): one GPU's expert weights alone need "
                f"{weights / 1e9:.4g} GB, more than the {hw.hbm_gb:g} GB of {hw.name}'s HBM; "
                f"raise --ep (or use a smaller model)")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) \
                or not 0 <= self.seed <= MAX_SEED:
            raise MokInputError(f"--seed {self.seed!r} must be an integer from 0 to {MAX_SEED}")
        # late: workload imports this
        from .workload import check_routing_memory, parse_routing, popularity_order

        kind = parse_routing(self.routing, m.top_k)[0]
        if self.zipf_order != "model":
            if kind != "zipf":
                raise MokInputError(f"zipf order {self.zipf_order!r} needs zipf routing, not "
                                    f"{self.routing!r}")
            popularity_order(m.routed_experts, self.seed, self.zipf_order)  # raises if unknown
        check_routing_memory(self.ep, self.tokens, m.top_k, self.routing, m.routed_experts)

    def healthy(self, engine: str = "analytic") -> "Scenario":
        """This scenario on healthy links. The analytic engine models every link healthy, so a
        hardware `degrade` (a simulator what-if) is refused for it; for the simulator the
        healthy scenario is the one its unset knobs are tuned on."""
        spec = (self.hardware.degrade or "").strip()
        if not spec:
            return self
        if engine == "analytic":
            raise MokInputError(f"hardware {self.hardware.name!r}: degrade {spec!r} is a "
                                f"simulator what-if, and the analytic engine models every link "
                                f"healthy: use the sim engine, or drop degrade")
        return dataclasses.replace(self, hardware=self.hardware.with_(degrade=""))

    @property
    def weight_bytes_per_gpu(self) -> float:
        """The bytes of one GPU's expert weights (gate, up and down): its routed experts at the
        pass's element size and the shared experts in BF16; a lower bound of its memory."""
        m = self.model
        per_expert = 3.0 * m.hidden * m.expert_width
        return (self.local_experts * per_expert * ELEMENT_BYTES[self.precision]
                + 3.0 * m.hidden * m.shared_width * m.shared_experts * ELEMENT_BYTES["bf16"])

    @property
    def local_experts(self) -> int:
        """Expert slots per GPU: ceil(experts / EP) (some GPUs hold one fewer when uneven)."""
        return -(-self.model.routed_experts // self.ep)

    @property
    def uneven(self) -> bool:
        """Whether EP leaves some GPUs with one expert fewer than others."""
        return self.model.routed_experts % self.ep != 0

    @property
    def domains(self) -> int:
        """How many scale-up domains the EP group spans (1 unless the scale-out link is used)."""
        if self.hardware.emulated_ranks:
            return 1
        return -(-self.ep // self.hardware.domain_size)

    def with_(self, **changes) -> "Scenario":
        return dataclasses.replace(self, **changes)

    def describe(self) -> dict:
        return {"hardware": self.hardware.name, "model": self.model.name, "ep": self.ep,
                "tokens": self.tokens, "pass": self.pass_, "precision": self.precision,
                "routing": self.routing, "seed": self.seed} \
            | ({"zipf_order": self.zipf_order} if self.zipf_order != "model" else {}) \
            | ({"zero_shared_slot": True} if self.zero_shared_slot else {}) \
            | ({"split_dn": self.split_dn} if self.split_dn else {}) \
            | ({"dn_blocks": self.dn_blocks} if self.dn_blocks else {}) \
            | ({"list_lag": self.list_lag} if self.list_lag != 1 else {}) \
            | ({"fp8_kernel": self.fp8_kernel} if self.fp8_kernel != "triton" else {}) \
            | ({"bwd_tiles": self.bwd_tiles} if self.bwd_tiles != "recompute" else {}) \
            | ({"copy_loop": self.copy_loop} if self.copy_loop != "shares" else {})


@dataclass(frozen=True, slots=True)
class Config:
    """The knobs of one MoK pass (mok-system.md section 3)."""

    dispatch: str = "pull"
    combine: str = "push"
    minibatch: int = 4096  # routed rows per pipeline step on the receiving GPU
    comm_sms: int = 40  # SMs that only move data
    macrobatch: int = 131072  # ring-buffer capacity in routed rows
    capacity: float = 0.5  # schedule capacity multiplier

    def __post_init__(self) -> None:
        for knob in KNOBS:
            object.__setattr__(self, knob, plain(getattr(self, knob)))  # numpy scalars as values
            check_knob(knob, getattr(self, knob))
        if self.macrobatch < self.minibatch:
            raise MokInputError(
                f"--macrobatch {self.macrobatch} must hold at least one minibatch "
                f"(--minibatch {self.minibatch})")

    def check_for(self, scenario: Scenario) -> "Config":
        """Validate the knobs against the hardware and kernel they will run on."""
        check_gluon_knobs(scenario, self.as_dict())
        return self.check_sms(scenario.hardware.sms, scenario.hardware.name)

    def check_sms(self, sms: int, hardware: str) -> "Config":
        """Refuse comm SMs that leave a GPU of `sms` SMs none to compute on."""
        if self.comm_sms >= sms:
            raise MokInputError(
                f"--comm-sms {self.comm_sms} must leave compute SMs: at most {sms - 1} on "
                f"{hardware}")
        return self

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def default_config(scenario: Scenario) -> Config:
    """The published defaults, scaled to this GPU's SM count (40 fwd / 28 bwd of 148 SMs).

    Modes: pull, push in both passes. Backward, `dispatch` is the operator that brings rows to
    the expert holders (the reverse-combine, pulled) and `combine` the one that returns them
    home (the reverse-dispatch, pushed): mok-system.md section 2.1, "backward: pull the
    reverse-combine, push the reverse-dispatch" (README, "Backward")."""
    published = 40 if scenario.pass_ == "fwd" else 28
    comm = max(1, round(published * scenario.hardware.sms / 148))
    return Config(dispatch="pull", combine="push", comm_sms=comm)


def gluon_shape_refusal(h: int, i: int, shared: int, experts: int, ep: int,
                        rank: int = 0) -> str | None:
    """Why the Gluon FP8 pass (mok_kernels/gluon_fp8/mok.py) cannot run a layer shape (H, I, the
    shared width, experts over EP ranks), or None: the kernel's rule, here so the model refuses
    what the kernel refuses. Any I runs: the kernel zero-pads it to whole 128-column blocks
    (gluon_padded_width), which adds nothing to the output."""
    if experts % ep or not 0 <= rank < ep:
        return f"E={experts}, EP={ep}, rank={rank}: E divisible by EP, 0 <= rank < EP"
    if h % 128:
        return f"H={h}: must be a multiple of 128 (whole 1 x 128 scale blocks along K)"
    if i < 1:
        return f"I={i}: must be >= 1"
    if shared not in (0, i):
        return f"shared width {shared}: 0 or I={i} only"
    return None


def gluon_padded_width(i: int) -> int:
    """The expert width the Gluon FP8 pass computes: I rounded up to whole 128-column blocks
    (zero gate/up columns give SwiGLU 0 and meet zero rows of the down weights; a zero-padded
    1 x 128 scale block has the partial block's amax, so the bits are the unpadded rule's)."""
    return -(-i // 128) * 128


def check_source_order(order: str, pass_: str, fp8_kernel: str | None = None,
                       name: str = "--source-order") -> None:
    """Refuse a source order (`name`: the flag or field that gave it) that is not one of
    SOURCE_ORDERS, or not rank where no schedule of ours takes another: the backward's and the
    Gluon FP8 pass's schedules are in rank order; the rotated order is the forward Triton
    megakernel's."""
    if order not in SOURCE_ORDERS:
        raise MokInputError(f"{name} {order!r}: allowed {', '.join(SOURCE_ORDERS)}")
    if order != "rank" and (pass_ == "bwd" or fp8_kernel == "gluon"):
        which = "--pass bwd" if pass_ == "bwd" else "--fp8-kernel gluon"
        raise MokInputError(f"{name} {order} with {which}: that kernel's schedule is in rank order "
                            f"(the rotated order is the forward Triton megakernel's; leave it at rank)")


def check_source_orders(value: str, pass_: str) -> None:
    """check_source_order of each of a `--source-order` comma list (mok bench,
    calibration.register)."""
    for order in value.split(","):
        check_source_order(order, pass_)


def check_gluon_knobs(scenario: Scenario, knobs: dict) -> None:
    """Refuse knobs the Gluon FP8 pass does not run (GLUON_KNOBS) for a scenario on that kernel;
    `knobs` may name some of them (the tuner fixes the rest to GLUON_KNOBS)."""
    if scenario.fp8_kernel != "gluon":
        return
    for knob, want in GLUON_KNOBS.items():
        if knob in knobs and knobs[knob] != want:
            raise MokInputError(f"--{knob} {knobs[knob]} with --fp8-kernel gluon: the Gluon FP8 "
                                f"pass runs --{knob} {want} only (mok_kernels/gluon_fp8/mok.py)")
