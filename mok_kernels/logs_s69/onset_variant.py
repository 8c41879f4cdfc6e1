"""Session 69: sustain_term.py with another onset of the long-phase term in place of the hinge
max(0, log2(t / t0)): log2(1 + t / t0), smooth and starting earlier. Worse: its loss sits at the
fit's 0.3 bound, and the held-out phases read 5.68 % (H200) and 6.48 % (H100) against the hinge's
5.61 % and 6.40 % (onset_log1p.txt).

    PYTHONPATH=. python mok_kernels/logs_s69/onset_variant.py
"""
import runpy
import sys

import numpy as np

import mok_model.gemm_table as gt


def smooth(seconds, mech: dict):
    """t (1 + loss log2(1 + t / sustain_ms)) where the mechanism has the term."""
    if "sustain_loss" not in mech:
        return seconds
    x = np.asarray(seconds, dtype=np.float64) / (mech["sustain_ms"] * 1e-3)
    return seconds * (1.0 + mech["sustain_loss"] * np.log2(1 + x))


gt.sustained = smooth  # _mechanism_time looks the name up in its module at each call
sys.argv = sys.argv[:1]
runpy.run_path("mok_kernels/logs_s69/sustain_term.py", run_name="__main__")
