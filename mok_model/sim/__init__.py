"""Discrete-event simulator (SimPy) of one MoE layer pass: MoK and the baseline systems."""

from .engine import simulate
from .fabric import SimInvariantError

__all__ = ["simulate", "SimInvariantError"]
