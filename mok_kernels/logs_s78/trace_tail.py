"""Session 78: the traced passes of benchmarks/device/s78_trace.sh read against the item chain
(branch s78-item-chain's analytic.item_chain, computed here from the GEMM table): for each
traced setting, when the last comm program's rows were in, when the last item ended, the tail
between them, and one row tile's gate/up then down item on the compute SMs by h100-1's GEMM
table (the 2-core CPU box).

    PYTHONPATH=. python mok_kernels/logs_s78/trace_tail.py mok_kernels/logs_s78/dev/s78u/*.log \
        mok_kernels/logs_s78/dev/s78t/s37_1024.log
"""
import re
import sys

from mok_model.gemm_table import _mechanism_inputs, row_tile_items
from mok_model.params import load_params
from mok_model.records import workload_scenario

p = load_params(None, "h100-1")


def item_chain(scn, sms: float) -> float:
    """One row tile's gate/up item then its down item on `sms` compute SMs: the table's item
    cost plus FLOPs at its mechanism's rate, (all / sms)^(1 - sm_scaling) faster, times its
    residual at the shape (seconds)."""
    mech, S = p.gemm_table.lookup, scn.hardware.sms
    rate = mech["tensor_eff"] * scn.hardware.tflops("bf16") * 1e12 / S * (S / sms) ** (1 - p["sm_scaling"])
    (_, f_gu), (_, f_dn) = row_tile_items(scn, scn.model.expert_width)
    return (2e-6 * mech["item_us"] + (f_gu + f_dn) / rate) * _mechanism_inputs(p.gemm_table, scn)[1]
LINE = re.compile(r"comm +(\d+) (\w+) traced: \d+ programs \(\d+ comm\), (\d+) minibatches; .*"
                  r"comm done ([\d.]+) us; compute [\d.]+-([\d.]+) us")
print(f"{'run':14s} {'comm SMs':>8s} {'M':>3s} {'rows in':>8s} {'end':>7s} {'tail':>6s} {'chain':>6s}  "
      f"(us; three passes each)")
for path in sys.argv[1:]:
    head = open(path).readline()
    m = re.match(r"(\S+):(\d+):(\d+): library", head)
    if not m:
        continue
    model, ep, tokens = m.group(1), int(m.group(2)), int(m.group(3))
    routing, seed = ("zipf:1.2", 28) if "seed28" in model else ("uniform", 37)
    scn = workload_scenario("h100-1", model, ep, tokens, "fwd", "bf16", routing, seed)
    for line in open(path):
        t = LINE.search(line)
        if t:
            cc, M, rows_in, end = int(t.group(1)), int(t.group(3)), float(t.group(4)), float(t.group(5))
            chain = item_chain(scn, float(scn.hardware.sms - cc)) * 1e6
            name = path.split("/")[-1].removesuffix(".log")
            print(f"{name:14s} {cc:8d} {M:3d} {rows_in:8.1f} {end:7.1f} {end - rows_in:6.1f} {chain:6.1f}")
