"""An FP8 (e4m3) GEMM with the megakernel's block scales, written in Gluon (Triton's explicit
sm_90 frontend), against the library at the megakernel's shapes: the first step of issue 14's
plan to take the FP8 K loop out of Triton's (mok_kernels/NOTES.md "What FP8 can gain here").

Triton's loop must wait for each 128-wide K block's MMA before it can scale and add it (the
scales differ per block), so the tensor cores idle through every scale step unless another
warpgroup's MMA fills it. The forms of the K loop timed here (VARIANTS), all fed by TMA into a
ring of STAGES shared buffers with one mbarrier each, all loading each block's scales one block
ahead, under the MMA, and all walking the tiles GROUP_M row tiles at a time (so a wave's A rows
stay in L2):
- "pingpong": each block's MMA into one of two accumulators in turn, block k+1's issued before
  the wait for block k's (``warpgroup_mma_wait(1)``); ptxas serializes the MMAs (note C7514);
- "wait": each block's MMA waited for before its scale step (Triton's loop), eight warps;
- "ws": that loop fed by a one-warp TMA partition (gl.warp_specialize);
- "ws2": two math partitions of one warpgroup each, on half the tile's rows, and the load warp:
  one warpgroup's scale step runs while the other's MMA keeps the tensor cores busy (the
  arrangement of DeepGEMM's FP8 GEMM);
- "ws2p": ws2 persistent, one program per SM walking its tiles, the load warp running into the
  next tile while the math warpgroups store the last;
- "ws2pp": CUTLASS's ping-pong schedule: persistent, each math warpgroup on a whole 64 x 128
  tile of its own (alternate tiles of the program's sequence), the two taking turns on the
  tensor cores a K loop at a time (an mbarrier pair), so one's store and the next tile's start
  run under the other's MMAs; each K block's scale step is no longer under the other's MMA.
  First run (H200, 2026-12-02; kimi-k2, 16,384 qwen3-30b rows): 1.00-1.13x BF16 where ws2p ran
  1.28-1.56x, and no faster with the scale step taken out: one warpgroup's MMAs, each waited
  for, keep too little in flight;
- "ws2w": ws2p on 128 x 256 tiles (a third less operand traffic per FLOP), each K block's two
  column halves in turn through one MMA accumulator, a 3-stage ring, and no load partition
  (warps are allocated in whole warpgroups, so a ninth warp would cap every warp at 168
  registers): the first math warpgroup keeps the ring two blocks ahead;
- "ws2d": ws2p with two MMAs in flight in each math warpgroup: block k+1's MMA is issued into a
  second result before block k's is waited for and scaled, so a warpgroup's scale step runs
  under its own next MMA as well as the other's. Sum and two results take 192 registers a
  thread, past the 168 a load warp leaves, so as in ws2w the first math warpgroup loads the
  ring (6 stages, 4 blocks ahead) itself, at 240 registers. First run (H200, 2026-12-02):
  0.96-1.01x BF16 where ws2p ran 1.23-1.58x (qwen3-30b at 4,096 rows: both 0.80x): the
  producer warpgroup waits on each buffer's release before its own MMA, which ties the two
  warpgroups in step;
- "ws2d1": ws2d fed by ws2p's one-warp load partition, so neither math warpgroup waits on a
  buffer's release before its own next MMA (the loader alone does). The load warp, padded to a
  warpgroup, gives its registers back (setmaxnreg 24), which leaves 240 a thread to each math
  warpgroup (240 + 240 + 24 <= 3 x 168): ws2d's 64 x 128 halves, sum and two results, fit as
  they are (no need for 64 x 64 halves and their extra operand traffic). Measured
  (benchmarks/device/s25_fp8.sh, one H200, 2026-12-02): 1.49-1.72x torch BF16 at kimi-k2
  shapes and 16,384 qwen3-30b rows where ws2p ran 1.26-1.61x and torch._scaled_mm 1.43-1.69x
  in the same run; qwen3-30b at 4,096 rows 0.65x (ws2p 0.66x, the library 0.84x);
- "wait-late": "wait" with each block's scales loaded after its MMA (the form first measured).

Grouped (--grouped; session 25, not yet run on a GPU): ws2d1 as the megakernel's workload, one
grouped GEMM over a rank's ragged experts (fp8_grouped_ws2d1_kernel, fp8_grouped_gemm). A (R, K)
holds every local expert's rows one expert after the other (expert e's from sum(counts[:e]) on,
any count, 0 too), B^T (E, N, K) and its scales (E, N/128, K/128). A work list built with torch
ops (grouped_tiles: tile_expert, tile_row0, tile_rows; tiles of at most 128 rows of one expert)
times the N / 128 column blocks gives the items, which the persistent programs (one an SM) walk
in a static order (GROUP_M tiles at a time), the load warp and both math warpgroups alike. The
loader's TMA reads A's 128 rows from the tile's first (rows past its end, the next expert's or
past A's end as zeros, are loaded and never stored) and B^T's from row e x N + n0 of an (E x N,
K) view. A math warpgroup whose 64 rows hold none of the tile's only releases its ring buffers.
The sum goes to a shared-memory tile, then to C by a store masked by row (rows < the tile's
end): no TMA store, whose box would write the next expert's rows. The device check pre-fills C
with NaN, wants every row written and within 1e-2 of its expert's float32 product, and reruns
with the even, then the odd, experts' tiles alone: their rows bitwise the same, all others NaN.

FFN (--ffn; session 25, not yet run on a GPU): a rank's whole routed expert FFN in FP8 on this
core, two launches. The gate/up kernel (fp8_ffn_gate_up_kernel, fp8_ffn_gate_up) walks the
grouped kernel's work list with items of (tile of <= 128 rows of one expert, 128-column block nb
of h): W_gu^T (E, 2I, H) e4m3 packed as the megakernel packs it (pack_gate_up: gate block nb's
128 rows, then up block nb's), one 256 x 128 TMA box a K block (ring of 4 x 48 KB), and each
math warpgroup's 64 rows take the block's gate half then its up half through one MMA result
(ws2w's schedule: two 64 x 128 sums and one result, 192 of its 240 registers; ws2d1's second
result in flight would need 256), each scale step under the other warpgroup's MMA. So an item
owns 128 whole h columns of its rows: the epilogue forms h = silu(g) u in float32 and
quantizes it by fp8.py's rule in registers (a row's 128 columns lie in one quad of threads, the
amax a reduction within the warp; correctly rounded divisions, the cast cvt.rn.satfinite), and
stores q (R, I) e4m3 through shared memory and its scale (R, I/128) float32, masked to the
tile's rows. The down GEMM is the grouped kernel on q, W_d^T (E, H, I). The check
(_ffn_check): outputs pre-filled with NaN; a build that also stores h, then the timed build
(q, scales, y bitwise alike); q and scales bitwise torch's quantize_rows of the kernel's own h;
every row written, none past the end; per expert h within 2e-3 and y within 1e-2 of the
float32 reference of the same FP8 pipeline, q unlike torch's quantization of the reference h in
under 2% of elements (the fraction printed). Timed beside torch's BF16 FFN (grouped GEMM
gate|up, silu x mul, grouped GEMM down) at kimi-k2 and glm-5 EP 8 (--grouped's rows), and the
two kernels alone.

C (M, N) bf16 = sum_k A_k (M, 128) B_k (128, N) x sa[m, k] x sb[k, n // 128]: A e4m3 (M, K) with
one scale per row per 128 columns, B e4m3 given as B^T (N, K) (wgmma reads FP8 B K-major) with
one scale per 128 x 128 block (mok_kernels/fp8.py quantize_rows / quantize_weight).

    PYTHONPATH=. python3 benchmarks/gluon_fp8_gemm.py [--rows 4096,16384] [--out FILE.json]
        [--variants ws2p,ws2d1]    # the K loops to check and time (default: all)
    PYTHONPATH=. python3 benchmarks/gluon_fp8_gemm.py --grouped [kimi-k2-down,...] [--out F]
        # the grouped GEMM beside torch's BF16 grouped GEMM (GROUPED_CASES; default: all)
    PYTHONPATH=. python3 benchmarks/gluon_fp8_gemm.py --ffn [kimi-k2,...] [--out F]
        # the FP8 routed FFN (2 launches) beside torch's BF16 FFN (FFN_CASES; default: all)
    PYTHONPATH=. python benchmarks/gluon_fp8_gemm.py --compile-only   # sm_90 compile, no GPU

On a GPU: each shape's result against the float32 product of the dequantized operands (the
error FP8 allows is in the operands, not here: rel. error <= 1e-2 is asked of the GEMM), then
TF/s of each variant, torch BF16 `a @ w.t()` and torch._scaled_mm with the same block scales,
CUDA events, 10 warm-ups, median of 30 over four input sets; ratios against BF16 in the same
run. Measured on one H200 on 2026-12-02 (mok_kernels/NOTES.md, session 21; logs in
mok_kernels/logs_s21/gluon_fp8*.log): at kimi-k2 shapes and 16,384 qwen3-30b rows, ws2p ran at
1.19-1.48x torch BF16 over three runs and torch._scaled_mm at 1.42-1.61x; at 4,096 qwen3-30b
rows (K of 2,048) ws2p trails BF16 (0.85-0.96x) and the library gains little (1.03-1.21x).
--grouped: the same check per expert (above), then TF/s of the grouped kernel (its work list
built once, outside the timing, as the megakernel's schedule is) beside torch._grouped_mm on the
same ragged rows, BF16, B (E, K, N) as mok_kernels/bench.py run_gemm_only has it (and B given
K-major), over two input sets; exit status 1 if any case failed its check.
"""


import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mok_kernels.gluon_fp8.core import (BK, BM, BN, FFN_STAGES, WS_MAXNREG,  # noqa: E402
                                        _compile_sm90, _desc, gluon, pack_gate_up)
from mok_model.cli import distinct, doc_parser, number_list, run_tool  # noqa: E402
from mok_model.errors import MokInputError  # noqa: E402

SHAPES = {"kimi-k2 gate|up": (4096, 7168), "kimi-k2 down": (7168, 2048),
          "qwen3-30b gate|up": (1536, 2048)}        # (N, K) of a routed expert's GEMM
STAGES, WARPS = 4, 8   # BM, BN, BK: mok_kernels/gluon_fp8/core.py
# the K loop's forms (module docstring)
VARIANTS = ("pingpong", "wait", "ws", "ws2", "ws2p", "ws2pp", "ws2w", "ws2d", "ws2d1",
            "wait-late")
# --grouped: a rank's expert GEMMs at EP 8 as one grouped GEMM over ragged experts (name: (N, K,
# local experts, routing)); the rank receives GROUPED_ROWS rows (4,096 tokens x top-8 from each
# of 8 ranks, 1/8 of them its own), spread over its experts by a seeded multinomial ("uniform":
# kimi-k2 682 rows an expert on average, glm-5 1,024) or zipf-like counts with edge cases
# ("skewed": grouped_counts)
GROUPED_CASES = {"kimi-k2-gate-up": (4096, 7168, 48, "uniform"),
                 "kimi-k2-down": (7168, 2048, 48, "uniform"),
                 "glm-5-gate-up": (4096, 6144, 32, "uniform"),
                 "glm-5-down": (6144, 2048, 32, "uniform"),
                 "kimi-k2-down-skewed": (7168, 2048, 48, "skewed")}
GROUPED_ROWS = 4096 * 8
GROUPED_SETS = 2   # input sets timed in turn (each set's weights alone are far past L2)
# ws2pp: a warpgroup (128 threads) holds a whole tile. 128 x 128 (or 64 x 256): fp32 accumulator
# 16,384 / 128 = 128 registers a thread plus the K block's MMA result before scaling, 128 more:
# 256 > 255, the most any thread can have, whatever maxnreg says. 64 x 128 (or 128 x 64): 64 + 64
# = 128, plus ~30 for scales, pointers and counters, under WS_MAXNREG. 64 x 128, as one m64n128
# wgmma per 32 of K reads 6 KB of shared memory per 64 tensor-core cycles (96 B/cycle), where
# 128 x 64 (two m64n64) reads 8 KB (128 B/cycle, shared memory's whole rate).
# Ring: 8 x (8 KB A + 16 KB B) + 2 x 16 KB C = 224 KB <= 227 KB; a K block is half ws2p's MMA
# time, so 8 stages look as far ahead as ws2p's 4.
PP_STAGES = 8
WIDE_MAXNREG, WIDE_STAGES = 240, 3   # ws2w: 8 warps x 32 x 240 <= 64K; 3 x 48 KB ring + 64 KB C
DUAL_STAGES = 6    # ws2d: 6 x 32 KB ring + 2 x 16 KB C = 224 KB; loads run 4 blocks ahead
# --ffn: a rank's routed expert FFN in FP8 (name: (H, I, local experts, routing)), GROUPED_ROWS
# rows as --grouped's
FFN_CASES = {"kimi-k2": (7168, 2048, 48, "uniform"),
             "glm-5": (6144, 2048, 32, "uniform"),
             "kimi-k2-skewed": (7168, 2048, 48, "skewed")}
# ws2d1: launched at WS_MAXNREG (12 warps x 32 x 168 <= 64K), the load warpgroup drops to 24 and
# each math warpgroup rises to 240 (240 + 240 + 24 <= 3 x 168: Triton's AllocateWarpGroups
# gives the default partition what the workers leave); same 6-stage ring as ws2d


if gluon is not None:   # the shared building blocks: mok_kernels/gluon_fp8/core.py
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.nvidia.hopper import (
        fence_async_shared, mbarrier, tma, warpgroup_mma, warpgroup_mma_wait)

    from mok_kernels.gluon_fp8.core import (GROUP_M, _acc_layout, _dual_tile, _ffn_gate_up_tile,
                                            _ffn_quant, _issue_block, _load_blocks, _out_layouts,
                                            _release_blocks, _ring, _row_scales, _scale, _tile)

    @gluon.jit
    def _store_tile(c_desc, acc, off_m, off_n):
        """The accumulator tile to C in C's dtype, through shared memory and TMA."""
        c_s = gl.allocate_shared_memory(c_desc.dtype, c_desc.block_type.shape, c_desc.layout)
        c_s.store(acc.to(c_desc.dtype))
        fence_async_shared()
        tma.async_copy_shared_to_global(c_desc, [off_m, off_n], c_s)
        tma.store_wait(pendings=0)

    @gluon.jit
    def _tile_origin(M, N, K, TM: gl.constexpr, TN: gl.constexpr, TK: gl.constexpr):
        """This program's tile (grouped order, _tile): its first row and column, its column
        block and the number of K blocks."""
        pid_m, pid_n = _tile(gl.program_id(0), M, N, TM, TN, GROUP_M)
        return pid_m * TM, pid_n * TN, pid_n, gl.cdiv(K, TK)

    @gluon.jit
    def _step(a_desc, b_desc, a_s, b_s, ready, sa_row, rmask, sb_ptr, pid_n, off_m, off_n, k, nk,
              t_new, t_old, acc, sc_old, STAGES: gl.constexpr):
        """Issue block k's MMA into t_new and load block k's scales; once block k-1's MMA (in
        t_old) is done, add it scaled by sc_old and refill its buffer with block k-1+STAGES.
        Returns (t_new, t_old, acc, block k's scales)."""
        s = k % STAGES
        mbarrier.wait(ready.index(s), phase=(k // STAGES) & 1)
        t_new = warpgroup_mma(a_s.index(s), b_s.index(s).permute((1, 0)), t_new, use_acc=False,
                              is_async=True)
        sc_new = _scale(sa_row, rmask, sb_ptr, pid_n, k, nk)
        t_old = warpgroup_mma_wait(num_outstanding=1, deps=(t_old, ))
        acc = acc + t_old * sc_old[:, None]
        _refill(a_desc, b_desc, a_s, b_s, ready, off_m, off_n, k - 1 + STAGES, nk, STAGES)
        return t_new, t_old, acc, sc_new

    @gluon.jit
    def _refill(a_desc, b_desc, a_s, b_s, ready, off_m, off_n, j, nk, STAGES: gl.constexpr):
        """Bring K block j (if any) into its ring buffer, whose last reader is done."""
        TK: gl.constexpr = a_desc.block_type.shape[1]
        if j < nk:
            sj = j % STAGES
            mbarrier.expect(ready.index(sj), a_desc.block_type.nbytes + b_desc.block_type.nbytes)
            tma.async_copy_global_to_shared(a_desc, [off_m, j * TK], ready.index(sj), a_s.index(sj))
            tma.async_copy_global_to_shared(b_desc, [off_n, j * TK], ready.index(sj), b_s.index(sj))

    @gluon.jit
    def _loader(a_desc, b_desc, a_s, b_s, ready, empty, off_m, off_n, nk, STAGES: gl.constexpr):
        """Warp-specialized variant's load partition (one warp): K block k into ring buffer
        k % STAGES once the math partition has released it (empty), then signals ready."""
        TK: gl.constexpr = a_desc.block_type.shape[1]
        for k in range(nk):
            s = k % STAGES
            mbarrier.wait(empty.index(s), ((k // STAGES) & 1) ^ 1)   # a fresh barrier passes
            mbarrier.expect(ready.index(s), a_desc.block_type.nbytes + b_desc.block_type.nbytes)
            tma.async_copy_global_to_shared(a_desc, [off_m, k * TK], ready.index(s), a_s.index(s))
            tma.async_copy_global_to_shared(b_desc, [off_n, k * TK], ready.index(s), b_s.index(s))

    @gluon.jit
    def _math(c_desc, a_s, b_s, ready, empty, sa_ptr, sb_ptr, M, off_m, off_n, pid_n, nk,
              STAGES: gl.constexpr):
        """Warp-specialized variant's default partition: each block's MMA, its buffer released
        as soon as the MMA is done, then its scale step; the tile stored at the end."""
        TM: gl.constexpr = c_desc.block_type.shape[0]
        TN: gl.constexpr = c_desc.block_type.shape[1]
        mma: gl.constexpr = _acc_layout(gl.num_warps(), TN)
        sa_row, rmask = _row_scales(sa_ptr, off_m, M, nk, TM, mma)
        acc = gl.zeros((TM, TN), dtype=gl.float32, layout=mma)
        t = gl.zeros((TM, TN), dtype=gl.float32, layout=mma)
        sc = _scale(sa_row, rmask, sb_ptr, pid_n, 0, nk)
        for k in range(nk):
            s = k % STAGES
            mbarrier.wait(ready.index(s), (k // STAGES) & 1)
            sc_next = _scale(sa_row, rmask, sb_ptr, pid_n, k + 1, nk)   # loads under the MMA
            t = warpgroup_mma(a_s.index(s), b_s.index(s).permute((1, 0)), t, use_acc=False)
            mbarrier.arrive(empty.index(s), count=1)
            acc = acc + t * sc[:, None]
            sc = sc_next
        _store_tile(c_desc, acc, off_m, off_n)

    @gluon.jit
    def _half_math(c_desc, a_s, b_s, ready, empty, sa_ptr, sb_ptr, M, off_m, off_n, pid_n, nk,
                   ROW0: gl.constexpr, STAGES: gl.constexpr):
        """Two-warpgroup variant's math partitions (one warpgroup each): rows ROW0 ... ROW0 + TM
        of the tile, each block's MMA waited for before its scale step, while the other
        warpgroup's MMA keeps the tensor cores busy; its half of the tile stored at the end."""
        TM: gl.constexpr = c_desc.block_type.shape[0]
        TN: gl.constexpr = c_desc.block_type.shape[1]
        mma: gl.constexpr = _acc_layout(gl.num_warps(), TN)
        sa_row, rmask = _row_scales(sa_ptr, off_m + ROW0, M, nk, TM, mma)
        acc, _ = _half_tile(a_s, b_s, ready, empty, sa_row, rmask, sb_ptr, pid_n, nk, 0, ROW0, TM,
                            TN, mma, STAGES)
        _store_tile(c_desc, acc, off_m + ROW0, off_n)

    @gluon.jit
    def _half_tile(a_s, b_s, ready, empty, sa_row, rmask, sb_ptr, pid_n, nk, it, ROW0: gl.constexpr,
                   TM: gl.constexpr, TN: gl.constexpr, mma: gl.constexpr, STAGES: gl.constexpr):
        """One tile's K loop for its rows ROW0 ... ROW0 + TM, the ring's blocks from position
        `it` on: (the scaled sum, the ring position after it)."""
        acc = gl.zeros((TM, TN), dtype=gl.float32, layout=mma)
        t = gl.zeros((TM, TN), dtype=gl.float32, layout=mma)
        sc = _scale(sa_row, rmask, sb_ptr, pid_n, 0, nk)
        for k in range(nk):
            s = (it + k) % STAGES
            mbarrier.wait(ready.index(s), ((it + k) // STAGES) & 1)
            sc_next = _scale(sa_row, rmask, sb_ptr, pid_n, k + 1, nk)
            t = warpgroup_mma(a_s.index(s).slice(ROW0, TM), b_s.index(s).permute((1, 0)), t,
                              use_acc=False)
            mbarrier.arrive(empty.index(s), count=1)
            acc = acc + t * sc[:, None]
            sc = sc_next
        return acc, it + nk

    @gluon.jit
    def _loader_persistent(a_desc, b_desc, a_s, b_s, ready, empty, M, N, K,
                           STAGES: gl.constexpr):
        """Persistent variant's load partition (one warp): every K block of this program's
        tiles in turn through the ring, running ahead into the next tile while the math
        warpgroups finish and store the last one."""
        TM: gl.constexpr = a_desc.block_type.shape[0]
        TN: gl.constexpr = b_desc.block_type.shape[0]
        TK: gl.constexpr = a_desc.block_type.shape[1]
        nk = gl.cdiv(K, TK)
        it = 0
        for tile in range(gl.program_id(0), gl.cdiv(M, TM) * gl.cdiv(N, TN), gl.num_programs(0)):
            pid_m, pid_n = _tile(tile, M, N, TM, TN, GROUP_M)
            for k in range(nk):        # (as _load_blocks; kept inline: the measured form)
                s = it % STAGES
                mbarrier.wait(empty.index(s), ((it // STAGES) & 1) ^ 1)
                mbarrier.expect(ready.index(s),
                                a_desc.block_type.nbytes + b_desc.block_type.nbytes)
                tma.async_copy_global_to_shared(a_desc, [pid_m * TM, k * TK], ready.index(s),
                                                a_s.index(s))
                tma.async_copy_global_to_shared(b_desc, [pid_n * TN, k * TK], ready.index(s),
                                                b_s.index(s))
                it += 1

    @gluon.jit
    def _half_math_persistent(c_desc, a_s, b_s, ready, empty, sa_ptr, sb_ptr, M, N, K,
                              ROW0: gl.constexpr, STAGES: gl.constexpr):
        """Persistent variant's math partitions: _half_math over this program's tiles, each
        tile's store left in flight until the next tile's is due."""
        TM: gl.constexpr = c_desc.block_type.shape[0]
        TN: gl.constexpr = c_desc.block_type.shape[1]
        TK: gl.constexpr = a_s.shape[2]
        mma: gl.constexpr = _acc_layout(gl.num_warps(), TN)
        c_s = gl.allocate_shared_memory(c_desc.dtype, c_desc.block_type.shape, c_desc.layout)
        nk = gl.cdiv(K, TK)
        it = 0
        for tile in range(gl.program_id(0), gl.cdiv(M, 2 * TM) * gl.cdiv(N, TN),
                          gl.num_programs(0)):
            pid_m, pid_n = _tile(tile, M, N, 2 * TM, TN, GROUP_M)
            off_m = pid_m * 2 * TM + ROW0
            sa_row, rmask = _row_scales(sa_ptr, off_m, M, nk, TM, mma)
            acc, it = _half_tile(a_s, b_s, ready, empty, sa_row, rmask, sb_ptr, pid_n, nk, it,
                                 ROW0, TM, TN, mma, STAGES)
            tma.store_wait(pendings=0)          # the last tile's store has left c_s
            c_s.store(acc.to(c_desc.dtype))
            fence_async_shared()
            tma.async_copy_shared_to_global(c_desc, [off_m, pid_n * TN], c_s)
        tma.store_wait(pendings=0)

    @gluon.jit
    def _pp_math(c_desc, a_s, b_s, ready, empty, turn, sa_ptr, sb_ptr, M, N, K, WG: gl.constexpr,
                 STAGES: gl.constexpr):
        """Ping-pong variant's math partitions: warpgroup WG takes the tiles at positions WG,
        WG + 2, ... of this program's sequence, whole, and runs a tile's K loop only in its turn
        (turn.index(WG)), handing the turn over once the tile's last MMA is issued: the other
        warpgroup's K loop then runs under this one's last scale step and store."""
        TM: gl.constexpr = c_desc.block_type.shape[0]
        TN: gl.constexpr = c_desc.block_type.shape[1]
        TK: gl.constexpr = a_s.shape[2]
        mma: gl.constexpr = _acc_layout(gl.num_warps(), TN)
        c_s = gl.allocate_shared_memory(c_desc.dtype, c_desc.block_type.shape, c_desc.layout)
        nk = gl.cdiv(K, TK)
        pid, programs = gl.program_id(0), gl.num_programs(0)
        for tile in range(pid + WG * programs, gl.cdiv(M, TM) * gl.cdiv(N, TN), 2 * programs):
            pid_m, pid_n = _tile(tile, M, N, TM, TN, GROUP_M)
            sa_row, rmask = _row_scales(sa_ptr, pid_m * TM, M, nk, TM, mma)
            sc = _scale(sa_row, rmask, sb_ptr, pid_n, 0, nk)      # loads in the other's turn
            pos = (tile - pid) // programs                        # in the program's sequence
            it = pos * nk                                         # its first block in the ring
            # the turn for position pos comes with the other warpgroup's handover after pos - 1:
            # warpgroup 0's (pos // 2)-th wait passes on parity (pos // 2 - 1) & 1 (a fresh
            # barrier passes parity 1), warpgroup 1's on (pos // 2) & 1. Waiting for the turn
            # before any `ready` wait also keeps the ring's parities unambiguous: every block
            # before `it` has landed (the other warpgroup waited for each).
            mbarrier.wait(turn.index(WG), ((pos // 2) & 1) ^ (1 - WG))
            acc = gl.zeros((TM, TN), dtype=gl.float32, layout=mma)
            t = gl.zeros((TM, TN), dtype=gl.float32, layout=mma)
            for k in range(nk - 1):
                s = (it + k) % STAGES
                mbarrier.wait(ready.index(s), ((it + k) // STAGES) & 1)
                sc_next = _scale(sa_row, rmask, sb_ptr, pid_n, k + 1, nk)
                t = warpgroup_mma(a_s.index(s), b_s.index(s).permute((1, 0)), t, use_acc=False)
                mbarrier.arrive(empty.index(s), count=1)
                acc = acc + t * sc[:, None]
                sc = sc_next
            s = (it + nk - 1) % STAGES        # the last block: issued, the turn handed over, waited
            mbarrier.wait(ready.index(s), ((it + nk - 1) // STAGES) & 1)
            t = warpgroup_mma(a_s.index(s), b_s.index(s).permute((1, 0)), t, use_acc=False,
                              is_async=True)
            mbarrier.arrive(turn.index(1 - WG), count=1)
            t = warpgroup_mma_wait(num_outstanding=0, deps=(t, ))
            mbarrier.arrive(empty.index(s), count=1)
            acc = acc + t * sc[:, None]
            tma.store_wait(pendings=0)          # this warpgroup's last store has left c_s
            c_s.store(acc.to(c_desc.dtype))
            fence_async_shared()
            tma.async_copy_shared_to_global(c_desc, [pid_m * TM, pid_n * TN], c_s)
        tma.store_wait(pendings=0)

    @gluon.jit
    def _wide_math_persistent(a_desc, b_desc, c_desc, a_s, b_s, ready, empty, sa_ptr, sb_ptr, M,
                              N, K, ROW0: gl.constexpr, PRODUCER: gl.constexpr,
                              STAGES: gl.constexpr):
        """Wide variant's math partitions: rows ROW0 ... ROW0 + TM of 128 x 256 tiles, each K
        block's two 128-column halves in turn through one MMA accumulator (two output
        accumulators and the MMA's fit in 240 registers; a 256-wide MMA's would not), each
        half's scale step under the other warpgroup's MMA. The PRODUCER warpgroup also keeps
        the ring STAGES - 1 blocks ahead (a load partition would leave 168 registers a warp)."""
        TM: gl.constexpr = c_desc.block_type.shape[0]
        TH: gl.constexpr = c_desc.block_type.shape[1]          # a half's columns
        TK: gl.constexpr = a_s.shape[2]
        mma: gl.constexpr = _acc_layout(gl.num_warps(), TH)
        c_s = gl.allocate_shared_memory(c_desc.dtype, [2] + c_desc.block_type.shape,
                                        c_desc.layout)
        nk = gl.cdiv(K, TK)
        if PRODUCER:
            for j in gl.static_range(STAGES - 1):
                _issue_block(a_desc, b_desc, a_s, b_s, ready, empty, j, M, N, nk, STAGES)
        it = 0
        for tile in range(gl.program_id(0), gl.cdiv(M, 2 * TM) * gl.cdiv(N, 2 * TH),
                          gl.num_programs(0)):
            pid_m, pid_n = _tile(tile, M, N, 2 * TM, 2 * TH, GROUP_M)
            off_m = pid_m * 2 * TM + ROW0
            sa_row, rmask = _row_scales(sa_ptr, off_m, M, nk, TM, mma)
            acc0 = gl.zeros((TM, TH), dtype=gl.float32, layout=mma)
            acc1 = gl.zeros((TM, TH), dtype=gl.float32, layout=mma)
            t = gl.zeros((TM, TH), dtype=gl.float32, layout=mma)
            for k in range(nk):
                if PRODUCER:
                    _issue_block(a_desc, b_desc, a_s, b_s, ready, empty, it + STAGES - 1, M, N,
                                 nk, STAGES)
                s = it % STAGES
                mbarrier.wait(ready.index(s), (it // STAGES) & 1)
                sc0 = _scale(sa_row, rmask, sb_ptr, 2 * pid_n, k, nk)
                a = a_s.index(s).slice(ROW0, TM)
                t = warpgroup_mma(a, b_s.index(s).slice(0, TH).permute((1, 0)), t, use_acc=False,
                                  is_async=True)
                t = warpgroup_mma_wait(num_outstanding=0, deps=(t, ))
                acc0 = gl.fma(t, sc0[:, None], acc0)
                # an empty wait that names acc0: the half-0 scale step stays before the half-1
                # MMA, so both halves' MMA results share registers (else ptxas spills ~440 B)
                t = warpgroup_mma_wait(num_outstanding=0, deps=(t, acc0))[0]
                sc1 = _scale(sa_row, rmask, sb_ptr, 2 * pid_n + 1, k, nk)
                t = warpgroup_mma(a, b_s.index(s).slice(TH, TH).permute((1, 0)), t,
                                  use_acc=False)
                mbarrier.arrive(empty.index(s), count=1)
                acc1 = gl.fma(t, sc1[:, None], acc1)
                it += 1
            tma.store_wait(pendings=0)          # the last tile's stores have left c_s
            c_s.index(0).store(acc0.to(c_desc.dtype))
            c_s.index(1).store(acc1.to(c_desc.dtype))
            fence_async_shared()
            tma.async_copy_shared_to_global(c_desc, [off_m, pid_n * 2 * TH], c_s.index(0))
            tma.async_copy_shared_to_global(c_desc, [off_m, pid_n * 2 * TH + TH], c_s.index(1))
        tma.store_wait(pendings=0)

    @gluon.jit
    def _dual_math_persistent(a_desc, b_desc, c_desc, a_s, b_s, ready, empty, sa_ptr, sb_ptr, M,
                              N, K, ROW0: gl.constexpr, PRODUCER: gl.constexpr,
                              STAGES: gl.constexpr):
        """Dual variant's math partitions: ws2p's rows ROW0 ... ROW0 + TM of 128 x 128 tiles,
        with two MMAs in flight: block k+1's issued (into the other of two results, t0 and t1
        in turn: two blocks a trip so each keeps its registers) before block k's is waited for
        and scaled. The PRODUCER warpgroup also loads the ring, STAGES - 2 blocks ahead."""
        TM: gl.constexpr = c_desc.block_type.shape[0]
        TN: gl.constexpr = c_desc.block_type.shape[1]
        TK: gl.constexpr = a_s.shape[2]
        mma: gl.constexpr = _acc_layout(gl.num_warps(), TN)
        c_s = gl.allocate_shared_memory(c_desc.dtype, c_desc.block_type.shape, c_desc.layout)
        nk = gl.cdiv(K, TK)
        if PRODUCER:
            for j in gl.static_range(STAGES - 2):
                _issue_block(a_desc, b_desc, a_s, b_s, ready, empty, j, M, N, nk, STAGES)
        it = 0
        for tile in range(gl.program_id(0), gl.cdiv(M, 2 * TM) * gl.cdiv(N, TN),
                          gl.num_programs(0)):
            pid_m, pid_n = _tile(tile, M, N, 2 * TM, TN, GROUP_M)
            off_m = pid_m * 2 * TM + ROW0
            sa_row, rmask = _row_scales(sa_ptr, off_m, M, nk, TM, mma)
            acc = _dual_tile(a_desc, b_desc, a_s, b_s, ready, empty, sa_row, rmask, sb_ptr, pid_n,
                             M, N, nk, it, ROW0, TM, TN, mma, PRODUCER, STAGES)
            it += nk
            tma.store_wait(pendings=0)          # the last tile's store has left c_s
            c_s.store(acc.to(c_desc.dtype))
            fence_async_shared()
            tma.async_copy_shared_to_global(c_desc, [off_m, pid_n * TN], c_s)
        tma.store_wait(pendings=0)

    @gluon.jit
    def fp8_block_gemm_ws2d_kernel(a_desc, b_desc, c_desc, sa_ptr, sb_ptr, M, N, K,
                                   STAGES: gl.constexpr, num_warps: gl.constexpr):
        """ws2p with two MMAs in flight in each math warpgroup and no load partition: eight
        warps in all, so 240 registers each (two MMA results and a half tile's sum: 192)."""
        TH: gl.constexpr = c_desc.block_type.shape[0]
        a_s, b_s, ready, empty = _ring(a_desc, b_desc, STAGES, 2)
        gl.warp_specialize([
            (_dual_math_persistent, (a_desc, b_desc, c_desc, a_s, b_s, ready, empty, sa_ptr,
                                     sb_ptr, M, N, K, 0, True, STAGES)),
            (_dual_math_persistent, (a_desc, b_desc, c_desc, a_s, b_s, ready, empty, sa_ptr,
                                     sb_ptr, M, N, K, TH, False, STAGES)),
        ], [4], [240])                                # WIDE_MAXNREG for the second warpgroup

    @gluon.jit
    def fp8_block_gemm_ws2d1_kernel(a_desc, b_desc, c_desc, sa_ptr, sb_ptr, M, N, K,
                                    STAGES: gl.constexpr, num_warps: gl.constexpr):
        """ws2d fed by a one-warp load partition (ws2p's): each math warpgroup waits only on
        its buffers' arrival, never on their release; the load warp's 24 registers leave 240 to
        each math warpgroup (two MMA results and a half tile's sum: 192)."""
        TH: gl.constexpr = c_desc.block_type.shape[0]
        a_s, b_s, ready, empty = _ring(a_desc, b_desc, STAGES, 2)
        gl.warp_specialize([
            (_dual_math_persistent, (a_desc, b_desc, c_desc, a_s, b_s, ready, empty, sa_ptr,
                                     sb_ptr, M, N, K, 0, False, STAGES)),
            (_dual_math_persistent, (a_desc, b_desc, c_desc, a_s, b_s, ready, empty, sa_ptr,
                                     sb_ptr, M, N, K, TH, False, STAGES)),
            (_loader_persistent, (a_desc, b_desc, a_s, b_s, ready, empty, M, N, K, STAGES)),
        ], [4, 1], [240, 24])             # the default (first) one: 3 x 168 - 240 - 24 = 240

    @gluon.jit
    def _grouped_item(t_expert, t_row0, t_rows, item, items, n_tiles, N, n_blocks,
                      TM: gl.constexpr, TN: gl.constexpr):
        """Work item `item` of the grouped variant (zeros past the last, `items`): (its tile's
        first row, the tile's first row not its own, its row of the experts' (E x N / TN, nk)
        B scales, its column block)."""
        tile, pid_n = _tile(item, n_tiles * TM, N, TM, TN, GROUP_M)
        real = item < items
        row0 = gl.load(t_row0 + tile, mask=real, other=0)
        end = row0 + gl.load(t_rows + tile, mask=real, other=0)
        return row0, end, gl.load(t_expert + tile, mask=real, other=0) * n_blocks + pid_n, pid_n

    @gluon.jit
    def _loader_grouped(a_desc, b_desc, a_s, b_s, ready, empty, t_expert, t_row0, n_tiles, N,
                        K, STAGES: gl.constexpr):
        """Grouped variant's load partition (one warp): _loader_persistent over the work list's
        (tile, column block) items in the math partitions' order: A's TM rows from the tile's
        first row (rows past the tile's end are the next expert's, or past A's end and zero:
        loaded, never stored), B^T's from row expert x N + the column block's first."""
        TM: gl.constexpr = a_desc.block_type.shape[0]
        TN: gl.constexpr = b_desc.block_type.shape[0]
        TK: gl.constexpr = a_desc.block_type.shape[1]
        nk = gl.cdiv(K, TK)
        it = 0
        for item in range(gl.program_id(0), n_tiles * gl.cdiv(N, TN), gl.num_programs(0)):
            tile, pid_n = _tile(item, n_tiles * TM, N, TM, TN, GROUP_M)
            row0 = gl.load(t_row0 + tile)
            n0 = gl.load(t_expert + tile) * N + pid_n * TN
            it = _load_blocks(a_desc, b_desc, a_s, b_s, ready, empty, row0, n0, nk, it,
                              STAGES)

    @gluon.jit
    def _dual_math_grouped(a_desc, b_desc, c_ptr, a_s, b_s, ready, empty, sa_ptr, sb_ptr,
                           t_expert, t_row0, t_rows, n_tiles, N, K, ROW0: gl.constexpr,
                           STAGES: gl.constexpr):
        """Grouped variant's math partitions: ws2d1's over the work list's items, rows ROW0 ...
        ROW0 + TM of each tile. Only the tile's rows [row0, row0 + rows) are ever written: the
        A scales of the rows past it read as 0 and the sum goes through shared memory to a
        store masked by row. A half with no row of the tile issues no MMA: it only waits for
        each of its blocks and releases it (the loader waits on both halves' release)."""
        TM: gl.constexpr = a_s.shape[1] // 2
        TN: gl.constexpr = b_s.shape[1]
        TK: gl.constexpr = a_s.shape[2]
        mma: gl.constexpr = _acc_layout(gl.num_warps(), TN)
        layouts: gl.constexpr = _out_layouts(gl.num_warps(), TM, TN)
        out: gl.constexpr = layouts[1]
        c_s = gl.allocate_shared_memory(gl.bfloat16, [TM, TN], layouts[0])
        nk = gl.cdiv(K, TK)
        n_blocks = gl.cdiv(N, TN)
        items, programs = n_tiles * n_blocks, gl.num_programs(0)
        row0, end, sb_row, pid_n = _grouped_item(t_expert, t_row0, t_rows, gl.program_id(0),
                                                 items, n_tiles, N, n_blocks, 2 * TM, TN)
        it = 0
        for item in range(gl.program_id(0), items, programs):
            # the next item's tile, its loads left in flight under this one's K loop
            row0_nx, end_nx, sb_row_nx, pid_n_nx = _grouped_item(
                t_expert, t_row0, t_rows, item + programs, items, n_tiles, N, n_blocks, 2 * TM,
                TN)
            off_m = row0 + ROW0
            if off_m < end:
                sa_row, rmask = _row_scales(sa_ptr, off_m, end, nk, TM, mma)
                acc = _dual_tile(a_desc, b_desc, a_s, b_s, ready, empty, sa_row, rmask, sb_ptr,
                                 sb_row, N, N, nk, it, ROW0, TM, TN, mma, False, STAGES)
                c_s.store(acc.to(gl.bfloat16))
                rows = off_m + gl.arange(0, TM, layout=gl.SliceLayout(1, out))
                cols = pid_n * TN + gl.arange(0, TN, layout=gl.SliceLayout(0, out))
                gl.store(c_ptr + rows.to(gl.int64)[:, None] * N + cols[None, :], c_s.load(out),
                         mask=(rows < end)[:, None] & (cols < N)[None, :])
            else:                  # no row of the tile in this half: release its blocks
                _release_blocks(ready, empty, it, nk, STAGES)
            it += nk
            row0, end, sb_row, pid_n = row0_nx, end_nx, sb_row_nx, pid_n_nx

    @gluon.jit
    def fp8_grouped_ws2d1_kernel(a_desc, b_desc, c_ptr, sa_ptr, sb_ptr, t_expert, t_row0, t_rows,
                                 n_tiles, N, K, STAGES: gl.constexpr, num_warps: gl.constexpr):
        """ws2d1 as a grouped GEMM over ragged experts: the persistent programs walk a work list
        of (tile of at most 2 TH rows of one expert, column block) items (fp8_grouped_gemm)."""
        TH: gl.constexpr = a_desc.block_type.shape[0] // 2
        a_s, b_s, ready, empty = _ring(a_desc, b_desc, STAGES, 2)
        gl.warp_specialize([
            (_dual_math_grouped, (a_desc, b_desc, c_ptr, a_s, b_s, ready, empty, sa_ptr, sb_ptr,
                                  t_expert, t_row0, t_rows, n_tiles, N, K, 0, STAGES)),
            (_dual_math_grouped, (a_desc, b_desc, c_ptr, a_s, b_s, ready, empty, sa_ptr, sb_ptr,
                                  t_expert, t_row0, t_rows, n_tiles, N, K, TH, STAGES)),
            (_loader_grouped, (a_desc, b_desc, a_s, b_s, ready, empty, t_expert, t_row0, n_tiles,
                               N, K, STAGES)),
        ], [4, 1], [240, 24])             # as ws2d1's: 3 x 168 - 240 - 24 = 240

    @gluon.jit
    def _ffn_item(t_expert, t_row0, t_rows, item, items, n_tiles, I, n_blocks,
                  TM: gl.constexpr, TN: gl.constexpr):
        """Work item `item` of the FFN gate/up kernel (zeros past the last, `items`): (its
        tile's first row, the tile's first row not its own, the row of the (E x 2I / TN, nk)
        weight scales of its gate block (its up block's: the next), its h column block)."""
        tile, pid_n = _tile(item, n_tiles * TM, I, TM, TN, GROUP_M)
        real = item < items
        row0 = gl.load(t_row0 + tile, mask=real, other=0)
        end = row0 + gl.load(t_rows + tile, mask=real, other=0)
        expert = gl.load(t_expert + tile, mask=real, other=0)
        return row0, end, expert * 2 * n_blocks + 2 * pid_n, pid_n

    @gluon.jit
    def _loader_ffn(a_desc, b_desc, a_s, b_s, ready, empty, t_expert, t_row0, n_tiles, I, K,
                    STAGES: gl.constexpr):
        """FFN gate/up kernel's load partition (one warp): _loader_grouped with B^T's 2 x TN
        rows of the item's [gate | up] block pair: from row expert x 2I + column block x 2TN of
        the (E x 2I, H) view (the megakernel's packing: gate block nb, then up block nb)."""
        TM: gl.constexpr = a_desc.block_type.shape[0]
        TN2: gl.constexpr = b_desc.block_type.shape[0]
        TK: gl.constexpr = a_desc.block_type.shape[1]
        nk = gl.cdiv(K, TK)
        it = 0
        for item in range(gl.program_id(0), n_tiles * gl.cdiv(I, TN2 // 2), gl.num_programs(0)):
            tile, pid_n = _tile(item, n_tiles * TM, I, TM, TN2 // 2, GROUP_M)
            row0 = gl.load(t_row0 + tile)
            n0 = gl.load(t_expert + tile) * 2 * I + pid_n * TN2
            it = _load_blocks(a_desc, b_desc, a_s, b_s, ready, empty, row0, n0, nk, it,
                              STAGES)

    @gluon.jit
    def _ffn_math(a_s, b_s, ready, empty, q_ptr, hs_ptr, h_ptr, sa_ptr, sb_ptr, t_expert,
                  t_row0, t_rows, n_tiles, I, K, ROW0: gl.constexpr, STAGES: gl.constexpr,
                  STORE_H: gl.constexpr):
        """FFN gate/up kernel's math partitions: rows ROW0 ... ROW0 + TM of each item's tile,
        the item's 128 gate and 128 up columns (_ffn_gate_up_tile), then h's 128-column block
        quantized whole in registers (_ffn_quant: each row's 128 h columns sit in one quad of
        threads, so the amax is a reduction within the warp) and stored: q through shared
        memory to a store masked by row, the scale (one a row) masked by row; only the tile's
        rows [row0, end) are written. STORE_H (the check's build) also stores h in float32. A
        half with no row of the tile only releases its blocks (as _dual_math_grouped)."""
        TM: gl.constexpr = a_s.shape[1] // 2
        TN: gl.constexpr = b_s.shape[1] // 2
        TK: gl.constexpr = a_s.shape[2]
        mma: gl.constexpr = _acc_layout(gl.num_warps(), TN)
        q_layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([TM, TN], gl.float8e4nv)
        # 16 consecutive e4m3 a thread, a row of 128 in 8 threads: 16-byte coalesced stores
        out: gl.constexpr = gl.BlockedLayout([1, 16], [32 * 16 // TN, TN // 16],
                                             [gl.num_warps(), 1], [1, 0])
        q_s = gl.allocate_shared_memory(gl.float8e4nv, [TM, TN], q_layout)
        nk = gl.cdiv(K, TK)
        n_blocks = gl.cdiv(I, TN)
        items, programs = n_tiles * n_blocks, gl.num_programs(0)
        row0, end, sb_row, pid_n = _ffn_item(t_expert, t_row0, t_rows, gl.program_id(0), items,
                                             n_tiles, I, n_blocks, 2 * TM, TN)
        it = 0
        for item in range(gl.program_id(0), items, programs):
            row0_nx, end_nx, sb_row_nx, pid_n_nx = _ffn_item(
                t_expert, t_row0, t_rows, item + programs, items, n_tiles, I, n_blocks, 2 * TM,
                TN)
            off_m = row0 + ROW0
            if off_m < end:
                sa_row, rmask = _row_scales(sa_ptr, off_m, end, nk, TM, mma)
                acc_g, acc_u = _ffn_gate_up_tile(a_s, b_s, ready, empty, sa_row, rmask, sb_ptr,
                                                 sb_row, nk, it, ROW0, TM, TN, mma, STAGES)
                h, q, hs = _ffn_quant(acc_g, acc_u)
                rows_m = off_m + gl.arange(0, TM, layout=gl.SliceLayout(1, mma))
                gl.store(hs_ptr + rows_m.to(gl.int64) * n_blocks + pid_n, hs, mask=rows_m < end)
                if STORE_H:
                    cols_m = pid_n * TN + gl.arange(0, TN, layout=gl.SliceLayout(0, mma))
                    gl.store(h_ptr + rows_m.to(gl.int64)[:, None] * I + cols_m[None, :], h,
                             mask=(rows_m < end)[:, None] & (cols_m < I)[None, :])
                q_s.store(q)
                rows = off_m + gl.arange(0, TM, layout=gl.SliceLayout(1, out))
                cols = pid_n * TN + gl.arange(0, TN, layout=gl.SliceLayout(0, out))
                gl.store(q_ptr + rows.to(gl.int64)[:, None] * I + cols[None, :], q_s.load(out),
                         mask=(rows < end)[:, None] & (cols < I)[None, :])
            else:                  # no row of the tile in this half: release its blocks
                _release_blocks(ready, empty, it, nk, STAGES)
            it += nk
            row0, end, sb_row, pid_n = row0_nx, end_nx, sb_row_nx, pid_n_nx

    @gluon.jit
    def fp8_ffn_gate_up_kernel(a_desc, b_desc, q_ptr, hs_ptr, h_ptr, sa_ptr, sb_ptr, t_expert,
                               t_row0, t_rows, n_tiles, I, K, STAGES: gl.constexpr,
                               STORE_H: gl.constexpr, num_warps: gl.constexpr):
        """The routed FFN's gate/up GEMM with SwiGLU and h's FP8 quantization fused (--ffn):
        the grouped kernel's work list of (tile of at most 2 TH rows of one expert, 128-column
        block of h) items; each item reads the block's gate and up weight rows (one 256 x 128
        TMA box a K block) and writes q (e4m3) and its 1 x 128 scales."""
        TH: gl.constexpr = a_desc.block_type.shape[0] // 2
        a_s, b_s, ready, empty = _ring(a_desc, b_desc, STAGES, 2)
        gl.warp_specialize([
            (_ffn_math, (a_s, b_s, ready, empty, q_ptr, hs_ptr, h_ptr, sa_ptr, sb_ptr, t_expert,
                         t_row0, t_rows, n_tiles, I, K, 0, STAGES, STORE_H)),
            (_ffn_math, (a_s, b_s, ready, empty, q_ptr, hs_ptr, h_ptr, sa_ptr, sb_ptr, t_expert,
                         t_row0, t_rows, n_tiles, I, K, TH, STAGES, STORE_H)),
            (_loader_ffn, (a_desc, b_desc, a_s, b_s, ready, empty, t_expert, t_row0, n_tiles,
                           I, K, STAGES)),
        ], [4, 1], [240, 24])             # as ws2d1's: 3 x 168 - 240 - 24 = 240

    @gluon.jit
    def fp8_block_gemm_ws2w_kernel(a_desc, b_desc, c_desc, sa_ptr, sb_ptr, M, N, K,
                                   STAGES: gl.constexpr, num_warps: gl.constexpr):
        """ws2p on 128 x 256 tiles (a third less operand traffic per FLOP than 128 x 128), two
        math warpgroups and no load partition: eight warps in all, so 240 registers each."""
        TH: gl.constexpr = c_desc.block_type.shape[0]
        a_s, b_s, ready, empty = _ring(a_desc, b_desc, STAGES, 2)
        gl.warp_specialize([
            (_wide_math_persistent, (a_desc, b_desc, c_desc, a_s, b_s, ready, empty, sa_ptr,
                                     sb_ptr, M, N, K, 0, True, STAGES)),
            (_wide_math_persistent, (a_desc, b_desc, c_desc, a_s, b_s, ready, empty, sa_ptr,
                                     sb_ptr, M, N, K, TH, False, STAGES)),
        ], [4], [240])                                # WIDE_MAXNREG for the second warpgroup

    @gluon.jit
    def fp8_block_gemm_ws2p_kernel(a_desc, b_desc, c_desc, sa_ptr, sb_ptr, M, N, K,
                                   STAGES: gl.constexpr, num_warps: gl.constexpr):
        """The two-warpgroup kernel made persistent: one program per SM walks the tiles."""
        TH: gl.constexpr = c_desc.block_type.shape[0]
        a_s, b_s, ready, empty = _ring(a_desc, b_desc, STAGES, 2)
        gl.warp_specialize([
            (_half_math_persistent, (c_desc, a_s, b_s, ready, empty, sa_ptr, sb_ptr, M, N, K, 0,
                                     STAGES)),
            (_half_math_persistent, (c_desc, a_s, b_s, ready, empty, sa_ptr, sb_ptr, M, N, K,
                                     TH, STAGES)),
            (_loader_persistent, (a_desc, b_desc, a_s, b_s, ready, empty, M, N, K, STAGES)),
        ], [4, 1], [168, 40])

    @gluon.jit
    def fp8_block_gemm_ws2pp_kernel(a_desc, b_desc, c_desc, sa_ptr, sb_ptr, M, N, K,
                                    STAGES: gl.constexpr, num_warps: gl.constexpr):
        """Ping-pong (CUTLASS's schedule): persistent, each math warpgroup on its own 64 x 128
        tiles, the two taking turns on the tensor cores a tile's K loop at a time; the load warp
        walks the program's tiles in order (_loader_persistent on 64-row A blocks), which is
        the order the turns consume them, and each buffer has one releaser."""
        a_s, b_s, ready, empty = _ring(a_desc, b_desc, STAGES, 1)
        turn = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
        for i in gl.static_range(2):       # turn.index(w): warpgroup w may run its K loop
            mbarrier.init(turn.index(i), count=1)
        gl.warp_specialize([
            (_pp_math, (c_desc, a_s, b_s, ready, empty, turn, sa_ptr, sb_ptr, M, N, K, 0,
                        STAGES)),
            (_pp_math, (c_desc, a_s, b_s, ready, empty, turn, sa_ptr, sb_ptr, M, N, K, 1,
                        STAGES)),
            (_loader_persistent, (a_desc, b_desc, a_s, b_s, ready, empty, M, N, K, STAGES)),
        ], [4, 1], [168, 40])

    @gluon.jit
    def fp8_block_gemm_ws2_kernel(a_desc, b_desc, c_desc, sa_ptr, sb_ptr, M, N, K,
                                  STAGES: gl.constexpr, num_warps: gl.constexpr):
        """Two math warpgroups, each on half the tile's rows, fed by a one-warp TMA partition:
        one's scale step overlaps the other's MMA (as DeepGEMM's FP8 GEMM does)."""
        TM: gl.constexpr = a_desc.block_type.shape[0]
        TH: gl.constexpr = c_desc.block_type.shape[0]
        TN: gl.constexpr = c_desc.block_type.shape[1]
        TK: gl.constexpr = a_desc.block_type.shape[1]
        off_m, off_n, pid_n, nk = _tile_origin(M, N, K, TM, TN, TK)
        a_s, b_s, ready, empty = _ring(a_desc, b_desc, STAGES, 2)
        gl.warp_specialize([
            (_half_math, (c_desc, a_s, b_s, ready, empty, sa_ptr, sb_ptr, M, off_m, off_n, pid_n,
                          nk, 0, STAGES)),
            (_half_math, (c_desc, a_s, b_s, ready, empty, sa_ptr, sb_ptr, M, off_m, off_n, pid_n,
                          nk, TH, STAGES)),
            (_loader, (a_desc, b_desc, a_s, b_s, ready, empty, off_m, off_n, nk, STAGES)),
        ], [4, 1], [168, 40])                         # WS_MAXNREG for the second warpgroup

    @gluon.jit
    def fp8_block_gemm_ws_kernel(a_desc, b_desc, c_desc, sa_ptr, sb_ptr, M, N, K,
                                 STAGES: gl.constexpr, num_warps: gl.constexpr):
        """The wait-each loop with a one-warp load partition feeding the ring (warp
        specialization): the math warps issue no TMA."""
        TM: gl.constexpr = c_desc.block_type.shape[0]
        TN: gl.constexpr = c_desc.block_type.shape[1]
        TK: gl.constexpr = a_desc.block_type.shape[1]
        off_m, off_n, pid_n, nk = _tile_origin(M, N, K, TM, TN, TK)
        a_s, b_s, ready, empty = _ring(a_desc, b_desc, STAGES, 1)
        gl.warp_specialize([
            (_math, (c_desc, a_s, b_s, ready, empty, sa_ptr, sb_ptr, M, off_m, off_n, pid_n, nk,
                     STAGES)),
            (_loader, (a_desc, b_desc, a_s, b_s, ready, empty, off_m, off_n, nk, STAGES)),
        ], [1], [40])

    @gluon.jit
    def fp8_block_gemm_kernel(a_desc, b_desc, c_desc, sa_ptr, sb_ptr, M, N, K, STAGES: gl.constexpr,
                              PINGPONG: gl.constexpr, PREFETCH: gl.constexpr,
                              num_warps: gl.constexpr):
        TM: gl.constexpr = c_desc.block_type.shape[0]
        TN: gl.constexpr = c_desc.block_type.shape[1]
        TK: gl.constexpr = a_desc.block_type.shape[1]
        off_m, off_n, pid_n, nk = _tile_origin(M, N, K, TM, TN, TK)
        mma: gl.constexpr = _acc_layout(num_warps, TN)
        sa_row, rmask = _row_scales(sa_ptr, off_m, M, nk, TM, mma)

        a_s = gl.allocate_shared_memory(a_desc.dtype, [STAGES] + a_desc.block_type.shape,
                                        a_desc.layout)
        b_s = gl.allocate_shared_memory(b_desc.dtype, [STAGES] + b_desc.block_type.shape,
                                        b_desc.layout)
        ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        for i in gl.static_range(STAGES):
            mbarrier.init(ready.index(i), count=1)
        nbytes: gl.constexpr = a_desc.block_type.nbytes + b_desc.block_type.nbytes
        for i in gl.static_range(STAGES):           # fill the ring (K of at least STAGES blocks)
            mbarrier.expect(ready.index(i), nbytes)
            tma.async_copy_global_to_shared(a_desc, [off_m, i * TK], ready.index(i), a_s.index(i))
            tma.async_copy_global_to_shared(b_desc, [off_n, i * TK], ready.index(i), b_s.index(i))

        acc = gl.zeros((TM, TN), dtype=gl.float32, layout=mma)
        if PINGPONG:
            acc = _pingpong(a_desc, b_desc, a_s, b_s, ready, sa_row, rmask, sb_ptr, pid_n, off_m,
                            off_n, nk, acc, STAGES)
        else:                # each block's MMA waited for before its scale step (Triton's loop)
            t = gl.zeros((TM, TN), dtype=gl.float32, layout=mma)
            sc = _scale(sa_row, rmask, sb_ptr, pid_n, 0, nk)
            for k in range(nk):
                s = k % STAGES
                mbarrier.wait(ready.index(s), phase=(k // STAGES) & 1)
                if PREFETCH:     # block k+1's scales load under block k's MMA
                    sc_next = _scale(sa_row, rmask, sb_ptr, pid_n, k + 1, nk)
                t = warpgroup_mma(a_s.index(s), b_s.index(s).permute((1, 0)), t, use_acc=False)
                if not PREFETCH:  # loaded after the MMA: their latency adds to every block
                    sc = _scale(sa_row, rmask, sb_ptr, pid_n, k, nk)
                acc = acc + t * sc[:, None]
                if PREFETCH:
                    sc = sc_next
                _refill(a_desc, b_desc, a_s, b_s, ready, off_m, off_n, k + STAGES, nk, STAGES)
        for i in gl.static_range(STAGES):
            mbarrier.invalidate(ready.index(i))

        _store_tile(c_desc, acc, off_m, off_n)

    @gluon.jit
    def _pingpong(a_desc, b_desc, a_s, b_s, ready, sa_row, rmask, sb_ptr, pid_n, off_m, off_n, nk,
                  acc, STAGES: gl.constexpr):
        """The K loop with two accumulators in turn (module docstring)."""
        t_a = gl.zeros_like(acc)
        t_b = gl.zeros_like(acc)
        mbarrier.wait(ready.index(0), phase=0)
        t_a = warpgroup_mma(a_s.index(0), b_s.index(0).permute((1, 0)), t_a, use_acc=False,
                            is_async=True)
        sc = _scale(sa_row, rmask, sb_ptr, pid_n, 0, nk)
        # two blocks a trip, so each accumulator keeps its registers (a swap of the two would
        # leave ptxas unable to tell which MMA a scale step reads, and it serializes them)
        for k in range(1, nk - 1, 2):
            t_b, t_a, acc, sc = _step(a_desc, b_desc, a_s, b_s, ready, sa_row, rmask, sb_ptr,
                                      pid_n, off_m, off_n, k, nk, t_b, t_a, acc, sc, STAGES)
            t_a, t_b, acc, sc = _step(a_desc, b_desc, a_s, b_s, ready, sa_row, rmask, sb_ptr,
                                      pid_n, off_m, off_n, k + 1, nk, t_a, t_b, acc, sc, STAGES)
        if nk % 2 == 0:      # one block left: its MMA into t_b, the last to wait for
            t_tail, t_done, acc, sc = _step(a_desc, b_desc, a_s, b_s, ready, sa_row, rmask,
                                            sb_ptr, pid_n, off_m, off_n, nk - 1, nk, t_b, t_a,
                                            acc, sc, STAGES)
            t_fin = warpgroup_mma_wait(num_outstanding=0, deps=(t_tail, ))
        else:                # the last block's MMA is in t_a
            t_fin = warpgroup_mma_wait(num_outstanding=0, deps=(t_a, ))
        return acc + t_fin * sc[:, None]


def _require_gluon() -> None:
    """Refuse in one line where Triton has no Gluon."""
    if gluon is None:
        raise MokInputError("needs Triton with Gluon (triton.experimental.gluon)")


def _launch_args(variant: str, a, bt, c, sa, sb) -> tuple:
    """(kernel, positional arguments, launch options) of a variant on A, B^T, C and scales."""
    _require_gluon()
    (m, k), n = a.shape, bt.shape[0]
    descs = _descriptors(a, bt, c,
                         BM // 2 if variant in ("ws2", "ws2p", "ws2pp", "ws2w", "ws2d", "ws2d1")
                         else BM,
                         2 * BN if variant == "ws2w" else BN, BM // 2 if variant == "ws2pp" else BM)
    sbt = sb.t().contiguous()          # the kernels read each column block's scales in a row
    if variant == "ws2w":
        return (fp8_block_gemm_ws2w_kernel, (*descs, sa, sbt, m, n, k, WIDE_STAGES),
                {"num_warps": 4, "maxnreg": WIDE_MAXNREG})
    if variant == "ws2d":
        return (fp8_block_gemm_ws2d_kernel, (*descs, sa, sbt, m, n, k, DUAL_STAGES),
                {"num_warps": 4, "maxnreg": WIDE_MAXNREG})
    if variant == "ws2d1":
        return (fp8_block_gemm_ws2d1_kernel, (*descs, sa, sbt, m, n, k, DUAL_STAGES),
                {"num_warps": 4, "maxnreg": WS_MAXNREG})
    if variant == "ws2pp":
        return (fp8_block_gemm_ws2pp_kernel, (*descs, sa, sbt, m, n, k, PP_STAGES),
                {"num_warps": 4, "maxnreg": WS_MAXNREG})
    if variant in ("ws", "ws2", "ws2p"):
        kernel = {"ws": fp8_block_gemm_ws_kernel, "ws2": fp8_block_gemm_ws2_kernel,
                  "ws2p": fp8_block_gemm_ws2p_kernel}[variant]
        return (kernel, (*descs, sa, sbt, m, n, k, STAGES),
                {"num_warps": WARPS if variant == "ws" else 4, "maxnreg": WS_MAXNREG})
    return (fp8_block_gemm_kernel,
            (*descs, sa, sbt, m, n, k, STAGES, variant == "pingpong", variant != "wait-late"),
            {"num_warps": WARPS})


def _descriptors(a, bt, c, c_rows: int = BM, b_rows: int = BN, a_rows: int = BM):
    """TMA descriptors of A (M, K) e4m3, B^T (N, K) e4m3 and C (M, N) bf16 in a_rows x BK,
    b_rows x BK and c_rows x BN tiles."""
    from triton.experimental.gluon import language as gl

    return (_desc(a, [a_rows, BK], gl.float8e4nv), _desc(bt, [b_rows, BK], gl.float8e4nv),
            _desc(c, [c_rows, BN], gl.bfloat16))


def check_shape(m: int, n: int, k: int, variant: str = "pingpong") -> None:
    """The kernel takes whole tiles and at least STAGES K blocks; refuse anything else (ws2pp's
    64-row tiles and 8-stage ring, and ws2d's and ws2d1's 6-stage ring, ask no more: their loads
    wait for free buffers and run on into the next tile)."""
    bn = 2 * BN if variant == "ws2w" else BN
    if m % BM or n % bn or k % BK or k < STAGES * BK:
        raise MokInputError(f"M={m}, N={n}, K={k}: M a multiple of {BM}, N of {bn}, K of {BK} "
                            f"and at least {STAGES * BK} are required ({variant})")


def fp8_block_gemm(a, sa, bt, sb, variant: str = "pingpong"):
    """(launch, C): a function that computes C (M, N) bf16 from A (M, K) e4m3 with scales sa
    (M, K/128) and B^T (N, K) e4m3 with block scales sb (K/128, N/128) (float32, contiguous)
    with the K loop `variant` (VARIANTS), its descriptors built once."""
    import torch

    (m, k), n = a.shape, bt.shape[0]
    check_shape(m, n, k, variant)
    c = torch.empty(m, n, device=a.device, dtype=torch.bfloat16)
    kernel, args, options = _launch_args(variant, a, bt, c, sa, sb)

    tile_m, tile_n = BM // 2 if variant == "ws2pp" else BM, 2 * BN if variant == "ws2w" else BN
    tiles = (m // tile_m) * (n // tile_n)
    grid = min(tiles, torch.cuda.get_device_properties(a.device).multi_processor_count
               ) if variant in ("ws2p", "ws2pp", "ws2w", "ws2d", "ws2d1") else tiles

    def launch():
        kernel[(grid, )](*args, **options)
    return launch, c


def grouped_tiles(counts, tile_rows: int = BM) -> tuple:
    """The grouped GEMM's work list for experts of counts[e] rows each, laid out one after the
    other (expert e's rows from sum(counts[:e]) on): (tile_expert, tile_row0, tile_rows), int32
    on counts' device, tiles of at most tile_rows rows of one expert, each expert's in order,
    experts in order, none for an expert without rows."""
    import torch

    counts = counts.to(torch.int64)
    starts = torch.cumsum(counts, 0) - counts
    per = (counts + tile_rows - 1) // tile_rows
    expert = torch.repeat_interleave(torch.arange(len(counts), device=counts.device), per)
    j = (torch.arange(len(expert), device=counts.device)
         - torch.repeat_interleave(torch.cumsum(per, 0) - per, per))       # tile j of its expert
    rows = torch.clamp(counts[expert] - j * tile_rows, max=tile_rows)
    return expert.int(), (starts[expert] + j * tile_rows).int(), rows.int()


def _grouped_launch_args(a, sa, bt, sb, c, tiles) -> tuple:
    """(kernel, positional arguments, launch options, items) of the grouped kernel on A (R, K),
    its scales (R, K/128), B^T (E, N, K), its scales (E, N/128, K/128), C (R', N) (R' >= R)
    and the work list `tiles` (grouped_tiles); items: tiles x column blocks."""
    _require_gluon()
    from triton.experimental.gluon import language as gl

    (e, n, k), rows = bt.shape, a.shape[0]
    check_shape(BM, n, k, "ws2d1")
    if (sa.shape != (rows, k // BK) or sb.shape != (e, n // BN, k // BK) or c.shape[1] != n
            or c.shape[0] < rows or not all(t.is_contiguous() for t in (a, sa, bt, sb, c))):
        raise MokInputError("grouped GEMM: A (R, K), sa (R, K/128), B^T (E, N, K), sb "
                            "(E, N/128, K/128), C (>= R, N), all contiguous, are required")
    expert, row0, nrows = tiles
    descs = (_desc(a, [BM, BK], gl.float8e4nv), _desc(bt.view(e * n, k), [BN, BK], gl.float8e4nv))
    return (fp8_grouped_ws2d1_kernel,
            (*descs, c, sa, sb, expert, row0, nrows, len(expert), n, k, DUAL_STAGES),
            {"num_warps": 4, "maxnreg": WS_MAXNREG}, len(expert) * (n // BN))


def fp8_grouped_gemm(a, sa, bt, sb, counts, c=None, tiles=None):
    """(launch, C): a function that computes the grouped GEMM C[r] = A[r] B_e (bf16) for each
    expert e's rows r (counts[e] rows each, one expert's after the other) with the ws2d1 K loop
    (fp8_grouped_ws2d1_kernel), its work list (grouped_tiles) and descriptors built once. C
    (R, N) is made unless given (rows past R, if it has any, are never written); `tiles`: a
    work list in place of grouped_tiles(counts) (a subset of it leaves the other rows alone)."""
    import torch

    if c is None:
        c = torch.empty(a.shape[0], bt.shape[1], device=a.device, dtype=torch.bfloat16)
    tiles = grouped_tiles(counts.to(a.device)) if tiles is None else tiles
    kernel, args, options, items = _grouped_launch_args(a, sa, bt, sb, c, tiles)
    grid = min(items, torch.cuda.get_device_properties(a.device).multi_processor_count)

    def launch():
        if items:
            kernel[(grid, )](*args, **options)
    return launch, c


def _ffn_launch_args(a, sa, wgu, sgu, q, hs, tiles, h=None) -> tuple:
    """(kernel, positional arguments, launch options, items) of the FFN gate/up kernel on A
    (R, H) e4m3, its scales (R, H/128), W_gu^T (E, 2I, H) e4m3 packed as pack_gate_up has it,
    its scales (E, 2I/128, H/128), the outputs q (R', I) e4m3 and hs (R', I/128) float32
    (R' >= R; rows past R never written), h (R', I) float32 or None (the check's build, which
    also stores h) and the work list `tiles` (grouped_tiles); items: tiles x I / 128."""
    _require_gluon()
    import torch
    from triton.experimental.gluon import language as gl

    (e, n2, k), rows = wgu.shape, a.shape[0]
    i = n2 // 2
    check_shape(BM, i, k, "ws2d1")           # I and H multiples of 128, H of 4 blocks at least
    outs = (q, hs) if h is None else (q, hs, h)
    if (n2 % (2 * BN) or sa.shape != (rows, k // BK) or sgu.shape != (e, n2 // BN, k // BK)
            or q.shape[1] != i or hs.shape[1] != i // BN or (h is not None and h.shape[1] != i)
            or any(t.shape[0] < rows for t in outs)
            or a.dtype != torch.float8_e4m3fn or wgu.dtype != torch.float8_e4m3fn
            or q.dtype != torch.float8_e4m3fn
            or any(t.dtype != torch.float32 for t in (sa, sgu, hs) + outs[2:])
            or not all(t.is_contiguous() for t in (a, sa, wgu, sgu) + outs)):
        raise MokInputError("FFN gate/up: A (R, H) e4m3, sa (R, H/128), W_gu^T (E, 2I, H) e4m3, "
                            "its scales (E, 2I/128, H/128), q (>= R, I) e4m3, scales (>= R, "
                            "I/128) float32, all contiguous, I a multiple of 128, are required")
    expert, row0, nrows = tiles
    descs = (_desc(a, [BM, BK], gl.float8e4nv),
             _desc(wgu.view(e * n2, k), [2 * BN, BK], gl.float8e4nv))
    return (fp8_ffn_gate_up_kernel,
            (*descs, q, hs, hs if h is None else h, sa, sgu, expert, row0, nrows, len(expert), i,
             k, FFN_STAGES, h is not None),
            {"num_warps": 4, "maxnreg": WS_MAXNREG}, len(expert) * (i // BN))


def fp8_ffn_gate_up(a, sa, wgu, sgu, counts, q=None, hs=None, h=None, tiles=None):
    """(launch, q, hs): a function that computes, for each expert e's rows r of A (counts[e]
    rows each, one expert's after the other), h[r] = silu(A[r] W_g,e) * (A[r] W_u,e) and its FP8
    quantization (fp8_ffn_gate_up_kernel): q (R, I) e4m3 and hs (R, I/128) float32, made unless
    given (then rows past R are never written); h (float32, given): h itself stored too."""
    import torch

    rows, i = a.shape[0], wgu.shape[1] // 2
    if q is None:
        q = torch.empty(rows, i, device=a.device, dtype=torch.float8_e4m3fn)
    if hs is None:
        hs = torch.empty(rows, i // BN, device=a.device, dtype=torch.float32)
    tiles = grouped_tiles(counts.to(a.device)) if tiles is None else tiles
    kernel, args, options, items = _ffn_launch_args(a, sa, wgu, sgu, q, hs, tiles, h)
    grid = min(items, torch.cuda.get_device_properties(a.device).multi_processor_count)

    def launch():
        if items:
            kernel[(grid, )](*args, **options)
    return launch, q, hs


def fp8_grouped_ffn(a, sa, wgu, sgu, wd, sd, counts, q=None, hs=None, y=None, h=None):
    """(launch, (q, hs, y)): the routed expert FFN in FP8 on the Gluon core, two launches: the
    gate/up kernel with SwiGLU and h's quantization fused (fp8_ffn_gate_up), then the grouped
    ws2d1 GEMM (fp8_grouped_gemm) of q, hs by W_d^T (E, H, I) e4m3 with block scales sd (E, H/128,
    I/128) into y (R, H) bf16. Outputs made unless given (rows past R are never written); one
    work list (grouped_tiles) for both."""
    tiles = grouped_tiles(counts.to(a.device))
    gate_up, q, hs = fp8_ffn_gate_up(a, sa, wgu, sgu, counts, q, hs, h, tiles)
    rows = a.shape[0]
    down, y = fp8_grouped_gemm(q[:rows], hs[:rows], wd, sd, counts, c=y, tiles=tiles)

    def launch():
        gate_up()
        down()
    return launch, (q, hs, y)


def compile_ffn_sm90(experts: int = 48, rows: int = 32768, h: int = 7168, i: int = 2048):
    """compile_sm90 of the FFN gate/up kernel (fp8_ffn_gate_up, the timed build) at `experts`
    experts of hidden size h and intermediate size i and `rows` rows in all."""
    _require_gluon()
    import torch

    counts = torch.full((experts, ), rows // experts, dtype=torch.int64)
    counts[0] += rows - int(counts.sum())
    a = torch.empty(rows, h, dtype=torch.float8_e4m3fn)
    sa = torch.empty(rows, h // BK)
    wgu = torch.empty(experts, 2 * i, h, dtype=torch.float8_e4m3fn)
    sgu = torch.empty(experts, 2 * i // BN, h // BK)
    q = torch.empty(rows, i, dtype=torch.float8_e4m3fn)
    hs = torch.empty(rows, i // BN)
    return _compile_sm90(*_ffn_launch_args(a, sa, wgu, sgu, q, hs, grouped_tiles(counts))[:3])


def compile_sm90(m: int = 4096, n: int = 4096, k: int = 7168, variant: str = "pingpong"):
    """triton.compile of the kernel for sm_90 as a launch at (m, n, k) would specialize it, on a
    machine without a GPU (CPU tensors stand in for the operands): the compiled kernel."""
    _require_gluon()
    import torch

    a = torch.empty(m, k, dtype=torch.float8_e4m3fn)
    bt = torch.empty(n, k, dtype=torch.float8_e4m3fn)
    c = torch.empty(m, n, dtype=torch.bfloat16)
    sa = torch.empty(m, k // BK)
    sb = torch.empty(k // BK, n // BN)
    return _compile_sm90(*_launch_args(variant, a, bt, c, sa, sb))


def compile_grouped_sm90(experts: int = 48, rows: int = 32768, n: int = 4096, k: int = 7168):
    """compile_sm90 of the grouped kernel (fp8_grouped_gemm) at `experts` experts' weights of
    (n, k) and `rows` rows in all."""
    _require_gluon()
    import torch

    counts = torch.full((experts, ), rows // experts, dtype=torch.int64)
    counts[0] += rows - int(counts.sum())
    a = torch.empty(rows, k, dtype=torch.float8_e4m3fn)
    bt = torch.empty(experts, n, k, dtype=torch.float8_e4m3fn)
    c = torch.empty(rows, n, dtype=torch.bfloat16)
    sa = torch.empty(rows, k // BK)
    sb = torch.empty(experts, n // BN, k // BK)
    return _compile_sm90(*_grouped_launch_args(a, sa, bt, sb, c, grouped_tiles(counts))[:3])


def variant_list(text: str) -> tuple:
    """The comma list of --variants, each one of VARIANTS (repeats dropped); refuse others."""
    names = tuple(dict.fromkeys(text.split(",")))
    for v in names:
        if v not in VARIANTS:
            raise MokInputError(f"--variants {text!r}: {v!r} is not one of {', '.join(VARIANTS)}")
    return names


def measure(rows: list[int], variants: tuple = VARIANTS) -> dict:
    """Check, then time, each (shape, rows) against the library in the same run: the K loops
    `variants`; the library always."""
    import torch

    from benchmarks.fp8_ceiling import SETS, time_ms
    from mok_kernels.fp8 import dequantize_blocks, quantize_rows, quantize_weight

    out = {}
    for name, (n, k) in SHAPES.items():
        for m in rows:
            sets = []
            for s in range(SETS):
                g = torch.Generator(device="cuda").manual_seed(s)
                x = torch.randn(m, k, device="cuda", generator=g)
                w = torch.randn(k, n, device="cuda", generator=g) / k ** 0.5
                a, sa = quantize_rows(x)
                wq, sb = quantize_weight(w)
                sa, sb = sa.contiguous(), sb.contiguous()
                # cuBLAS wants the scales outer-dim major (benchmarks/fp8_ceiling.py)
                sets.append((x.bfloat16(), w.t().contiguous().bfloat16(), a, sa,
                             wq.t().contiguous(), sb, sa.t().contiguous().t(),
                             sb.t().contiguous().t()))
            a, sa, bt, sb = sets[0][2:6]
            want = dequantize_blocks(a, sa, 1, BK) @ dequantize_blocks(bt.t(), sb, BK, BK)
            err = 0.0
            for variant in variants:
                launch, c = fp8_block_gemm(a, sa, bt, sb, variant)
                launch()
                err = max(err, float((c.float() - want).norm() / want.norm()))
            row = {"rel_err": err}
            if err > 1e-2:
                out[f"{name} M={m}"] = row | {"refused": "rel. error above 1e-2: not timed"}
                print(f"{name} M={m}: rel. error {err:.2e} > 1e-2, not timed", flush=True)
                continue
            flops = 2.0 * m * n * k
            fns = {
                **{f"gluon fp8 block, {v}": [fp8_block_gemm(*s[2:6], v)[0] for s in sets]
                   for v in variants},
                "torch bf16": [lambda s=s: s[0] @ s[1].t() for s in sets],
                "torch._scaled_mm block": [
                    lambda s=s: torch._scaled_mm(s[2], s[4].t(), s[6], s[7],
                                                 out_dtype=torch.bfloat16) for s in sets],
            }
            for label, f in fns.items():
                try:
                    row[label] = flops / time_ms(f) / 1e9
                except RuntimeError as exc:          # a scale layout this cuBLAS refuses
                    row[label] = f"refused: {str(exc).splitlines()[0][:120]}"
            bf = row["torch bf16"]
            ratios = {lb: v / bf for lb, v in row.items()
                      if isinstance(v, float) and lb != "rel_err"}
            print(f"{name} M={m}: rel. error {err:.1e}; " + ", ".join(
                f"{lb} {row[lb]:.0f} TF/s ({r:.2f}x bf16)" for lb, r in ratios.items()), flush=True)
            out[f"{name} M={m}"] = row
    return out


def grouped_case_list(text: str) -> tuple:
    """The comma list of --grouped ("all": every one of GROUPED_CASES); refuse others."""
    names = tuple(GROUPED_CASES) if text == "all" else tuple(dict.fromkeys(text.split(",")))
    for name in names:
        if name not in GROUPED_CASES:
            raise MokInputError(f"--grouped {text!r}: {name!r} is not one of "
                                f"{', '.join(GROUPED_CASES)} (or all)")
    return names


def grouped_counts(experts: int, routing: str, rows: int = GROUPED_ROWS, seed: int = 0):
    """Rows of each of `experts` experts (int64, CPU), `rows` in all: a seeded multinomial
    ("uniform"), or zipf-like counts (s = 1.1) with an expert of 0 rows, one of 1, one of 37
    (under 64), 64, 65, 128 and 129, in a seeded order ("skewed")."""
    import torch

    g = torch.Generator().manual_seed(seed)
    if routing == "uniform":
        ids = torch.multinomial(torch.ones(experts), rows, replacement=True, generator=g)
        return torch.bincount(ids, minlength=experts)
    w = (torch.arange(experts) + 1.0) ** -1.1
    counts = (w / w.sum() * rows).floor().to(torch.int64)
    edges = torch.tensor([129, 128, 65, 64, 37, 1, 0])
    counts[-len(edges):] = edges
    counts[0] += rows - int(counts.sum())
    return counts[torch.randperm(experts, generator=g)]


def coverage_failures(c, rows: int) -> list[str]:
    """What a grouped launch into C pre-filled with NaN got wrong about which rows it wrote: rows
    past the experts' `rows` written, or rows of theirs left NaN."""
    import torch

    fails = []
    if bool(torch.isnan(c[rows:]).logical_not().any()):
        fails.append("rows past the last expert's written")
    unwritten = int(torch.isnan(c[:rows]).any(dim=1).sum())
    if unwritten:
        fails.append(f"{unwritten} rows not written (or NaN)")
    return fails


def subset_failures(part, c, mine, rows: int, which: str) -> list[str]:
    """A launch over a subset of the work list (`which` experts' tiles, rows `mine`) into `part`
    pre-filled with NaN, against the whole launch's C: its rows bitwise C's, nothing else
    written."""
    import torch

    fails = []
    if not torch.equal(part[:rows][mine], c[:rows][mine]):
        fails.append(f"{which} experts' tiles alone: their rows differ")
    if not bool(torch.isnan(part[:rows][~mine]).all()) or not bool(torch.isnan(part[rows:]).all()):
        fails.append(f"{which} experts' tiles alone wrote rows of other experts or past the end")
    return fails


def _grouped_check(name: str, sets: list, counts, n: int) -> tuple:
    """(error, failures) of the grouped kernel on the first input set: every row of C (pre-filled
    with NaN, BM rows past the last one's too) written and near the float32 product of its
    expert's dequantized operands (the worst expert's relative error, <= 1e-2), no row past
    the end written; then with the work list cut to the even experts' tiles, and to the odd
    ones': their rows bitwise as before, every other row, and those past the end, still NaN."""
    import torch

    from mok_kernels.fp8 import dequantize_blocks

    a, sa, bt, sb = sets[0][:4]
    rows = a.shape[0]
    counts_d = counts.to(a.device)
    owner = torch.repeat_interleave(torch.arange(len(counts), device=a.device), counts_d)
    c = torch.full((rows + BM, n), float("nan"), device=a.device, dtype=torch.bfloat16)
    fp8_grouped_gemm(a, sa, bt, sb, counts, c=c)[0]()
    torch.cuda.synchronize()
    fails = coverage_failures(c, rows)
    err, end = 0.0, 0
    for e, m in enumerate(counts.tolist()):
        if m:
            want = (dequantize_blocks(a[end:end + m], sa[end:end + m], 1, BK)
                    @ dequantize_blocks(bt[e], sb[e], BK, BK).t())
            got = c[end:end + m].float()
            e_err = float((got - want).norm() / want.norm())
            if not e_err <= 1e-2:                  # NaN too
                fails.append(f"expert {e} ({m} rows): rel. error {e_err:.2e}")
            err = max(err, e_err) if e_err == e_err else float("nan")
        end += m
    tiles = grouped_tiles(counts_d)
    for parity in (0, 1):
        keep = tiles[0] % 2 == parity
        part = torch.full_like(c, float("nan"))
        fp8_grouped_gemm(a, sa, bt, sb, counts, c=part,
                         tiles=tuple(t[keep].contiguous() for t in tiles))[0]()
        torch.cuda.synchronize()
        fails += subset_failures(part, c, owner % 2 == parity, rows,
                                 "odd" if parity else "even")
    for f in fails:
        print(f"{name}: CHECK FAILED: {f}", flush=True)
    return err, fails


def measure_grouped(cases: tuple) -> tuple:
    """Check, then time, the grouped kernel on each of GROUPED_CASES `cases` beside torch's
    BF16 grouped GEMM on the same ragged rows: (figures, number of cases that failed a check)."""
    import torch

    from benchmarks.fp8_ceiling import time_ms
    from mok_kernels.baselines import grouped_mm
    from mok_kernels.fp8 import quantize_rows, quantize_weight

    has_grouped_mm = hasattr(torch, "_grouped_mm")
    bf16_label = "torch bf16 grouped" if has_grouped_mm else "torch bf16 per-expert loop"
    out, failed = {}, 0
    for name in cases:
        n, k, experts, routing = GROUPED_CASES[name]
        counts = grouped_counts(experts, routing)
        rows = int(counts.sum())
        offs = torch.cumsum(counts, 0).to(torch.int32).cuda()   # cumulative ends (bench.py)
        sets = []
        for s in range(GROUPED_SETS):
            g = torch.Generator(device="cuda").manual_seed(s)
            x = torch.randn(rows, k, device="cuda", generator=g)
            w = torch.randn(experts, k, n, device="cuda", generator=g) / k ** 0.5
            a, sa = quantize_rows(x)
            wq, sw = quantize_weight(w)                 # (E, K, N), (E, K/128, N/128)
            sets.append((a, sa.contiguous(), wq.transpose(1, 2).contiguous(),
                         sw.transpose(1, 2).contiguous(), x.bfloat16(), w.bfloat16(),
                         w.bfloat16().transpose(1, 2).contiguous()))
            del x, w, wq, sw
            torch.cuda.empty_cache()
        tiles = len(grouped_tiles(counts)[0])
        row = {"N": n, "K": k, "experts": experts, "rows": rows, "tiles": tiles,
               "counts": counts.tolist()}
        head = (f"{name} (N {n}, K {k}, {experts} experts, {rows} rows, {int(counts.min())}-"
                f"{int(counts.max())} an expert, {tiles} tiles)")
        err, fails = _grouped_check(name, sets, counts, n)
        row["rel_err"] = err
        if fails:
            failed += 1
            out[name] = row | {"failed": fails}
            print(f"{head}: FAILED, not timed", flush=True)
            continue
        flops = 2.0 * rows * n * k
        fns = {"gluon fp8 grouped, ws2d1": [fp8_grouped_gemm(*st[:4], counts)[0] for st in sets],
               bf16_label: [lambda st=st, o=offs: grouped_mm(st[4], st[5], o) for st in sets]}
        if has_grouped_mm:       # the same with B^T's layout (E, N, K) seen as (E, K, N)
            fns["torch bf16 grouped, B K-major"] = [
                lambda st=st, o=offs: torch._grouped_mm(st[4], st[6].transpose(1, 2), offs=o)
                for st in sets]
        for label, f in fns.items():
            try:
                row[label] = flops / time_ms(f) / 1e9
            except RuntimeError as exc:          # a layout this torch refuses
                row[label] = f"refused: {str(exc).splitlines()[0][:120]}"
        bf = row[bf16_label]
        ratios = {lb: v / bf for lb, v in row.items()
                  if isinstance(v, float) and lb != "rel_err" and isinstance(bf, float)}
        print(f"{head}: rows checked, rel. error {err:.1e}; " + ", ".join(
            f"{lb} {row[lb]:.0f} TF/s ({r:.2f}x {bf16_label})" for lb, r in ratios.items()),
            flush=True)
        out[name] = row
        del sets, fns
        torch.cuda.empty_cache()
    return out, failed


def ffn_case_list(text: str) -> tuple:
    """The comma list of --ffn ("all": every one of FFN_CASES); refuse others."""
    names = tuple(FFN_CASES) if text == "all" else tuple(dict.fromkeys(text.split(",")))
    for name in names:
        if name not in FFN_CASES:
            raise MokInputError(f"--ffn {text!r}: {name!r} is not one of "
                                f"{', '.join(FFN_CASES)} (or all)")
    return names


# --ffn's check (_ffn_check): y against the float32 reference of the same FP8 pipeline, per
# expert. The FP8 roundings of x, W_gu, h and W_d are in both sides alike, so what is left is
# y's BF16 rounding (~1e-3 RMS relative), float32 summation order, the FP8 MMA's own
# accumulation within a K block, and the few h elements whose e4m3 rounding the two sides
# decide differently (FFN_Q_DIFF_TOL): 1e-2 as --grouped asks of one GEMM.
FFN_Y_TOL = 1e-2
# h: the kernel's (the check's build stores it) against the reference's, relative error norm:
# float32 sums in another order, the exponential's approximation and the FP8 MMA's own
# accumulation within a K block (not known: --grouped's 1.7e-3 on BF16 outputs, whose rounding
# alone is ~1.6e-3, leaves it at most ~6e-4); a wrong scale or a swapped gate / up block gives O(1)
FFN_H_TOL = 2e-3
# q elements unlike torch's quantization of the reference h: those whose h lies within the two
# h's difference of an e4m3 rounding boundary; a per-element relative difference d flips ~13 d of
# them (measured on a CPU mock), so 0.1-1% at d = 1e-4 ... 7e-4. 2% is asked (a gross-error
# gate: a wrong scale or rounding mode flips most), the fraction printed. The strict check of the
# epilogue is bitwise, on the kernel's own h.
FFN_Q_DIFF_TOL = 2e-2


def _ffn_check(name: str, st: tuple, counts) -> tuple:
    """(errors, failures) of the FFN's two launches on the input set st: outputs pre-filled
    with NaN, BM rows past the last too. Runs the check's build (h stored as well), then the
    timed build: both must give the same q, scales and y bitwise; torch's quantize_rows of the
    kernel's own h must give its q and scales bitwise (the fused epilogue is fp8.py's rule);
    every row < R written and none past it; per expert, h within FFN_H_TOL of the float32
    reference (dequantized x and W_gu; g, u in float32; silu(g) u), q unlike torch's
    quantization of that h in under FFN_Q_DIFF_TOL of its elements, and y within FFN_Y_TOL of
    the reference's q dequantized times W_d dequantized."""
    import torch
    import torch.nn.functional as F

    from mok_kernels.fp8 import dequantize_blocks, quantize_rows

    a, sa, wgu, sgu, wd, sd = st[:6]
    rows, dev = a.shape[0], a.device
    i, hdim = wgu.shape[1] // 2, wd.shape[1]
    nan = float("nan")

    def filled(cols, dtype):
        return torch.full((rows + BM, cols), nan, device=dev, dtype=dtype)

    fails = []
    runs = []
    for store_h in (True, False):
        out = dict(q=filled(i, torch.float8_e4m3fn), hs=filled(i // BN, torch.float32),
                   y=filled(hdim, torch.bfloat16),
                   h=filled(i, torch.float32) if store_h else None)
        fp8_grouped_ffn(a, sa, wgu, sgu, wd, sd, counts, **out)[0]()
        torch.cuda.synchronize()
        runs.append(out)
        build = "check build" if store_h else "timed build"
        for key in ("q", "hs", "y", "h"):
            t = out[key]
            if t is None:
                continue
            bad = torch.isnan(t.float())
            if int(bad[rows:].logical_not().any(dim=1).sum()):
                fails.append(f"{build}: {key} rows past the last expert's written")
            if int(bad[:rows].any(dim=1).sum()):
                fails.append(f"{build}: {int(bad[:rows].any(dim=1).sum())} {key} rows not "
                             "written (or NaN)")
    chk, tim = runs
    q, hs, y, h = tim["q"][:rows], tim["hs"][:rows], tim["y"][:rows], chk["h"][:rows]
    for key in ("q", "hs", "y"):
        if not torch.equal(chk[key][:rows].view(torch.uint8) if key == "q" else chk[key][:rows],
                           tim[key][:rows].view(torch.uint8) if key == "q" else tim[key][:rows]):
            fails.append(f"the check build's {key} differs from the timed build's")
    q_h, hs_h = quantize_rows(h)
    rule_q = int((q_h.view(torch.uint8) != q.view(torch.uint8)).sum())
    rule_s = int((hs_h != hs).sum())
    if rule_q or rule_s:
        fails.append(f"q / scales unlike torch's quantize_rows of the kernel's own h: {rule_q} "
                     f"q elements, {rule_s} scales differ")
    errs = {"h": 0.0, "y": 0.0, "q_diff": 0, "hs_diff": 0, "rule_q_diff": rule_q,
            "rule_hs_diff": rule_s}
    tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        end = 0
        for ex, m in enumerate(counts.tolist()):
            if not m:
                continue
            r = slice(end, end + m)
            end += m
            x = dequantize_blocks(a[r], sa[r], 1, BK)
            gu = x @ dequantize_blocks(wgu[ex], sgu[ex], BN, BK).t()           # (m, 2I)
            gu = gu.view(m, i // BN, 2, BN)
            h_ref = (F.silu(gu[:, :, 0]) * gu[:, :, 1]).reshape(m, i)
            q_ref, hs_ref = quantize_rows(h_ref)
            y_ref = (dequantize_blocks(q_ref, hs_ref, 1, BK)
                     @ dequantize_blocks(wd[ex], sd[ex], BN, BK).t())
            h_err = float((h[r] - h_ref).norm() / h_ref.norm())
            y_err = float((y[r].float() - y_ref).norm() / y_ref.norm())
            q_diff = int((q_ref.view(torch.uint8) != q[r].view(torch.uint8)).sum())
            errs["hs_diff"] += int((hs_ref != hs[r]).sum())
            errs["q_diff"] += q_diff
            if not h_err <= FFN_H_TOL:
                fails.append(f"expert {ex} ({m} rows): h rel. error {h_err:.2e}")
            if not y_err <= FFN_Y_TOL:
                fails.append(f"expert {ex} ({m} rows): y rel. error {y_err:.2e}")
            if not q_diff <= FFN_Q_DIFF_TOL * m * i:
                fails.append(f"expert {ex} ({m} rows): {q_diff} q elements unlike torch's "
                             "quantization of the reference h")
            errs["h"] = max(errs["h"], h_err) if h_err == h_err else nan
            errs["y"] = max(errs["y"], y_err) if y_err == y_err else nan
    finally:
        torch.backends.cuda.matmul.allow_tf32 = tf32
    errs["q_diff_frac"] = errs["q_diff"] / max(rows * i, 1)
    for f in fails:
        print(f"{name}: CHECK FAILED: {f}", flush=True)
    return errs, fails


def _ffn_inputs(h: int, i: int, experts: int, rows: int, seed: int, device: str = "cuda") -> tuple:
    """One --ffn input set: (A e4m3 (R, H), its scales, W_gu^T packed (pack_gate_up), its scales,
    W_d^T (E, H, I) e4m3, its scales (E, H/128, I/128), then BF16 x (R, H), W_gu (E, H, 2I)
    [gate | up] and W_d (E, I, H) for torch): randn tokens, weights of std 1/sqrt(fan_in)."""
    import torch

    from mok_kernels.fp8 import quantize_rows, quantize_weight

    g = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(rows, h, device=device, generator=g)
    a, sa = quantize_rows(x)
    x16 = x.bfloat16()
    del x
    wts = []
    for fan_in, shape in ((h, (experts, h, i)), (h, (experts, h, i)), (i, (experts, i, h))):
        w = torch.randn(*shape, device=device, generator=g) / fan_in ** 0.5
        wq, sw = quantize_weight(w)                    # (E, K, N), (E, K/128, N/128)
        wts.append((wq.transpose(1, 2).contiguous(), sw.transpose(1, 2).contiguous(),
                    w.bfloat16()))
        del w, wq, sw
    (gq, gs, g16), (uq, us, u16), (dq, ds, d16) = wts
    wgu, sgu = pack_gate_up(gq, gs, uq, us)
    del gq, uq
    if device == "cuda":
        torch.cuda.empty_cache()
    return (a, sa.contiguous(), wgu, sgu, dq, ds, x16, torch.cat((g16, u16), dim=2).contiguous(),
            d16)


def _torch_ffn(x, wgu, wd, offs):
    """torch's BF16 routed FFN on rows grouped by expert (offs: cumulative ends): one grouped
    GEMM for gate|up (W_gu (E, H, 2I), [gate | up]), silu(g) x u, one grouped GEMM for down."""
    import torch.nn.functional as F

    from mok_kernels.baselines import grouped_mm

    i = wd.shape[1]
    gu = grouped_mm(x, wgu, offs)
    return grouped_mm(F.silu(gu[:, :i]) * gu[:, i:], wd, offs)


def measure_ffn(cases: tuple) -> tuple:
    """Check, then time, the FP8 routed FFN (gate/up with SwiGLU and h's quantization fused,
    then the grouped down GEMM) on each of FFN_CASES `cases` beside torch's BF16 FFN on the
    same ragged rows (grouped GEMM gate|up, silu x mul, grouped GEMM down): (figures, number of
    cases that failed a check)."""
    import torch

    from benchmarks.fp8_ceiling import time_ms

    bf16_label = ("torch bf16 FFN (grouped)" if hasattr(torch, "_grouped_mm")
                  else "torch bf16 FFN (per-expert loop)")
    out, failed = {}, 0
    for name in cases:
        hdim, i, experts, routing = FFN_CASES[name]
        counts = grouped_counts(experts, routing)
        rows = int(counts.sum())
        offs = torch.cumsum(counts, 0).to(torch.int32).cuda()   # cumulative ends (bench.py)
        sets = [_ffn_inputs(hdim, i, experts, rows, s) for s in range(GROUPED_SETS)]
        tiles = len(grouped_tiles(counts)[0])
        row = {"H": hdim, "I": i, "experts": experts, "rows": rows, "tiles": tiles,
               "counts": counts.tolist()}
        head = (f"FFN {name} (H {hdim}, I {i}, {experts} experts, {rows} rows, "
                f"{int(counts.min())}-{int(counts.max())} an expert, {tiles} tiles)")
        errs, fails = _ffn_check(name, sets[0], counts)
        row["check"] = errs
        if fails:
            failed += 1
            out[name] = row | {"failed": fails}
            print(f"{head}: FAILED, not timed", flush=True)
            continue

        ffns = [fp8_grouped_ffn(*st[:6], counts) for st in sets]
        tiles_d = grouped_tiles(counts.cuda())
        fns = {"gluon fp8 FFN (2 launches)": [f[0] for f in ffns],
               "gluon fp8 gate/up + SwiGLU + quant": [
                   fp8_ffn_gate_up(*st[:4], counts, tiles=tiles_d)[0] for st in sets],
               "gluon fp8 down": [
                   fp8_grouped_gemm(f[1][0], f[1][1], st[4], st[5], counts, tiles=tiles_d)[0]
                   for f, st in zip(ffns, sets)],
               bf16_label: [lambda st=st, o=offs: _torch_ffn(*st[6:], o) for st in sets]}
        flops = {"gluon fp8 gate/up + SwiGLU + quant": 4.0 * rows * hdim * i,
                 "gluon fp8 down": 2.0 * rows * hdim * i}
        for label, f in fns.items():
            try:
                row[label] = flops.get(label, 6.0 * rows * hdim * i) / time_ms(f) / 1e9
            except RuntimeError as exc:          # a layout this torch refuses
                row[label] = f"refused: {str(exc).splitlines()[0][:120]}"
        bf = row[bf16_label]
        fp = row["gluon fp8 FFN (2 launches)"]
        ratio = (f" ({fp / bf:.2f}x {bf16_label})" if isinstance(bf, float)
                 and isinstance(fp, float) else "")
        row["ratio"] = fp / bf if ratio else None
        print(f"{head}: checked (y rel. error {errs['y']:.1e}, h {errs['h']:.1e}, q bitwise "
              f"torch's quantization of the kernel's h, {100 * errs['q_diff_frac']:.3f}% of q "
              f"unlike that of the reference h); " + ", ".join(
                  f"{lb} {v:.0f} TF/s" if isinstance(v, float) else f"{lb} {v}"
                  for lb, v in row.items() if lb in fns) + ratio, flush=True)
        out[name] = row
        del sets, fns, ffns
        torch.cuda.empty_cache()
    return out, failed


def main(argv: list[str]) -> int:
    p = doc_parser("benchmarks/gluon_fp8_gemm.py", __doc__)
    p.add_argument("--rows", default=None,
                   help="rows M of each GEMM (multiples of 128; default 4096,16384)")
    p.add_argument("--out", default=None, help="write the figures as JSON here")
    p.add_argument("--variants", default=None,
                   help=f"comma list of the K loops to check and time, of {', '.join(VARIANTS)} "
                   "(default: all)")
    p.add_argument("--grouped", nargs="?", const="all", default=None,
                   help="check and time the grouped GEMM (ws2d1) over ragged experts instead: "
                   f"a comma list of {', '.join(GROUPED_CASES)} (default: all)")
    p.add_argument("--ffn", nargs="?", const="all", default=None,
                   help="check and time the routed expert FFN in FP8 (gate/up with SwiGLU and "
                   "h's quantization fused, then the grouped down GEMM) instead: a comma list "
                   f"of {', '.join(FFN_CASES)} (default: all)")
    p.add_argument("--compile-only", action="store_true",
                   help="compile for sm_90 without a GPU and print the kernels' resources "
                   "(the --variants and the grouped kernel)")
    return run_tool(p, run, argv)


def run(a) -> int:
    cases = grouped_case_list(a.grouped) if a.grouped is not None else ()
    ffn_cases = ffn_case_list(a.ffn) if a.ffn is not None else ()
    if cases and ffn_cases:
        raise MokInputError("--grouped and --ffn: one at a time")
    if a.compile_only:
        for flag, given in (("--out", a.out), ("--rows", a.rows), ("--grouped", a.grouped),
                            ("--ffn", a.ffn)):
            if given is not None:
                raise MokInputError(f"{flag} with --compile-only: it compiles the --variants and "
                                    f"the grouped and FFN kernels, measures nothing; drop {flag}")
    if (cases or ffn_cases) and not a.compile_only:
        for flag, given in (("--rows", a.rows), ("--variants", a.variants)):
            if given is not None:
                raise MokInputError(f"{flag} with {'--grouped' if cases else '--ffn'}: its cases "
                                    f"fix the rows and run ws2d1 only; drop {flag}")
    rows = number_list(a.rows if a.rows is not None else "4096,16384", "--rows")
    if a.rows is not None:
        distinct("--rows", a.rows)
    variants = variant_list(a.variants if a.variants is not None else ",".join(VARIANTS))
    for m in rows:
        check_shape(m, BN, STAGES * BK)
    if a.out is not None:
        from mok_model.fileio import check_output_file
        check_output_file(a.out, "--out")
    if a.compile_only:
        import re
        import tempfile

        from mok_kernels.aot import stats
        for variant in (*variants, "grouped ws2d1", "ffn gate/up"):
            kernel = (compile_grouped_sm90() if variant == "grouped ws2d1"
                      else compile_ffn_sm90() if variant == "ffn gate/up"
                      else compile_sm90(variant=variant))
            st = stats(kernel, tempfile.mkdtemp(), "fp8_block")
            # warp-specialized forms: the launch's registers, then each partition's setmaxnreg
            maxnreg = r"setmaxnreg\.\w+\.sync\.aligned\.u32\s+(\d+)"
            nreg = sorted({int(r) for r in re.findall(maxnreg, kernel.asm["ptx"])})
            print(f"{variant}: {st['regs']} registers (setmaxnreg {nreg}), spills "
                  f"{st['spill_st']} / {st['spill_ld']} bytes, {st['shared']} bytes of shared "
                  f"memory, MMA waits {st['ttgir_dot_wait_pendings']}, ptxas notes "
                  f"{[c for c, _ in st['ptxas_notes']]}")
            if variant == "ffn gate/up":      # h's quantization: fp8.py's rounding, in the PTX
                ptx = kernel.asm["ptx"]
                casts = len(re.findall(r"cvt.rn.satfinite.e4m3x2.f32", ptx))
                print(f"{variant}: e4m3 casts {casts}"
                      f" (cvt.rn.satfinite), correctly rounded divisions "
                      f"{len(re.findall(r'div.rn.f32', ptx))} (div.rn.f32)")
        return 0
    from mok_kernels import require_cuda
    require_cuda()
    failed = 0
    if cases:
        figures, failed = measure_grouped(cases)
    elif ffn_cases:
        figures, failed = measure_ffn(ffn_cases)
    else:
        figures = measure(rows, variants)
    if a.out is not None:
        Path(a.out).write_text(json.dumps(figures, indent=1) + "\n")
    if failed:
        print(f"{'FFN' if ffn_cases else 'grouped GEMM'}: {failed} case(s) FAILED their check",
              file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
