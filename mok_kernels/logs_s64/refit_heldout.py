"""A refit's parameters against the shipped ones on held-out drawn-seed runs (no fit read them):
analytic MAPE, max, signed median by dispatch, Spearman-free regret among each workload's measured
settings (calibration.registered.pick_regrets: ties in the tuner's grid order), pooled and per
file (session 64, the 2-core CPU box).

    PYTHONPATH=.:mok_kernels/logs_s60 python mok_kernels/logs_s64/refit_heldout.py HARDWARE NEW.json FILE ...
"""
import sys

from mok_model.params import load_params
from registered_drawn import compare

hw, new = sys.argv[1], sys.argv[2]
compare((("shipped", load_params(None, hw)), ("refit", load_params(new, hw))), sys.argv[3:])
