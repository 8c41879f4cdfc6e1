"""Compile the forward megakernel for sm_90 exactly as MoKLayer launches it, without a GPU.

A MoKLayer is built on the CPU at a model's shapes (weights are placeholders of the packed
shapes and dtypes, never filled), one forward runs with the kernel launch replaced by a recorder,
and the recorded arguments go through Triton's own launch-time specialization (the binder that
JITFunction.run uses: integer arguments equal to 1 become constexprs, integers and pointers
divisible by 16 get ``tt.divisibility``, tensor descriptors their block types), then
``triton.compile`` for GPUTarget("cuda", 90, 32). So the TTGIR/PTX/SASS are those of the launch
(the one difference: CPU allocations stand in for CUDA ones; both are >= 16-byte aligned).

    python -m mok_kernels.aot --model kimi-k2 --fp8-kernel v3 --out /tmp/aot   # writes
        /tmp/aot/<label>.{ttgir,ptx,sass,json}; prints registers, spills, shared memory and
        the tensor-core / wait / barrier counts of every hot loop.

Needs Triton with the NVIDIA backend (its bundled ptxas/cuobjdump); no CUDA device.
"""

from __future__ import annotations

import collections
import json
import os
import re
import subprocess
from typing import Any

import torch

MODELS = {"kimi-k2": (7168, 2048, 384, 8), "glm-5": (6144, 2048, 256, 8)}   # H, I, E, top-k


class _Recorder:
    """Stands in for a JIT kernel: ``rec[grid](*args, **kwargs)`` records the call."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, tuple, dict]] = []

    def __getitem__(self, grid: Any):
        return lambda *a, **kw: self.calls.append((grid, a, kw))


def launch_args(model: str, ep: int, tokens: int, cfg_kwargs: dict) -> tuple[tuple, dict]:
    """The positional and keyword arguments MoKLayer.launch passes to the megakernel for rank 0
    of EP ``ep`` (emulated peers, local weights), uniform routing."""
    from . import megakernel as mk
    from .reference import MoEWeights
    h, i, e, k = MODELS[model]
    cfg = mk.KernelConfig(**cfg_kwargs)
    el = e // ep

    def fake_pack(self, w):           # packed shapes and dtypes, never filled
        v, ip, f8 = 1, self.Ip, self.cfg.precision == "fp8"
        ne = v * (self.el + 1)
        if f8:
            wg = torch.empty(ne, 2 * ip, self.H, dtype=torch.float8_e4m3fn)
            wd = torch.empty(ne, self.H, ip, dtype=torch.float8_e4m3fn)
            return (wg, wg[:1, :1, :1], wd, torch.empty(ne, self.H // 128, 2 * ip // 128),
                    torch.empty(ne, ip // 128, self.H // 128))
        wg = torch.empty(ne, self.H, 2 * ip, dtype=torch.bfloat16)
        return wg, wg[:1, :1, :1], torch.empty(ne, ip, self.H, dtype=torch.bfloat16), None, None

    ks = mk._kernels()
    rec, saved, saved_pack = _Recorder(), dict(ks), mk.MoKLayer._pack
    ks["mok"], ks["epilogue"] = rec, _Recorder()
    mk.MoKLayer._pack = fake_pack
    try:
        z = torch.empty(el, h, i).expand(el, h, i)
        w = MoEWeights(z, z, torch.empty(el, i, h), torch.empty(h, i), torch.empty(h, i),
                       torch.empty(i, h))
        layer = mk.MoKLayer(w, ep, tokens, k, 0, cfg, device="cpu", local_weights=True)
        g = torch.Generator().manual_seed(0)
        ids = torch.stack([torch.randperm(e, generator=g)[:k] for _ in range(ep * tokens)])
        x = torch.empty(ep * tokens, h, dtype=torch.bfloat16)
        layer.forward(x, ids, torch.full((ep * tokens, k), 1.0 / k))
    finally:
        ks.update(saved)
        mk.MoKLayer._pack = saved_pack
    _, args, kwargs = rec.calls[0]
    return args, kwargs


def compile_launch(args: tuple, kwargs: dict):
    """triton.compile of the megakernel for sm_90 with the launch's own specialization."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, make_backend
    from triton.runtime.jit import create_function_from_signature

    from . import megakernel as mk
    fn = mk._kernels()["mok"]
    target = GPUTarget("cuda", 90, 32)
    backend = make_backend(target)
    binder = create_function_from_signature(fn.signature, fn.params, backend)
    kwargs = dict(kwargs, debug=False)
    bound, spec, _ = binder(*args, **kwargs)
    options, signature, constexprs, attrs = fn._pack_args(backend, kwargs, bound, spec, None)
    src = ASTSource(fn, signature, constexprs, attrs)
    return triton.compile(src, target=target, options=options.__dict__), signature, constexprs, attrs


def _sass_loops(sass: str) -> list[dict]:
    """The innermost loops (a backward branch and its target) that hold tensor-core instructions,
    with their SASS address range and the instruction counts of one trip."""
    ins = [(int(m.group(1), 16), m.group(2).strip())
           for m in re.finditer(r"/\*([0-9a-f]{4,})\*/\s+(.*?);", sass)]
    at = {a: j for j, (a, _) in enumerate(ins)}
    spans = set()
    for j, (a, s) in enumerate(ins):
        t = re.search(r"BRA\s.*?0x([0-9a-f]+)", s)
        if t and int(t.group(1), 16) <= a and int(t.group(1), 16) in at:
            lo = at[int(t.group(1), 16)]
            if any("GMMA" in b for _, b in ins[lo:j + 1]):
                spans.add((lo, j))
    inner = [sp for sp in spans if not any(o != sp and sp[0] <= o[0] and o[1] <= sp[1] for o in spans)]
    out = []
    for lo, hi in sorted(inner):
        body = [b for _, b in ins[lo:hi + 1]]
        ops = collections.Counter(re.split(r"[\s.]", re.sub(r"^@!?U?P\w+\s+", "", b))[0] for b in body)
        gmma = sorted({m.group(0) for b in body for m in [re.search(r"[HQ]GMMA\.\w+", b)] if m})
        out.append({"sass": f"{ins[lo][0]:#07x}-{ins[hi][0]:#07x}", "instrs": len(body), "gmma": gmma,
                    **{k: ops.get(k, 0) for k in (
                        "HGMMA", "QGMMA", "WARPGROUP", "FMUL", "FFMA", "FADD", "LDG", "LDGSTS",
                        "UTMALDG", "SYNCS", "BAR", "STL", "LDL", "LDS", "STS")}})
    return out


def stats(kernel, outdir: str, label: str) -> dict:
    """Write ttgir/ptx/cubin/sass under outdir and summarize them."""
    import triton
    bind = os.path.dirname(triton.__file__) + "/backends/nvidia/bin/"
    os.makedirs(outdir, exist_ok=True)
    base = os.path.join(outdir, label)
    for ext in ("ttgir", "ptx"):
        with open(f"{base}.{ext}", "w") as f:
            f.write(kernel.asm[ext])
    with open(f"{base}.cubin", "wb") as f:
        f.write(kernel.asm["cubin"])
    sass = subprocess.run([bind + "cuobjdump", "-sass", f"{base}.cubin"], capture_output=True,
                          text=True).stdout
    with open(f"{base}.sass", "w") as f:
        f.write(sass)
    pv = subprocess.run([bind + "ptxas", "-arch=sm_90a", "-v", f"{base}.ptx", "-o", "/dev/null"],
                        capture_output=True, text=True).stderr
    sp = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", pv)
    rg = re.search(r"Used (\d+) registers", pv)
    ttgir = kernel.asm["ttgir"]
    return {"label": label, "regs": int(rg.group(1)) if rg else None,
            "ptxas_notes": sorted(set(re.findall(r"\((C\d+)\) ([^\n]*?) in the function", pv))),
            "spill_st": int(sp.group(1)) if sp else None, "spill_ld": int(sp.group(2)) if sp else None,
            "shared": kernel.metadata.shared,
            "ttgir_dot_wait_pendings": re.findall(r"warp_group_dot_wait.*?pendings = (\d+)", ttgir),
            "loops": _sass_loops(sass)}


def main(argv: list[str] | None = None) -> int:
    from mok_model.cli import doc_parser, int_at_least, run_tool

    ap = doc_parser("python -m mok_kernels.aot", __doc__)
    ap.add_argument("--model", default="kimi-k2", help=f"one of {', '.join(sorted(MODELS))}")
    ap.add_argument("--ep", type=int_at_least(1), default=8)
    ap.add_argument("--tokens", type=int_at_least(1), default=4096)
    ap.add_argument("--precision", default="fp8")
    ap.add_argument("--fp8-kernel", default="v2")
    ap.add_argument("--cfg", default="", help="more KernelConfig fields, e.g. block_m=128,num_stages=3")
    ap.add_argument("--label", default=None)
    ap.add_argument("--out", default="aot_out")
    return run_tool(ap, compile_one, argv)


def _cfg_fields(text: str, flag: str = "--cfg") -> dict:
    """--cfg FIELD=VALUE,...: integers where the value is one; an empty element, a field named
    twice and a field that is not KernelConfig's are refused (`flag` names the option in the
    message: benchmarks/bench_megakernel.py --variants reads the same form)."""
    from mok_model.errors import MokInputError

    out = {}
    for item in text.split(",") if text else []:
        k, sep, v = item.partition("=")
        if not sep or not k:
            raise MokInputError(f"{flag} {text!r}: {item!r} is not FIELD=VALUE (e.g. block_m=128)")
        if k in out:
            raise MokInputError(f"{flag} {text!r} sets {k} twice")
        out[k] = int(v) if v.lstrip("-").isdigit() else v
    from dataclasses import fields

    from .megakernel import KernelConfig
    kinds = {f.name: str(f.type) for f in fields(KernelConfig)}
    for k, v in out.items():
        if k not in kinds:
            raise MokInputError(f"{flag} {k}={v}: not a KernelConfig field (one of "
                                f"{', '.join(sorted(kinds))})")
        if "int" in kinds[k] and "str" not in kinds[k] and not isinstance(v, int):
            raise MokInputError(f"{flag} {k}={v}: an integer is required")
    return out


def compile_one(a) -> int:
    """Check the flags, compile the launch, write its files under --out, print its stats."""
    from mok_model.errors import MokInputError
    from mok_model.fileio import check_output_dir

    from . import megakernel as mk
    from . import require_triton
    if a.model not in MODELS:
        raise MokInputError(f"--model {a.model!r} must be one of {', '.join(sorted(MODELS))}")
    if a.fp8_kernel == "gluon":
        raise MokInputError("--fp8-kernel gluon: this tool compiles the Triton megakernel; the "
                            "Gluon pass compiles with benchmarks/gluon_fp8_mok.py --compile-only")
    experts = MODELS[a.model][2]
    if experts % a.ep:
        raise MokInputError(f"--ep {a.ep} must divide {a.model}'s {experts} experts")
    from .bench import check_fits

    check_fits(a.model, a.ep, a.tokens)     # its buffers are made (on the host) to compile
    kw = dict(dispatch="pull", combine="push", minibatch=4096, comm_sms=32, macrobatch=4096,
              capacity=1.0, grid=132, precision=a.precision, fp8_kernel=a.fp8_kernel)
    kw.update(_cfg_fields(a.cfg))
    try:
        mk.KernelConfig(**kw).validate()
    except (TypeError, ValueError) as exc:
        raise MokInputError(f"the kernel's config refuses --precision {a.precision} --fp8-kernel "
                            f"{a.fp8_kernel} --cfg {a.cfg!r}: {exc}") from None
    if a.label is not None and (not a.label.strip() or "/" in a.label or a.label in (".", "..")):
        raise MokInputError(f"--label {a.label!r} names the files written under --out: a non-empty "
                            f"file name without '/' (or leave it out: MODEL-PRECISION-FP8_KERNEL)")
    check_output_dir(a.out, "--out")     # the flags first, then whether this machine can compile
    require_triton()
    args, kwargs = launch_args(a.model, a.ep, a.tokens, kw)
    kernel, sig, const, attrs = compile_launch(args, kwargs)
    label = a.label or f"{a.model}-{a.precision}-{a.fp8_kernel}"
    st = stats(kernel, a.out, label)
    with open(os.path.join(a.out, label + ".json"), "w") as f:
        json.dump({"stats": st, "signature": sig, "constexprs": {str(k): str(v) for k, v in const.items()},
                   "attrs": {str(k): str(v) for k, v in attrs.items()}}, f, indent=1)
    print(json.dumps(st))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
