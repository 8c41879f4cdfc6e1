"""The model's Gluon FP8 kernel (session 26): the scenario field, its refusals, the records'
reading, the fitted term reproducing, and the registration plan meeting what `mok bench` records.
CPU only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from calibration.defaults import pass_files, pass_sources
from calibration.passes import FIT_HELD_OUT, fit_passes, pass_group
from mok_model.cli import main
from mok_model.errors import MokInputError
from mok_model.params import load_params
from mok_model.predict import predict
from mok_model.presets import load_hardware, load_model
from mok_model.records import (DEFAULT_GLUON, default_variant, read_records, record_fp8_kernel,
                               record_scenario, workload_key)
from mok_model.scenario import Config, Scenario
from mok_model.tuner import tune

REPO = Path(__file__).resolve().parents[1]
RUNS = REPO / "calibration" / "runs" / "h200_gluon" / "fp8_gluon.jsonl.gz"
PLAN = REPO / "benchmarks" / "device" / "s26_gluon_reg_plan.jsonl"
KNOBS = Config(dispatch="pull", combine="push", minibatch=4096, comm_sms=24, macrobatch=131072,
               capacity=1.0)


def _scn(**kw) -> Scenario:
    args = dict(hardware=load_hardware("h200-1"), model=load_model("kimi-k2"), ep=8, tokens=4096,
                precision="fp8")
    return Scenario(**{**args, **kw})


def test_scenario_field_default_and_describe():
    assert _scn().fp8_kernel == "triton" and "fp8_kernel" not in _scn().describe()
    assert _scn(fp8_kernel="gluon").describe()["fp8_kernel"] == "gluon"
    for kw in ({"precision": "bf16"}, {"pass_": "bwd"}, {"list_lag": 2}, {"fp8_kernel": "x"}):
        with pytest.raises(MokInputError):
            _scn(**{"fp8_kernel": "gluon", **kw} if "fp8_kernel" not in kw else kw)


def test_gluon_knobs_refused_and_tuned():
    scn = _scn(fp8_kernel="gluon")
    for bad in ({"dispatch": "push"}, {"combine": "pull"}, {"capacity": 0.5}):
        with pytest.raises(MokInputError, match="fp8-kernel gluon"):
            Config(**{**KNOBS.as_dict(), **bad}).check_for(scn)
        with pytest.raises(MokInputError, match="fp8-kernel gluon"):
            tune(scn, load_params(None, "h200-1"), fixed=bad)
    best = tune(scn, load_params(None, "h200-1")).best.config
    assert (best.dispatch, best.combine, best.capacity) == ("pull", "push", 1.0)
    # the Triton FP8 scenario keeps its knobs and is not touched by the Gluon terms
    p = load_params(None, "h200-1")
    q = p.with_values(fp8_gluon_gemm_eff=0.2, fp8_gluon_tile_m=64, fp8_gluon_scale_cost=1.0)
    triton = _scn()
    same = predict(triton, KNOBS, "mok", p).latency_ms
    assert same == predict(triton, KNOBS, "mok", q).latency_ms
    assert predict(scn, KNOBS, "mok", p).latency_ms != predict(scn, KNOBS, "mok", q).latency_ms


W = ["--hardware", "h200-1", "--model", "kimi-k2", "--ep", "8", "--tokens", "1024"]


def _with(base: list[str], extra: list[str]) -> list[str]:
    """The flag pairs of `base` that `extra` does not name again, then `extra` (a single-value
    flag given twice is refused)."""
    named = {a for a in extra if a.startswith("--")}
    return [x for i in range(0, len(base), 2) if base[i] not in named for x in base[i:i + 2]] + extra


@pytest.mark.parametrize("cmd", ["predict", "tune", "simulate"])
@pytest.mark.parametrize("extra, want", [
    (["--precision", "fp8", "--fp8-kernel", "gluon", "--dispatch", "push"], "--dispatch push with"),
    (["--precision", "fp8", "--fp8-kernel", "gluon", "--combine", "pull"], "--combine pull with"),
    (["--precision", "fp8", "--fp8-kernel", "gluon", "--capacity", "0.5"], "--capacity 0.5 with"),
    (["--precision", "fp8", "--fp8-kernel", "gluon", "--list-lag", "2"], "--list-lag 2 with"),
    (["--precision", "bf16", "--fp8-kernel", "gluon"], "the FP8 forward only"),
    (["--precision", "fp8", "--fp8-kernel", "cutlass"], "must be one of triton, gluon"),
    (["--precision", "fp8", "--fp8-kernel", "gluon", "--hardware", "b200-hgx8"],
     "the Gluon FP8 kernel is sm_90 only"),
    (["--precision", "fp8", "--fp8-kernel", "gluon", "--model", "gpt-oss-120b"],
     "H=2880: must be a multiple of 128"),
    (["--precision", "fp8", "--fp8-kernel", "gluon", "--ep", "5"], "E divisible by EP"),
])
def test_cli_refusals_one_line_exit_2(cmd, extra, want, capsys):
    rc = main([cmd, *_with(W, extra)])
    out, err = capsys.readouterr()
    assert rc == 2 and not out and err.count("\n") == 1 and err.startswith("mok: error: "), err
    assert want in err, err


def test_cli_predicts_gluon(capsys):
    assert main(["predict", *W, "--precision", "fp8", "--fp8-kernel", "gluon", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["fp8_kernel"] == "gluon"
    assert (doc["config"]["dispatch"], doc["config"]["combine"]) == ("pull", "push")
    # a knob given alone: the others are the Gluon pass's, not Config's (capacity 0.5)
    assert main(["predict", *W, "--precision", "fp8", "--fp8-kernel", "gluon", "--comm-sms", "32",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["config"]["capacity"] == 1.0


def test_kernel_and_model_share_the_shape_rule():
    from mok_kernels.gluon_fp8.mok import refusal
    from mok_model.scenario import gluon_shape_refusal
    assert refusal is gluon_shape_refusal


def test_records_read_as_gluon():
    recs = read_records([RUNS])
    g = [r for r in recs if r["precision"] == "fp8"]
    assert len(g) == 36 and all(record_fp8_kernel(r) == "gluon" for r in g)
    assert all(record_scenario(r).fp8_kernel == "gluon" and default_variant(r) for r in g)
    assert all(pass_group(r) == "fp8-gluon" for r in g)
    assert all(record_fp8_kernel(r) == "triton" and pass_group(r) is None
               for r in recs if r["precision"] == "bf16")
    assert workload_key(g[0])[-1] == "gluon"


def test_default_gluon_is_the_kernels_default():
    from mok_kernels.gluon_fp8 import mok
    assert DEFAULT_GLUON == {"fp8_kernel": "gluon", "gluon_join": mok.JOIN,
                             "gluon_ys": int(mok.YS), "gluon_home": int(mok.HOME), "gluon_cu": 1,
                             "gluon_qv": 0}


GLUON_FITTED = ("fp8_gluon_gemm_eff", "fp8_gluon_copy_scale", "fp8_gluon_fixed_us",
                "fp8_gluon_stream_scale")


def test_fitted_term_reproduces():
    """What `python -m calibration.defaults` (its pass step) would write for the group equals the
    shipped value and source in h200-1.json and h200-hgx8.json."""
    p = load_params(None, "h200-1")
    records = read_records(pass_files())
    res = fit_passes(records, p, only=("fp8-gluon",))
    # since session 27: the 168 default-variant records of five files (fp8_gluon, the two
    # registered runs, 128 / 512 tokens, 24-64 comm programs); the seed-9 runs held out
    assert len(res.residuals["fp8-gluon"]) == 168
    assert "fp8-gluon" not in FIT_HELD_OUT
    assert not any("drawn9" in str(f) for f in pass_files())
    sources, _ = pass_sources(res, records, REPO, p.sources)
    hx = load_params(None, "h200-hgx8")
    for k in GLUON_FITTED:
        # the refit from the shipped values ends within the solver's tolerance
        assert res.params[k] == pytest.approx(p[k], rel=1e-4, abs=1e-6), k
        assert sources[k] == p.sources[k]
        assert hx[k] == p[k]
        assert hx.sources[k] == "transferred from h200-1 (same GPU and kernels): " + p.sources[k]


REG2_N = 64
# (plan, script, records file, configurations): session 26's registrations
REGISTRATIONS = [
    ("s26_gluon_reg_plan.jsonl", "s26_gluon_reg.sh", "registered.jsonl", 64),
    ("s26_gluon_reg2_plan.jsonl", "s26_gluon_reg2.sh", "registered2.jsonl", REG2_N),
]


@pytest.mark.parametrize("plan_name,script,out,n_cfg", REGISTRATIONS)
def test_registration_plan_meets_bench_records(plan_name, script, out, n_cfg):
    """Each planned line is read as the record `mok bench` will write for it (make_record with
    the tiles the Gluon pass and the Triton forward record)."""
    from mok_kernels.bench import make_record
    from mok_kernels.gluon_fp8 import mok
    from mok_kernels.tiles import forward_group_m
    from mok_model.records import default_dn_blocks
    from calibration.registered import _run_key
    plan = [json.loads(x) for x in (PLAN.parent / plan_name).read_text().splitlines()]
    assert len(plan) == n_cfg
    gluon_tiles = {"fp8_kernel": "gluon", "block_m": 128, "bn_gu": 128, "bn_dn": 128,
                   "block_k": 128, "num_warps": 4, "num_stages": 4, "group_m": 8,
                   "gluon_join": mok.JOIN, "gluon_ys": int(mok.YS), "gluon_home": int(mok.HOME),
                   "gluon_cu": 1}
    hw = {"preset": "h200-1", "gpus": 1, "gpu": "NVIDIA H200", "sms": 132}
    for line in plan:
        spec = line["routing"]["kind"] + (f":{line['routing']['arg']}"
                                           if "arg" in line["routing"] else "")
        m = load_model(line["model"])
        tiles = (gluon_tiles if line["precision"] == "fp8"
                 else {"group_m": forward_group_m(m.expert_width, m.hidden),
                       **line.get("tiles", {})})
        rec = make_record(system="mok", model=line["model"], ep=8, tokens=line["tokens"],
                          knobs=line["config"], routing=spec, seed=0, times=[1.0],
                          breakdown={}, note="", hardware=hw, software={},
                          precision=line["precision"], tiles=tiles)
        if line["precision"] == "bf16" and default_dn_blocks(rec) > 1:   # as forward_tiles names it
            rec["tiles"] = {**rec["tiles"], "dn_blocks": default_dn_blocks(rec)}
        planned = {**line, "system": "mok", "hardware": {"preset": "h200-1"}}
        assert record_scenario(rec) == record_scenario(planned)
        assert rec["routing"] == line["routing"] and rec["config"] == line["config"]
        assert _run_key(rec) == _run_key(planned)
        assert record_scenario(rec).fp8_kernel == ("gluon" if line["precision"] == "fp8"
                                                   else "triton")


@pytest.mark.parametrize("plan_name,script,out,n_cfg", REGISTRATIONS)
def test_registered_bench_command_runs_the_plan(plan_name, script, out, n_cfg):
    """benchmarks/device/s26_gluon_reg.sh's `mok bench` grid is the registered plan, line for
    line (model, tokens, routing, precision with fp8_kernel gluon, knobs)."""
    import itertools
    import re
    from mok_kernels.routing import routing_record
    text = (REPO / "benchmarks" / "device" / script).read_text().replace("\\\n", " ")
    cmd = next(x for x in text.splitlines() if "mok_kernels.bench" in x)
    flag = dict(re.findall(r"--([a-z0-9-]+) (\S+)", cmd))
    assert (flag["ep"], flag["rank"], flag["fp8-kernel"], flag["systems"]) == \
        ("8", "0", "gluon", "mok")
    grid = []
    for m, n, rt, prec, d, c, mb, cs, cap in itertools.product(
            *(flag[k].split(",") for k in ("model", "tokens", "routing", "precision", "dispatch",
                                           "combine", "minibatch", "comm-sms", "capacity"))):
        grid.append(json.dumps({"model": m, "tokens": int(n), "routing": routing_record(rt, 0),
                                "fp8": prec == "fp8", "config": {
                                    "dispatch": d, "combine": c, "minibatch": int(mb),
                                    "comm_sms": int(cs), "macrobatch": 131072,
                                    "capacity": float(cap)}}, sort_keys=True))
    plan = [json.loads(x) for x in (PLAN.parent / plan_name).read_text().splitlines()]
    want = [json.dumps({"model": p["model"], "tokens": p["tokens"], "routing": p["routing"],
                        "fp8": p.get("tiles", {}).get("fp8_kernel") == "gluon",
                        "config": p["config"]}, sort_keys=True) for p in plan]
    assert sorted(grid) == sorted(want) and len(set(want)) == n_cfg
    assert f"--out calibration/runs/h200_gluon/{out}" in cmd


def test_every_shipped_file_carries_the_gluon_terms():
    """Each shipped parameters file holds the Gluon terms (no file fills them), at
    mok_model/params.py ADDED's value and words (what a refit from the priors writes), but for
    h200-1's fitted ones (GLUON_FITTED) and h200-hgx8's copies of them; h100-1 holds h200-1's
    values, said to be transferred, and h100-hgx8 h100-1's (calibration/transfer.py
    --write-hopper)."""
    from calibration.priors import OUR_PASSES
    from mok_model.params import ADDED, PARAMS_DIR, read_params
    h200 = read_params(PARAMS_DIR / "h200-1.json")
    for path in sorted(PARAMS_DIR.glob("*.json")):
        p = read_params(path)
        assert not p.filled, path
        if path.stem in ("h100-1", "h100-hgx8"):
            for k in ("fp8_gluon_tile_m", "fp8_gluon_scale_cost", "fp8_gluon_copy_exp",
                      *GLUON_FITTED):
                assert p[k] == h200[k] and p.sources[k].startswith(
                    "transferred from h200-1" if path.stem == "h100-1" else "transferred from h100-1")
                assert p.sources[k].endswith(h200.sources[k])
            continue
        for k in ("fp8_gluon_tile_m", "fp8_gluon_scale_cost", "fp8_gluon_copy_exp",
                  *GLUON_FITTED):
            if k in GLUON_FITTED and path.stem in ("h200-1", "h200-hgx8"):
                assert "fitted to the 168 default-variant fp8-gluon MoK records" in p.sources[k]
                continue
            if k == "fp8_gluon_copy_exp" and path.stem in ("h200-1", "h200-hgx8"):
                # measured on the H200 (calibration/priors.py OUR_PASSES: every Hopper file)
                assert (p[k], p.sources[k]) == OUR_PASSES[k], path
                continue
            assert p[k] == ADDED[k][0] and p.sources[k].endswith(ADDED[k][1]), (path, k)


def test_gluon_grid_has_one_macrobatch_per_setting():
    """The Gluon pass's ring holds every routed row, so the tuner tries one macrobatch (all of
    them) per setting instead of rows that differ only in a knob the kernel does not use."""
    from mok_model.tuner import knob_grid
    g = knob_grid(_scn(fp8_kernel="gluon"), {"dispatch": "pull", "combine": "push",
                                             "capacity": 1.0})
    settings = list(zip(g["minibatch"], g["comm_sms"]))
    assert len(settings) == len(set(settings))
    assert len(knob_grid(_scn(), {"dispatch": "pull", "combine": "push", "capacity": 1.0})
               ["minibatch"]) > len(settings)


def test_gluon_minibatch_outside_the_fit_is_noted():
    """A Gluon FP8 prediction at a minibatch its terms were not fitted at (GLUON_MINIBATCHES)
    says so (measured there it ran far slower than predicted); at 4,096, and for the Triton FP8
    kernel at any minibatch, no such note."""
    from mok_model.predict import predict
    from mok_model.scenario import Config

    def notes(kernel, mb):
        cfg = Config(dispatch="pull", combine="push", minibatch=mb, comm_sms=40, capacity=1.0)
        return " ".join(predict(_scn(fp8_kernel=kernel), cfg, "mok").notes())

    assert "fitted and checked at minibatch 4096 only; at 2048" in notes("gluon", 2048)
    assert "fitted and checked at minibatch" not in notes("gluon", 4096)
    assert "fitted and checked at minibatch" not in notes("triton", 2048)
