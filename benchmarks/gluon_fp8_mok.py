"""Check and time the Gluon FP8 MoK pass (mok_kernels/gluon_fp8/mok.py: one persistent Gluon
kernel, sm_90, plus the megakernel's epilogue, for one emulated rank; MoKLayer runs it as
KernelConfig(precision="fp8", fp8_kernel="gluon")) in its variants (parse_variant), against the
float32 references and, with --baseline, beside the Triton BF16 megakernel in the same run.
`--precision bf16` does the same for the pass with BF16 operands (GluonBF16MoK, session 60; not
in MoKLayer yet), against the float32 reference within BF16_TOL (the Triton BF16 forward's 1e-2).

    PYTHONPATH=. python3 benchmarks/gluon_fp8_mok.py [--models kimi-k2,glm-5] [--iters 20]
        [--precision fp8|bf16] [--baseline]
    PYTHONPATH=. python3 benchmarks/gluon_fp8_mok.py --compile-only [--precision bf16]
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mok_kernels.gluon_fp8.mok import (COMM_SMS, HOME, JOIN, YS, GluonBF16MoK,  # noqa: E402
                                       GluonFP8MoK, compile_mok_sm90, gluon, refusal)

CHECK_TOL = 2e-2            # home output vs reference.moe_reference(fp8=True), relative norm
BF16_TOL = 1e-2             # the BF16 pass's home output vs the float32 reference
PASSES = {"fp8": GluonFP8MoK, "bf16": GluonBF16MoK}


def print_compile(builds=((1, False, 0), ), bf16: bool = False) -> bool:
    """sm_90 compile figures of each (cu, ys, qv) build (bf16: the BF16 pass's), with the PTX
    code's digest (no line or debug sections: compare it before and after a change that should
    not alter the kernel); False where one spills or passes 227 KB."""
    import hashlib
    import re
    import tempfile

    from mok_kernels.aot import stats
    ok = True
    for cu, ys, qv in builds:
        kernel = compile_mok_sm90(cu=cu, ys=ys, qv=qv, bf16=bf16)
        st = stats(kernel, tempfile.mkdtemp(), "fp8_mok")
        ptx = kernel.asm["ptx"]
        nreg = sorted({int(r) for r in
                       re.findall(r"setmaxnreg\.\w+\.sync\.aligned\.u32\s+(\d+)", ptx)})
        code = re.sub(r"\.loc.*\n|\.file.*\n", "", ptx).split(".section\t.debug")[0]
        print(f"fp8_mok_kernel{' BF16' if bf16 else ''} cu{cu}{' ys' if ys else ''}"
              f"{' qv1' if qv else ''} (kimi-k2, EP 8, 4096 tokens; PTX code sha256 "
              f"{hashlib.sha256(code.encode()).hexdigest()[:16]}): "
              f"{st['regs']} registers (setmaxnreg {nreg}), spills {st['spill_st']} / "
              f"{st['spill_ld']} bytes, {st['shared']} bytes of shared memory, ptxas notes "
              f"{[c for c, _ in st['ptxas_notes']]}; e4m3 casts "
              f"{len(re.findall(r'cvt.rn.satfinite.e4m3x2.f32', ptx))}, div.rn.f32 "
              f"{len(re.findall(r'div.rn.f32', ptx))}, fence.proxy.async.global "
              f"{len(re.findall(r'fence.proxy.async.global', ptx))}, acquire atomics "
              f"{len(re.findall(r'acquire', ptx))}, release atomics "
              f"{len(re.findall(r'release', ptx))}, ld.global.v4 "
              f"{len(re.findall(r'ld.global[.a-z0-9]*.v4', ptx))}, st.global.v4 "
              f"{len(re.findall(r'st.global[.a-z0-9]*.v4', ptx))}", flush=True)
        if st["spill_st"] or st["spill_ld"]:
            print("WARNING: the kernel spills (the goal is 0)", flush=True)
        if st["shared"] > 227 * 1024:
            print("ERROR: shared memory past 227 KB", flush=True)
            ok = False
    return ok


# --- the device check -------------------------------------------------------------------------
CHECK_SHAPES = {"kimi-k2-widths": dict(h=7168, i=2048, e=16, n=256, k=8, routing="uniform",
                                       minibatch=512),
                "glm-5-widths": dict(h=6144, i=2048, e=16, n=192, k=8, routing="zipf:1.2",
                                     minibatch=384),
                # narrow experts under a hot rank, and I of 2.5 blocks (zero-padded by the pass)
                "qwen3-30b-widths": dict(h=2048, i=768, e=32, n=256, k=8, routing="hot:0.1",
                                         minibatch=512),
                "padded-widths": dict(h=2304, i=320, e=16, n=128, k=2, routing="zipf:1.2",
                                      minibatch=256),
                # the timed token count and minibatch (8 minibatches of the 32,768-row ring),
                # 64 experts (the presets' 384 / 256 take 34 / 23 GB of bf16 weights whole)
                "kimi-k2-4096": dict(h=7168, i=2048, e=64, n=4096, k=8, routing="uniform",
                                     minibatch=4096),
                "glm-5-4096": dict(h=6144, i=2048, e=64, n=4096, k=8, routing="zipf:1.2",
                                   minibatch=4096)}


def parse_variant(text: str) -> dict:
    """A variant spec: '+'-joined knobs, e.g. 'default', 'comm=16', 'join=250+cu2+ys',
    'mode=comm', 'mode=compute+comm=0+join=0' (configure's knobs; unnamed ones as default).
    MokInputError names a knob or value that is not one."""
    from mok_model.errors import MokInputError

    cfg = dict(comm=COMM_SMS, cu=1, ys=YS, join=JOIN, mode=0, home=HOME, qv=0)
    parts = text.split("+")
    if "" in parts:
        raise MokInputError(f"--variants {text!r}: an empty knob (each '+'-joined part names one; "
                            f"'default' for none)")
    named = [p.partition("=")[0].rstrip("12") if p in ("cu1", "cu2", "qv1") else p.partition("=")[0]
             for p in parts]
    twice = sorted({k for k in named if named.count(k) > 1})
    if twice:
        raise MokInputError(f"--variants {text!r}: sets {twice[0]!r} twice (one value a knob)")
    for part in [x for x in parts if x != "default"]:
        k, sep, v = part.partition("=")
        if part in ("cu1", "cu2"):
            cfg["cu"] = int(part[2])
        elif part in ("ys", "home"):
            cfg[part] = True
        elif sep and k in ("ys", "home") and v in ("0", "1"):
            cfg[k] = v == "1"
        elif sep and k == "mode" and v in MODES:
            cfg["mode"] = MODES[v]
        elif sep and k in ("comm", "join") and v.isdigit() and int(v) <= KNOB_MAX[k]:
            cfg[k] = int(v)
        elif part == "qv1" or (sep and k == "qv" and v in ("0", "1")):
            cfg["qv"] = 1 if part == "qv1" else int(v)
        else:
            raise MokInputError(f"--variants {text!r}: {part!r} is not a knob (cu1, cu2, ys[=0|1], "
                                f"home[=0|1], qv1, qv=0|1, "
                                f"mode={'|'.join(MODES)}, comm=0..{KNOB_MAX['comm']}, "
                                f"join=0..{KNOB_MAX['join']})")
    return cfg


MODES = {"pass": 0, "comm": 1, "compute": 2}
KNOB_MAX = {"comm": 131, "join": 1000}   # comm programs of the H200's 132; join in 1/1000ths


def check_key(cfg: dict) -> tuple:
    """The code path a variant takes (what its check covers): (cu, ys, joins, home, qv)."""
    return (cfg["cu"], bool(cfg["ys"]), cfg["join"] < 1000, bool(cfg["home"]), cfg["qv"])


def run_check(name: str, configs: list[dict], ep: int = 8, precision: str = "fp8") -> list[str]:
    """For each config (configure's knobs, comm programs as given): all P ranks emulated in
    turn (each writes its served slots into one combine buffer), then every rank's epilogue:
    the full home output of every token against reference.moe_reference(fp8=True) (CHECK_TOL)
    and the plain float32 one (fp8.FP8_REL_TOL; the BF16 pass: the plain one only, BF16_TOL);
    every served slot written (poisoned with NaN first); rank 0's pass bitwise the same over 3
    repeats; no wait timed out; home output and combine buffer bitwise the first config's (the
    math is the same in every variant). Returns the failures as (check_key, text)."""
    import torch

    from mok_kernels import reference as ref
    from mok_kernels.fp8 import FP8_REL_TOL
    from mok_kernels.routing import make_routing

    c = CHECK_SHAPES[name]
    h, i, e, n, k = c["h"], c["i"], c["e"], c["n"], c["k"]
    w = ref.random_weights(e, h, i, i, seed=0).to(torch.bfloat16).to(device="cuda")
    wf = w.to(torch.float32)
    g = torch.Generator(device="cuda").manual_seed(7)
    x = torch.randn(ep * n, h, device="cuda", generator=g).to(torch.bfloat16)
    ids, wts = make_routing(ep * n, e, k, c["routing"], 0, device="cuda")
    wts = wts.float().contiguous()
    bf16 = precision == "bf16"
    want_p = ref.moe_reference(x.float(), ids, wts, wf, fp8=False)
    want_q = want_p if bf16 else ref.moe_reference(x.float(), ids, wts, wf, fp8=True)
    tol_q, tol_p = (BF16_TOL, BF16_TOL) if bf16 else (CHECK_TOL, FP8_REL_TOL)
    layers = [PASSES[precision](w, ep, n, k, r, minibatch=c["minibatch"], comm=16)
              for r in range(ep)]
    comb = layers[0].comb
    for lay in layers[1:]:
        lay.comb = comb
    all_fails, first = [], None
    for cfg in configs:
        fails = []
        for lay in layers:
            lay.configure(**cfg)
            lay.err_acc.zero_()
        comb.fill_(float("nan"))
        scheds = []
        for lay in layers:
            s = lay.schedule(ids)
            lay.last_schedule = s
            lay.launch(x, s)
            scheds.append(s)
        outs = torch.cat([lay.epilogue(wts, s).clone() for lay, s in zip(layers, scheds)])
        torch.cuda.synchronize()
        for lay in layers:
            try:
                lay.check()
            except RuntimeError as exc:
                fails.append(str(exc))
        nan_slots = int(torch.isnan(comb.float()).any(dim=1).sum())
        if nan_slots:
            fails.append(f"{nan_slots} combine slots not written")
        eq = float((outs.float() - want_q).norm() / want_q.norm())
        ep_ = float((outs.float() - want_p).norm() / want_p.norm())
        if not eq <= tol_q:
            fails.append(f"home output vs the {'float32' if bf16 else 'quantizing'} reference: "
                         f"rel. error {eq:.2e} > {tol_q}")
        if not ep_ <= tol_p:
            fails.append(f"home output vs the float32 reference: rel. error {ep_:.2e} > "
                         f"{tol_p}")
        if first is None:
            first = (outs, comb.clone())
        elif not (torch.equal(first[0], outs) and torch.equal(first[1], comb)):
            fails.append("not bitwise the first config's output")
        lay = layers[0]          # rank 0: bits identical over 3 repeats
        sv = ((ids >= 0) & (ids < lay.el)).reshape(-1).nonzero().squeeze(1)
        runs = []
        for _ in range(3):
            out = lay.forward(x, ids, wts).clone()
            torch.cuda.synchronize()
            runs.append((out, comb[sv].clone()))
        if not all(torch.equal(runs[0][0], r[0]) and torch.equal(runs[0][1], r[1])
                   for r in runs[1:]):
            fails.append("rank 0's pass is not bitwise the same over 3 repeats")
        try:
            lay.check()
        except RuntimeError as exc:
            fails.append(str(exc))
        print(f"check {precision} {name} {cfg} (H {h}, I {i}, E {e}, EP {ep}, {n} tokens a rank, "
              f"top-{k}, {c['routing']}, minibatch {c['minibatch']}): rel. error {eq:.2e} vs the "
              f"{'float32' if bf16 else 'FP8'} reference (<= {tol_q}), {ep_:.2e} vs float32 "
              f"(<= {tol_p}); "
              + ("FAILED: " + "; ".join(fails) if fails else "ok"), flush=True)
        all_fails += [(check_key(cfg), f"{name} {cfg}: {f}") for f in fails]
    return all_fails


def time_model(model: str, variants: list[str], iters: int, warmup: int,
               baseline: bool = False, precision: str = "fp8") -> dict:
    """Rank 0's pass (schedule + kernel + epilogue; modes 1 / 2 without the epilogue) of the
    Gluon FP8 MoK in each variant (parse_variant), one layer reconfigured, (with baseline) the
    Triton megakernel's BF16 path beside it, on the same inputs (bench.Workload, uniform);
    then the schedule and the epilogue alone ('part schedule', 'part epilogue')."""
    import torch

    from mok_kernels.bench import Workload, capture_graph, time_events
    from mok_kernels.megakernel import KernelConfig, MoKLayer

    wl = Workload(model, 8, 4096, "uniform", 0, 0)
    sh = wl.shape
    res = {}
    if baseline:
        knobs = dict(dispatch="pull", combine="push", minibatch=4096, comm_sms=32,
                     capacity=1.0, macrobatch=131072)
        layer = MoKLayer(wl.w, 8, 4096, sh.topk, 0, KernelConfig(**knobs, precision="bf16"),
                         local_weights=True)
        fwd = lambda m=layer: m.forward(wl.x, wl.ids, wl.wts)  # noqa: E731
        fwd()
        step = capture_graph(fwd)
        res["triton bf16"] = statistics.median(time_events(step, wl.refresh, iters, warmup))
        layer.check()
        print(f"{model}: triton bf16: {res['triton bf16']:.3f} ms", flush=True)
        del layer, fwd, step
        torch.cuda.empty_cache()
    ref_ms = res.get("triton bf16")     # ratios only against this run's own baseline
    layer = PASSES[precision](wl.w, 8, 4096, sh.topk, 0, num_experts=sh.experts,
                              local_weights=True)
    fwd = lambda m=layer: m.forward(wl.x, wl.ids, wl.wts)  # noqa: E731
    fwd()                        # the ring filled once (mode 2 reads it as left)
    torch.cuda.synchronize()
    layer.check()
    for v in variants:
        layer.configure(**parse_variant(v))
        layer.err_acc.zero_()
        try:
            fwd()
            torch.cuda.synchronize()
            layer.check()
            step = capture_graph(fwd)
            ts = time_events(step, wl.refresh, iters, warmup)
            torch.cuda.synchronize()
            layer.check()
            del step
        except Exception as exc:  # noqa: BLE001 - report and go on to the next variant
            print(f"{model} {v}: FAILED {type(exc).__name__}: {exc}", flush=True)
            continue
        res[v] = statistics.median(ts)
        print(f"{model} EP 8, 4096 tokens, uniform: gluon {precision} [{v}]: {res[v]:.3f} ms"
              + (f" ({ref_ms / res[v]:.2f}x bf16 {ref_ms:.3f} ms)" if ref_ms else ""),
              flush=True)
    sched = layer.schedule(wl.ids)
    parts = {"part schedule": lambda m=layer: m.schedule(wl.ids),
             "part epilogue": lambda m=layer, s=sched: m.epilogue(wl.wts, s)}
    for name, fn in parts.items():      # where a pass's time goes besides the kernel
        step = capture_graph(fn)
        res[name] = statistics.median(time_events(step, wl.refresh, iters, warmup))
        print(f"{model} EP 8, 4096 tokens, uniform: gluon {precision} {name}: {res[name]:.3f} ms",
              flush=True)
        del step
    del layer, fwd, sched
    torch.cuda.empty_cache()
    return res


DEFAULT_VARIANTS = "default"


def main(argv: list[str]) -> int:
    from mok_model.cli import doc_parser, int_at_least, run_tool

    p = doc_parser("benchmarks/gluon_fp8_mok.py", __doc__)
    p.add_argument("--models", default="kimi-k2,glm-5", help="model presets to time")
    p.add_argument("--checks", default=",".join(CHECK_SHAPES),
                   help=f"check shapes, of {', '.join(CHECK_SHAPES)}")
    p.add_argument("--variants", default=DEFAULT_VARIANTS,
                   help="comma list of timed variants (parse_variant), e.g. default,comm=16,"
                        "mode=comm,mode=compute,join=300+cu2+ys")
    p.add_argument("--check-variants", default=None,
                   help="variants checked (default: every distinct code path of --variants "
                        "in mode 0, comm 16)")
    p.add_argument("--baseline", action="store_true",
                   help="time the Triton BF16 megakernel in the same run (the speed ratios "
                        "are printed only then)")
    p.add_argument("--iters", type=int_at_least(1), default=20)
    p.add_argument("--warmup", type=int_at_least(0), default=5)
    p.add_argument("--precision", default="fp8", choices=tuple(PASSES),
                   help="the pass's operands: fp8 (GluonFP8MoK) or bf16 (GluonBF16MoK)")
    p.add_argument("--compile-only", action="store_true")
    p.add_argument("--no-time", action="store_true")
    return run_tool(p, _run, argv)


def _run(a) -> int:
    """Check the flags, then compile, check and time (module docstring)."""
    from mok_kernels.routing import shape_of
    from mok_model.errors import MokInputError

    for flag, text in (("--variants", a.variants), ("--check-variants", a.check_variants),
                       ("--checks", a.checks), ("--models", a.models)):
        items = text.split(",") if text is not None else []
        if "" in items:
            raise MokInputError(f"{flag} {text!r}: a comma list with no empty elements is required")
        twice = sorted({x for x in items if items.count(x) > 1})
        if twice:
            raise MokInputError(f"{flag} {text!r} names {twice[0]!r} twice: each one once")
    for flag, given, other in (("--baseline", a.baseline, "--compile-only"),
                               ("--no-time", a.no_time, "--compile-only"),
                               ("--baseline", a.baseline, "--no-time")):
        if given and getattr(a, other[2:].replace("-", "_")):
            raise MokInputError(f"{flag} with {other}: {other} times nothing; drop {flag}")
    variants = a.variants.split(",")
    cfgs = [parse_variant(v) for v in variants]
    checks_given = ([parse_variant(v) for v in a.check_variants.split(",") if v]
                    if a.check_variants is not None else None)
    if a.precision == "bf16":
        for c in cfgs + (checks_given or []):
            if c["cu"] != 1 or c["qv"] != 0:
                raise MokInputError(f"--precision bf16: cu={c['cu']}, qv={c['qv']} are the FP8 "
                                    f"copies' quantizing knobs; the BF16 pass copies rows as "
                                    f"they are (cu1, qv=0 only)")
    names = [s for s in a.checks.split(",") if s]
    for name in names:
        if name not in CHECK_SHAPES:
            raise MokInputError(f"--checks {name!r}: one of {', '.join(CHECK_SHAPES)}")
    for model in [m for m in a.models.split(",") if m]:
        sh = shape_of(model)       # an unknown preset is named here
        why = refusal(sh.hidden, sh.inter, sh.shared, sh.experts, 8)
        if why:
            raise MokInputError(f"--models {model} (timed at EP 8): {why}")
    if gluon is None:
        raise MokInputError("needs Triton with Gluon (triton.experimental.gluon)")
    if a.compile_only:
        builds = sorted({(c["cu"], c["ys"], c["qv"]) for c in cfgs} | {(1, False, 0)})
        return 0 if print_compile(builds, a.precision == "bf16") else 1
    if checks_given is not None:
        checks = checks_given
    else:
        seen = {}
        for c in [parse_variant("default")] + cfgs:
            if c["mode"] == 0:
                seen.setdefault(check_key(c), dict(c, comm=16))
        checks = list(seen.values())
    failed = []
    for name in names:
        failed += run_check(name, checks, precision=a.precision)
    bad = {key for key, _ in failed}
    if failed:
        print(f"CHECK FAILED ({len(failed)}): " + "; ".join(t for _, t in failed),
              file=sys.stderr, flush=True)
    checked = {check_key(c) for c in checks}
    if not a.no_time:
        ok_variants = []
        for v, c in zip(variants, cfgs):
            key = check_key(c)
            if c["mode"] != 1 and (key in bad or check_key(parse_variant("default")) in bad
                                   or key not in checked):
                print(f"{v}: not timed (its code path failed or was not checked)", flush=True)
            else:
                ok_variants.append(v)
        for model in [m for m in a.models.split(",") if m]:
            time_model(model, ok_variants, a.iters, a.warmup, a.baseline, a.precision)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
