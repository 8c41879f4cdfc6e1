"""Building blocks of the GEMM cores in Gluon (Triton's explicit sm_90 frontend) that the Gluon
MoK kernel (mok.py) and the GEMM benchmarks (benchmarks/gluon_fp8_gemm.py, gluon_bf16_grouped.py)
share: the K-block ring (TMA into STAGES shared buffers, a ready and an empty mbarrier each), the
grouped tile order and the host side (TMA descriptors, pack_gate_up / pack_rows, the sm_90
compile on a machine without a GPU); for FP8 (e4m3) the block scales, the gate/up K loop with
SwiGLU and h's FP8 quantization and the K loop with two MMAs in flight (_dual_tile: the pass's
down items, the benchmarks' ws2d / ws2d1 / grouped); for BF16 the K loops _bf16_tile and
_bf16_gate_up_tile (one async wgmma in flight a math warpgroup, no scale step between MMAs; the
accumulator layout _acc_layout(..., 16)).

C (M, N) = sum_k A_k (M, 128) B_k (128, N) x sa[m, k] x sb[k, n // 128]: A e4m3 with one scale
per row per 128 columns, B given as B^T (N, K) (wgmma reads FP8 B K-major) with one scale per
128 x 128 block (mok_kernels/fp8.py quantize_rows / quantize_weight). Gluon is imported where
Triton has it; elsewhere ``gluon`` is None and only the host helpers that need no Triton work.
"""

from __future__ import annotations

BM, BN, BK = 128, 128, 128   # tile rows, tile columns, K block (one scale block)
WS_MAXNREG = 168   # 8 math warps + 1 load warp (3 warpgroups) x 32 x 168 <= 64K registers
# the FFN gate/up kernel: 4 x (16 KB A + 32 KB [gate | up] B) ring + 2 x 8 KB q = 208 KB <= 227 KB
FFN_STAGES = 4
GROUP_ROWS = 8     # row tiles that a wave of programs shares (_tile's order)

try:  # Gluon comes with Triton; where it is missing (a CPU box) the tools say so when run
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.nvidia.hopper import (mbarrier, tma, warpgroup_mma,
                                                                   warpgroup_mma_wait)
except ImportError:
    gluon = None

if gluon is not None:
    GROUP_M = gl.constexpr(GROUP_ROWS)

    @gluon.constexpr_function
    def _acc_layout(num_warps, tn, ik=32):
        """The wgmma accumulator layout: warps stacked along M, one 16 x tn x ik instruction
        (ik 32 for FP8 operands, 16 for BF16)."""
        return gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                         instr_shape=[16, tn, ik])

    @gluon.jit
    def _row_scales(sa_ptr, off_m, M, nk, TM: gl.constexpr, layout: gl.constexpr):
        """(pointers to each tile row's K-block scales, which rows exist)."""
        rows = off_m + gl.arange(0, TM, layout=gl.SliceLayout(1, layout))
        return sa_ptr + rows.to(gl.int64) * nk, rows < M

    @gluon.jit
    def _scale(sa_row, rmask, sb_ptr, pid_n, kb, nk):
        """Block kb's scale of each row: sa[row, kb] x sb[kb, column block pid_n], sb given
        transposed (N / 128, nk) (kb past the last block reads the last one's, so a loop may
        load one block ahead)."""
        kb = gl.minimum(kb, nk - 1)
        return (gl.load(sa_row + kb, mask=rmask, other=0.0)
                * gl.load(sb_ptr + pid_n * nk + kb))

    @gluon.jit
    def _tile(pid, M, N, TM: gl.constexpr, TN: gl.constexpr, GROUP: gl.constexpr):
        """(pid_m, pid_n) of tile pid in a 1-D order: GROUP row tiles at a time walk the
        column tiles, so the A rows that a wave of programs reads stay in L2."""
        n_m = gl.cdiv(M, TM)
        per_group = GROUP * gl.cdiv(N, TN)
        first_m = (pid // per_group) * GROUP
        rows = gl.minimum(n_m - first_m, GROUP)
        return first_m + (pid % per_group) % rows, (pid % per_group) // rows

    @gluon.jit
    def _load_blocks(a_desc, b_desc, a_s, b_s, ready, empty, a_row, b_row, nk, it,
                     STAGES: gl.constexpr):
        """The loader's K loop for one item: nk blocks of A rows from a_row and B rows from b_row
        into the ring from position it, each into a buffer both math warpgroups released;
        returns the next position."""
        TK: gl.constexpr = a_desc.block_type.shape[1]
        for k in range(nk):
            s = it % STAGES
            mbarrier.wait(empty.index(s), ((it // STAGES) & 1) ^ 1)
            mbarrier.expect(ready.index(s), a_desc.block_type.nbytes + b_desc.block_type.nbytes)
            tma.async_copy_global_to_shared(a_desc, [a_row, k * TK], ready.index(s), a_s.index(s))
            tma.async_copy_global_to_shared(b_desc, [b_row, k * TK], ready.index(s), b_s.index(s))
            it += 1
        return it

    @gluon.jit
    def _ring(a_desc, b_desc, STAGES: gl.constexpr, RELEASERS: gl.constexpr):
        """The K-block ring: STAGES A and B tiles in shared memory, a `ready` mbarrier each (the
        TMA's bytes landed) and an `empty` one (its RELEASERS math partitions are done with it)."""
        a_s = gl.allocate_shared_memory(a_desc.dtype, [STAGES] + a_desc.block_type.shape,
                                        a_desc.layout)
        b_s = gl.allocate_shared_memory(b_desc.dtype, [STAGES] + b_desc.block_type.shape,
                                        b_desc.layout)
        ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        for i in gl.static_range(STAGES):
            mbarrier.init(ready.index(i), count=1)
            mbarrier.init(empty.index(i), count=RELEASERS)
        return a_s, b_s, ready, empty

    @gluon.jit
    def _release_blocks(ready, empty, it, nk, STAGES: gl.constexpr):
        """Take and free the nk ring buffers from position it on without using them: a math
        warpgroup whose half of a tile holds no row keeps its place in the loader's sequence."""
        for k in range(nk):
            s = (it + k) % STAGES
            mbarrier.wait(ready.index(s), ((it + k) // STAGES) & 1)
            mbarrier.arrive(empty.index(s), count=1)

    @gluon.jit
    def _issue_block(a_desc, b_desc, a_s, b_s, ready, empty, j, M, N, nk, STAGES: gl.constexpr):
        """Bring this program's j-th K block (of all its tiles in turn) into ring buffer
        j % STAGES once both math warpgroups have released it; nothing past its last tile."""
        TM: gl.constexpr = a_desc.block_type.shape[0]
        TN: gl.constexpr = b_desc.block_type.shape[0]
        TK: gl.constexpr = a_desc.block_type.shape[1]
        tile = gl.program_id(0) + (j // nk) * gl.num_programs(0)
        if tile < gl.cdiv(M, TM) * gl.cdiv(N, TN):
            pid_m, pid_n = _tile(tile, M, N, TM, TN, GROUP_M)
            s = j % STAGES
            mbarrier.wait(empty.index(s), ((j // STAGES) & 1) ^ 1)   # a fresh barrier passes
            mbarrier.expect(ready.index(s), a_desc.block_type.nbytes + b_desc.block_type.nbytes)
            tma.async_copy_global_to_shared(a_desc, [pid_m * TM, (j % nk) * TK], ready.index(s),
                                            a_s.index(s))
            tma.async_copy_global_to_shared(b_desc, [pid_n * TN, (j % nk) * TK], ready.index(s),
                                            b_s.index(s))

    @gluon.jit
    def _dual_step(a_desc, b_desc, a_s, b_s, ready, empty, sa_row, rmask, sb_ptr, sb_row, M, N,
                   nk, p, k, t_new, t_old, acc, sc_old, ROW0: gl.constexpr,
                   PRODUCER: gl.constexpr, STAGES: gl.constexpr):
        """_dual_tile's step at ring position p (block k of the tile): the PRODUCER first
        refills the buffer that block p - 2 left (released by both warpgroups a step ago;
        _issue_block of a_desc, b_desc, M, N, which only it reads); block k's MMA issued into
        t_new (rows ROW0 ... ROW0 + TM of the A buffer, the first TN rows of the B buffer),
        then block k-1's (t_old) waited for, its buffer released and its result added scaled.
        Returns (t_new, t_old, acc, block k's scales)."""
        TM: gl.constexpr = t_new.shape[0]
        TN: gl.constexpr = t_new.shape[1]
        if PRODUCER:
            _issue_block(a_desc, b_desc, a_s, b_s, ready, empty, p + STAGES - 2, M, N, nk, STAGES)
        s = p % STAGES
        mbarrier.wait(ready.index(s), (p // STAGES) & 1)
        t_new = warpgroup_mma(a_s.index(s).slice(ROW0, TM),
                              b_s.index(s).slice(0, TN).permute((1, 0)), t_new, use_acc=False,
                              is_async=True)
        sc_new = _scale(sa_row, rmask, sb_ptr, sb_row, k, nk)
        t_old = warpgroup_mma_wait(num_outstanding=1, deps=(t_old, ))
        mbarrier.arrive(empty.index((p - 1) % STAGES), count=1)
        acc = gl.fma(t_old, sc_old[:, None], acc)
        # an empty wait that names t_old and acc: the scale step stays before the next MMA
        # into t_old's registers (else it sinks below it, t_old is copied while that MMA is in
        # flight, and ptxas serializes every MMA: note C7514)
        t_old, acc = warpgroup_mma_wait(num_outstanding=1, deps=(t_old, acc))
        return t_new, t_old, acc, sc_new

    @gluon.jit
    def _dual_tile(a_desc, b_desc, a_s, b_s, ready, empty, sa_row, rmask, sb_ptr, sb_row, M, N,
                   nk, it, ROW0: gl.constexpr, TM: gl.constexpr, TN: gl.constexpr,
                   mma: gl.constexpr, PRODUCER: gl.constexpr, STAGES: gl.constexpr):
        """The K loop of one tile with two MMAs in flight (_dual_step): rows ROW0 ... ROW0 + TM
        of the ring's A blocks against the first TN rows of its B blocks (the whole B box in
        benchmarks/gluon_fp8_gemm.py's ws2d / ws2d1 / grouped; in the MoK pass's down items the
        W_d^T box in the first half of a gate/up-sized buffer), the ring's blocks from position
        `it` on, block kb's scales sa_row[kb] x sb[sb_row, kb] (_scale); every buffer it read
        released: the tile's scaled sum. PRODUCER (ws2d's first warpgroup): it also loads the
        ring, STAGES - 2 blocks ahead, from a_desc / b_desc over M x N tiles; without it those
        four are never read (None will do)."""
        acc = gl.zeros((TM, TN), dtype=gl.float32, layout=mma)
        t0 = gl.zeros((TM, TN), dtype=gl.float32, layout=mma)
        t1 = gl.zeros((TM, TN), dtype=gl.float32, layout=mma)
        if PRODUCER:           # block 0: no earlier MMA of the tile to wait for
            _issue_block(a_desc, b_desc, a_s, b_s, ready, empty, it + STAGES - 2, M, N, nk,
                         STAGES)
        s = it % STAGES
        mbarrier.wait(ready.index(s), (it // STAGES) & 1)
        t0 = warpgroup_mma(a_s.index(s).slice(ROW0, TM), b_s.index(s).slice(0, TN).permute((1, 0)),
                           t0, use_acc=False, is_async=True)
        sc0 = _scale(sa_row, rmask, sb_ptr, sb_row, 0, nk)
        for k in range(1, nk - 1, 2):
            t1, t0, acc, sc1 = _dual_step(a_desc, b_desc, a_s, b_s, ready, empty, sa_row,
                                          rmask, sb_ptr, sb_row, M, N, nk, it + k, k, t1, t0,
                                          acc, sc0, ROW0, PRODUCER, STAGES)
            t0, t1, acc, sc0 = _dual_step(a_desc, b_desc, a_s, b_s, ready, empty, sa_row,
                                          rmask, sb_ptr, sb_row, M, N, nk, it + k + 1, k + 1,
                                          t0, t1, acc, sc1, ROW0, PRODUCER, STAGES)
        if nk % 2 == 0:        # one block left: its MMA into t1, the last to wait for
            t_end, _, acc, sc_fin = _dual_step(a_desc, b_desc, a_s, b_s, ready, empty,
                                               sa_row, rmask, sb_ptr, sb_row, M, N, nk,
                                               it + nk - 1, nk - 1, t1, t0, acc, sc0, ROW0,
                                               PRODUCER, STAGES)
            t_fin = warpgroup_mma_wait(num_outstanding=0, deps=(t_end, ))
        else:                  # the last block's MMA is in t0
            t_fin = warpgroup_mma_wait(num_outstanding=0, deps=(t0, ))
            sc_fin = sc0
        mbarrier.arrive(empty.index((it + nk - 1) % STAGES), count=1)
        return gl.fma(t_fin, sc_fin[:, None], acc)

    @gluon.jit
    def _bf16_tile(a_s, b_s, ready, empty, it, nk, ROW0: gl.constexpr, TM: gl.constexpr,
                   TN: gl.constexpr, mma: gl.constexpr, STAGES: gl.constexpr):
        """A BF16 tile's K loop: rows ROW0 ... ROW0 + TM of the ring's A blocks against the first
        TN rows of its B blocks, from ring position `it`, nk blocks; block k's MMA issued into
        the sum, then block k-1's waited for and its buffer released (no scale step between
        MMAs, so one stays in flight). Returns the float32 sum."""
        acc = gl.zeros((TM, TN), dtype=gl.float32, layout=mma)
        for k in range(nk):
            p = it + k
            s = p % STAGES
            mbarrier.wait(ready.index(s), (p // STAGES) & 1)
            acc = warpgroup_mma(a_s.index(s).slice(ROW0, TM),
                                b_s.index(s).slice(0, TN).permute((1, 0)), acc, is_async=True)
            acc = warpgroup_mma_wait(num_outstanding=1, deps=(acc, ))
            if k > 0:
                mbarrier.arrive(empty.index((p - 1) % STAGES), count=1)
        acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc, ))
        mbarrier.arrive(empty.index((it + nk - 1) % STAGES), count=1)
        return acc

    @gluon.jit
    def _bf16_gate_up_tile(a_s, b_s, ready, empty, it, nk, ROW0: gl.constexpr,
                           TM: gl.constexpr, TN: gl.constexpr, mma: gl.constexpr,
                           STAGES: gl.constexpr):
        """A BF16 gate/up item's K loop: per K block the gate half's MMA (the B box's first TN
        rows) into acc_g and the up half's (the next TN) into acc_u, both in flight while the
        previous block's two are waited for and its buffer released. Returns (acc_g, acc_u)."""
        acc_g = gl.zeros((TM, TN), dtype=gl.float32, layout=mma)
        acc_u = gl.zeros((TM, TN), dtype=gl.float32, layout=mma)
        for k in range(nk):
            p = it + k
            s = p % STAGES
            mbarrier.wait(ready.index(s), (p // STAGES) & 1)
            a = a_s.index(s).slice(ROW0, TM)
            acc_g = warpgroup_mma(a, b_s.index(s).slice(0, TN).permute((1, 0)), acc_g,
                                  is_async=True)
            acc_u = warpgroup_mma(a, b_s.index(s).slice(TN, TN).permute((1, 0)), acc_u,
                                  is_async=True)
            acc_g, acc_u = warpgroup_mma_wait(num_outstanding=2, deps=(acc_g, acc_u))
            if k > 0:
                mbarrier.arrive(empty.index((p - 1) % STAGES), count=1)
        acc_g, acc_u = warpgroup_mma_wait(num_outstanding=0, deps=(acc_g, acc_u))
        mbarrier.arrive(empty.index((it + nk - 1) % STAGES), count=1)
        return acc_g, acc_u

    @gluon.constexpr_function
    def _out_layouts(num_warps, tm, tn):
        """(shared layout of a tm x tn bf16 tile, registers layout that reads it back as 8
        consecutive columns a thread, a row of tn columns a half-warp: 16-byte coalesced stores)."""
        return (gl.NVMMASharedLayout.get_default_for([tm, tn], gl.bfloat16),
                gl.BlockedLayout([1, 8], [32 * 8 // tn, tn // 8], [num_warps, 1], [1, 0]))

    @gluon.jit
    def _ffn_gate_up_tile(a_s, b_s, ready, empty, sa_row, rmask, sb_ptr, sb_row, nk, it,
                          ROW0: gl.constexpr, TM: gl.constexpr, TN: gl.constexpr,
                          mma: gl.constexpr, STAGES: gl.constexpr):
        """One item's K loop for rows ROW0 ... ROW0 + TM of the ring's A blocks: per K block
        the gate half's MMA, waited for and scaled into acc_g, then the up half's into acc_u
        through the same MMA result (ws2w's schedule: two sums and one result, 192 registers;
        a second result in flight would need 256). Each scale step runs under the other
        warpgroup's MMA. Returns (acc_g, acc_u)."""
        acc_g = gl.zeros((TM, TN), dtype=gl.float32, layout=mma)
        acc_u = gl.zeros((TM, TN), dtype=gl.float32, layout=mma)
        t = gl.zeros((TM, TN), dtype=gl.float32, layout=mma)
        for k in range(nk):
            s = (it + k) % STAGES
            mbarrier.wait(ready.index(s), ((it + k) // STAGES) & 1)
            sa_k = gl.load(sa_row + k, mask=rmask, other=0.0)      # loads under the MMA
            sb_g = gl.load(sb_ptr + sb_row * nk + k)
            a = a_s.index(s).slice(ROW0, TM)
            t = warpgroup_mma(a, b_s.index(s).slice(0, TN).permute((1, 0)), t, use_acc=False,
                              is_async=True)
            t = warpgroup_mma_wait(num_outstanding=0, deps=(t, ))
            acc_g = gl.fma(t, (sa_k * sb_g)[:, None], acc_g)
            # an empty wait that names acc_g: the gate scale step stays before the up MMA, so
            # both MMA results share registers (as in _wide_math_persistent)
            t = warpgroup_mma_wait(num_outstanding=0, deps=(t, acc_g))[0]
            sb_u = gl.load(sb_ptr + (sb_row + 1) * nk + k)
            t = warpgroup_mma(a, b_s.index(s).slice(TN, TN).permute((1, 0)), t, use_acc=False)
            mbarrier.arrive(empty.index(s), count=1)
            acc_u = gl.fma(t, (sa_k * sb_u)[:, None], acc_u)
        return acc_g, acc_u

    @gluon.jit
    def _ffn_quant(acc_g, acc_u):
        """SwiGLU and the FP8 quantization of its (TM, 128) block, one scale a row, by
        mok_kernels/fp8.py's rule (the megakernel's quant_rows): h = silu(g) u in float32,
        amax = max(max |h|, 1e-12), q = e4m3(clamp(h x (448 / amax), -448, 448)) (correctly
        rounded division; the cast rounds to nearest even), scale = amax / 448 (correctly
        rounded). Returns (h, q, scale)."""
        h = acc_g / (1.0 + gl.exp(-acc_g)) * acc_u
        amax = gl.maximum(gl.max(gl.abs(h), axis=1), 1e-12)
        fmax = gl.full(amax.shape, 448.0, gl.float32, amax.type.layout)
        inv = gl.div_rn(fmax, amax)
        q = gl.minimum(gl.maximum(h * inv[:, None], -448.0), 448.0).to(gl.float8e4nv)
        return h, q, gl.div_rn(amax, fmax)


def _desc(t, block: list, dtype):
    """A TMA descriptor of the 2-D tensor t in `block` tiles (the default NVMMA layout)."""
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    layout = gl.NVMMASharedLayout.get_default_for(block, dtype)
    return TensorDescriptor(t, list(t.shape), list(t.stride()), block, layout)


def pack_gate_up(wg_t, sg, wu_t, su) -> tuple:
    """W_gu^T as the megakernel packs it, from the gate and up weights given K-major (E, I, H)
    e4m3 with block scales (E, I/128, H/128): (E, 2I, H), for each 128-row block nb the gate's
    rows then the up's (rows 256 nb ... 256 nb + 127 gate block nb, the next 128 up block nb),
    and scales (E, 2I/128, H/128) alike (gate block nb's row 2 nb, up's 2 nb + 1)."""
    import torch

    sc = torch.stack((sg, su), dim=2)
    return pack_rows(wg_t, wu_t), sc.reshape(sc.shape[0], -1, sc.shape[-1]).contiguous()


def pack_rows(wg_t, wu_t):
    """W_gu^T (E, 2I, H) from the gate and up weights given K-major (E, I, H), any dtype: for each
    128-row block nb the gate's rows, then the up's (pack_gate_up's weight layout)."""
    import torch

    e, i, h = wg_t.shape
    w = torch.stack((wg_t.reshape(e, i // BN, BN, h), wu_t.reshape(e, i // BN, BN, h)), dim=2)
    return w.reshape(e, 2 * i, h).contiguous()


def _compile_sm90(fn, args, options):
    """triton.compile for sm_90 of the Gluon kernel fn as a launch with args would specialize
    it (CPU tensors standing in for the operands)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import make_backend
    from triton.experimental.gluon._runtime import GluonASTSource
    from triton.runtime.jit import create_function_from_signature

    target = GPUTarget("cuda", 90, 32)
    backend = make_backend(target)
    binder = create_function_from_signature(fn.signature, fn.params, backend)
    kwargs = {**options, "debug": False}
    bound, spec, _ = binder(*args, **kwargs)
    options, signature, constexprs, attrs = fn._pack_args(backend, kwargs, bound, spec, None)
    src = GluonASTSource(fn, signature, constexprs, attrs)
    return triton.compile(src, target=target, options=options.__dict__)
