"""Session 74: push against pull dispatch in the whole pass (GEMMs run), measured on one H100 in
session 73 (narrow_diag's "MoK" lines of logs_s73/dev/s73t, s73q; today's "shares" loop) beside
h100-1's shipped analytic pass times, with push_copy_scale 1 (shipped), 0.8 and 0.6 (no refit):
the model's push penalty in the pass is 0-15 us where the card's is 10-38 us, and a slower push
copy closes it only where the copies are on the critical path (the 2-core CPU box).

    PYTHONPATH=. python mok_kernels/logs_s74/push_pass.py   (push_pass.txt)
"""
import sys

sys.path.insert(0, "mok_kernels/logs_s73")
from push_copies import CASES, mok_times, scenario  # noqa: E402

from calibration.checks import shipped_params  # noqa: E402
from mok_model.analytic import mok_config_terms  # noqa: E402
from mok_model.scenario import Config  # noqa: E402


if __name__ == "__main__":
    base = shipped_params("h100-1")
    print("case: measured push - pull (us); read push - pull (us) at push_copy_scale 1 / 0.8 / 0.6")
    for log, name, ep, tokens, mb, cs, runs in CASES:
        t, scn, read = mok_times(log), scenario(name, ep, tokens, runs), []
        for s in (1.0, 0.8, 0.6):
            p = base.with_values(push_copy_scale=s)
            ms = {d: mok_config_terms(scn, p, Config(dispatch=d, combine="push", minibatch=mb, comm_sms=cs,
                                                     macrobatch=131072, capacity=1.0), False)["total"][0]
                  for d in ("pull", "push")}
            read.append(f"{1e6 * (ms['push'] - ms['pull']):+.1f}")
        print(f"{name} EP {ep} x {tokens}, {mb} rows, {cs} comm SMs: {1e3 * (t['push'] - t['pull']):+.0f}; "
              f"read {' / '.join(read)}")
