"""Device job: time megakernel tile/knob variants against the grouped-GEMM floor (prints a table).

    PYTHONPATH=. python3 -m mok_kernels.tune_job [--tokens 1024] [--models glm-5,kimi-k2]
"""

from __future__ import annotations

import sys

import torch

from mok_model.cli import distinct, doc_parser, number_list, run_tool
from mok_model.errors import MokInputError

from . import require_cuda
from .bench import Workload, check_fits, run_gemm_only, run_mok, run_torch_grouped, stats
from .routing import shape_of

BASE = dict(dispatch="pull", combine="push", minibatch=4096, comm_sms=16, macrobatch=131072,
            capacity=0.5)
VARIANTS = {
    "A default(fuse_gu)": {},
    "B no fuse_gu": dict(fuse_gu=False),
    "C fuse mb2048": dict(minibatch=2048),
    "D fuse c32": dict(comm_sms=32),
    "E fuse skip_copy": dict(skip_copy=True),
    "F fuse st3": dict(num_stages=3),
}


def main(argv: list[str]) -> int:
    p = doc_parser("python -m mok_kernels.tune_job", __doc__)
    p.add_argument("--tokens", default="1024")
    p.add_argument("--models", default="glm-5,kimi-k2")
    p.add_argument("--variants", default=None, help="letters of the variants to run (default all)")
    return run_tool(p, run, argv)


def run(a) -> int:
    """Time each variant on each workload (flags checked first; a CUDA GPU)."""
    tokens = number_list(a.tokens, "--tokens")
    distinct("--tokens", a.tokens)
    for model in distinct("--models", a.models):
        shape_of(model)
        for n in tokens:
            check_fits(model, 16, n)    # the job's emulated EP 16
    letters = {v[0] for v in VARIANTS}
    if a.variants is not None and (not a.variants or set(a.variants) - letters):
        raise MokInputError(f"--variants {a.variants!r}: letters of {''.join(sorted(letters))}")
    require_cuda()
    names = [v for v in VARIANTS if a.variants is None or v[0] in a.variants]
    rows = []
    for model in a.models.split(","):
        for n in tokens:
            wl = Workload(model, 16, n, "uniform", 0, 0)
            g = stats(run_gemm_only(wl, 10, 3))["median"]
            tg = stats(run_torch_grouped(wl, 10, 3))["median"]
            for name in names:
                knobs = dict(BASE, **VARIANTS[name])
                try:
                    t, bd = run_mok(wl, knobs, 10, 3, True, False)
                    m = stats(t)["median"]
                except Exception as exc:  # report and continue
                    print(f"{model} {n} {name}: FAILED {exc!r}"[:300])
                    continue
                rows.append((model, n, name, m, g, tg, wl.flops() / m / 1e9))
                print(f"{model:8s} {n:5d} {name:22s} mok {m:.3f} gemm {g:.3f} tg {tg:.3f} "
                      f"mok/gemm {m / g:.2f} tg/mok {tg / m:.2f} {wl.flops() / m / 1e9:.0f} TF/s",
                      flush=True)
            del wl
            torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
