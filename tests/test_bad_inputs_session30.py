"""Bad input left unfixed by session 29's fuzzing (README "Session 29: bad input"), fixed in
session 30: absurd but finite hardware numbers, run records with a partial model shape, repeated
single-value flags, tools printing `mok: error:`, and `calibrate --base` naming no hardware.
Each case is one line naming the value and the rule, exit status 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from mok_model.cli import main
from mok_model.errors import MokInputError
from mok_model.presets import HARDWARE_MAX, hardware_names, load_hardware

REPO = Path(__file__).resolve().parents[1]
W = ["--hardware", "gb300-nvl72", "--model", "kimi-k2", "--ep", "16", "--tokens", "64"]


def _one_line(rc: int, err: str, prefix: str, want: str) -> None:
    assert rc == 2, (rc, err)
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert err.startswith(prefix), err
    assert want in err, err


def _gb300_body() -> str:
    hw = (REPO / "mok_model/presets/hardware.toml").read_text()
    block = hw[hw.index("[gb300-nvl72]"):hw.index("[gb300-nvl72.sources]")]
    return block.split("\n", 1)[1]


# ---- 1. hardware numbers in a plausible range ----

ABSURD_HARDWARE = [
    ("link_gbps = 900.0", "link_gbps = 1e30", "link_gbps=1e+30 must be at most 1,000,000 GB/s"),
    ("link_latency_us = 0.6", "link_latency_us = 1e300",
     "link_latency_us=1e+300 must be at most 10,000 us"),
    ("sms = 148", "sms = 1000000000000", "sms=1000000000000 must be at most 16,384 SMs"),
    ("bf16_tflops = 2500.0", "bf16_tflops = 1e9", "bf16_tflops=1000000000.0 must be at most"),
    ("hbm_tbps = 8.0", "hbm_tbps = 80000.0", "hbm_tbps=80000.0 must be at most 10,000 TB/s"),
    ("hbm_gb = 288.0", "hbm_gb = 1e12", "hbm_gb=1000000000000.0 must be at most 1,000,000 GB"),
    ("domain_size = 72", "domain_size = 1000000000", "domain_size=1000000000 must be at most"),
    ("launch_us = 21.7", "launch_us = 1e7", "launch_us=10000000.0 must be at most 10,000 us"),
    ("scaleout_gbps = 100.0", "scaleout_gbps = 1e30", "scaleout_gbps=1e+30 must be at most"),
    ("switch_planes = 18", "switch_planes = 100000", "switch_planes=100000 must be at most 4,096"),
    ("rail_oversubscription = 1.0", "rail_oversubscription = 1e9",
     "rail_oversubscription=1000000000.0 must be at most 1,024"),
]


@pytest.mark.parametrize("old, new, want", ABSURD_HARDWARE, ids=[n for _, n, _ in ABSURD_HARDWARE])
def test_absurd_hardware_numbers_are_refused(old, new, want, tmp_path, capsys):
    body = _gb300_body()
    assert old in body
    path = tmp_path / "absurd.toml"
    path.write_text(body.replace(old, new))
    with pytest.raises(MokInputError, match="plausible range"):
        load_hardware(str(path))
    rc = main(["predict", "--hardware", str(path), *W[2:]])
    _one_line(rc, capsys.readouterr().err, "mok: error: hardware 'absurd': ", want)


@pytest.mark.parametrize("change, want", [({"sms": 132.5}, "sms=132.5 must be an integer"),
                                          ({"domain_size": 8.0}, "domain_size=8.0 must be an integer"),
                                          ({"link_gbps": 1e30}, "link_gbps=1e+30 must be at most"),
                                          ({"switch_planes": True}, "switch_planes=True must be an integer")])
def test_what_if_copies_are_checked_the_same_way(change, want):
    with pytest.raises(MokInputError, match=want.replace("+", r"\+").replace(".", r"\.")):
        load_hardware("h200-hgx8").with_(**change)


def test_shipped_presets_and_the_studies_what_ifs_are_in_range():
    from studies.common import domain_variant
    for name in hardware_names():
        hw = load_hardware(name)
        for key, (high, _) in HARDWARE_MAX.items():
            assert getattr(hw, key) <= high / 10, (name, key)     # a margin of 10x at least
        domain_variant(hw, 1024, 4.0)           # the scale-up-domains study's largest point
