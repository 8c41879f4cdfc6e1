"""Discrete-event simulator (SimPy) of one MoE layer pass: MoK and the baseline systems.

The engine (and SimPy) load on first use, so the analytic model, the presets' topology checks
(sim/network.py) and the kernel's knob choice run without SimPy installed."""

__all__ = ["simulate", "SimInvariantError"]


def __getattr__(name: str):
    if name == "simulate":
        from .engine import simulate
        return simulate
    if name == "SimInvariantError":
        from ..errors import SimInvariantError
        return SimInvariantError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
