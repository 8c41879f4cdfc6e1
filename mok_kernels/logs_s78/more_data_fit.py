"""Session 78: does more H100 data move h100-1's ranking? h100-1's stage 2 refitted on its own
pass runs (transfer.HOPPER_PASS_RUNS) plus the held-out seeds 25-34 (`mok calibrate ... --base
mok_model/params/h100-1.json --band none`, the command in more_data_fit.txt), then the shipped
file and the refit read on seeds 35-44, which neither fit read (the 2-core CPU box).

    PYTHONPATH=.:mok_kernels/logs_s60:mok_kernels/logs_s75 python mok_kernels/logs_s78/more_data_fit.py REFIT.json
"""
import sys

import heldout_read

from calibration.checks import shipped_params
from mok_model.params import read_params

heldout_read.HELD_OUT["h100-1"] = ["calibration/runs/h100/drawn3[5-9].jsonl*",
                                   "calibration/runs/h100/drawn4[0-4].jsonl*"]
for name, params in (("shipped h100-1", shipped_params("h100-1")),
                     ("refit with seeds 25-34", read_params(sys.argv[1]))):
    print(f"{name}: {heldout_read.read('h100-1', params)}")
