"""The studies by name: each is a module of this package with TITLE and run(opts) -> Outputs."""

from __future__ import annotations

import importlib
from types import ModuleType

from mok_model.errors import MokInputError

STUDIES: dict[str, str] = {
    "push-vs-pull": "push_vs_pull",
    "minibatch-sweep": "minibatch_sweep",
    "ring-buffer": "ring_buffer",
    "host-overhead": "host_overhead",
    "ep-table": "ep_table",
    "layer-throughput": "layer_throughput",
    "scale-up-domains": "scale_up_domains",
    "end-to-end": "end_to_end",
    "predicted-vs-measured": "predicted_vs_measured",
}


def study(name: str) -> ModuleType:
    """The module of a study, by its CLI name."""
    if name not in STUDIES:
        raise MokInputError(f"unknown study {name!r}; choose one of {list(STUDIES)} (mok study --list)")
    return importlib.import_module(f"studies.{STUDIES[name]}")
