"""Compile the megakernel's copy helpers for sm_90 on a machine with no GPU, and count the
global loads and stores in their PTX: a Triton compile error, or a copy that lost its 16-byte
vectors, shows here before a GPU call is spent on it (mok_kernels/NOTES.md "Session 40").

    python3 -m venv /tmp/tvenv && /tmp/tvenv/bin/pip install triton==3.6.0
    PYTHONPATH=.:/tmp/tvenv/lib/python3.11/site-packages .venv/bin/python \\
        benchmarks/cpu/compile_copy_helpers.py

Triton 3.6 is the device image's; it compiles to PTX and cubin with its own ptxas and needs no
driver. Pointer arguments carry tt.divisibility 16, as a launch with aligned tensors specializes
them (without it the loads fall back to 2 bytes). One wrapper kernel calls gather_chunks (which
calls copy_rows, or copy_rows_q for an FP8 ring) at hidden sizes with one, two, a masked last and
seven column steps.
"""
import collections
import re

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

import mok_kernels.megakernel as mk

mok = mk._kernels()["mok"]
helpers = dict(zip(mok.fn.__code__.co_freevars, [c.cell_contents for c in mok.fn.__closure__]))
gather_chunks = helpers["gather_chunks"]


@triton.jit
def probe(idx_ptr, tab_ptr, src_ptr, dst_ptr, sc_ptr, r0, r1, R, H: tl.constexpr,
          CC: tl.constexpr, CR: tl.constexpr, FP8: tl.constexpr, GATHER: tl.constexpr):
    nchunk = (r1 - r0 + CR - 1) // CR
    gather_chunks(idx_ptr, r0, r1, tl.program_id(0), 4, nchunk, 8, 0, tab_ptr, src_ptr, dst_ptr,
                  sc_ptr, R, GATHER, False, FP8, H, CC, CR)


def main() -> int:
    target = GPUTarget("cuda", 90, 32)
    aligned = {(i,): [["tt.divisibility", 16]] for i in range(5)}
    for hidden in (768, 2048, 2880, 7168):
        cc = min(1024, 1 << (hidden - 1).bit_length())
        for fp8, gather in ((False, True), (False, False), (True, True)):
            sig = {"idx_ptr": "*i32", "tab_ptr": "*i64", "src_ptr": "*bf16",
                   "dst_ptr": "*fp8e4nv" if fp8 else "*bf16", "sc_ptr": "*fp32", "r0": "i32",
                   "r1": "i32", "R": "i32", "H": "constexpr", "CC": "constexpr",
                   "CR": "constexpr", "FP8": "constexpr", "GATHER": "constexpr"}
            src = ASTSource(probe, sig, constexprs={"H": hidden, "CC": cc, "CR": 16, "FP8": fp8,
                                                    "GATHER": gather}, attrs=aligned)
            ptx = triton.compile(src, target=target, options={"num_warps": 8}).asm["ptx"]
            ops = collections.Counter(re.findall(r"(?:ld|st)\.global[\w.:]*", ptx))
            print(f"H {hidden:5d} {'fp8 ' if fp8 else 'bf16'} {'gather ' if gather else 'scatter'}"
                  f": {dict(sorted(ops.items()))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
