"""The shipped model at the knobs of s54_mb_gemm.py's pass column (pull / push, 32 comm SMs, EP 8
x 4,096, uniform) against the measured table.

    PYTHONPATH=. python mok_kernels/logs_s54/mb_gemm_vs_model.py HARDWARE TABLE.txt
"""

import re
import sys

import numpy as np

from mok_model.analytic import mok_config_terms
from mok_model.params import load_params
from mok_model.presets import load_hardware, load_model
from mok_model.scenario import Config, Scenario

ROW = re.compile(r"\| (\S+) \| (?:(\d) \| )?(\d+) \| [\d.]+ \| [\d.]+ \| ([\d.]+) \|")


def main(hardware: str, table: str) -> None:
    p = load_params(None, hardware)
    for line in open(table):
        m = ROW.match(line)
        if not m:
            continue
        name, lag, mb, measured = m.group(1), int(m.group(2) or 1), int(m.group(3)), float(m.group(4))
        scn = Scenario(model=load_model(name), hardware=load_hardware(hardware), ep=8, tokens=4096,
                       list_lag=lag)
        cfg = Config(dispatch="pull", combine="push", minibatch=mb, comm_sms=32, macrobatch=131072,
                     capacity=1.0)
        terms = mok_config_terms(scn, p, cfg, refuse_overflow=False)["terms"]
        pred = sum(float(np.asarray(v).ravel()[0]) for v in terms.values()) * 1e3
        print(f"{name:16s} lag {lag} mb {mb:5d} pass measured {measured:.3f} predicted {pred:.3f} "
              f"{100 * (pred / measured - 1):+.1f}%")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
