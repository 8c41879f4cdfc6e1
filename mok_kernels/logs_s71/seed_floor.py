"""Session 71: the drift regret floor (calibration.noise drift_regret) of each registered drawn
seed's sweep on the H100, with the H100's run-to-run drift per token band from seed 22 measured
twice (drawn22 and drawn22_rerun), beside the regret the registered predictions scored.

    PYTHONPATH=. python mok_kernels/logs_s71/seed_floor.py
"""

from calibration.noise import drift_regret, drift_sd
from calibration.rerun import repeated
from mok_model.records import read_records

RUNS = "calibration/runs/h100"
twice = read_records([f"{RUNS}/drawn22.jsonl.gz", f"{RUNS}/drawn22_rerun.jsonl.gz"])
sd = drift_sd(repeated([r for r in twice if r["system"] == "mok"]))
print("H100 drift SD by band (pairs):", {k: f"{100 * v:.2f}% ({n})" for k, (v, n) in sd.items()})
for seed in range(25, 38):
    name = f"{RUNS}/drawn{seed}.jsonl" + (".gz" if seed < 35 else "")
    recs = read_records([name])
    out = drift_regret(recs, sd, min_configs=2)
    bands = ", ".join(f"{k} {100 * v['mean']:.2f}/{100 * v['max']:.1f}%" for k, v in out["bands"].items())
    print(f"seed {seed}: {out['workloads']} workloads, floor mean {100 * out['mean']:.2f}%, expected max "
          f"{100 * out['max']:.1f}%, above 3%: {100 * out['share_over']['0.03']:.1f}% ({bands}; "
          f"no SD: {out['no_sd']})")
