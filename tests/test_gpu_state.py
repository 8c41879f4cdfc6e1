"""Records carry the GPU's clock, power and throttle reasons read under their timed iterations
(`gpu_state`, README "Contract extensions"), so a run timed at a power cap can be told apart:
nvidia-smi's answer parsed, the field validated, time_events' probe, and `mok validate`'s note.
On the CPU: the probe is a stand-in process printing what nvidia-smi prints (the format of the
session-67 H100 logs, mok_kernels/logs_s67/dev/*/clocks.csv)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from mok_kernels.bench import (Timings, finish_gpu_state_probe, make_record, parse_gpu_state)
from mok_model.errors import MokInputError
from mok_model.records import read_records, slowed, validate_record


@pytest.mark.parametrize("line, state", [
    ("1980, 1980, 146.52, 700.00, 0x0000000000000000",
     {"sm_mhz": 1980.0, "sm_max_mhz": 1980.0, "power_w": 146.52, "power_limit_w": 700.0,
      "throttle": []}),
    ("1425, 1980, 696.10, 700.00, 0x0000000000000004\n",
     {"sm_mhz": 1425.0, "sm_max_mhz": 1980.0, "power_w": 696.1, "power_limit_w": 700.0,
      "throttle": ["sw_power_cap"]}),
    # fields the GPU does not report are left out; two reasons; a bit mok does not name
    ("[N/A], 1980, [Not Supported], 700.00, 0x0000000000000005",
     {"sm_max_mhz": 1980.0, "power_limit_w": 700.0, "throttle": ["gpu_idle", "sw_power_cap"]}),
    ("1410, 1980, 650, 700, 0x0000000000000800",
     {"sm_mhz": 1410.0, "sm_max_mhz": 1980.0, "power_w": 650.0, "power_limit_w": 700.0,
      "throttle": ["other"]}),
    ("1410, 1980, 650, 700, [N/A]",
     {"sm_mhz": 1410.0, "sm_max_mhz": 1980.0, "power_w": 650.0, "power_limit_w": 700.0}),
    # a warning line first is passed over
    ("WARNING: infoROM is corrupted at gpu 0000:18:00.0\n1980, 1980, 146.52, 700.00, 0x0",
     {"sm_mhz": 1980.0, "sm_max_mhz": 1980.0, "power_w": 146.52, "power_limit_w": 700.0,
      "throttle": []}),
    # nothing usable: no field
    ("", None), ("No devices were found", None), ("1980, 1980, 700", None),
    ("[N/A], [N/A], [N/A], [N/A], [N/A]", None), ("nan, -1, inf, x, zz", None),
])
def test_nvidia_smi_answers_parse_to_what_they_say(line, state):
    assert parse_gpu_state(line) == state
    if state is not None:
        validate_record(_record(state))


def _record(state=None) -> dict:
    times = Timings([1.0, 1.2, 1.1])
    times.gpu_state = state
    return make_record(system="mok", model="kimi-k2", ep=8, tokens=1024,
                       knobs={"dispatch": "pull", "combine": "push", "minibatch": 4096,
                              "comm_sms": 32, "macrobatch": 131072, "capacity": 1.0},
                       routing="uniform", seed=0, times=times, breakdown={}, note="t",
                       hardware={"preset": "h100-1", "gpu": "NVIDIA H100 80GB HBM3", "gpus": 1,
                                 "sms": 132, "fabric": "local-hbm"},
                       software={"torch": "x", "triton": "y", "commit": "z"})


def test_a_record_carries_the_state_its_timing_read_and_none_without_it():
    state = parse_gpu_state("1425, 1980, 696.10, 700.00, 0x4")
    assert _record(state)["gpu_state"] == state and slowed(_record(state))
    assert "gpu_state" not in _record(None) and not slowed(_record(None))
    assert not slowed(_record(parse_gpu_state("1980, 1980, 300, 700, 0x1")))   # idle: not held
    # the cap's bit at the full clock (most capped H200 records of session 68): not held
    assert not slowed(_record(parse_gpu_state("1965, 1980, 610, 700, 0x4")))
    assert slowed(_record(parse_gpu_state("1935, 1980, 610, 700, 0x4")))      # under 98 %
    assert slowed(_record({"throttle": ["sw_power_cap"]}))                      # no clock read
    plain = make_record(system="mok", model="kimi-k2", ep=8, tokens=1024, knobs={},
                        routing="uniform", seed=0, times=[1.0], breakdown={}, note="t",
                        hardware={"preset": "h100-1"}, software={})
    assert "gpu_state" not in plain      # times not from time_events


@pytest.mark.parametrize("state, message", [
    ({}, "gpu_state={} must be a non-empty object"),
    ([1980], "gpu_state=[1980] must be a non-empty object"),
    ({"sm_mhz": -5.0}, "gpu_state.sm_mhz=-5.0 must be a number >= 0"),
    ({"sm_mhz": True}, "gpu_state.sm_mhz=True must be a number >= 0"),
    ({"sm_mhz": "1980"}, "gpu_state.sm_mhz='1980' must be a number >= 0"),
    ({"sm_clock": 1980.0}, "gpu_state.sm_clock=1980.0 is not a gpu_state field"),
    ({"throttle": "sw_power_cap"}, "gpu_state.throttle='sw_power_cap' must be a list of"),
    ({"throttle": ["power_cap"]}, "gpu_state.throttle=['power_cap'] must be a list of"),
])
def test_a_malformed_gpu_state_is_refused_naming_the_field(state, message):
    rec = _record()
    rec["gpu_state"] = state
    with pytest.raises(MokInputError, match=message.replace("[", r"\[").replace("]", r"\]")):
        validate_record(rec)


def test_the_probe_reads_its_process_answer_and_gives_up_on_a_failure_or_a_hang():
    def stand_in(code: str) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True)

    assert finish_gpu_state_probe(stand_in("print('1425, 1980, 696.10, 700.00, 0x4')")) == \
        parse_gpu_state("1425, 1980, 696.10, 700.00, 0x4")
    assert finish_gpu_state_probe(stand_in("import sys; print('x'); sys.exit(6)")) is None
    assert finish_gpu_state_probe(stand_in("import time; time.sleep(30)")) is None   # 2 s cap
    assert finish_gpu_state_probe(None) is None


def test_validate_counts_the_records_timed_at_a_cap(tmp_path, capsys):
    """`mok validate` says how many records ran with the SMs held (a power or thermal cap) and
    the mean signed error on them and on the others; --json carries the count."""
    from calibration.cli import validate_cli

    recs = [r for r in read_records(["calibration/runs/h100/drawn34.jsonl.gz"])
            if r["system"] == "mok"][:6]
    for r in recs[:2]:
        r["gpu_state"] = parse_gpu_state("1425, 1980, 696.10, 700.00, 0x4")
    recs[2]["gpu_state"] = parse_gpu_state("1980, 1980, 300.0, 700.00, 0x0")
    runs = tmp_path / "runs.jsonl"
    runs.write_text("".join(json.dumps({k: v for k, v in r.items() if not k.startswith("_")}) + "\n"
                            for r in recs))
    args = [str(runs), "--params", "mok_model/params/h100-1.json"]
    assert validate_cli(args) == 0
    out = capsys.readouterr().out
    assert "note: 2 of 6 records were timed with the SMs held below their clock" in out
    assert validate_cli(args + ["--json"]) == 0
    assert json.loads(capsys.readouterr().out)["slowed"] == 2
    runs.write_text("".join(json.dumps({k: v for k, v in r.items()
                                        if not k.startswith("_") and k != "gpu_state"}) + "\n"
                            for r in recs))
    assert validate_cli(args) == 0
    assert "held below their clock" not in capsys.readouterr().out


def test_registered_counts_the_runs_met_that_were_timed_at_a_cap(tmp_path, capsys):
    """`calibration.registered` says how many of the runs its predictions met ran with the SMs
    held (each run once, though the analytic and simulator lines both meet it)."""
    from calibration.registered import main as registered

    recs = read_records(["calibration/runs/h100/drawn34.jsonl.gz"])
    capped = {r["id"] for r in recs if r["system"] == "mok"}
    capped = set(sorted(capped)[:3])
    for r in recs:
        if r["id"] in capped:
            r["gpu_state"] = parse_gpu_state("1425, 1980, 696.10, 700.00, 0x4")
    runs = tmp_path / "runs.jsonl"
    runs.write_text("".join(json.dumps({k: v for k, v in r.items() if not k.startswith("_")}) + "\n"
                            for r in recs))
    pred = "calibration/predictions/h100_drawn34_2026-12-06.jsonl"
    assert registered([pred, str(runs)]) == 0
    assert "note: 3 of the 120 runs met were timed with the SMs held below their clock" in \
        capsys.readouterr().out
    assert registered([pred, "calibration/runs/h100/drawn34.jsonl.gz"]) == 0
    assert "held below their clock" not in capsys.readouterr().out
