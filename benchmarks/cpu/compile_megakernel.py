"""Compile the megakernels for sm_90 (or another --arch) on a machine with no GPU, through MoKLayer (and MoKBackward):
a Triton compile error, a lost 16-byte vector or an unintended change of the generated code shows
here before a GPU call is spent (mok_kernels/NOTES.md "Session 40").

    python3 -m venv /tmp/tvenv && /tmp/tvenv/bin/pip install triton==3.6.0
    PYTHONPATH=.:/tmp/tvenv/lib/python3.11/site-packages .venv/bin/python \\
        benchmarks/cpu/compile_megakernel.py [--hidden 2048,2880] [--precision bf16,fp8] \\
        [--modes push/push] [--set skip_gemm=1] [--all-ranks] [--pass bwd] [--arch 100]

Triton 3.6 is the device image's; it compiles to PTX and cubin with its own ptxas. A stand-in
driver names an H200 (sm_90, 132 SMs) and every kernel launch only compiles (Triton's warm-up
path), so the layer's tensors live on the CPU and nothing it computes is meaningful: this checks
code generation, never results (the GPU tests do that). Per setting it prints each compiled
kernel's global loads / stores by width, its registers and spills (ptxas -v) and a digest of its
PTX without source positions: two trees whose digests agree generate the same code for that
setting.
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import hashlib
import io
import os
import re
import sys
import types


def stand_in_gpu(arch: int = 90):
    """Point Triton at an sm_`arch` target with no driver, launches compiling only; torch.cuda's
    device queries answer for an H200 of that compute capability. Returns the list the compiled
    kernels are appended to."""
    import torch
    from triton.backends.compiler import GPUTarget
    from triton.runtime import driver
    from triton.runtime.jit import KernelInterface

    class CompileOnly:
        def get_current_target(self):
            return GPUTarget("cuda", arch, 32)

        def get_current_device(self):
            return 0

        def get_current_stream(self, device=None):
            return 0

        def get_device_interface(self):
            return torch.cuda

        def is_active(self):
            return True

    driver.set_active(CompileOnly())
    compiled = []

    def compile_only(self, grid):
        def launch(*args, **kwargs):
            kernel = self.run(*args, grid=grid, warmup=True, **kwargs)
            compiled.append((self.fn.__name__, kernel))
            return kernel
        return launch

    KernelInterface.__getitem__ = compile_only
    props = types.SimpleNamespace(multi_processor_count=132, name="H200 (compile only)",
                                  total_memory=141 * 2**30)
    torch.cuda.get_device_properties = lambda *a, **k: props
    torch.cuda.get_device_capability = lambda *a, **k: divmod(arch, 10)
    torch.cuda.synchronize = lambda *a, **k: None
    torch.cuda.current_device = lambda: 0
    return compiled


def code_only(ptx: str) -> str:
    """The PTX without its source positions and debug sections (they move with every edit of
    the file, code or not): what the digest is taken of."""
    ptx = ptx.split("\t.section\t.debug", 1)[0]
    return "\n".join(line for line in ptx.splitlines()
                     if not re.match(r"\s*\.(loc|file)\b", line) and not line.startswith("$L__"))


H200_SHARED_BYTES = 232448   # the most dynamic shared memory a block may ask for (sm_90)


def report(label: str, compiled: list, log: str) -> None:
    """One line per kernel compiled for a setting: PTX digest, global loads / stores, registers
    and spills (from the ptxas -v log Triton printed), and its shared memory, flagged above the
    H200's 227 KiB a block (a launch there fails with OutOfResources)."""
    usage = dict(re.findall(r"Function properties for (\w+)\n.*?(\d+ bytes spill stores, \d+ "
                            r"bytes spill loads)", log, re.S))
    regs = dict(re.findall(r"Compiling entry function '(\w+)'.*?Used (\d+) registers", log, re.S))
    for name, kernel in compiled:
        ptx = kernel.asm["ptx"]
        ops = collections.Counter(re.findall(r"(?:ld|st)\.global[\w.:]*", ptx))
        wide = sum(c for o, c in ops.items() if ".v4" in o)
        digest = hashlib.sha256(code_only(ptx).encode()).hexdigest()[:12]
        shared = kernel.metadata.shared
        over = "  OVER THE H200 LIMIT" if shared > H200_SHARED_BYTES else ""
        print(f"{label} {name:19s} ptx {digest}  global ld/st {sum(ops.values()):4d} (16-byte "
              f"{wide})  registers {regs.get(name, '?')}, {usage.get(name, 'spills ?')}, "
              f"shared {shared} B{over}", flush=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--hidden", default="768,2048,2880,7168", help="comma list of hidden sizes")
    p.add_argument("--width", type=int, default=768, help="expert width I (routed and shared)")
    p.add_argument("--precision", default="bf16,fp8", help="comma list of bf16|fp8 (Triton FP8)")
    p.add_argument("--modes", default="pull/push,pull/pull,push/push,push/pull",
                   help="comma list of dispatch/combine")
    p.add_argument("--set", default="", help="comma list of KernelConfig field=value (e.g. an "
                   "A/B flag: skip_gemm=1; fp8_kernel=gluon)")
    p.add_argument("--all-ranks", action="store_true", help="every rank in one launch (rank None: "
                   "push dispatch by the senders, as across GPUs) instead of rank 0 alone")
    p.add_argument("--pass", dest="pass_", choices=("fwd", "bwd"), default="fwd",
                   help="bwd: the backward megakernel (BF16, pull/push forward)")
    p.add_argument("--tiles", default="recompute;training", help="--pass bwd: semicolon list of "
                   "recompute, training or a backward.BackwardTiles spec (field=value,...)")
    p.add_argument("--arch", type=int, default=90, choices=(80, 86, 89, 90, 100, 103, 120),
                   help="compute capability x 10 to compile for "
                   "(90: Hopper; 100: Blackwell B200 / GB200, where the kernel compiles but has "
                   "never run)")
    a = p.parse_args(argv)
    extra = {f: int(v) if v.lstrip("-").isdigit() else v
             for f, v in (kv.split("=") for kv in a.set.split(",") if kv)}
    os.environ["TRITON_ALWAYS_COMPILE"] = "1"     # run ptxas even for a cached kernel: its log
    os.environ["TRITON_DUMP_PTXAS_LOG"] = "1"     # (registers, spills) is printed, not cached
    compiled = stand_in_gpu(a.arch)
    import torch

    from mok_kernels import reference as ref
    from mok_kernels.backward import (RECOMPUTE_TILES, TRAINING_TILES, MoKBackward,
                                      parse_tiles)
    from mok_kernels.megakernel import KernelConfig, MoKLayer
    from mok_kernels.routing import make_routing

    e, k, i, n, ep = 32, 4, a.width, 256, 8
    if a.pass_ == "bwd":
        settings = [("bf16", "pull/push", spec) for spec in a.tiles.split(";")]
    else:
        settings = [(prec, mode, None) for prec in a.precision.split(",")
                    for mode in a.modes.split(",")]
    for h in (int(v) for v in a.hidden.split(",")):
        w = ref.random_weights(e, h, i, i, seed=0).to(torch.bfloat16)
        x = torch.randn(ep * n, h).to(torch.bfloat16)
        ids, wts = make_routing(ep * n, e, k, "uniform", 0, device="cpu")
        for prec, mode, tiles_name in settings:
            dispatch, combine = mode.split("/")
            label = f"H {h:5d} {prec} {mode:9s}" + (f" {tiles_name:9s}" if tiles_name else "")
            tiles = None if tiles_name is None else parse_tiles(
                {"recompute": RECOMPUTE_TILES, "training": TRAINING_TILES}.get(tiles_name, tiles_name))
            log = io.StringIO()             # ptxas -v of every compile (Triton prints it)
            try:
                with contextlib.redirect_stdout(log):
                    knobs = dict(dispatch=dispatch, combine=combine, minibatch=512, comm_sms=8,
                                 macrobatch=131072, capacity=1.0, on_error="raise",
                                 precision=prec, save_for_backward=bool(tiles and tiles.saved_gu))
                    cfg = KernelConfig(**(knobs | extra))
                    layer = MoKLayer(w, ep, n, k, None if a.all_ranks else 0, cfg, device="cpu")
                    layer.forward(x, ids, wts)
                    if tiles:
                        del compiled[:]
                        log.seek(0)
                        log.truncate()
                        MoKBackward(layer, tiles).run(x, ids, wts, torch.randn_like(x),
                                                      layer.saved_gu if tiles.saved_gu else None)
            except ValueError as exc:      # a shape or knob the layer refuses
                print(f"{label} refused: {exc}", flush=True)
                continue
            report(label, compiled, log.getvalue())
            del compiled[:]
    return 0


if __name__ == "__main__":
    sys.exit(main())
