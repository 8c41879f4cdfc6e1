"""mok: an analytic model and a simulator of MoE layers on GPU fabrics (the package's version is
here, and pyproject.toml reads it from here)."""

__version__ = "0.1.0"

import time as _time

# when this process first imported the package: a file of its changed later may not be the code
# that runs (mok_kernels/knobs.py keeps no knob answer across processes then)
IMPORTED_AT = _time.time()
