"""push_lanes_bound on and off against held-out drawn-seed runs (session 63, the 2-core CPU box):
per run file, analytic MAPE, max, signed median by dispatch and the tuner's regret among each
workload's measured settings, with the shipped parameters and with push_lanes_bound 0 (the model
before session 63). No parameter was fitted on these files.

    PYTHONPATH=.:mok_kernels/logs_s60 python mok_kernels/logs_s63/lanes_heldout.py HARDWARE FILE ...
"""
import sys

from mok_model.params import load_params
from registered_drawn import compare

shipped = load_params(None, sys.argv[1])
compare((("lanes 0", shipped.with_values(push_lanes_bound=0.0)), ("lanes 1", shipped)), sys.argv[2:])
