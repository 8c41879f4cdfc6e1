"""The published GB300 NVL72 rows (docs/sources.md, "Published layer latencies") as mok-run/1 records.

Each row gives two records: the MoK latency and the best baseline's ("N" = nccl-torch).
The table does not state the precision or the knobs: the records say bf16 (an assumption, stated
in each note) and leave the knobs to the tuner (empty config).
"""

from __future__ import annotations

import json
from pathlib import Path

from mok_model.presets import MODEL_ALIASES

BASELINE_SYSTEMS = {"N": "nccl-torch", "D": "deepep", "H": "hybridep"}
DEFAULT_SOURCE = Path(__file__).resolve().parents[2] / "shared" / "data" / "published.json"


def published_records(path: str | Path = DEFAULT_SOURCE) -> list[dict]:
    doc = json.loads(Path(path).read_text())
    out = []
    for i, row in enumerate(doc["rows"]):
        model = MODEL_ALIASES.get(row["model"], row["model"])
        for system, ms in (("mok", row["mok_ms"]),
                           (BASELINE_SYSTEMS[row["best_baseline"]], row["best_baseline_ms"])):
            out.append({
                "schema": "mok-run/1",
                "id": f"published-table1-row{i}-{system}",
                "date": "2026-01-01",
                "hardware": {"preset": "gb300-nvl72", "gpu": "NVIDIA GB300", "gpus": 72, "sms": 148,
                             "fabric": "nvlink5", "driver": "not published"},
                "software": {"torch": "not published", "triton": "not published", "commit": "not published"},
                "system": system, "model": model, "ep": row["ep"], "emulated_peers": False,
                "tokens": row["tokens"], "pass": row["pass"], "precision": "bf16",
                "config": {}, "routing": {"kind": "uniform", "seed": 0},
                "latency_ms": {"median": ms}, "breakdown_ms": {}, "source": "published",
                "note": (f"{doc['source']}; {row['model']} ({doc['model_shapes'][row['model']]['assumed_geometry_of']} "
                         f"geometry). Precision not stated in the table: bf16 assumed. Knobs not "
                         f"published: left to the tuner."),
            })
    return out
