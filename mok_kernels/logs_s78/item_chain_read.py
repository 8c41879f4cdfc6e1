"""Session 78: the held-out drawn seeds, leaving out the seeds whose traced workloads suggested
the item-chain floor (28 and 37), by the shipped parameters and the code checked out: main, and
branch s78-item-chain (mok_model/analytic.py item_chain) for the comparison (the 2-core CPU
box).

    PYTHONPATH=.:mok_kernels/logs_s60:mok_kernels/logs_s75 python mok_kernels/logs_s78/item_chain_read.py
"""
import heldout_read

from calibration.checks import shipped_params

heldout_read.HELD_OUT = {
    "h100-1": ["calibration/runs/h100/drawn2[5-79].jsonl*", "calibration/runs/h100/drawn3[0-689].jsonl*",
               "calibration/runs/h100/drawn4[0-9].jsonl*"],
    "h200-1": ["calibration/runs/h200_drawn/drawn3[4-689].jsonl*", "calibration/runs/h200_drawn/drawn4[0-9].jsonl*"]}
for hw in ("h100-1", "h200-1"):
    print(f"{hw}, seeds 28 and 37 left out: {heldout_read.read(hw, shipped_params(hw))}", flush=True)
