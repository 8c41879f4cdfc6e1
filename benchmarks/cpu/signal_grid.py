"""Both engines on the signalling grid: push / pull per operator x minibatch x EP, one line each.

    PYTHONPATH=. python benchmarks/cpu/signal_grid.py [OUT.json]

GB300 NVL72 (the published design: one writer signals, push_release_lanes 0) with kimi-k2 at EP
8 / 16 / 32, and h200-hgx8 (our kernel: each comm program signals, lanes 1) with qwen3-30b-a3b
at EP 4 / 8; 2,048 tokens per GPU, 32 comm SMs, minibatch 256 / 1,024 / 4,096, every
dispatch x combine mode. Prints analytic ms, simulator ms and their difference (docs/sim-study.md
"O"); about 5 minutes on the 2-core box."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from mok_model.predict import predict  # noqa: E402
from mok_model.presets import load_hardware, load_model  # noqa: E402
from mok_model.scenario import Config, Scenario  # noqa: E402

GRID = (("gb300-nvl72", "kimi-k2", (8, 16, 32)), ("h200-hgx8", "qwen3-30b-a3b", (4, 8)))
MODES = (("pull", "push"), ("push", "push"), ("pull", "pull"), ("push", "pull"))


def main(argv: list[str]) -> None:
    rows = []
    for hw, model, eps in GRID:
        for ep in eps:
            scn = Scenario(load_hardware(hw), load_model(model), ep=ep, tokens=2048)
            for mb in (256, 1024, 4096):
                for d, k in MODES:
                    cfg = Config(dispatch=d, combine=k, minibatch=mb, comm_sms=32,
                                 macrobatch=10 ** 6, capacity=1.0)
                    a = predict(scn, cfg, engine="analytic").latency_ms
                    s = predict(scn, cfg, engine="sim").latency_ms
                    rows.append({"hardware": hw, "model": model, "ep": ep, "minibatch": mb,
                                 "dispatch": d, "combine": k, "analytic_ms": a, "sim_ms": s})
                    print(f"{hw:12s} {model:14s} EP{ep:3d} mb{mb:5d} {d}/{k}: analytic {a:8.3f} "
                          f"sim {s:8.3f} ({(s - a) / a * 100:+6.1f}%)", flush=True)
    if argv:
        Path(argv[0]).write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
