"""mok: an analytic model and a simulator of MoE layers on GPU fabrics (the package's version is
here, and pyproject.toml reads it from here)."""

__version__ = "0.1.0"
