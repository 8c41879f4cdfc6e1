"""The `mok` command line: contract fields, and one clear line with exit 2 for bad input."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mok_model.cli import main
from mok_model.presets import load_model

W = ["--hardware", "gb300-nvl72", "--model", "kimi-k2", "--ep", "16", "--tokens", "2048"]


def _with(base: list[str], extra: list[str]) -> list[str]:
    """The flag pairs of `base` that `extra` does not name again, then `extra` (a single-value
    flag given twice is refused)."""
    named = {a for a in extra if a.startswith("--")}
    return [x for i in range(0, len(base), 2) if base[i] not in named for x in base[i:i + 2]] + extra


def run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_predict_json_has_contract_fields(capsys):
    code, out, _ = run(capsys, ["predict", *W, "--json"])
    assert code == 0
    d = json.loads(out)
    for key in ("latency_ms", "breakdown_ms", "config", "hardware", "model", "ep", "tokens",
                "pass", "precision", "system", "engine", "params"):
        assert key in d, key
    assert d["system"] == "mok" and d["engine"] == "analytic"
    assert set(d["config"]) == {"dispatch", "combine", "minibatch", "comm_sms", "macrobatch", "capacity"}
    code, out, _ = run(capsys, ["predict", *W, "--system", "nccl-torch", "--json"])
    base = json.loads(out)
    assert code == 0 and base["system"] == "nccl-torch" and base["latency_ms"] > d["latency_ms"]


def test_predict_uses_given_knobs_and_reports_tuned_ones(capsys):
    code, out, _ = run(capsys, ["predict", *W, "--dispatch", "push", "--minibatch", "1024", "--json"])
    d = json.loads(out)
    assert d["config"]["dispatch"] == "push" and d["config"]["minibatch"] == 1024
    assert "dispatch" not in d["tuned_knobs"] and "comm_sms" in d["tuned_knobs"]


def test_tune_json(capsys):
    code, out, _ = run(capsys, ["tune", *W, "--top", "3", "--json"])
    d = json.loads(out)
    assert code == 0 and len(d["top"]) == 3 and d["evaluated"] > 1000 and d["seconds"] > 0
    assert d["best"] == d["top"][0] and d["best"]["list_lag"] in (1, 2, 3, 4)
    code, out, _ = run(capsys, ["tune", *W, "--top", "3", "--list-lag", "3", "--json"])
    assert code == 0 and {t["list_lag"] for t in json.loads(out)["top"]} == {3}
    assert json.loads(out)["simulated"] == 0


def test_tune_sim_says_how_many_it_simulated(capsys):
    """--engine sim re-times the analytic grid's fastest settings only: the header and the
    JSON say how many (it once read as if every configuration were simulated)."""
    code, out, _ = run(capsys, ["tune", *W, "--top", "2", "--engine", "sim", "--json"])
    d = json.loads(out)
    assert code == 0 and d["engine"] == "sim" and 8 <= d["simulated"] < d["evaluated"]
    code, out, _ = run(capsys, ["tune", *W, "--top", "2", "--engine", "sim"])
    assert f"(sim: the analytic grid's fastest {d['simulated']} simulated)" in out.splitlines()[0]


def test_presets(capsys):
    code, out, _ = run(capsys, ["presets", "--json"])
    d = json.loads(out)
    assert "rubin-ultra-nvl576" in d["hardware"] and "kimi-k2" in d["models"]
    # where each shipped parameters file comes from (mok_model.params.provenance)
    assert set(d["parameters"]) == set(d["hardware"])
    assert d["parameters"]["h200-1"]["kind"] == "fit" and d["parameters"]["h200-1"]["fitted_on"]
    assert d["parameters"]["h100-hgx8"] == {**d["parameters"]["h100-hgx8"], "kind": "transfer",
                                            "from": "h100-1"}
    assert d["parameters"]["vr-nvl72"]["from"] == "gb300-nvl72"
    # runs a transfer read beyond its source's: the H100's own GEMM phases and pass runs; none
    # for vr-nvl72
    from calibration.transfer import HOPPER_PASS_RUNS, HOPPER_PHASES
    assert d["parameters"]["h100-1"]["own_runs"] == [*HOPPER_PHASES, *HOPPER_PASS_RUNS]
    assert d["parameters"]["vr-nvl72"]["own_runs"] == []
    code, out, _ = run(capsys, ["presets"])
    assert code == 0 and "gb300-nvl72" in out
    line = next(x for x in out.splitlines() if x.strip().startswith("h100-1 "))
    assert line.endswith(f"transferred from h200-1 + {1 + len(HOPPER_PASS_RUNS)} run files")
    line = next(x for x in out.splitlines() if x.strip().startswith("vr-nvl72 "))
    assert line.endswith("transferred from gb300-nvl72")


BAD = [
    (["predict", *W[:-2]], "tokens"),
    (["predict", *W, "--hardware", "gb999"], "gb999"),
    (["predict", *W, "--model", "nope"], "nope"),
    (["predict", *_with(W, ["--ep", "385"])], "more than the 384 routed experts"),
    (["predict", *W, "--ep", "0"], "--ep"),
    (["predict", *W, "--tokens", "-5"], "--tokens"),
    (["predict", *W, "--tokens", "many"], "many"),
    (["predict", *W, "--pass", "sideways"], "sideways"),
    (["predict", *W, "--precision", "fp4"], "fp4"),
    (["predict", *_with(W, ["--precision", "mxfp8", "--hardware", "h200-hgx8", "--ep", "8"])], "mxfp8"),
    (["predict", *W, "--routing", "zipf:abc"], "zipf"),
    (["predict", *W, "--routing", "hot:0.9"], "hot"),
    (["predict", *W, "--routing", "gaussian"], "gaussian"),
    (["predict", *W, "--routing", "missing.npy"], "missing.npy"),
    (["predict", *W, "--dispatch", "shove"], "shove"),
    (["predict", *W, "--minibatch", "0"], "minibatch"),
    (["predict", *W, "--comm-sms", "148"], "comm-sms"),
    (["predict", *W, "--capacity", "1.5"], "capacity"),
    (["predict", *W, "--minibatch", "4096", "--macrobatch", "1024"], "macrobatch"),
    (["predict", *W, "--system", "megatron"], "megatron"),
    (["predict", *W, "--system", "deepep", "--minibatch", "1024"], "no MoK knobs"),
    (["predict", *W, "--params", "nowhere.json"], "nowhere.json"),
    (["predict", *W, "--params", "mok_model/params/h200-1.json"], "fitted for hardware"),
    (["tune", *W, "--engine", "quantum"], "quantum"),
    (["tune", *W, "--top", "0"], "--top"),
    (["frobnicate"], "frobnicate"),
    (["predict", *W, "--seed", "-1"], "seed"),
]


@pytest.mark.parametrize("argv, needle", BAD, ids=[" ".join(a[-2:]) for a, _ in BAD])
def test_bad_input_exits_2_with_one_line(capsys, argv, needle):
    code, out, err = run(capsys, argv)
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in err, err


def test_bad_toml_files(tmp_path, capsys):
    bad = tmp_path / "hw.toml"
    bad.write_text("sms = 'many'\n")
    code, _, err = run(capsys, ["predict", *_with(W, ["--hardware", str(bad)])])
    assert code == 2 and "hw" in err
    bad.write_text("this is [ not toml")
    code, _, err = run(capsys, ["predict", *_with(W, ["--hardware", str(bad)])])
    assert code == 2 and "TOML" in err


def test_user_toml_presets(tmp_path, capsys):
    model = tmp_path / "tiny.toml"
    model.write_text("hidden = 1024\nexpert_width = 512\nrouted_experts = 32\ntop_k = 4\n"
                     "source = 'test shape'\n")
    code, out, _ = run(capsys, ["predict", "--hardware", "gb300-nvl72", "--model", str(model),
                                "--ep", "8", "--tokens", "512", "--json"])
    assert code == 0 and json.loads(out)["model"] == "tiny"


def test_simulate_json_trace_and_schedule(tmp_path, capsys):
    trace = tmp_path / "pass.json"
    w = ["--hardware", "gb300-nvl72", "--model", "kimi-k2", "--ep", "8", "--tokens", "512"]
    code, out, _ = run(capsys, ["simulate", *w, "--trace", str(trace), "--json"])
    d = json.loads(out)
    assert code == 0 and d["engine"] == "sim" and d["invariants"] == "ok"
    events = json.loads(trace.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    assert {e["pid"] for e in events if e.get("ph") == "X"} == set(range(8))
    code, out, _ = run(capsys, ["simulate", *w, "--schedule", "naive", "--json"])
    assert code == 0 and json.loads(out)["latency_ms"] > d["latency_ms"]
    code, _, err = run(capsys, ["simulate", *w, "--schedule", "random"])
    assert code == 2 and "--schedule" in err


def test_simulate_prints_the_notes_predict_prints(capsys):
    """`mok simulate` and `mok predict` print the same MoK notes: a GEMM shape the table never
    measured, and where the in-order work list holds the compute SMs (a narrow expert under a
    wide H at 512-row minibatches)."""
    shape = Path(__file__).resolve().parents[1] / "calibration" / "drawn_shapes" / "seed3" / \
        "syn3-h7168-i256-e256-k5-s1.toml"
    w = ["--hardware", "h200-1", "--model", str(shape), "--ep", "16", "--tokens", "768",
         "--dispatch", "pull", "--combine", "push", "--minibatch", "512", "--comm-sms", "32"]
    notes = {}
    for cmd in ("predict", "simulate"):
        code, out, _ = run(capsys, [cmd, *w, "--json"])
        assert code == 0
        notes[cmd] = json.loads(out)["notes"]
    assert any("in-order work list" in n for n in notes["simulate"])
    assert any("never measured" in n for n in notes["simulate"])
    assert [n[:40] for n in notes["simulate"]] == [n[:40] for n in notes["predict"]]
    # --list-lag: the kernel's option (KernelConfig.list_lag) shortens the hold, in both engines
    for cmd in ("predict", "simulate"):
        times = []
        for lag in ("1", "3"):
            code, out, _ = run(capsys, [cmd, *w, "--list-lag", lag, "--json"])
            assert code == 0
            times.append(json.loads(out)["latency_ms"])
        assert times[1] < 0.9 * times[0], (cmd, times)


def test_device_jobs_import_without_simpy():
    """The GPU image has no SimPy: the kernel benchmarks and sweeps (and mok_model.cli, which they
    use) must import without it; only the simulator needs it."""
    code = ("import sys; sys.modules['simpy'] = None\n"
            "import mok_model.cli, mok_kernels.bench, mok_kernels.space_sweep, "
            "mok_kernels.tile_sweep, mok_kernels.bench_group, mok_kernels.group_check")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[1])
    assert res.returncode == 0, res.stderr[-2000:]


def test_predict_without_knobs_takes_the_layers_lag(capsys):
    """Knobs left to the tuner come with the lag MoKLayer would run (tuner.lag_choices): the
    prediction is the choice of a layer told the scenario's routing (knob_routing="uniform";
    not told, a layer picks robust knobs: `mok tune --routing robust`); a given lag, or every
    knob given, keeps it."""
    from mok_kernels import knobs

    shape = Path(__file__).resolve().parents[1] / "calibration" / "drawn_shapes" / "seed5" / \
        "syn5-h5376-i384-e16-k1.toml"
    w = ["--hardware", "h200-1", "--model", str(shape), "--ep", "4", "--tokens", "2304", "--json"]
    layer = knobs.choose_knobs("h200-1", knobs.shape_of(load_model(str(shape))), 4, 2304,
                               routing="uniform")
    for cmd in ("predict", "simulate"):
        code, out, _ = run(capsys, [cmd, *w])
        d = json.loads(out)
        assert code == 0 and d["list_lag"] == layer.list_lag > 1 and "list_lag" in d["tuned_knobs"]
        assert d["config"] == layer.knobs
    code, out, _ = run(capsys, ["predict", *w])
    assert json.loads(out)["latency_ms"] == pytest.approx(layer.predicted_ms)
    code, out, _ = run(capsys, ["predict", *w, "--list-lag", "1"])
    assert "list_lag" not in json.loads(out) and "list_lag" not in json.loads(out)["tuned_knobs"]
    given = [f"--{k.replace('_', '-')}={v}" for k, v in layer.knobs.items()]
    code, out, _ = run(capsys, ["predict", *w, *given])
    assert "list_lag" not in json.loads(out) and json.loads(out)["tuned_knobs"] == []


def test_predict_and_tune_name_the_capacity_the_layer_runs(capsys):
    """Without --capacity, `mok predict` predicts the capacity MoKLayer runs (raised to the
    uniform and hot-expert bounds: 0.125 -> 0.25 at kimi-k2 EP 16 2,048) and says so in a note;
    `mok tune` ranks at the tuner's least and names the layer's; a given capacity is kept."""
    from mok_model.capacity import hot_expert_need_rows, capacity_rows

    w = ["--hardware", "h200-1", "--model", "kimi-k2", "--ep", "16", "--tokens", "2048", "--json"]
    code, out, _ = run(capsys, ["predict", *w])
    d = json.loads(out)
    assert code == 0 and d["config"]["capacity"] == 0.25
    assert capacity_rows(16, 2048, 8, 384, 0.25) >= hot_expert_need_rows(16, 2048, 8, 384) \
        > capacity_rows(16, 2048, 8, 384, 0.125)
    assert any("capacity raised to 0.25" in n for n in d["notes"])
    code, out, _ = run(capsys, ["tune", *w])
    t = json.loads(out)
    assert code == 0 and t["best"]["config"]["capacity"] == 0.125 and t["layer_capacity"] == 0.25
    code, out, _ = run(capsys, ["predict", *w, "--capacity", "0.5"])
    d = json.loads(out)
    assert d["config"]["capacity"] == 0.5 and not any("capacity raised" in n for n in d["notes"])
    code, out, _ = run(capsys, ["tune", *w, "--capacity", "0.5"])
    assert json.loads(out)["layer_capacity"] is None
