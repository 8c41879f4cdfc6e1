"""Session 72: knob_bias.py's within-workload error of the push-dispatch runs alone, by tokens per
GPU (<= 640, above), EP and hidden size (<= 3,072, above), on the held-out drawn seeds (H100
25-38, H200 28-36), shipped parameters (the 2-core CPU box).

    PYTHONPATH=. python mok_kernels/logs_s72/push_bias.py   (output: push_bias.txt)
"""
from knob_bias import band, drawn_errors, print_groups, within
from mok_model.records import record_scenario

SEEDS = {"h100-1": ["calibration/runs/h100/drawn2[5-9].jsonl*", "calibration/runs/h100/drawn3[0-9].jsonl*"],
         "h200-1": ["calibration/runs/h200_drawn/drawn2[89].jsonl*",
                    "calibration/runs/h200_drawn/drawn3[0-9].jsonl*"]}


def push_key(rec: dict):
    if rec["config"]["dispatch"] != "push":
        return None
    return band(rec), rec["ep"], "H<=3072" if record_scenario(rec).model.hidden <= 3072 else "H>3072"


if __name__ == "__main__":
    for hw, patterns in SEEDS.items():
        print(f"{hw}: push dispatch, within-workload error by tokens, EP, hidden")
        print_groups(within(drawn_errors(hw, patterns)[1], push_key),
                     lambda k: f"  {k[0]:>5} EP {k[1]:>2} {k[2]:>7}")
