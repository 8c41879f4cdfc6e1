"""The FP8 MoK forward pass of one emulated rank as ONE persistent Gluon kernel (sm_90) plus the
Triton megakernel's epilogue (issue 14: the FP8 pass on the Gluon core of core.py, whose FFN
kernel, benchmarks/gluon_fp8_gemm.py --ffn, ran 1.55-1.77x torch's BF16 grouped FFN). MoKLayer
runs it as ``KernelConfig(precision="fp8", fp8_kernel="gluon")``; benchmarks/gluon_fp8_mok.py
checks and times its variants.

Stage: comm and compute overlap in one launch (pull dispatch, push combine, capacity 1.0, lag 1).
- Host: mok_kernels.schedule.build_schedule(rank=r, capacity 1.0, minibatch MB, block_m 128);
  weights quantized by mok_kernels/fp8.py (quantize_weight), gate/up packed as the FFN kernel
  packs them (pack_gate_up), the shared expert (width I, or none) as one more expert (index
  EL), I zero-padded to Ip, whole 128-column blocks (exact: padded columns give SwiGLU 0 and
  meet zero down rows). One buffer A (N + C + 128, H) e4m3 holds the rank's N home tokens (the
  shared expert's rows) then the C-row ring; h (N + C + 128, Ip) e4m3 alike, 1 x 128 scales.
- Home tokens: every program's math warpgroups (knob home; else the comm programs') quantize a
  share of them into A[0, N) (fp8.py's rule, bit for bit) and release-add the landed rows (gpu
  scope) to one counter.
- Comm programs (the first COMM program ids; both math warpgroups of each, 64 rows a chunk):
  minibatch by minibatch copy x_all[recv_src[j]] into A[N + j] quantized and release-add the
  minibatch's counter; then (knob join) they take items of the list's tail too.
- Compute programs walk one static, globally ordered item list (shared gate/up items, then per
  minibatch its gate/up items then its down items, then the shared down items; item i -> compute
  program i mod n_compute). Gate/up items are the FFN kernel's (<= 128 rows of one expert x one
  128-column block of h, SwiGLU and h's 1 x 128 quantization fused); down items the grouped
  ws2d1 K loop. The load warp acquire-waits (bounded spin; on timeout an error word is set, every
  later wait gives up at once and the epilogue writes NaN) before each item's loads: gate/up on its
  minibatch's landed rows, down on its row tile's counter, which the math warpgroups release-add
  after storing q / scales of h (fence.proxy.async.global on both sides: generic stores, TMA
  loads). The math warpgroups acquire the same counter before reading scales with plain loads.
  Down items store each bf16 row from registers to comb[recv_slot[row]] (shared ones to
  sh_out[token]), masked to the tile's rows. Then the megakernel's epilogue kernel.
Dependencies only point to earlier items and every program takes its items in order, so with all
programs resident (grid <= SMs, one program an SM by shared memory) the pass cannot deadlock.

GluonBF16MoK is the same pass with BF16 operands: the kernel's BF16 constexpr makes the copies
plain (no scales), the items run core.py's BF16 K loops over 64-column K blocks (the ring's byte
sizes unchanged), and h is stored in BF16. Session 61 ran it on one H100: correct on every rank
of EP 8, but 0.61-0.87x the Triton BF16 megakernel's speed, so it is not in MoKLayer.
"""

from __future__ import annotations

from mok_model.errors import MokInputError
from mok_model.scenario import gluon_padded_width, gluon_shape_refusal

from .core import (BK, BM, BN, FFN_STAGES, GROUP_ROWS, WS_MAXNREG, _compile_sm90, _desc, gluon,
                   pack_gate_up, pack_rows)

# Default knobs. join, ys, home: the best worst case of kimi-k2 / glm-5 EP 8, 4,096 tokens
# (benchmarks/device/s26_fp8c.sh, mok_kernels/logs_s26/s26c/mok.log). Comm programs: 40, the
# smallest worst regret of the six counts 24-64 timed on twelve workloads (six presets, EP 8,
# 1,024 / 4,096 tokens; calibration/runs/h200_gluon/auto.jsonl.gz, s27_sixth.sh, 2026-12-02): 40
# at most 5.8% from the best (mean 1.1%), 48 8.1%, 32 19.8%, 24 38.7%; the model's pick among
# them 9.7% (registered) and 8-16% in nine of the twelve automatic runs, so the layer does not
# ask the model for it. 32 before (session 26: the better of 24 / 32 on 50 workloads; kimi-k2 /
# glm-5 at 4,096 tokens run 3% slower at 40 than at 32, s27_fifth.sh).
COMM_SMS = 40
JOIN = 350
YS = True
HOME = True
MINIBATCH = 4096
MAX_SPIN = 1 << 22          # acquire polls before a wait gives up (~seconds)
CHUNK_ROWS = 64             # rows a comm warpgroup quantizes at a time (16 where every
                            # program takes a share of the home tokens, knob home)

if gluon is not None:
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma

    from .core import (GROUP_M, _acc_layout, _bf16_gate_up_tile, _bf16_tile, _dual_tile,
                       _ffn_gate_up_tile, _ffn_quant, _load_blocks, _out_layouts,
                       _release_blocks, _ring, _row_scales, _tile)

    @gluon.jit
    def _fence_async_global():
        """Order this thread's generic-proxy global accesses before its later async-proxy (TMA)
        ones (and the reverse)."""
        gl.inline_asm_elementwise("fence.proxy.async.global; mov.u32 $0, 0;", "=r", [],
                                  dtype=gl.int32, is_pure=False, pack=1)

    @gluon.jit
    def _wait_geq(ptr, target, err_ptr, max_spin):
        """Acquire (gpu scope) until *ptr >= target; after max_spin polls, or once the error word
        is set, give up and set it (the pass's output is then NaN, never used)."""
        v = gl.atomic_add(ptr, 0, sem="acquire", scope="gpu")
        spins = 0
        while (v < target) & (spins < max_spin):
            v = gl.atomic_add(ptr, 0, sem="acquire", scope="gpu")
            spins += 1
            if spins % 256 == 0:
                if gl.load(err_ptr, volatile=True) != 0:
                    spins = max_spin
        if v < target:
            gl.atomic_or(err_ptr, 1, sem="relaxed", scope="gpu")

    @gluon.jit
    def _signal(ptr, count):
        """This partition's earlier stores visible (gpu scope), then add count (release)."""
        _fence_async_global()
        gl.thread_barrier()
        if count > 0:
            gl.atomic_add(ptr, count, sem="release", scope="gpu")

    @gluon.jit
    def _quant_block(q_ptr, qs_ptr, d64, m, kb, nkb, H, x, QV: gl.constexpr):
        """One 128-column block x (bf16, rows d64) quantized by fp8.py's rule and stored.
        QV 1: the two correctly rounded divisions once a row (rows spread one a thread, the
        quotient brought back to the block's layout) instead of in each of the 16 threads that
        hold a row's columns; the same bits."""
        layout: gl.constexpr = x.type.layout
        cols = gl.arange(0, 128, layout=gl.SliceLayout(0, layout))
        xf = x.to(gl.float32)
        amax = gl.maximum(gl.max(gl.abs(xf), axis=1), 1e-12)
        fmax = gl.full(amax.shape, 448.0, gl.float32, amax.type.layout)
        rows: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
        if QV == 1:
            a_r = gl.convert_layout(amax, rows)
            f_r = gl.full(a_r.shape, 448.0, gl.float32, rows)
            inv = gl.convert_layout(gl.div_rn(f_r, a_r), amax.type.layout)
        else:
            inv = gl.div_rn(fmax, amax)
        q = gl.minimum(gl.maximum(xf * inv[:, None], -448.0), 448.0).to(gl.float8e4nv)
        gl.store(q_ptr + d64[:, None] * H + kb * 128 + cols[None, :], q, mask=m[:, None])
        if QV == 1:
            sc_ptr = qs_ptr + gl.convert_layout(d64, rows) * nkb + kb
            gl.store(sc_ptr, gl.div_rn(a_r, f_r), mask=gl.convert_layout(m, rows))
        else:
            gl.store(qs_ptr + d64 * nkb + kb, gl.div_rn(amax, fmax), mask=m)

    @gluon.jit
    def _quant_copy(x_ptr, a_ptr, as_ptr, src, dst, m, H, RB: gl.constexpr, layout: gl.constexpr,
                    CU: gl.constexpr, QV: gl.constexpr):
        """Rows src of x (bf16) into rows dst of A (e4m3) and their 1 x 128 scales, fp8.py's rule:
        amax = max(max |x|, 1e-12), q = e4m3(clamp(x (448 / amax))), scale = amax / 448.
        CU (1 or 2) 128-column blocks loaded before the first is quantized (bytes in flight;
        H / 128 a multiple of CU)."""
        cols = gl.arange(0, 128, layout=gl.SliceLayout(0, layout))
        nkb = H // 128
        s64 = src.to(gl.int64)
        d64 = dst.to(gl.int64)
        xp = x_ptr + s64[:, None] * H + cols[None, :]
        for kb in range(0, nkb, CU):
            x0 = gl.load(xp + kb * 128, mask=m[:, None], other=0.0)
            if CU == 2:
                x1 = gl.load(xp + (kb + 1) * 128, mask=m[:, None], other=0.0)
            _quant_block(a_ptr, as_ptr, d64, m, kb, nkb, H, x0, QV)
            if CU == 2:
                _quant_block(a_ptr, as_ptr, d64, m, kb + 1, nkb, H, x1, QV)

    @gluon.jit
    def _copy_rows(x_ptr, a_ptr, src, dst, m, H, layout: gl.constexpr):
        """Rows src of x into rows dst of A as they are (the BF16 pass), 128 columns a step."""
        cols = gl.arange(0, 128, layout=gl.SliceLayout(0, layout))
        xp = x_ptr + src.to(gl.int64)[:, None] * H + cols[None, :]
        ap = a_ptr + dst.to(gl.int64)[:, None] * H + cols[None, :]
        for kb in range(0, H // 128):
            gl.store(ap + kb * 128, gl.load(xp + kb * 128, mask=m[:, None], other=0.0),
                     mask=m[:, None])

    @gluon.jit
    def _store_h_staged(smem, tile, h_ptr, off_m, end, nb, I, TM: gl.constexpr,
                        TN: gl.constexpr, layout: gl.constexpr):
        """An h tile (rows off_m.. below end, column block nb of I) stored through shared
        memory `smem`, read back in `layout` (the YS store)."""
        smem.store(tile)
        rows = off_m + gl.arange(0, TM, layout=gl.SliceLayout(1, layout))
        cols = nb * TN + gl.arange(0, TN, layout=gl.SliceLayout(0, layout))
        gl.store(h_ptr + rows.to(gl.int64)[:, None] * I + cols[None, :], smem.load(layout),
                 mask=(rows < end)[:, None])

    @gluon.jit
    def _home(x_ptr, a_ptr, as_ptr, sync_ptr, tok0, NSH, H, worker, workers, RB: gl.constexpr,
              CU: gl.constexpr, QV: gl.constexpr, BF16: gl.constexpr):
        """The home tokens' share of one worker (a math warpgroup), RB rows at a time (chunk c
        -> worker c mod workers), then its landed rows released to the home counter."""
        layout: gl.constexpr = gl.BlockedLayout([1, 8], [2, 16], [gl.num_warps(), 1], [1, 0])
        rr = gl.arange(0, RB, layout=gl.SliceLayout(1, layout))
        cnt = 0
        for c in range(worker * RB, NSH, workers * RB):
            rows = c + rr
            if BF16:
                _copy_rows(x_ptr, a_ptr, tok0 + rows, rows, rows < NSH, H, layout)
            else:
                _quant_copy(x_ptr, a_ptr, as_ptr, tok0 + rows, rows, rows < NSH, H, RB, layout,
                            CU, QV)
            cnt += gl.minimum(NSH - c, RB)
        _signal(sync_ptr + 1, cnt)

    @gluon.jit
    def _comm(x_ptr, a_ptr, as_ptr, recv_src, mb_row, num_mb, sync_ptr, tok0, N, NSH, H, worker,
              workers, home, CU: gl.constexpr, QV: gl.constexpr, BF16: gl.constexpr):
        """A comm worker (one math warpgroup of a comm program): the home tokens (unless every
        program takes them, home != 0), then each minibatch's ring rows, CHUNK_ROWS at a time
        (chunk c -> worker c mod workers); after each segment its landed rows released to the
        segment's counter."""
        RB: gl.constexpr = 64
        layout: gl.constexpr = gl.BlockedLayout([1, 8], [2, 16], [gl.num_warps(), 1], [1, 0])
        rr = gl.arange(0, RB, layout=gl.SliceLayout(1, layout))
        if home == 0:
            _home(x_ptr, a_ptr, as_ptr, sync_ptr, tok0, NSH, H, worker, workers, RB, CU, QV,
                  BF16)
        for mbi in range(gl.load(num_mb)):
            lo = gl.load(mb_row + mbi)
            hi = gl.load(mb_row + mbi + 1)
            cnt = 0
            for c in range(lo + worker * RB, hi, workers * RB):
                j = c + rr
                m = j < hi
                src = gl.load(recv_src + j, mask=m, other=0)
                if BF16:
                    _copy_rows(x_ptr, a_ptr, src, N + j, m, H, layout)
                else:
                    _quant_copy(x_ptr, a_ptr, as_ptr, src, N + j, m, H, RB, layout, CU, QV)
                cnt += gl.minimum(hi - c, RB)
            _signal(sync_ptr + 2 + mbi, cnt)

    @gluon.jit
    def _walk(knob_ptr, total):
        """This program's walk of the global item list (knobs: comm programs, mode, join):
        (first item, join point J0, compute programs NC, programs P). Items [0, J0) go round
        robin to the compute programs (item i -> program COMM + i mod NC), items [J0, total) to
        all P programs (J0 + x -> program x mod P), so every program's items rise in global
        order; J0 = total x join / 1000 (join >= 1000: no join, J0 = total). Mode 1 (comm
        only): no items. Next item: _walk_next."""
        COMM = gl.load(knob_ptr)
        mode = gl.load(knob_ptr + 1)
        join = gl.load(knob_ptr + 2)
        pid = gl.program_id(0)
        P = gl.num_programs(0)
        tot = gl.where(mode == 1, 0, total)
        j0 = gl.where(join >= 1000, tot, (tot * gl.minimum(join, 1000)) // 1000)
        i = j0 + pid
        if pid >= COMM:
            i = pid - COMM
            if i >= j0:
                i = j0 + pid
        return i, j0, P - COMM, P, tot

    @gluon.jit
    def _walk_next(i, j0, NC, P):
        nx = i + P
        if i < j0:
            nx = i + NC
            if nx >= j0:
                nx = j0 + gl.program_id(0)
        return nx

    @gluon.jit
    def _mok_item(i, N, NSH, num_tiles, t_mb, tile_expert, tile_row0, tile_rows, mb_row, EL,
                  NBG, NBD, T_MAX, MB_MAX):
        """Item i of the global list: (kind 0 gate/up or 1 down, first A / h row of its tile, the
        tile's end row, expert, column block, sync word to wait on, its target, row tile u)."""
        TM: gl.constexpr = 128
        nt_s = gl.cdiv(NSH, TM)
        s_gu = nt_s * NBG
        nb_all = NBG + NBD
        r_end = s_gu + num_tiles * nb_all
        kind = 0
        o = i
        ntl = nt_s
        t0 = 0
        ncols = NBG
        if i >= s_gu:
            if i < r_end:
                r = i - s_gu
                q = r // nb_all
                t0r = gl.load(t_mb + q)
                ntr = gl.load(t_mb + T_MAX + q)
                o = r - t0r * nb_all
                t0 = nt_s + t0r
                ntl = ntr
                if o >= ntr * NBG:
                    kind = 1
                    o = o - ntr * NBG
                    ncols = NBD
            else:
                kind = 1
                o = i - r_end
                ncols = NBD
        tt, nb = _tile(o, ntl * TM, ncols * TM, TM, TM, GROUP_M)
        u = t0 + tt
        row0 = u * TM
        end = gl.minimum(row0 + TM, NSH)
        expert = EL
        woff = 1
        wtgt = NSH
        if u >= nt_s:
            t = u - nt_s
            row0 = N + gl.load(tile_row0 + t)
            end = row0 + gl.load(tile_rows + t)
            expert = gl.load(tile_expert + t)
            mbi = gl.load(t_mb + 2 * T_MAX + t)
            woff = 2 + mbi
            wtgt = gl.load(mb_row + mbi + 1) - gl.load(mb_row + mbi)
        if kind == 1:
            woff = 2 + MB_MAX + u
            wtgt = 2 * NBG
        return kind, row0, end, expert, nb, woff, wtgt, u

    @gluon.jit
    def _n_items(NSH, num_tiles_ptr, NBG, NBD):
        nt_s = gl.cdiv(NSH, 128)
        return nt_s * (NBG + NBD) + gl.load(num_tiles_ptr) * (NBG + NBD)

    @gluon.jit
    def _mok_walk(knob_ptr, num_tiles_ptr, NSH, H, I):
        """A compute partition's walk of the item list from its start (_walk; the load warp and
        both math warpgroups take the same items): (first item, join point J0, compute programs
        NC, programs P, items, routed row tiles, gate/up column blocks NBG = I / 128, down
        column blocks NBD = H / 128). Next item: _walk_next; what it is: _take_item."""
        NBG = I // 128
        NBD = H // 128
        num_tiles = gl.load(num_tiles_ptr)
        i, j0, NC, P, total = _walk(knob_ptr, _n_items(NSH, num_tiles_ptr, NBG, NBD))
        return i, j0, NC, P, total, num_tiles, NBG, NBD

    @gluon.jit
    def _take_item(i, N, NSH, num_tiles, t_mb, tile_expert, tile_row0, tile_rows, mb_row,
                   sync_ptr, EL, NBG, NBD, T_MAX, MB_MAX, max_spin):
        """Item i decoded (_mok_item), then the acquire wait on its sync word (_wait_geq: on
        timeout the error word is set and the item runs on, its output never used): (kind 0
        gate/up or 1 down, first A / h row of its tile, the tile's end row, expert, column
        block, row tile u)."""
        kind, row0, end, expert, nb, woff, wtgt, u = _mok_item(
            i, N, NSH, num_tiles, t_mb, tile_expert, tile_row0, tile_rows, mb_row, EL, NBG, NBD,
            T_MAX, MB_MAX)
        _wait_geq(sync_ptr + woff, wtgt, sync_ptr, max_spin)
        return kind, row0, end, expert, nb, u

    @gluon.jit
    def _mok_loader(a_desc, h_desc, wgu_desc, wd_desc, a_s, b_s, ready, empty, num_tiles_ptr,
                    t_mb, tile_expert, tile_row0, tile_rows, mb_row, sync_ptr, N, NSH, H, I, EL,
                    T_MAX, MB_MAX, knob_ptr, max_spin, STAGES: gl.constexpr):
        """Load partition (one warp) of a compute program: each item's wait, then its K blocks
        into the ring (gate/up: A rows and a 256 x 128 [gate | up] box; down: h rows and a
        128 x 128 W_d^T box in the first half of the B buffer; 64 columns, not 128, in BF16)."""
        TK: gl.constexpr = a_desc.block_type.shape[1]    # 128 FP8 / 64 BF16: 128 bytes
        TN: gl.constexpr = 128
        i, j0, NC, P, total, num_tiles, NBG, NBD = _mok_walk(knob_ptr, num_tiles_ptr, NSH, H, I)
        # K blocks of a gate/up item (H) and a down item (I); written out here and in _mok_math,
        # not in a helper, which reordered the FP8 pass's code (its PTX is checked unchanged)
        if TK == 128:
            KGU = NBD
            KDN = NBG
        else:
            KGU = H // TK
            KDN = I // TK
        it = 0
        while i < total:
            kind, row0, end, expert, nb, _ = _take_item(
                i, N, NSH, num_tiles, t_mb, tile_expert, tile_row0, tile_rows, mb_row, sync_ptr,
                EL, NBG, NBD, T_MAX, MB_MAX, max_spin)
            _fence_async_global()       # the item's inputs (generic stores) before its TMA loads
            if kind == 0:
                n0 = expert * 2 * I + nb * 2 * TN
                it = _load_blocks(a_desc, wgu_desc, a_s, b_s, ready, empty, row0, n0, KGU, it,
                                  STAGES)
            else:
                n0 = expert * H + nb * TN
                for k in range(KDN):
                    s = it % STAGES
                    mbarrier.wait(empty.index(s), ((it // STAGES) & 1) ^ 1)
                    mbarrier.expect(ready.index(s),
                                    h_desc.block_type.nbytes + wd_desc.block_type.nbytes)
                    tma.async_copy_global_to_shared(h_desc, [row0, k * TK], ready.index(s),
                                                    a_s.index(s))
                    tma.async_copy_global_to_shared(wd_desc, [n0, k * TK], ready.index(s),
                                                    b_s.index(s).slice(0, TN))
                    it += 1
            i = _walk_next(i, j0, NC, P)

    @gluon.jit
    def _mok_math(a_desc, h_desc, a_s, b_s, ready, empty, x_ptr, a_ptr, as_ptr, h_ptr, hs_ptr,
                  sgu_ptr, sd_ptr, comb_ptr, sh_ptr, recv_src, recv_slot, num_tiles_ptr, t_mb,
                  tile_expert, tile_row0, tile_rows, mb_row, num_mb, sync_ptr, tok0, N, NSH, H, I,
                  EL, T_MAX, MB_MAX, knob_ptr, max_spin, ROW0: gl.constexpr,
                  STAGES: gl.constexpr, CU: gl.constexpr, YS: gl.constexpr,
                  QV: gl.constexpr, BF16: gl.constexpr):
        """A math warpgroup: in a comm program a comm worker (_comm, unless mode 2), then (join)
        the program's share of the list's tail; in a compute program rows ROW0 ... ROW0 + 64 of
        each item's tile (gate/up as --ffn's _ffn_math, down as _dual_math_grouped with the row
        scatter to the combine slots). YS: q and y stored through shared memory (one 16 KB tile
        a warpgroup, 16-byte coalesced stores) instead of from the MMA layout. BF16: the BF16
        pass (GluonBF16MoK): rows copied, not quantized; no scales; h stored in BF16; the
        gate/up and down K loops of core.py's BF16 core (_bf16_gate_up_tile, _bf16_tile)."""
        TM: gl.constexpr = 64
        TN: gl.constexpr = 128
        TK: gl.constexpr = a_s.shape[2]      # 128 FP8 / 64 BF16 columns: 128 bytes
        pid = gl.program_id(0)
        COMM = gl.load(knob_ptr)
        copies = gl.load(knob_ptr + 1) != 2
        home = gl.load(knob_ptr + 3)
        if copies & (home != 0):       # every program's share of the home tokens first
            _home(x_ptr, a_ptr, as_ptr, sync_ptr, tok0, NSH, H, pid * 2 + ROW0 // TM,
                  2 * gl.num_programs(0), 16, CU, QV, BF16)
        if pid < COMM:
            if copies:
                _comm(x_ptr, a_ptr, as_ptr, recv_src, mb_row, num_mb, sync_ptr, tok0, N, NSH, H,
                      pid * 2 + ROW0 // TM, 2 * COMM, home, CU, QV, BF16)
        mma: gl.constexpr = _acc_layout(gl.num_warps(), TN, 16 if BF16 else 32)
        if YS:
            layouts: gl.constexpr = _out_layouts(gl.num_warps(), TM, TN)
            out: gl.constexpr = layouts[1]
            c_s = gl.allocate_shared_memory(gl.bfloat16, [TM, TN], layouts[0])
            q_layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([TM, TN],
                                                                           gl.float8e4nv)
            q_out: gl.constexpr = gl.BlockedLayout([1, 16], [32 * 16 // TN, TN // 16],
                                                   [gl.num_warps(), 1], [1, 0])
        i, j0, NC, P, total, num_tiles, NBG, NBD = _mok_walk(knob_ptr, num_tiles_ptr, NSH, H, I)
        if TK == 128:            # K blocks of a gate/up item (H) and a down item (I)
            KGU = NBD
            KDN = NBG
        else:
            KGU = H // TK
            KDN = I // TK
        it = 0
        while i < total:
            # the wait acquires what the scales' plain loads read
            kind, row0, end, expert, nb, u = _take_item(
                i, N, NSH, num_tiles, t_mb, tile_expert, tile_row0, tile_rows, mb_row, sync_ptr,
                EL, NBG, NBD, T_MAX, MB_MAX, max_spin)
            off_m = row0 + ROW0
            if kind == 0:
                if BF16:
                    if off_m < end:
                        acc_g, acc_u = _bf16_gate_up_tile(a_s, b_s, ready, empty, it, KGU, ROW0,
                                                          TM, TN, mma, STAGES)
                        hb = (acc_g / (1.0 + gl.exp(-acc_g)) * acc_u).to(gl.bfloat16)
                        if YS:
                            _store_h_staged(c_s, hb, h_ptr, off_m, end, nb, I, TM, TN, out)
                        else:
                            rows_m = off_m + gl.arange(0, TM, layout=gl.SliceLayout(1, mma))
                            cols_m = nb * TN + gl.arange(0, TN, layout=gl.SliceLayout(0, mma))
                            gl.store(h_ptr + rows_m.to(gl.int64)[:, None] * I + cols_m[None, :],
                                     hb, mask=(rows_m < end)[:, None])
                    else:
                        _release_blocks(ready, empty, it, KGU, STAGES)
                else:
                    if off_m < end:
                        sa_row, rm = _row_scales(as_ptr, off_m, end, NBD, TM, mma)
                        acc_g, acc_u = _ffn_gate_up_tile(a_s, b_s, ready, empty, sa_row, rm,
                                                         sgu_ptr, expert * 2 * NBG + 2 * nb, NBD,
                                                         it, ROW0, TM, TN, mma, STAGES)
                        h, q, hsc = _ffn_quant(acc_g, acc_u)
                        rows_m = off_m + gl.arange(0, TM, layout=gl.SliceLayout(1, mma))
                        rmask = rows_m < end
                        r64 = rows_m.to(gl.int64)
                        gl.store(hs_ptr + r64 * NBG + nb, hsc, mask=rmask)
                        if YS:
                            _store_h_staged(c_s._reinterpret(gl.float8e4nv, [TM, TN], q_layout),
                                            q, h_ptr, off_m, end, nb, I, TM, TN, q_out)
                        else:
                            cols_m = nb * TN + gl.arange(0, TN, layout=gl.SliceLayout(0, mma))
                            gl.store(h_ptr + r64[:, None] * I + cols_m[None, :], q,
                                     mask=rmask[:, None])
                    else:
                        _release_blocks(ready, empty, it, KGU, STAGES)
                it += KGU
                _signal(sync_ptr + 2 + MB_MAX + u, 1)
            else:
                if off_m < end:
                    # the W_d^T box in the first TN rows of the B buffer; no producer
                    if BF16:
                        acc = _bf16_tile(a_s, b_s, ready, empty, it, KDN, ROW0, TM, TN, mma,
                                         STAGES)
                    else:
                        sa_row, rm = _row_scales(hs_ptr, off_m, end, NBG, TM, mma)
                        acc = _dual_tile(None, None, a_s, b_s, ready, empty, sa_row, rm, sd_ptr,
                                         expert * NBD + nb, None, None, NBG, it, ROW0, TM, TN,
                                         mma, False, STAGES)
                    y = acc.to(gl.bfloat16)
                    if YS:
                        c_s.store(y)
                        rows_o = off_m + gl.arange(0, TM, layout=gl.SliceLayout(1, out))
                        cols_o = nb * TN + gl.arange(0, TN, layout=gl.SliceLayout(0, out))
                        omask = rows_o < end
                        if u * 128 < NSH:          # a shared tile: rows are home tokens
                            optr = sh_ptr + rows_o.to(gl.int64)[:, None] * H + cols_o[None, :]
                        else:
                            slot = gl.load(recv_slot + (rows_o - N), mask=omask, other=0)
                            optr = (comb_ptr + slot.to(gl.int64)[:, None] * H
                                    + cols_o[None, :])
                        gl.store(optr, c_s.load(out), mask=omask[:, None])
                    else:
                        rows_m = off_m + gl.arange(0, TM, layout=gl.SliceLayout(1, mma))
                        cols_m = nb * TN + gl.arange(0, TN, layout=gl.SliceLayout(0, mma))
                        rmask = rows_m < end
                        if u * 128 < NSH:          # a shared tile: rows are home tokens
                            gl.store(sh_ptr + rows_m.to(gl.int64)[:, None] * H
                                     + cols_m[None, :], y, mask=rmask[:, None])
                        else:
                            slot = gl.load(recv_slot + (rows_m - N), mask=rmask, other=0)
                            gl.store(comb_ptr + slot.to(gl.int64)[:, None] * H
                                     + cols_m[None, :], y, mask=rmask[:, None])
                else:
                    _release_blocks(ready, empty, it, KDN, STAGES)
                it += KDN
            i = _walk_next(i, j0, NC, P)

    @gluon.jit
    def fp8_mok_kernel(a_desc, h_desc, wgu_desc, wd_desc, x_ptr, a_ptr, as_ptr, h_ptr, hs_ptr,
                       sgu_ptr, sd_ptr, comb_ptr, sh_ptr, recv_src, recv_slot, num_tiles_ptr,
                       t_mb, tile_expert, tile_row0, tile_rows, mb_row, num_mb, sync_ptr, tok0,
                       N, NSH, H, I, EL, T_MAX, MB_MAX, knob_ptr, max_spin, STAGES: gl.constexpr,
                       CU: gl.constexpr, YS: gl.constexpr, QV: gl.constexpr,
                       BF16: gl.constexpr, num_warps: gl.constexpr):
        """The whole FP8 MoK pass of one rank (module docstring): comm programs then compute
        programs, each with two math warpgroups (240 registers) and a load warp (24). knob_ptr:
        int32 (comm programs, mode 0 pass / 1 comm only / 2 compute only, join permille).
        BF16: the same pass with BF16 operands (GluonBF16MoK; the scale pointers unused)."""
        a_s, b_s, ready, empty = _ring(a_desc, wgu_desc, STAGES, 2)
        gl.warp_specialize([
            (_mok_math, (a_desc, h_desc, a_s, b_s, ready, empty, x_ptr, a_ptr, as_ptr, h_ptr,
                         hs_ptr, sgu_ptr, sd_ptr, comb_ptr, sh_ptr, recv_src, recv_slot,
                         num_tiles_ptr, t_mb, tile_expert, tile_row0, tile_rows, mb_row, num_mb,
                         sync_ptr, tok0, N, NSH, H, I, EL, T_MAX, MB_MAX, knob_ptr, max_spin, 0,
                         STAGES, CU, YS, QV, BF16)),
            (_mok_math, (a_desc, h_desc, a_s, b_s, ready, empty, x_ptr, a_ptr, as_ptr, h_ptr,
                         hs_ptr, sgu_ptr, sd_ptr, comb_ptr, sh_ptr, recv_src, recv_slot,
                         num_tiles_ptr, t_mb, tile_expert, tile_row0, tile_rows, mb_row, num_mb,
                         sync_ptr, tok0, N, NSH, H, I, EL, T_MAX, MB_MAX, knob_ptr, max_spin, 64,
                         STAGES, CU, YS, QV, BF16)),
            (_mok_loader, (a_desc, h_desc, wgu_desc, wd_desc, a_s, b_s, ready, empty,
                           num_tiles_ptr, t_mb, tile_expert, tile_row0, tile_rows, mb_row,
                           sync_ptr, N, NSH, H, I, EL, T_MAX, MB_MAX, knob_ptr, max_spin,
                           STAGES)),
        ], [4, 1], [240, 24])


def item_order(nsh: int, mb_tile: list[int], num_tiles: int, nbg: int, nbd: int,
               group_m: int = 8) -> list[tuple]:
    """The kernel's global item list on the host (for tests): (kind, row tile u, column block),
    in the order _mok_item decodes it (shared tiles u < ceil(nsh/128), routed u = that + t)."""
    def tile(pid, n_m, n_n):
        per = group_m * n_n
        first = (pid // per) * group_m
        rows = min(n_m - first, group_m)
        return first + (pid % per) % rows, (pid % per) // rows

    nt_s = -(-nsh // 128)
    out = [("gu", *tile(o, nt_s, nbg)) for o in range(nt_s * nbg)]
    for t0, t1 in zip(mb_tile[:-1], mb_tile[1:]):
        if t0 >= num_tiles:
            break
        nt = t1 - t0
        for kind, ncols in (("gu", nbg), ("dn", nbd)):
            out += [(kind, nt_s + t0 + tt, nb)
                    for tt, nb in (tile(o, nt, ncols) for o in range(nt * ncols))]
    out += [("dn", *tile(o, nt_s, nbd)) for o in range(nt_s * nbd)]
    return out


def item_at(i: int, nsh: int, mb_tile: list[int], num_tiles: int, nbg: int, nbd: int,
            t_max: int, group_m: int = 8) -> tuple:
    """_mok_item's decode of item i in Python (its arithmetic, for the CPU test)."""
    def tile(pid, n_m, n_n):
        per = group_m * n_n
        first = (pid // per) * group_m
        rows = min(n_m - first, group_m)
        return first + (pid % per) % rows, (pid % per) // rows

    t_mb = tile_minibatch_host(mb_tile, t_max)
    nt_s = -(-nsh // 128)
    s_gu, nb_all = nt_s * nbg, nbg + nbd
    r_end = s_gu + num_tiles * nb_all
    kind, o, ntl, t0, ncols = "gu", i, nt_s, 0, nbg
    if i >= s_gu:
        if i < r_end:
            r = i - s_gu
            q = r // nb_all
            t0r, ntr = t_mb[0][q], t_mb[1][q]
            o, t0, ntl = r - t0r * nb_all, nt_s + t0r, ntr
            if o >= ntr * nbg:
                kind, o, ncols = "dn", o - ntr * nbg, nbd
        else:
            kind, o, ncols = "dn", i - r_end, nbd
    tt, nb = tile(o, ntl, ncols)
    return kind, t0 + tt, nb


def tile_minibatch_host(mb_tile: list[int], t_max: int) -> list[list[int]]:
    """Host twin of tile_minibatch."""
    import bisect
    mb_max = len(mb_tile) - 1
    first, cnt, mb = [], [], []
    for t in range(t_max):
        m = min(max(bisect.bisect_right(mb_tile, t) - 1, 0), mb_max - 1)
        first.append(mb_tile[m])
        cnt.append(mb_tile[m + 1] - mb_tile[m])
        mb.append(m)
    return [first, cnt, mb]


def tile_minibatch(mb_tile, t_idx):
    """(3, T_max) int32 on the device, tensor ops only: for each tile the first tile of its
    minibatch, the minibatch's tile count, the minibatch (for the kernel's item decode)."""
    import torch
    mb_max = mb_tile.shape[0] - 1
    m = (torch.searchsorted(mb_tile, t_idx, right=True) - 1).clamp(0, mb_max - 1)
    first = mb_tile[m]
    return torch.stack((first, mb_tile[m + 1] - first, m.to(torch.int32))).to(torch.int32)


refusal = gluon_shape_refusal   # why the pass cannot run a layer shape (mok_model, so the model
                                # refuses the same shapes), or None


class GluonFP8MoK:
    """One emulated rank's FP8 MoK pass on the Gluon kernel: pull dispatch, push combine,
    capacity 1.0 (the ring holds every routed row), lag 1, on one GPU (rank emulation).
    w: MoEWeights (all E experts, or with local_weights only this rank's E/P). A wait that
    times out leaves NaN output: with ``trap`` the epilogue also traps the launch; check()
    raises MegakernelStallError."""

    BF16 = False     # GluonBF16MoK: the same pass with BF16 operands

    def __init__(self, w, ep: int, tokens: int, topk: int, rank: int, *, num_experts=None,
                 local_weights: bool = False, minibatch: int = MINIBATCH, comm: int = COMM_SMS,
                 max_spin: int = MAX_SPIN, device: str = "cuda", cu: int = 1, ys: bool = YS,
                 join: int = JOIN, mode: int = 0, home: bool = HOME, qv: int = 0,
                 trap: bool = False):
        import torch

        from mok_kernels.megakernel import _kernels
        from mok_kernels.schedule import capacity_rows, check_minibatch_rows

        if gluon is None:
            raise ValueError("needs Triton with Gluon (triton.experimental.gluon)")
        e_w, h, i = (int(s) for s in w.wg.shape)
        e = num_experts if num_experts is not None else (e_w * ep if local_weights else e_w)
        ish = 0 if w.sg is None else int(w.sg.shape[1])
        shape_refusal = refusal(h, i, ish, e, ep, rank)
        if shape_refusal:
            raise ValueError(shape_refusal)
        if minibatch < 1:
            raise ValueError("minibatch must be >= 1")
        check_minibatch_rows(minibatch, capacity_rows(ep, tokens, topk, e, 1.0))
        self.ep, self.n, self.k, self.rank, self.E, self.H, self.I = ep, tokens, topk, rank, e, h, i
        self.ip = ip = gluon_padded_width(i)     # the width the kernel computes (zero-padded)
        self.el, self.mb, self.comm, self.max_spin = e // ep, minibatch, comm, max_spin
        self.local_weights, self.device, self.trap = local_weights, device, trap
        self.has_shared = ish > 0
        self.nsh = tokens if self.has_shared else 0
        dev = device
        op, op_gl, tk = self.operands()
        self.wgu, self.sgu, self.wd, self.sd = self.quantize(w)
        self.cap = capacity_rows(ep, tokens, topk, e, 1.0)
        self.t_max = (self.cap + BM - 1) // BM + self.el
        self.mb_max = max(1, (self.cap + minibatch - 1) // minibatch)
        rows = tokens + self.cap + BM
        scaled = 0 if self.BF16 else 1      # the BF16 pass reads no scales
        self.a = torch.zeros(rows, h, dtype=op, device=dev)
        self.a_s = torch.zeros(rows * scaled or 1, h // 128, device=dev)
        self.hq = torch.zeros(rows, ip, dtype=op, device=dev)
        self.h_s = torch.zeros(rows * scaled or 1, ip // 128, device=dev)
        self.sh_out = torch.zeros(tokens, h, dtype=torch.bfloat16, device=dev)
        self.comb = torch.randn(ep * tokens * topk, h, dtype=torch.bfloat16, device=dev)
        self.out = torch.empty(tokens, h, dtype=torch.bfloat16, device=dev)
        self.nt_s = -(-self.nsh // BM)
        self.sync = torch.zeros(2 + self.mb_max + self.nt_s + self.t_max, dtype=torch.int32,
                                device=dev)
        self.err_acc = torch.zeros(1, dtype=torch.int32, device=dev)
        self.t_idx = torch.arange(self.t_max, dtype=torch.int32, device=dev)
        self.chunk = min(1024, 1 << (h - 1).bit_length())
        self.descs = (_desc(self.a, [BM, tk], op_gl), _desc(self.hq, [BM, tk], op_gl),
                      _desc(self.wgu.view(-1, h), [2 * BN, tk], op_gl),
                      _desc(self.wd.view(-1, ip), [BN, tk], op_gl))
        self.epilogue_kernel = _kernels()["epilogue"]
        self.last_schedule = None
        self.knobs = torch.zeros(4, dtype=torch.int32, device=dev)
        self.grid = torch.cuda.get_device_properties(torch.device(dev)).multi_processor_count
        self.configure(comm=comm, cu=cu, ys=ys, join=join, mode=mode, home=home, qv=qv)

    @staticmethod
    def operands() -> tuple:
        """(torch dtype, Gluon dtype, K block columns) of the pass's GEMM operands."""
        import torch
        return torch.float8_e4m3fn, gl.float8e4nv, BK

    def quantize(self, w) -> tuple:
        """This rank's experts then the shared one (zeros where there is none) in e4m3 with
        128 x 128 block scales (fp8.py), K-major, I zero-padded to Ip (whole 128-column
        blocks): W_gu^T (EL+1, 2Ip, H) packed by pack_gate_up and its scales
        (EL+1, 2Ip/128, H/128), W_d^T (EL+1, H, Ip) and its scales (EL+1, H/128, Ip/128)."""
        import torch
        from torch.nn.functional import pad

        from mok_kernels.fp8 import quantize_weight

        h, i, dev = self.H, self.I, self.device
        more = self.ip - i
        lo = 0 if self.local_weights else self.rank * self.el
        gq, gs, uq, us, dq, ds = [], [], [], [], [], []
        mats = [(w.wg[x], w.wu[x], w.wd[x]) for x in range(lo, lo + self.el)]
        mats.append((w.sg, w.su, w.sd) if self.has_shared else
                    (torch.zeros(h, i), torch.zeros(h, i), torch.zeros(i, h)))
        for g_, u_, d_ in mats:
            g_, u_, d_ = pad(g_, (0, more)), pad(u_, (0, more)), pad(d_, (0, 0, 0, more))
            for src, qs, ss in ((g_, gq, gs), (u_, uq, us), (d_, dq, ds)):
                q, s = quantize_weight(src.to(dev).float())        # (K, N), (K/128, N/128)
                qs.append(q.t().contiguous())
                ss.append(s.t().contiguous())
        return (*pack_gate_up(torch.stack(gq), torch.stack(gs), torch.stack(uq),
                              torch.stack(us)), torch.stack(dq), torch.stack(ds))

    def load_weights(self, w) -> None:
        """Replace the weights in place (the construction's shapes): the same buffers, so the
        TMA descriptors and a captured CUDA graph stay valid."""
        for dst, src in zip((self.wgu, self.sgu, self.wd, self.sd), self.quantize(w)):
            dst.copy_(src)

    def tiles(self) -> dict:
        """The pass's fixed tiles and its knobs, as a run record's ``tiles`` (mok bench)."""
        return {"fp8_kernel": "gluon", "block_m": BM, "bn_gu": BN, "bn_dn": BN, "block_k": BK,
                "num_warps": 4, "num_stages": FFN_STAGES, "group_m": GROUP_ROWS,
                "gluon_join": self.join, "gluon_ys": int(self.ys), "gluon_home": int(self.home),
                "gluon_cu": self.cu} | ({"gluon_qv": self.qv} if self.qv else {})

    def configure(self, comm=None, cu=None, ys=None, join=None, mode=None,
                  home=None, qv=None) -> None:
        """The pass's variant (outside any graph capture): comm programs; cu, 1 or 2 K blocks
        in flight in a comm copy; ys, q / y stored through shared memory; join, the permille of
        the item list after which the comm programs take items too (>= 1000: never); mode 0 the
        pass, 1 comm programs only (no items, no epilogue), 2 compute only (no copies: the
        landed-row counters preset, the ring as the last pass left it; no epilogue); home,
        every program quantizes a share of the home tokens first (else the comm programs); qv 1,
        the copies' divisions once a row (_quant_block; the same bits, checked on the H200;
        the copies alone 8% faster, the pass no faster, so 0 by default: session 27)."""
        for k_, v in (("comm", comm), ("cu", cu), ("ys", ys), ("join", join), ("mode", mode),
                      ("home", home), ("qv", qv)):
            if v is not None:
                setattr(self, k_, v)
        if self.cu not in (1, 2) or (self.H // 128) % self.cu:
            raise ValueError(f"cu={self.cu}: 1 or 2, dividing H/128")
        if self.qv not in (0, 1):
            raise ValueError(f"qv={self.qv}: 0 or 1")
        if self.mode not in (0, 1, 2) or (self.comm < 1 and self.mode != 2) or self.comm < 0:
            raise ValueError(f"comm={self.comm}, mode={self.mode}: comm >= 1 (0 in mode 2 only)")
        if self.comm >= self.grid:
            raise ValueError(f"comm={self.comm} leaves no compute programs (grid {self.grid})")
        if self.join < 1000 and self.mode == 1:
            self.join = 1000
        items = (self.nt_s + self.t_max) * (self.ip // 128 + self.H // 128)   # the list at most
        if self.join < 1000 and items * self.join >= 2**31:
            raise MokInputError(f"join={self.join}: items x join permille ({items} x {self.join}) "
                             f"must stay below 2^31 (the kernel's int32 join point); join=1000 "
                             f"keeps the comm programs out of the item list")
        self.knobs.copy_(torch_tensor([self.comm, self.mode, self.join, int(self.home)]))

    def schedule(self, ids_all):
        from mok_kernels.schedule import build_schedule
        return build_schedule(ids_all, ep=self.ep, num_experts=self.E, rank=self.rank,
                              capacity_multiplier=1.0, minibatch=self.mb, block_m=BM)

    def args(self, x_all, sched, t_mb) -> tuple:
        return (*self.descs, x_all, self.a, self.a_s, self.hq, self.h_s, self.sgu, self.sd,
                self.comb, self.sh_out, sched.recv_src, sched.recv_slot, sched.num_tiles, t_mb,
                sched.tile_expert, sched.tile_row0, sched.tile_rows, sched.mb_row, sched.num_mb,
                self.sync, self.rank * self.n, self.n, self.nsh, self.H, self.ip, self.el,
                self.t_max, self.mb_max, self.knobs, self.max_spin, FFN_STAGES, self.cu,
                int(self.ys), self.qv, int(self.BF16))

    def launch(self, x_all, sched) -> None:
        t_mb = tile_minibatch(sched.mb_tile, self.t_idx)
        self.sync.zero_()
        if self.mode == 2:      # compute only: every landed-row counter at its target
            self.sync[1:2].fill_(self.nsh)     # a device fill: graph-capturable
            mbr = sched.mb_row[:self.mb_max + 1]
            self.sync[2:2 + self.mb_max] = mbr[1:] - mbr[:-1]
        fp8_mok_kernel[(self.grid, )](*self.args(x_all, sched, t_mb), num_warps=4,
                                      maxnreg=WS_MAXNREG)
        self.err_acc += self.sync[:1]

    def epilogue(self, w_all, sched):
        self.epilogue_kernel[(self.n, -(-self.H // self.chunk))](
            self.sh_out, self.comb, w_all, self.out, self.sync, sched.overflow, self.rank * self.n,
            int(self.has_shared), int(self.trap), K=self.k, H=self.H, BH=self.chunk,
            num_warps=4)
        return self.out

    def forward(self, x_all, ids_all, w_all):
        sched = self.schedule(ids_all)
        self.last_schedule = sched
        self.launch(x_all, sched)
        if self.mode != 0:
            return self.out
        return self.epilogue(w_all, sched)

    def check(self) -> None:
        """Raise MegakernelStallError if a wait of a pass since the last check timed out (the
        word is zeroed either way), CapacityOverflowError if the last schedule overflowed."""
        from mok_kernels.megakernel import MegakernelStallError

        stalled = int(self.err_acc.item())
        self.err_acc.zero_()
        if stalled:
            raise MegakernelStallError("gluon FP8 MoK: a wait timed out (output NaN, not "
                                       "usable)")
        if self.last_schedule is not None:
            self.last_schedule.check()


class GluonBF16MoK(GluonFP8MoK):
    """GluonFP8MoK's pass with BF16 operands (session 60): the comm programs copy rows without
    quantizing them, the items run the BF16 core of core.py (_bf16_gate_up_tile, _bf16_tile: one
    async wgmma in flight a math warpgroup, 64-column K blocks, as
    benchmarks/gluon_bf16_grouped.py measured at 0.82-1.22x torch._grouped_mm on one H100), h is
    stored in BF16 and no scale is read. The same frame: pull dispatch, push combine, capacity
    1.0, lag 1, rank emulation, the megakernel's epilogue. Correct on one H100 (session 61), at
    0.61-0.87x the Triton BF16 megakernel's speed."""

    BF16 = True

    @staticmethod
    def operands() -> tuple:
        import torch
        return torch.bfloat16, gl.bfloat16, BK // 2

    def quantize(self, w) -> tuple:
        """This rank's experts then the shared one (zeros where there is none) in BF16, K-major,
        I zero-padded to Ip: W_gu^T (EL+1, 2Ip, H) packed as pack_gate_up packs it, W_d^T
        (EL+1, H, Ip); the two scale slots hold one-element placeholders (never read)."""
        import torch
        from torch.nn.functional import pad

        h, i, dev = self.H, self.I, self.device
        more = self.ip - i
        lo = 0 if self.local_weights else self.rank * self.el
        mats = [(w.wg[x], w.wu[x], w.wd[x]) for x in range(lo, lo + self.el)]
        mats.append((w.sg, w.su, w.sd) if self.has_shared else
                    (torch.zeros(h, i), torch.zeros(h, i), torch.zeros(i, h)))
        gs, us, ds = [], [], []
        for g_, u_, d_ in mats:
            gs.append(pad(g_, (0, more)).to(dev, torch.bfloat16).t())          # (Ip, H)
            us.append(pad(u_, (0, more)).to(dev, torch.bfloat16).t())
            ds.append(pad(d_, (0, 0, 0, more)).to(dev, torch.bfloat16).t())    # (H, Ip)
        none = torch.zeros(1, device=dev)
        return (pack_rows(torch.stack(gs), torch.stack(us)), none,
                torch.stack(ds).contiguous(), none.clone())

    def tiles(self) -> dict:
        return {k: v for k, v in super().tiles().items() if k != "fp8_kernel"} | {
            "bf16_kernel": "gluon", "block_k": BK // 2}


def torch_tensor(vals):
    import torch
    return torch.tensor(vals, dtype=torch.int32)


def compile_mok_sm90(ep: int = 8, tokens: int = 4096, topk: int = 8, experts: int = 384,
                     h: int = 7168, i: int = 2048, cu: int = 1, ys: bool = False, qv: int = 0,
                     bf16: bool = False):
    """The kernel compiled for sm_90 on the CPU at a model's shape (CPU tensors stand in); bf16:
    the BF16 pass's build (GluonBF16MoK)."""
    import torch

    from mok_kernels.schedule import capacity_rows
    el = experts // ep
    cap = capacity_rows(ep, tokens, topk, experts, 1.0)
    t_max, mb_max = (cap + BM - 1) // BM + el, max(1, -(-cap // MINIBATCH))
    rows = tokens + cap + BM
    op, op_gl, tk = (GluonBF16MoK if bf16 else GluonFP8MoK).operands()
    a, hq = torch.empty(rows, h, dtype=op), torch.empty(rows, i, dtype=op)
    wgu, wd = torch.empty((el + 1) * 2 * i, h, dtype=op), torch.empty((el + 1) * h, i, dtype=op)
    i32 = torch.int32
    z = lambda *s, dt=i32: torch.empty(*s, dtype=dt)  # noqa: E731
    args = (_desc(a, [BM, tk], op_gl), _desc(hq, [BM, tk], op_gl),
            _desc(wgu, [2 * BN, tk], op_gl), _desc(wd, [BN, tk], op_gl),
            z(ep * tokens, h, dt=torch.bfloat16), a, z(rows, h // 128, dt=torch.float32), hq,
            z(rows, i // 128, dt=torch.float32), z(el + 1, 2 * i // 128, h // 128,
                                                   dt=torch.float32),
            z(el + 1, h // 128, i // 128, dt=torch.float32),
            z(ep * tokens * topk, h, dt=torch.bfloat16), z(tokens, h, dt=torch.bfloat16),
            z(cap), z(cap), z(1), z(3, t_max), z(t_max), z(t_max), z(t_max), z(mb_max + 1), z(1),
            z(2 + mb_max + 32 + t_max), 0, tokens, tokens, h, i, el, t_max, mb_max, z(4),
            MAX_SPIN, FFN_STAGES, cu, int(ys), qv, int(bf16))
    return _compile_sm90(fp8_mok_kernel, args, {"num_warps": 4, "maxnreg": WS_MAXNREG})
