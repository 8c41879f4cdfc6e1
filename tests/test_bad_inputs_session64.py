"""Session 64's bad inputs: a layer whose expert weights cannot fit one GPU's HBM is refused by
predict, simulate and tune (one line, exit 2) instead of given a latency."""

from __future__ import annotations

import pytest

from mok_model.cli import main

HUGE = """name = "huge"
hidden = 16384
expert_width = 16384
routed_experts = 512
top_k = 8
shared_experts = 0
shared_width = 0
layers = 1
moe_layers = 1
source = "a test layer: 512 experts of 16384 x 16384"
"""


@pytest.mark.parametrize("cmd", ["predict", "simulate", "tune"])
def test_weights_that_cannot_fit_are_refused(tmp_path, capsys, cmd):
    model = tmp_path / "huge.toml"
    model.write_text(HUGE)
    args = [cmd, "--hardware", "h200-1", "--model", str(model), "--tokens", "1024"]
    assert main([*args, "--ep", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--ep 1 (huge, bf16): one GPU's expert weights alone need 824.6 GB" in err[0]
    assert "141 GB of h200-1's HBM" in err[0]
    assert main([*args, "--ep", "1", "--precision", "fp8"]) == 2     # 412 GB at 1 byte a weight
    assert "fp8): one GPU's expert weights alone need 412.3 GB" in capsys.readouterr().err
    if cmd == "predict":
        assert main([*args, "--ep", "8"]) == 0                      # 103 GB a GPU: it fits
