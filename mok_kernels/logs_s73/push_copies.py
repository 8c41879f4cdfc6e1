"""Session 73: the push dispatch's extra time over pull, measured on one H100 with the GEMMs
skipped (narrow_diag's "copies alone": logs_s73/dev/s73t, s73q; today's "shares" loop) beside
what h100-1's shipped parameters read as the dispatch's comm-SM work (analytic mok_terms'
work["dispatch"]), per case (the 2-core CPU box).

    PYTHONPATH=. python mok_kernels/logs_s73/push_copies.py   (push_copies.txt)
"""
import re
from dataclasses import replace

from calibration.checks import shipped_params
from mok_model.analytic import mok_config_terms
from mok_model.records import read_records, record_scenario
from mok_model.presets import load_hardware, load_model
from mok_model.scenario import Config, Scenario

D = "mok_kernels/logs_s73/dev"
# (log, workload as narrow_diag named it, run file holding a record of the drawn shape or None)
R30, R34 = "calibration/runs/h100/drawn30.jsonl.gz", "calibration/runs/h100/drawn34.jsonl.gz"
CASES = [(f"{D}/s73t/h1024.log", "syn30-h1024-i576-e128-k5-s1", 8, 640, 512, 64, R30),
         (f"{D}/s73t/h3072.log", "syn30-h3072-i320-e64-k3", 4, 640, 4096, 32, R30),
         (f"{D}/s73t/h3584.log", "syn34-h3584-i384-e128-k3", 4, 2048, 4096, 32, R34),
         (f"{D}/s73q/qwen3-30b-a3b.log", "qwen3-30b-a3b", 8, 640, 512, 32, None),
         (f"{D}/s73q/gpt-oss-120b.log", "gpt-oss-120b", 8, 640, 512, 32, None),
         (f"{D}/s73q/kimi-k2.log", "kimi-k2", 8, 640, 512, 32, None)]


def mok_times(log: str, mode: str = "") -> dict:
    """{"pull" | "push" (the shares loop): ms} of the log's first "MoK<mode>" line of each
    (mode "": the whole pass; ", copies alone": the GEMMs skipped)."""
    out = {}
    for line in open(log):
        m = re.match(r"\s+comm\s+\d+ (pull|push)( shares)? MoK" + re.escape(mode) + r"\s+([\d.]+) ms", line)
        if m:
            out.setdefault(m.group(1), float(m.group(3)))
    return out


def copies_alone(log: str) -> dict:
    """{"pull" | "push": ms} of the log's "MoK, copies alone" lines."""
    return mok_times(log, ", copies alone")


def scenario(name, ep, tokens, runs) -> Scenario:
    """The case's scenario on h100-1, emulated peers (a preset, or a drawn shape's record's)."""
    if runs is None:
        return Scenario(load_hardware("h100-1"), load_model(name), ep, tokens)
    rec = next(r for r in read_records([runs]) if r["model"]["name"] == name and r["system"] == "mok")
    return replace(record_scenario(rec), ep=ep, tokens=tokens, routing="uniform", seed=0)


if __name__ == "__main__":
    p = shipped_params("h100-1")
    print("case: measured copies alone pull / push (ms), push - pull (us); read dispatch work "
          "pull / push (us), push - pull (us)")
    for log, name, ep, tokens, mb, cs, runs in CASES:
        t = copies_alone(log)
        scn = scenario(name, ep, tokens, runs)
        work = {d: mok_config_terms(scn, p, Config(dispatch=d, combine="push", minibatch=mb, comm_sms=cs,
                                                   macrobatch=131072, capacity=1.0), False)["work"]["dispatch"][0] * 1e6
                for d in ("pull", "push")}
        print(f"{name} EP {ep} x {tokens}, {mb} rows, {cs} comm SMs (H {scn.model.hidden}): "
              f"{t['pull']:.3f} / {t['push']:.3f}, {1e3 * (t['push'] - t['pull']):+.0f}; read "
              f"{work['pull']:.1f} / {work['push']:.1f}, {work['push'] - work['pull']:+.1f}")
