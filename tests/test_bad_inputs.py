"""Every bad input over every command, flag and file: exit 2, one line on stderr naming the value
and the rule, no traceback, nothing written. Run in-process (fast); one case through a real
subprocess proves the installed entry point behaves the same."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mok_model.cli import main

PUBLISHED = "calibration/runs/published/gb300_table1.jsonl"
PARAMS = "mok_model/params/gb300-nvl72.json"
W = ["--hardware", "gb300-nvl72", "--model", "kimi-k2", "--ep", "16", "--tokens", "64"]
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    """Bad input files of every kind, made once."""
    d = tmp_path_factory.mktemp("bad")
    rows = 16 * 64
    (d / "empty.txt").write_text("")
    (d / "empty.jsonl").write_text("")
    (d / "blank.jsonl").write_text("\n\n")
    (d / "binary.jsonl").write_bytes(b"\xff\xfe\x00\x81binary")
    (d / "binary.npy").write_bytes(b"\x93NUMPY garbage")
    (d / "words.txt").write_text("a b c d e f g h\n")
    np.save(d / "float.npy", np.random.default_rng(0).random((rows, 8)) * 300)
    np.save(d / "shape.npy", np.zeros((3, 8), dtype=np.int64))
    ids = np.tile(np.arange(8), (rows, 1))
    np.save(d / "range.npy", ids + 380)
    dup = ids.copy()
    dup[:, 1] = 0
    np.save(d / "dup.npy", dup)
    (d / "notjson.jsonl").write_text("{not json\n")
    rec = json.loads(Path(REPO / PUBLISHED).read_text().splitlines()[0])
    (d / "badfield.jsonl").write_text(json.dumps({**rec, "ep": "sixteen"}) + "\n")
    (d / "badknob.jsonl").write_text(json.dumps({**rec, "config": {"minibatch": "x"}}) + "\n")
    (d / "badshape.jsonl").write_text(json.dumps({**rec, "model": {"hidden": 64, "kind": "x"}}) + "\n")
    no_gpus = {k: v for k, v in rec["hardware"].items() if k != "gpus"}   # (ep > gpus, not emulated)
    (d / "ep-over-experts.jsonl").write_text(json.dumps({**rec, "ep": 100000,
                                                         "hardware": no_gpus}) + "\n")
    (d / "unknown-model.jsonl").write_text(json.dumps({**rec, "model": "nope"}) + "\n")
    (d / "huge-knob.jsonl").write_text(json.dumps({**rec, "config": {"minibatch": 10**20}}) + "\n")
    (d / "other-hw.jsonl").write_text(json.dumps({**rec, "hardware": {**rec["hardware"],
                                                                      "preset": "h200-1",
                                                                      "sms": 132}}) + "\n")
    hw = (REPO / "mok_model/presets/hardware.toml").read_text()
    block = hw[hw.index("[gb300-nvl72]"):hw.index("[gb300-nvl72.sources]")]
    body = block.split("\n", 1)[1]
    (d / "hw-missing.toml").write_text(body.replace("sms = 148\n", ""))
    (d / "hw-negative.toml").write_text(body.replace("sms = 148", "sms = -1"))
    (d / "hw-inf.toml").write_text(body.replace("hbm_tbps = 8.0", "hbm_tbps = inf"))
    (d / "hw-string.toml").write_text(body.replace("sms = 148", 'sms = "many"'))
    (d / "hw-unknown.toml").write_text(body + "\nwarp_drive = 1\n")
    (d / "hw-one-sm.toml").write_text(body.replace("sms = 148", "sms = 1"))
    (d / "broken.toml").write_text("sms = = 3\n")
    (d / "model-full.toml").write_text("hidden = 64\nexpert_width = 64\nrouted_experts = 4\ntop_k = 4\n")
    (d / "model-topk.toml").write_text("hidden = 64\nexpert_width = 64\nrouted_experts = 4\ntop_k = 8\n")
    base = "hidden = 64\nexpert_width = 64\nrouted_experts = 8\ntop_k = 2\n"
    (d / "model-nolayers.toml").write_text(base + "moe_layers = 0\n")
    (d / "model-neglayers.toml").write_text(base + "layers = -3\n")
    (d / "model-morelayers.toml").write_text(base + "moe_layers = 5\nlayers = 4\n")
    (d / "model-experts-huge.toml").write_text(base.replace("routed_experts = 8",
                                                            "routed_experts = 1000000000"))
    (d / "params-bad.json").write_text("{")
    (d / "params-schema.json").write_text('{"schema": "other"}')
    (d / "params-values.json").write_text('{"schema": "mok-params/1", "values": [1, 2]}')
    p = json.loads((REPO / PARAMS).read_text())
    p["values"]["gemm_eff"]["value"] = 7.0
    (d / "params-range.json").write_text(json.dumps(p))
    (d / "a-file").write_text("x")
    (d / "folder").mkdir()
    # session 29's fuzzing (2026-12-02): inputs nobody had listed
    (d / "params-copy.json").write_text((REPO / PARAMS).read_text())
    (d / "ro-dir").mkdir()
    (d / "ro-dir").chmod(0o555)          # chmod a-w: refused even for root, who could write
    (d / "fitted-on-str.json").write_text(json.dumps({**json.loads((REPO / PARAMS).read_text()),
                                                      "fitted_on": "x"}))
    (d / "ro.json").write_text("{}")
    (d / "ro.json").chmod(0o444)
    for name, bad in (("tiles-str", {"tiles": {"split_dn": "abc"}}),
                      ("gpus-str", {"hardware": {**rec["hardware"], "gpus": "x"}}),
                      ("hot-str", {"routing": {"kind": "hot", "fraction": "abc", "seed": 0}}),
                      ("zipf-none", {"routing": {"kind": "zipf", "seed": 0}}),
                      ("value-str", {"value": "x"}),
                      ("samples-neg", {"latency_ms": {"median": 1.0, "samples": [1.0, -2.0]}})):
        (d / f"{name}.jsonl").write_text(json.dumps({**rec, **bad}) + "\n")
    (d / "nan-extra.jsonl").write_text(json.dumps({**rec, "extra": float("nan")}) + "\n")
    return d


# (argv with {d} for the files folder, text the one line must contain)
CASES = [
    # the workload flags
    ([*W[:4], "--ep", "0", "--tokens", "64"], "--ep: 0 must be an integer >= 1"),
    ([*W[:4], "--ep", "x", "--tokens", "64"], "'x' must be an integer >= 1"),
    ([*W[:2], "--model", "mixtral-8x7b", "--ep", "16", "--tokens", "64"],
     "--ep 16 is more than the 8 routed experts of mixtral-8x7b"),
    ([*W[:6], "--tokens", "0"], "--tokens: 0 must be an integer >= 1"),
    ([*W[:6], "--tokens", "1.5"], "'1.5' must be an integer"),
    ([*W[:6], "--tokens", "1000000000000"], "GB, more than half of this machine's"),
    (["--hardware", "nope", *W[2:]], "unknown hardware preset 'nope'"),
    (["--hardware", "{d}/none.toml", *W[2:]], "does not exist"),
    (["--hardware", "{d}/broken.toml", *W[2:]], "not valid TOML"),
    (["--hardware", "{d}/hw-missing.toml", *W[2:]], "missing field(s) ['sms']"),
    (["--hardware", "{d}/hw-negative.toml", *W[2:]], "sms=-1 must be finite and > 0"),
    (["--hardware", "{d}/hw-inf.toml", *W[2:]], "hbm_tbps=inf must be finite"),
    (["--hardware", "{d}/hw-string.toml", *W[2:]], "sms='many' must be a number"),
    (["--hardware", "{d}/hw-unknown.toml", *W[2:]], "unknown field(s) ['warp_drive']"),
    (["--hardware", "{d}/hw-one-sm.toml", *W[2:]], "sms=1 must be >= 2"),
    ([*W[:2], "--model", "nope", *W[4:]], "unknown model preset 'nope'"),
    ([*W[:2], "--model", "{d}/model-topk.toml", *W[4:]], "top_k=8 must be <= routed_experts=4"),
    ([*W[:2], "--model", "{d}/model-nolayers.toml", *W[4:]], "moe_layers=0 must be finite and > 0"),
    ([*W[:2], "--model", "{d}/model-neglayers.toml", *W[4:]], "layers=-3 must be finite and > 0"),
    ([*W[:2], "--model", "{d}/model-morelayers.toml", *W[4:]],
     "moe_layers=5 must be <= layers=4"),
    # it ran out of memory or time (10^7 experts: 7 GB, 30 s; session 29)
    ([*W[:2], "--model", "{d}/model-experts-huge.toml", *W[4:]],
     "routed_experts=1000000000 must be at most 1048576"),
    ([*W, "--pass", "sideways"], "--pass 'sideways' must be one of fwd, bwd"),
    ([*W, "--precision", "fp4"], "--precision 'fp4' must be one of bf16, fp8, mxfp8"),
    (["--hardware", "h200-hgx8", "--model", "kimi-k2", "--ep", "8", "--tokens", "64",
      "--precision", "mxfp8"], "mxfp8 needs Blackwell"),
    ([*W, "--seed", "-1"], "--seed: -1 must be an integer in [0, 9223372036854775807]"),
    ([*W, "--list-lag", "0"], "--list-lag: 0 must be an integer >= 1"),
    ([*W, "--list-lag", "9"], "--list-lag 9 must be at most 8"),
    ([*W, "--routing", "bogus"], "neither an existing file nor one of"),
    ([*W, "--routing", "zipf:x"], "zipf takes a number"),
    ([*W, "--routing", "zipf:0"], "Zipf exponent must be in (0, 10]"),
    ([*W, "--routing", "zipf:11"], "Zipf exponent must be in (0, 10]"),
    ([*W, "--routing", "hot:0.5"], "at most once"),
    ([*W[:2], "--model", "{d}/model-full.toml", "--ep", "2", "--tokens", "8", "--routing", "hot:0.25"],
     "cannot fill a token's top_k = 4 slots"),
    ([*W, "--routing", "{d}/none.npy"], "does not exist"),
    ([*W, "--routing", "{d}/sub/none"], "does not exist"),
    ([*W, "--routing", "{d}/empty.txt"], "is empty"),
    ([*W, "--routing", "{d}/words.txt"], "not a matrix of integer expert ids"),
    ([*W, "--routing", "{d}/binary.npy"], "not a NumPy .npy array"),
    ([*W, "--routing", "{d}/float.npy"], "non-integer values"),
    ([*W, "--routing", "{d}/shape.npy"], "has shape (3, 8)"),
    ([*W, "--routing", "{d}/range.npy"], "must lie in [0, 384)"),
    ([*W, "--routing", "{d}/dup.npy"], "the same expert twice"),
    ([*W, "--routing", "{d}/range.npy", "--seed", "3"], "--seed 3 seeds the routing generators"),
    # the knobs
    ([*W, "--system", "megatron"], "--system 'megatron' must be one of mok"),
    ([*W, "--system", "nccl-torch", "--minibatch", "256"], "has no MoK knobs"),
    ([*W, "--dispatch", "shove"], "--dispatch 'shove' must be one of pull, push"),
    ([*W, "--combine", "shove"], "--combine 'shove' must be one of pull, push"),
    ([*W, "--minibatch", "0"], "--minibatch: 0 must be an integer >= 1"),
    ([*W, "--comm-sms", "0"], "--comm-sms: 0 must be an integer >= 1"),
    ([*W, "--comm-sms", "148"], "at most 147"),
    ([*W, "--macrobatch", "0"], "--macrobatch: 0 must be an integer >= 1"),
    ([*W, "--macrobatch", "100", "--minibatch", "256"], "must hold at least one minibatch"),
    ([*W, "--capacity", "0"], "must be a number in (0, 1]"),
    ([*W, "--capacity", "1.5"], "must be a number in (0, 1]"),
    ([*W, "--capacity", "nan"], "must be a number in (0, 1]"),
    ([*W, "--capacity", "0.001"], "use --capacity 0.0"),
    ([*W[:6], "--tokens", "65536", "--capacity", "1.0", "--macrobatch", "100000000",
      "--minibatch", "100000000"], "MoK's buffers need at least"),
    ([*W, "--minibatch", "99999999999999999999"], "--minibatch 99999999999999999999 must be at most"),
    ([*W, "--macrobatch", "99999999999999999999"], "--macrobatch 99999999999999999999 must be at most"),
    ([*W, "--comm-sms", "99999999999999999999"], "--comm-sms 99999999999999999999 must be at most"),
    # parameters files
    ([*W, "--params", "{d}/none.json"], "no such file"),
    ([*W, "--params", "{d}/params-bad.json"], "not JSON"),
    ([*W, "--params", "{d}/binary.jsonl"], "not UTF-8"),
    ([*W, "--params", "{d}/params-schema.json"], "schema must be 'mok-params/1'"),
    ([*W, "--params", "{d}/params-values.json"], "values must be an object"),
    ([*W, "--params", "{d}/params-range.json"], "gemm_eff=7.0 must be a number in"),
    ([*W, "--params", "mok_model/params/h200-1.json"], "take --allow-params-mismatch to use it anyway"),
    ([*W, "--params", ""], "--params '' is empty; name a parameters file"),
    ([*W, "--params", "{d}/folder"], "no such file (it is a folder)"),
    ([*W, "--params", "{d}/fitted-on-str.json"], "fitted_on='x' must be a list of run-record files"),
    # a warning (the EP spans domains) no longer joins the error line (session 29)
    (["--hardware", "h200-hgx8", "--model", "kimi-k2", "--ep", "128", "--tokens", "64",
      "--minibatch", "256", "--macrobatch", "128"], "--macrobatch 128 must hold at least one minibatch"),
    # argparse itself
    ([*W, "--frobnicate"], "unrecognized arguments: --frobnicate (see `mok predict --help`)"),
    (W[:4], "the following arguments are required: --ep, --tokens"),
    # our megakernel's flags with another system (session 26): refused, never silently dropped
    (["--hardware", "h200-hgx8", "--model", "kimi-k2", "--ep", "8", "--tokens", "64",
      "--precision", "fp8", "--fp8-kernel", "gluon", "--system", "deepep"],
     "--fp8-kernel gluon applies to our megakernel (--system mok); --system deepep"),
    ([*W, "--list-lag", "2", "--system", "nccl-torch"], "--list-lag 2 applies to our megakernel"),
    # the backward's tiles (session 33): a name of BWD_TILES, the backward, BF16, our megakernel
    ([*W, "--pass", "bwd", "--bwd-tiles", "saved"], "--bwd-tiles 'saved' must be one of recompute, "
                                                     "training"),
    ([*W, "--pass", "bwd", "--bwd-tiles", ""], "--bwd-tiles '' must be one of recompute, training"),
    ([*W, "--bwd-tiles", "training"], "--bwd-tiles training describes the backward pass; add "
                                      "--pass bwd"),
    ([*W, "--pass", "bwd", "--precision", "fp8", "--bwd-tiles", "training"],
     "--bwd-tiles training with --pass bwd --precision fp8: the training tiles are our BF16"),
    ([*W, "--pass", "bwd", "--bwd-tiles", "training", "--system", "nccl-torch"],
     "--bwd-tiles training applies to our megakernel (--system mok); --system nccl-torch"),
]
SIM_CASES = [
    ([*W, "--schedule", "eager"], "--schedule 'eager' must be one of published, naive"),
    ([*W, "--schedule", "naive", "--system", "deepep"], "--schedule naive orders MoK's work"),
    ([*W, "--trace", "{d}/missing/t.json"], "does not exist; create it first"),
    ([*W, "--trace", "{d}/folder"], "is a folder"),
    ([*W, "--trace", "{d}/a-file/t.json"], "does not exist"),
    ([*W, "--trace", ""], "--trace '' is empty; name a file"),
    ([*W, "--trace", "{d}/t.txt"], "must name a .json file"),
    ([*W[:6], "--tokens", "131072", "--minibatch", "128", "--capacity", "1.0"],
     "the simulator would walk 8210 minibatches on the busiest GPU (at most 4096)"),
    ([*W, "--degrade", ""], "--degrade '' is empty"),
    ([*W, "--degrade", ","], "--degrade ',' has an empty element"),
    ([*W, "--degrade", "gpu3:0.5,,gpu2:0.5"], "has an empty element"),
    ([*W, "--degrade", "gpu3:0.5,gpu3:0.2"], "names gpu3 twice"),
    # an output that is an input, a path ending in a slash, read-only targets (session 29)
    ([*W, "--trace", "{d}/params-copy.json", "--params", "{d}/params-copy.json"],
     "--trace '{d}/params-copy.json' is also the input --params"),
    ([*W, "--trace", "{d}/t.json/"], "is a folder; name a file inside it"),
    ([*W, "--trace", "{d}/ro-dir/t.json"], "folder '{d}/ro-dir' is not writable"),
    ([*W, "--trace", "{d}/ro.json"], "exists and is not writable"),
]
TUNE_CASES = [
    ([*W, "--engine", "quantum"], "--engine 'quantum' must be one of analytic, sim"),
    ([*W, "--top", "0"], "--top: 0 must be an integer >= 1"),
    ([*W, "--capacity", "2"], "must be a number in (0, 1]"),
    ([*W[:6], "--table", "{d}/folder"], "is a folder"),
    ([*W[:6], "--table", "{d}/t.json", "--tokens-buckets", "x"], "a comma list of token counts"),
    ([*W[:6], "--table", "{d}/t.json", "--tokens-buckets", "0"], "need token counts >= 1"),
    ([*W, "--tokens-buckets", "64"], "--tokens-buckets needs --table"),
    ([*W, "--tokens-buckets", ""], "--tokens-buckets needs --table"),
    ([*W[:6], "--table", "{d}/t.json", "--tokens-buckets", ""], "--tokens-buckets '': a comma list"),
    ([*W[:6], "--table", "{d}/missing/t.json"], "does not exist; create it first"),
    ([*W[:6], "--table", ""], "--table '' is empty; name a file"),
    ([*W[:6], "--table", "{d}/t.txt"], "must name a .json file"),
    ([*W[:6], "--table", "{d}/t.json", "--tokens-buckets", "64,64,128"], "each token count once"),
    ([*W[:6], "--table", "{d}/t.json", "--tokens-buckets", "64,1000000000000"],
     "--tokens-buckets bucket 1000000000000"),
    ([*W, "--comm-sms", "148"], "at most 147"),
    ([*W, "--minibatch", "99999999999999999999"], "must be at most 2147483647"),
    ([*W[:6], "--table", "{d}/params-copy.json", "--params", "{d}/params-copy.json"],
     "is also the input --params"),
    ([*W[:6], "--table", "{d}/t.json", "--top", "3"], "--top 3 lists the best configurations of "
                                                      "one --tokens; --table keeps"),
    ([*W, "--pass", "bwd", "--bwd-tiles", "fast"], "--bwd-tiles 'fast' must be one of recompute"),
    ([*W[:6], "--table", "{d}/t.json", "--bwd-tiles", "training"], "--table is the megakernel's "
                                                                   "choice"),
]
CALIBRATE_CASES = [
    (["{d}/none.jsonl", "--out", "{d}/p.json"], "no such run-record file"),
    (["{d}/empty.jsonl", "--out", "{d}/p.json"], "holds no run records"),
    (["{d}/blank.jsonl", "--out", "{d}/p.json"], "holds no run records"),
    (["{d}/binary.jsonl", "--out", "{d}/p.json"], "not UTF-8 text"),
    (["{d}/notjson.jsonl", "--out", "{d}/p.json"], "notjson.jsonl:1: not JSON"),
    (["{d}/badfield.jsonl", "--out", "{d}/p.json"], "badfield.jsonl:1: field 'ep'='sixteen'"),
    (["{d}/badknob.jsonl", "--out", "{d}/p.json"], "config.minibatch='x' must be an integer"),
    ([PUBLISHED, "--out", "{d}/missing/p.json"], "does not exist; create it first"),
    ([PUBLISHED, "--out", "{d}/folder"], "is a folder"),
    ([PUBLISHED, "--out", "{d}/p.txt"], "must name a .json file"),
    ([PUBLISHED, "--out", "{d}/p.json", "--holdout", "1024"], "--holdout VALUE needs --holdout-by"),
    ([PUBLISHED, "--out", "{d}/p.json", "--holdout-by", "colour"], "colour"),
    ([PUBLISHED, "--out", "{d}/p.json", "--holdout-by", "tokens", "--holdout", "999"],
     "--holdout '999' is not a value of tokens"),
    ([PUBLISHED, "--out", "{d}/p.json", "--free", "warp"], "--free 'warp': unknown parameter"),
    ([PUBLISHED, "--out", "{d}/p.json", "--thin", "0"], "--thin: 0 must be an integer >= 1"),
    ([PUBLISHED, "--out", "{d}/p.json", "--engine", "x"], "--engine 'x' must be one of"),
    ([PUBLISHED, "--out", "{d}/p.json", "--hardware", "h100-hgx8"], "no records of it"),
    ([PUBLISHED, "--out", "{d}/p.json", "--base", "{d}/params-bad.json"], "not JSON"),
    ([PUBLISHED, "--out", "{d}/p.json", "--base", "mok_model/params/h200-1.json"],
     "--base 'mok_model/params/h200-1.json' was fitted for hardware 'h200-1', not 'gb300-nvl72'"),
    ([PUBLISHED, "--out", "{d}/p.json", "--gemm-table", "{d}/none.json"], "GEMM table"),
    ([PUBLISHED, "--out", "{d}/p.json", "--gemm-table", "{d}/params-bad.json"], "not JSON"),
    ([PUBLISHED], "the following arguments are required: --out"),
    ([PUBLISHED, "--out", ""], "--out '' is empty; name a file"),
    (["{d}/ep-over-experts.jsonl", "--out", "{d}/p.json"],
     "ep-over-experts.jsonl:1: --ep 100000 is more than the 384 routed experts"),
    (["{d}/unknown-model.jsonl", "--out", "{d}/p.json"], "unknown-model.jsonl:1: unknown model preset"),
    (["{d}/huge-knob.jsonl", "--out", "{d}/p.json"],
     "huge-knob.jsonl:1: config.minibatch=100000000000000000000 must be an integer in [1, "),
    ([PUBLISHED, "--out", "{d}/p.json", "--free", "gemm_eff,gemm_eff"],
     "--free 'gemm_eff,gemm_eff' names 'gemm_eff' twice"),
    ([PUBLISHED, "--out", "{d}/p.json", "--band-samples", "99999999999999999999"],
     "--band-samples: 99999999999999999999 must be an integer in [2, 10000]"),
    ([PUBLISHED, "--out", "{d}/params-copy.json", "--gemm-table", "{d}/params-copy.json"],
     "is also the input --gemm-table"),
    ([PUBLISHED, "--out", "{d}/p.json/"], "is a folder"),
    (["", "--out", "{d}/p.json"], "'': an empty path; name a run-record file"),
    # records the readers used to let through (session 29): each names its field
    (["{d}/tiles-str.jsonl", "--out", "{d}/p.json"], "tiles-str.jsonl:1: tiles.split_dn='abc' "
                                                     "must be an integer"),
    (["{d}/gpus-str.jsonl", "--out", "{d}/p.json"], "hardware.gpus='x' must be an integer >= 1"),
    (["{d}/hot-str.jsonl", "--out", "{d}/p.json"], "routing hot: fraction='abc' must be a number"),
    (["{d}/zipf-none.jsonl", "--out", "{d}/p.json"], "routing zipf: arg=None must be a number"),
    (["{d}/value-str.jsonl", "--out", "{d}/p.json"], "value='x' must be an object"),
    (["{d}/samples-neg.jsonl", "--out", "{d}/p.json"], "latency_ms.samples=[1.0, -2.0] must be"),
    (["{d}/nan-extra.jsonl", "--out", "{d}/p.json"], "nan-extra.jsonl:1: NaN is not a JSON number"),
]
VALIDATE_CASES = [
    ([PUBLISHED, "--params", "{d}/none.json"], "no such file"),
    (["{d}/binary.jsonl", "--params", PARAMS], "not UTF-8 text"),
    (["{d}/empty.jsonl", "--params", PARAMS], "holds no run records"),
    ([PUBLISHED, "--params", PARAMS, "--plot", "{d}/missing/x.png"], "does not exist"),
    ([PUBLISHED, "--params", PARAMS, "--plot", "{d}/x.svg"], "must name a .png file"),
    ([PUBLISHED, "--params", PARAMS, "--plot", ""], "--plot '' is empty; name a file"),
    ([PUBLISHED, "--params", PARAMS, "--color-by", "tokens"], "add --plot FILE.png"),
    (["{d}/ep-over-experts.jsonl", "--params", PARAMS], "ep-over-experts.jsonl:1: --ep 100000"),
    ([PUBLISHED, "--params", PARAMS, "--color-by", "mood"], "--color-by 'mood' must be one of"),
    ([PUBLISHED, "--params", PARAMS, "--thin", "0"], "--thin: 0 must be an integer >= 1"),
    ([PUBLISHED, "--params", PARAMS, "--engine", "x"], "--engine 'x' must be one of"),
    ([PUBLISHED, "--params", PARAMS, "--heldout-only"], "fitted without a hold-out split"),
    (["{d}/other-hw.jsonl", "--params", PARAMS], "--allow-params-mismatch"),
    (["{d}/badshape.jsonl", "--params", PARAMS], "badshape.jsonl:1: model 'custom': unknown field(s) ['kind']"),
    ([PUBLISHED, "--params", ""], "--params '' is empty"),
    (["{d}/folder", "--params", PARAMS], "no such run-record file (it is a folder)"),
    ([PUBLISHED, "--params", PARAMS, "--plot", "{d}/ro-dir/x.png"], "is not writable"),
]
STUDY_CASES = [
    (["nope"], "unknown study 'nope'"),
    ([], "give a study NAME or --list"),
    (["ep-table", "--out", "{d}/a-file"], "is a file"),
    (["ep-table", "--out", "{d}/a-file/deeper"], "lies under the file"),
    (["ep-table", "--engine", "x"], "--engine 'x' must be one of"),
    (["ep-table", "--workers", "-1"], "--workers: -1 must be an integer >= 0"),
    (["ep-table", "--seed", "-1"], "--seed: -1 must be an integer in [0, 9223372036854775807]"),
    (["ep-table", "--out", ""], "--out '' is empty; name a folder"),
    (["ep-table", "--cluster", ""], "--cluster '' is empty"),
    (["ep-table", "--quick", "--out", "{d}", "--cluster", "bogus address"],
     "a Dask scheduler address such as tcp://HOST:8786"),
    (["ep-table", "--quick", "--out", "{d}", "--cluster", "tcp://127.0.0.1:1"],
     "cannot reach a Dask scheduler there"),
    (["--list", "bogus-name"], "--list lists the studies and runs none; drop NAME"),
    (["--list", "--engine", "sim"], "drop --engine"),
    (["--list", "--out", "{d}/o"], "--list lists the studies and runs none; drop --out"),
    (["--list", "--workers", "3", "--seed", "4", "--quick"], "drop --workers, --seed, --quick"),
    (["ep-table", "--out", "{d}/ro-dir"], "--out '{d}/ro-dir' is not writable"),
    (["ep-table", "--out", "{d}/ro-dir/sub"], "folder '{d}/ro-dir' is not writable"),
]


def _run(argv: list[str], d: Path, capsys) -> tuple[int, str, str]:
    argv = [a.replace("{d}", str(d)) for a in argv]
    rc = main(argv)
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def _one_line_error(rc: int, out: str, err: str, want: str) -> None:
    assert rc == 2, (rc, err)
    assert out == ""  # nothing on stdout: no half result, no JSON
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert err.startswith(("mok: error: ", "mok study: error: ")), err
    assert "error: mok" not in err  # no doubled prefix
    assert want in err, err


def _cases(prefix: list[str], cases):
    return [pytest.param([*prefix, *argv], want, id=" ".join([*prefix, *argv])[:90])
            for argv, want in cases]


ALL = (_cases(["predict"], CASES) + _cases(["simulate"], SIM_CASES) + _cases(["tune"], TUNE_CASES)
       + _cases(["calibrate"], CALIBRATE_CASES) + _cases(["validate"], VALIDATE_CASES)
       + _cases(["study"], STUDY_CASES) + _cases(["presets"], [(["--frobnicate"], "unrecognized")]))


@pytest.mark.parametrize("argv, want", ALL)
def test_bad_input_is_one_line_and_exit_2(argv, want, files, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    rc, out, err = _run(argv, files, capsys)
    _one_line_error(rc, out, err, want.replace("{d}", str(files)))
    assert not list(files.glob(".*.tmp*")), "a temporary file was left behind"
    assert not (files / "p.json").exists(), "calibrate wrote a file although it refused the input"


def test_the_installed_entry_point_prints_one_line(files):
    """Through a real process: exit 2, one line, no traceback (as a user sees it)."""
    r = subprocess.run([sys.executable, "-m", "mok_model.cli", "simulate", *W, "--trace",
                        str(files / "missing" / "t.json")], capture_output=True, text=True,
                       cwd=REPO, env={**os.environ, "MOK_PROGRESS": "0"})
    _one_line_error(r.returncode, r.stdout, r.stderr, "does not exist; create it first")


def test_unexpected_failure_is_one_line_exit_1(monkeypatch, capsys):
    """A bug (not the input) is still one line, exit 1, and says how to see the traceback."""
    import mok_model.cli as cli

    def boom(a):
        raise RuntimeError("kaput")

    monkeypatch.setattr(cli, "cmd_presets", boom)
    assert main(["presets"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error: RuntimeError: kaput" in err and "MOK_DEBUG" in err


@pytest.mark.parametrize("name, value", [("MOK_PROGRESS", "off"), ("MOK_PROGRESS", "no"),
                                         ("MOK_DEBUG", "yes"), ("MOK_DEBUG", "2"),
                                         ("MOK_ROUTE_CACHE", "maybe")])
def test_a_malformed_environment_switch_is_bad_input(name, value, capsys, monkeypatch):
    """MOK_PROGRESS=off used to leave the bars on, MOK_DEBUG=0 to show tracebacks: a switch is
    0 or 1, anything else one line, exit 2, before any work (the tools' run_tool too)."""
    from calibration.loo import main as loo_main

    monkeypatch.setenv(name, value)
    for run, prefix in ((lambda: main(["predict", *W]), "mok: error: "),
                        (lambda: loo_main([PUBLISHED]), "python -m calibration.loo: error: ")):
        rc = run()
        cap = capsys.readouterr()
        assert rc == 2 and cap.out == "" and cap.err.count("\n") == 1, cap.err
        assert cap.err.startswith(prefix), cap.err
        assert f"environment variable {name}={value!r} must be 0 or 1" in cap.err, cap.err


@pytest.mark.parametrize("where, want", [("", "MOK_ROUTE_CACHE_DIR='' is blank"),
                                         ("{d}/a-file", "is a file, not a folder"),
                                         ("{d}/a-file/routes", "is a file, not a folder"),
                                         ("{d}/ro-dir", "is not writable")])
def test_a_bad_route_cache_folder_is_bad_input(where, want, files, capsys, monkeypatch):
    """The route cache used to fall back in silence: '' to ~/.cache, a file to no cache."""
    monkeypatch.setenv("MOK_ROUTE_CACHE_DIR", where.replace("{d}", str(files)))
    assert main(["predict", *W]) == 2
    cap = capsys.readouterr()
    assert cap.out == "" and cap.err.count("\n") == 1 and want in cap.err, cap.err
    assert cap.err.startswith("mok: error: environment variable MOK_ROUTE_CACHE_DIR="), cap.err
    monkeypatch.setenv("MOK_ROUTE_CACHE", "0")     # the cache off: its folder is not read
    assert main(["predict", *W]) == 0


def test_mok_debug_0_keeps_the_one_line(monkeypatch, capsys):
    import mok_model.cli as cli

    def boom(a):
        raise RuntimeError("kaput")

    monkeypatch.setattr(cli, "cmd_presets", boom)
    monkeypatch.setenv("MOK_DEBUG", "0")
    assert main(["presets"]) == 1          # it used to raise: any non-empty value meant on
    assert "internal error: RuntimeError: kaput" in capsys.readouterr().err


# --- legal but suspicious: accepted, with a warning on stderr and the answer on stdout ---

WARNINGS = [
    (["predict", "--hardware", "h200-hgx8", "--model", "kimi-k2", "--ep", "16", "--tokens", "64"],
     "spans 2 scale-up domains"),
    (["predict", *W, "--minibatch", "1"], "below one 128-row GEMM tile"),
    (["predict", *W, "--comm-sms", "140"], "leaves 8 of 148 SMs"),
    (["calibrate", PUBLISHED, "--out", "{d}/one.json", "--thin", "10"], "underdetermined"),
]


@pytest.mark.parametrize("argv, want", WARNINGS, ids=[w for _, w in WARNINGS])
def test_suspicious_input_warns_and_runs(argv, want, files, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    rc, out, err = _run(argv, files, capsys)
    assert rc == 0 and out, err
    assert f"mok: warning: {want}" in err or want in err, err
    assert "Traceback" not in err


def test_hardware_toml_named_like_a_preset_warns(files, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    hw = (REPO / "mok_model/presets/hardware.toml").read_text()
    body = hw[hw.index("[gb300-nvl72]"):hw.index("[gb300-nvl72.sources]")].split("\n", 1)[1]
    same = files / "same.toml"
    same.write_text('name = "gb300-nvl72"\n' + body)
    faster = files / "faster.toml"
    faster.write_text('name = "gb300-nvl72"\n' + body.replace("link_gbps = 900.0", "link_gbps = 1800.0"))
    rc, _, err = _run(["predict", "--hardware", str(same), *W[2:]], files, capsys)
    assert rc == 0 and "warning" not in err  # the preset's own numbers: its parameters fit
    rc, _, err = _run(["predict", "--hardware", str(faster), *W[2:]], files, capsys)
    assert rc == 0 and "named 'gb300-nvl72' like the preset but differs in ['link_gbps']" in err


def test_domains_and_notes_in_json(capsys):
    rc = main(["predict", "--hardware", "h200-hgx8", "--model", "kimi-k2", "--ep", "16",
               "--tokens", "64", "--json"])
    cap = capsys.readouterr()
    d = json.loads(cap.out)  # warnings and progress never reach stdout
    assert rc == 0 and d["domains"] == 2 and any("scale-out" in n for n in d["notes"])
    assert d["breakdown_ms"]["scale_out"] > 0


def test_progress_bar_is_on_stderr_never_stdout(capsys, monkeypatch):
    import mok_model.progress as progress

    monkeypatch.setattr(progress, "DELAY_S", 0.0)
    rc = main(["tune", *W, "--engine", "sim", "--top", "2", "--json"])
    cap = capsys.readouterr()
    assert rc == 0 and json.loads(cap.out)["engine"] == "sim"
    assert "simulating 9 candidates" in cap.err   # the top 8 and the default knobs


def test_outputs_are_written_atomically(tmp_path, capsys):
    """A trace replaces an existing trace whole, and no temporary file stays behind; a file that
    is not a trace is never replaced by one (session 71)."""
    f = tmp_path / "t.json"
    f.write_text("old")
    assert main(["simulate", *W, "--trace", str(f), "--json"]) == 2
    assert "exists and holds an unknown kind of file, not 'trace'" in capsys.readouterr().err
    assert f.read_text() == "old"
    f.write_text('{"traceEvents": []}')
    assert main(["simulate", *W, "--trace", str(f), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert json.loads(f.read_text())["metadata"]["traced_gpus"] == d["traced_gpus"]
    assert d["slowest_gpu"] in d["traced_gpus"]
    assert [p.name for p in tmp_path.iterdir()] == ["t.json"]


def test_append_never_glues_onto_a_line_without_newline(tmp_path):
    from mok_model.records import append_records, read_records

    recs = [json.loads(x) for x in (REPO / PUBLISHED).read_text().splitlines()[:2]]
    f = tmp_path / "r.jsonl"
    f.write_text(json.dumps(recs[0]))  # no trailing newline
    append_records(f, [recs[1]])
    assert [r["id"] for r in read_records([f])] == [recs[0]["id"], recs[1]["id"]]
    with pytest.raises(Exception, match="already present"):
        append_records(f, [recs[1]])


def test_append_refuses_nan_which_readers_refuse(tmp_path):
    """A NaN in a field the validator does not read used to be written as a bare NaN (not JSON);
    the readers now refuse it, so it is refused before the write, and nothing is appended."""
    from mok_model.errors import MokInputError
    from mok_model.records import append_records

    rec = json.loads((REPO / PUBLISHED).read_text().splitlines()[0])
    f = tmp_path / "r.jsonl"
    with pytest.raises(MokInputError, match="holds NaN or infinity"):
        append_records(f, [{**rec, "extra": {"x": float("nan")}}])
    assert not f.exists() or f.read_text() == ""


BENCH_CASES = [
    (["--tokens", "1,,2"], "--tokens '1,,2': '' is not one of a comma list of integers"),
    (["--tokens", ""], "--tokens '': '' is not one of a comma list of integers"),
    (["--tokens", "0,64"], "--tokens '0,64': 0 must be >= 1"),
    (["--minibatch", "4096,"], "--minibatch '4096,'"),
    (["--capacity", "nan"], "--capacity 'nan': nan must be in (0, 1]"),
    (["--capacity", "0"], "--capacity '0': 0 must be in (0, 1]"),
    (["--capacity", "0.5,,1"], "--capacity '0.5,,1'"),
    (["--iters", "0"], "--iters 0: must be >= 1"),
    (["--warmup", "-1"], "--warmup -1: must be >= 0"),
    (["--seed", "-1"], "--seed -1: must be >= 0"),
    (["--rank", "16"], "--rank 16: must be in [0, EP)"),
    (["--macrobatch", "0"], "--macrobatch '0': allowed a row count >= 1"),
]


@pytest.mark.parametrize("argv, want", BENCH_CASES, ids=[" ".join(a) for a, _ in BENCH_CASES])
def test_bench_bad_grid_is_named_before_the_gpu_check(argv, want, tmp_path, capsys, monkeypatch):
    """`mok bench`'s grid flags are checked on any machine: one line naming the value, exit 2."""
    import torch

    from mok_kernels import bench

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    rc = bench.cli(["--out", str(tmp_path / "r.jsonl"), *argv])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("mok bench: ") and want in err, err


GROUP_BENCH_CASES = [
    (["--macrobatch", "half"], "--macrobatch 'half' with --gpus: one whole number"),
    (["--macrobatch", "4096,8192"], "--macrobatch '4096,8192' with --gpus: one whole number"),
    (["--no-graph"], "--no-graph with --gpus"),
    (["--breakdown"], "--breakdown with --gpus"),
    (["--rank", "1"], "--rank with --gpus"),
]


@pytest.mark.parametrize("argv, want", GROUP_BENCH_CASES,
                         ids=[" ".join(a) for a, _ in GROUP_BENCH_CASES])
def test_bench_group_refuses_flags_it_would_ignore(argv, want, tmp_path, capsys, monkeypatch):
    """`mok bench --gpus N` names a flag it cannot honour instead of running without it (until
    2026-12-02 --macrobatch half became 131072 and --no-graph was ignored)."""
    import torch

    from mok_kernels import bench

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    rc = bench.cli(["--out", str(tmp_path / "r.jsonl"), "--gpus", "2", "--model", "glm-5", *argv])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("mok bench: ") and want in err, err


def test_bench_out_to_a_missing_folder(tmp_path, capsys):
    from mok_kernels import bench

    assert bench.cli(["--out", str(tmp_path / "missing" / "r.jsonl")]) == 2
    assert "does not exist; create it first" in capsys.readouterr().err
    assert not (tmp_path / "missing").exists()


TOOLS_WITHOUT_FLAGS = [["-m", "calibration.defaults", "--bogus"],   # would rewrite the shipped params
                       ["-m", "calibration.report_h200x2", "x"],
                       ["benchmarks/bench_tuner.py", "--bogus"],
                       ["benchmarks/bench_knobs.py", "--bogus"],
                       ["benchmarks/bwd_item_model.py", "--bogus"],
                       ["benchmarks/bench_sim.py", "--quik"],
                       ["benchmarks/l2_probe.py", "--bogus"],
                       ["benchmarks/bwd_saved_fwd_cost.py", "--bogus"],
                       ["benchmarks/auto_plan.py", "--workloads", "kimi-k2:8:64", "--bogus"],
                       ["benchmarks/gluon_fp8_gemm.py", "--bogus"],
                       ["benchmarks/gluon_bf16_grouped.py", "--bogus"]]


@pytest.mark.parametrize("argv", TOOLS_WITHOUT_FLAGS, ids=[" ".join(a) for a in TOOLS_WITHOUT_FLAGS])
def test_tools_refuse_arguments_they_do_not_take(argv):
    """A tool run with an argument it does not take says so (it used to ignore it and run)."""
    r = subprocess.run([sys.executable, *argv], capture_output=True, text=True, cwd=REPO, timeout=60,
                       env={**os.environ, "PYTHONPATH": str(REPO), "MOK_PROGRESS": "0"})
    assert r.returncode == 2 and r.stdout == "", (r.returncode, r.stdout[-300:], r.stderr[-300:])
    assert r.stderr.count("\n") == 1 and "unrecognized arguments" in r.stderr, r.stderr


@pytest.mark.parametrize("argv, want", [
    (["--workloads", "kimi-k2:8:64", "--list-lag", "9"], "--list-lag '9': 9 must be in [1, 8]"),
    (["--workloads", "nope:8:64"], "unknown model preset 'nope'"),
    (["--workloads", "kimi-k2:8"], "each workload is MODEL:EP:TOKENS"),
    (["--workloads", "kimi-k2:8:64", "--minibatch", "0"], "--minibatch '0'"),
    (["--workloads", "kimi-k2:8:64", "--routing", "zipf"], "--routing 'zipf'"),
    (["--workloads", "kimi-k2:8:64,kimi-k2:8:64"], "names 'kimi-k2:8:64' twice"),
    (["--workloads", "kimi-k2:8:64", "--minibatch", "200000"], "200000 must be in [1, 131072]"),
    (["--workloads", "kimi-k2:8:64", "--comm-sms", "200"], "must leave compute programs")])
def test_auto_plan_refuses_bad_flags_in_one_line(argv, want):
    r = subprocess.run([sys.executable, "benchmarks/auto_plan.py", *argv], capture_output=True,
                       text=True, cwd=REPO, timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert r.returncode == 2 and r.stdout == "", (r.returncode, r.stdout[-300:])
    assert r.stderr.count("\n") == 1 and want in r.stderr, r.stderr


@pytest.mark.parametrize("argv, want", [(["--only", "nope"], "--only ['nope']: not a study"),
                                        (["--only"], "expected at least one argument")])
def test_studies_docs_refuses_unknown_studies(argv, want, capsys):
    from studies.docs import main as docs_main

    assert docs_main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and want in err, err


# GPU-only tools on a machine without CUDA (this CPU box, or torch.cuda hidden): bad flags named
# first, then one line saying a CUDA GPU is needed; never a traceback.
GPU_TOOLS = [
    ("mok_kernels.space_sweep", ["--out", "{d}/r.jsonl"], "needs a CUDA GPU"),
    ("mok_kernels.space_sweep", ["--plan-out", "{d}/missing/p.jsonl"], "does not exist"),
    ("mok_kernels.space_sweep", ["--plan-out", "{d}/a-file"], "exists; a plan is written once"),
    ("mok_kernels.space_sweep", ["--out", "{d}/r.jsonl", "--models", "kimi-k2,,glm-5"],
     "[''] not in the space"),
    ("mok_kernels.space_sweep", ["--out", "{d}/r.jsonl", "--skip-done", "{d}/notjson.jsonl"],
     "notjson.jsonl:1: not JSON"),
    ("mok_kernels.space_sweep", ["--out", "{d}/r.jsonl", "--deadline-s", "nan"], "finite number"),
    ("mok_kernels.tile_sweep", ["--out", "{d}/r.jsonl"], "needs a CUDA GPU"),
    ("mok_kernels.tile_sweep", ["--out", "{d}/r.jsonl", "--workloads", "kimi-k2:0:64"],
     "0 must be >= 1"),
    ("mok_kernels.tile_sweep", ["--out", "{d}/r.jsonl", "--comm-sms", "16,,32"], "'16,,32'"),
    ("mok_kernels.sweep_job", ["--out", "{d}/r.jsonl"], "needs a CUDA GPU"),
    ("mok_kernels.sweep_job", ["--out", "{d}/r.jsonl", "--routing", "zipf:-1"],
     "Zipf exponent must be in (0, 10]"),
    ("mok_kernels.tune_job", [], "needs a CUDA GPU"),
    ("mok_kernels.tune_job", ["--tokens", "1,,2"], "'1,,2'"),
    ("mok_kernels.group_check", [], "needs a CUDA GPU"),
    ("mok_kernels.group_check", ["--dispatch", "shove"], "--dispatch 'shove'"),
    # session 29: refused before the GPU check (they reached it, then ran twice or failed late)
    ("mok_kernels.group_check", ["--dispatch", "pull,pull"], "names a mode twice"),
    ("mok_kernels.group_check", ["--gpus", "3"], "--gpus 3 must divide the 32 experts"),
    ("mok_kernels.group_check", ["--gpus", "64"], "--gpus: 64 must be an integer in [0, 32]"),
    ("mok_kernels.group_check", ["--tokens", "99999999999999999999"],
     "--tokens: 99999999999999999999 must be an integer in [1, 2147483647]"),
    ("mok_kernels.group_check", ["--tokens", "2000000000"], "more than half of this machine's"),
    ("mok_kernels.group_check", ["--iters", "99999999999999999999"], "--iters: 99999999999999999999"),
    ("mok_kernels.group_check", ["--seed", "99999999999999999999"], "--seed: 99999999999999999999"),
    ("calibration.microbench", ["--out", "{d}/r.jsonl"], "needs a CUDA GPU"),
    ("calibration.microbench", ["--out", "{d}/r.jsonl", "--only", "nope"], "['nope'] not one of"),
    ("benchmarks.bench_megakernel", [], "needs a CUDA GPU"),
    ("benchmarks.bench_megakernel", ["--tokens", "1,,2"], "--tokens '1,,2'"),
    ("benchmarks.narrow_diag", ["--workloads", "kimi-k2:8"], "each workload is MODEL:EP:TOKENS"),
    ("benchmarks.profile_forward", ["--model", "nope"], "unknown model preset 'nope'"),
    ("benchmarks.copy_beside_gemm", ["--out", "{d}/r.jsonl", "--workloads", "kimi-k2:16:64"],
     "needs a CUDA GPU"),
    ("benchmarks.copy_beside_gemm", ["--out", "{d}/r.jsonl", "--workloads", "kimi-k2:16:64",
                                     "--combine", "push,,pull"], "no empty item"),
    ("benchmarks.copy_beside_gemm", ["--out", "{d}/r.jsonl", "--workloads", "kimi-k2:16:64",
                                     "--dispatch", "shove"], "--dispatch 'shove': allowed"),
    ("benchmarks.copy_beside_gemm", ["--out", "{d}/r.jsonl", "--workloads", "kimi-k2:7:64"],
     "do not divide over EP 7"),
    ("benchmarks.copy_beside_gemm", ["--out", "{d}/r.jsonl", "--workloads", "kimi-k2:16:64",
                                     "--comm-sms", "200"], "must leave compute programs"),
    ("benchmarks.copy_beside_gemm", ["--out", "{d}/r.txt", "--workloads", "kimi-k2:16:64"],
     "must name a .jsonl file"),
    ("benchmarks.l2_probe", [], "needs a CUDA GPU"),
    ("benchmarks.l2_probe", ["--mb", "8,,24"], "--mb '8,,24'"),
    ("benchmarks.bwd_saved_fwd_cost", [], "needs a CUDA GPU"),
    ("benchmarks.bwd_saved_fwd_cost", ["--tokens", "x"], "--tokens 'x'"),
    ("benchmarks.fp8_ceiling", [], "needs a CUDA GPU"),
    ("benchmarks.gluon_fp8_gemm", ["--variants", "ws2p,bogus"], "'bogus' is not one of"),
    ("benchmarks.fp8_ceiling", ["--rows", "1,,2"], "--rows '1,,2'"),
    ("benchmarks.fp8_ceiling", ["--out", "{d}/missing/x.json"], "does not exist"),
    ("mok_kernels.space_sweep", ["--shapes", "{d}/nope.toml", "--plan-out", "{d}/p.jsonl"],
     "nope.toml"),
    ("mok_kernels.space_sweep", ["--plan-out", "{d}/p.jsonl", "--tokens", "96,,1"],
     "--tokens '96,,1'"),
    # session 29: the scripts' grids, checked as mok bench checks them, before the GPU check
    ("benchmarks.bench_megakernel", ["--configs", "x"], "each config is dispatch/combine/"
                                                        "minibatch/comm_sms"),
    ("benchmarks.bench_megakernel", ["--configs", "pull/push/2048/200"],
     "must leave compute programs"),
    ("benchmarks.bench_megakernel", ["--configs", "shove/push/2048/32"], "dispatch 'shove'"),
    ("benchmarks.bench_megakernel", ["--ep", "7"], "--ep 7: kimi-k2's 384 experts do not divide"),
    ("benchmarks.bench_megakernel", ["--models", "kimi-k2,kimi-k2"], "names 'kimi-k2' twice"),
    ("benchmarks.bench_megakernel", ["--variants", "block_m=48"], "tile sizes must be powers of two"),
    ("benchmarks.bench_megakernel", ["--variants", "bogus=1"], "--variants bogus=1: not a "
                                                               "KernelConfig field"),
    ("benchmarks.bench_megakernel", ["--out", "{d}/r.txt"], "must name a .jsonl file"),
    ("benchmarks.bench_megakernel", ["--iters", "99999999999999999999"], "in [1, 1000000]"),
    ("benchmarks.profile_forward", ["--ep", "7"], "do not divide over 7 ranks"),
    ("benchmarks.profile_forward", ["--comm-sms", "200"], "must leave compute programs"),
    ("benchmarks.narrow_diag", ["--list-lag", "9"], "--list-lag: 9 must be an integer in [1, 8]"),
    ("benchmarks.narrow_diag", ["--workloads", "kimi-k2:8:64,kimi-k2:8:64"],
     "names 'kimi-k2:8:64' twice"),
    ("benchmarks.narrow_diag", ["--comm-sms", "16,16"], "names '16' twice"),
    ("benchmarks.narrow_diag", ["--combine", "push,epilogue"], "--combine 'epilogue': allowed pull, push"),
    ("benchmarks.narrow_diag", ["--combine", "pull,pull"], "names 'pull' twice"),
    ("benchmarks.bwd_saved_fwd_cost", ["--ep", "7"], "do not divide over 7 ranks"),
    ("benchmarks.bwd_saved_fwd_cost", ["--tokens", "64,64"], "names '64' twice"),
    ("benchmarks.l2_probe", ["--mb", "8,8"], "names '8' twice"),
    ("benchmarks.l2_probe", ["--mb", "1e20"], "must be in (0, 100000]"),
    ("benchmarks.fp8_ceiling", ["--out", ""], "--out '' is empty"),
    ("benchmarks.fp8_ceiling", ["--rows", "4096,4096"], "names '4096' twice"),
    ("benchmarks.sustained_clock", [], "needs a CUDA GPU"),
    ("benchmarks.sustained_clock", ["--json", "{d}/missing/x.json"], "does not exist"),
    ("benchmarks.sustained_clock", ["--seconds", "1e20"], "in [1, 3600]"),
    ("calibration.draw_shapes", ["--seed", "1", "--count", "0", "--out-dir", "{d}/s"], ">= 1"),
    ("calibration.draw_shapes", ["--seed", "1", "--count", "2", "--out-dir", "{d}/ro-dir/s"],
     "ro-dir' is not writable"),
    ("calibration.report_gemm_table", ["{d}/notjson.jsonl"], "notjson.jsonl:1: not JSON"),
    ("calibration.list_check", ["--draws", "0"], "must be an integer >= 1"),
    ("calibration.list_check", ["--draws", "5001"], "--draws 5001: at most 5000"),
    ("calibration.list_check", ["--lag", "9"], "--lag 9: at most 8"),
    ("calibration.register", ["--model", "glm-5", "--tokens", "64", "--list-lag", "9", "--out",
                              "{d}/reg.jsonl"], "--list-lag 9 must be at most 8"),
]


@pytest.mark.parametrize("module, argv, want", GPU_TOOLS,
                         ids=[f"{m} {' '.join(a)}" for m, a, _ in GPU_TOOLS])
def test_gpu_tools_refuse_in_one_line(module, argv, want, files, capsys, monkeypatch):
    """Bad flags first, then one line saying a CUDA GPU is needed (torch.cuda hidden)."""
    import importlib

    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    tool = importlib.import_module(module)
    rc = tool.main([a.replace("{d}", str(files)) for a in argv])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    prog = f"{module.replace('.', '/')}.py" if module.startswith("benchmarks") else f"python -m {module}"
    assert err.startswith(f"{prog}: error: ") and want in err, err
    assert not (files / "r.jsonl").exists()


# python -m calibration tools: one line naming the value, exit 2, before any work
TOOL_CASES = [
    ("calibration.loo", ["{d}/empty.jsonl"], "holds no run records"),
    ("calibration.report_legacy_zipf", ["{d}/empty.jsonl", "--params", PARAMS], "holds no run records"),
    ("calibration.report_legacy_zipf", [PUBLISHED, "--params", PARAMS, "--sim-every", "-1"],
     "--sim-every: -1 must be an integer >= 0"),
    ("calibration.report", [PUBLISHED, "--out", "{d}/a-file"], "is a file; name a folder"),
    ("calibration.regret", [PUBLISHED, "--engine", "x"], "--engine 'x' must be one of"),
    ("calibration.regret", [PUBLISHED, "--min-configs", "-1"], "--min-configs: -1 must be"),
    ("calibration.regret", [PUBLISHED, "--params", "{d}/params-bad.json"], "not JSON"),
    ("calibration.regret", [PUBLISHED, "--refit-by", "mood"], "--refit-by 'mood' must be one of"),
    ("calibration.regret", [PUBLISHED, "--free", "gemm_eff"], "--free needs --refit-by"),
    ("calibration.registered", ["{d}/empty.jsonl", PUBLISHED], "holds no registered predictions"),
    ("calibration.registered", ["{d}/notjson.jsonl", PUBLISHED], "notjson.jsonl:1: not JSON"),
    ("calibration.registered", [PUBLISHED, PUBLISHED], "gb300_table1.jsonl:1: engine=None"),
    ("calibration.registered", [PUBLISHED, PUBLISHED, "--by", "ep,,tokens"], "--by 'ep,,tokens'"),
    ("calibration.registered", [PUBLISHED, PUBLISHED, "--by", ""], "--by '': a comma list"),
    ("calibration.registered", [PUBLISHED, PUBLISHED, "--by", "ep,ep"], "names a field twice"),
    ("calibration.register", ["--out", "{d}/r.jsonl", "--plan", "{d}/notjson.jsonl"],
     "notjson.jsonl:1: not JSON"),
    ("calibration.register", ["--out", "{d}/r.jsonl", "--plan", "{d}/empty.jsonl"],
     "holds no planned records"),
    ("calibration.register", ["--out", "{d}/r.jsonl", "--plan", "{d}/none.jsonl"], "no such file"),
    ("calibration.register", ["--out", "{d}/r.jsonl", "--plan", "{d}/badfield.jsonl"],
     "badfield.jsonl:1: --ep 'sixteen' must be an integer >= 1"),
    ("calibration.register", ["--out", "{d}/r.jsonl", "--model", "kimi-k2", "--tokens", "64",
                              "--sim-every", "0"], "--sim-every: 0 must be an integer >= 1"),
    ("calibration.register", ["--out", "{d}/r.jsonl", "--model", "kimi-k2", "--tokens", "64",
                              "--macrobatch", "0"], "--macrobatch: 0 must be an integer >= 1"),
    ("calibration.register", ["--out", "{d}/r.jsonl", "--model", "kimi-k2", "--tokens", "1,,2"],
     "--tokens '1,,2'"),
    ("calibration.register", ["--out", "{d}/missing/r.jsonl", "--model", "kimi-k2", "--tokens", "64"],
     "does not exist"),
    ("calibration.report_space", ["--from-json", "{d}/notjson.jsonl"], "not a JSON file"),
    ("calibration.report_space", ["--from-json", "{d}/params-schema.json"],
     "not a report_space --json output"),
    ("calibration.report_space", ["--from-json", "{d}/none.json"], "no such file"),
    ("calibration.report_space", [PUBLISHED, "--thin", "0"], "--thin: 0 must be an integer >= 1"),
    ("calibration.report_space", [PUBLISHED, "--jobs", "0"], "--jobs: 0 must be an integer >= 1"),
    ("calibration.report_space", [PUBLISHED, "--by", "model,,ep"], "--by '' must be one of"),
    ("calibration.report_space", [PUBLISHED, "--free", ""], "--free '': unknown parameter(s) ['']"),
    ("calibration.published_comm", ["--write"], "exists; its records are written once"),
    ("calibration.fit_fabric", ["calibration/runs/h200/micro.jsonl", "--out", "{d}/missing/f.json"],
     "does not exist"),
    ("calibration.transfer", ["--bogus"], "unrecognized arguments: --bogus"),
    ("calibration.knob_pairs", ["--worst", "-1"], "--worst: -1 must be an integer >= 0"),
    ("calibration.knob_pairs", ["--params", "x.json"], "--params applies to given run files"),
    ("calibration.knob_pairs", [PUBLISHED, "--params", "{d}/none.json"], "none.json"),
    ("calibration.rerun", ["--first", PUBLISHED], "the following arguments are required: --second"),
    ("calibration.report_passes", ["--bogus"], "unrecognized arguments: --bogus"),
    ("calibration.report_unseen", [], "the following arguments are required: runs"),
    ("calibration.report_auto", [PUBLISHED], "no automatic pick with a sweep in"),
    ("calibration.gemm_table", [PUBLISHED], "the following arguments are required: --out"),
    ("calibration.gb300_knobs", ["--fit-knobs", "x"], "invalid choice: 'x'"),
    ("calibration.fit_fabric", [PUBLISHED], "the following arguments are required: --out"),
    ("benchmarks.kernel_space", [], "the following arguments are required: runs"),
    ("mok_kernels.aot", ["--ep", "0"], "--ep: 0 must be an integer >= 1"),
    ("mok_kernels.aot", ["--ep", "5"], "--ep 5 must divide kimi-k2's 384 experts"),
    ("mok_kernels.aot", ["--cfg", "x"], "'x' is not FIELD=VALUE"),
    ("mok_kernels.aot", ["--cfg", "bogus=1"], "--cfg bogus=1: not a KernelConfig field"),
    ("mok_kernels.aot", ["--cfg", "block_m=abc"], "--cfg block_m=abc: an integer is required"),
    ("mok_kernels.aot", ["--fp8-kernel", "gluon"], "the Gluon pass compiles with benchmarks/"),
]


@pytest.mark.parametrize("module, argv, want", TOOL_CASES,
                         ids=[f"{m} {' '.join(a)}"[:90] for m, a, _ in TOOL_CASES])
def test_calibration_tools_refuse_in_one_line(module, argv, want, files, capsys, monkeypatch):
    import importlib

    monkeypatch.chdir(REPO)
    tool = importlib.import_module(module)
    rc = tool.main([a.replace("{d}", str(files)) for a in argv])
    cap = capsys.readouterr()
    assert rc == 2 and cap.err.count("\n") == 1 and "Traceback" not in cap.err, cap.err
    assert want in cap.err, cap.err
    assert not (files / "r.jsonl").exists()


@pytest.mark.parametrize("script, argv, want", [
    ("benchmarks/claim_ab.py", ["{d}/none"], "needs the A/B's eight record files"),
    ("benchmarks/claim_ab.py", ["a", "b"], "unrecognized arguments: b"),
    ("benchmarks/device/legacy_zipf_orders.py", [], "required: path"),
    ("benchmarks/device/legacy_zipf_orders.py", ["{d}/x.txt"], "must name a .json file"),
    ("benchmarks/device/legacy_zipf_orders.py", ["{d}/x.json"], "needs a CUDA GPU"),
    ("benchmarks/gluon_fp8_mok.py", ["--variants", "join=2000"], "'join=2000' is not a knob"),
    ("benchmarks/gluon_fp8_mok.py", ["--variants", "mode=fast"], "'mode=fast' is not a knob"),
    ("benchmarks/gluon_fp8_mok.py", ["--models", "nope"], "unknown model preset 'nope'"),
    ("benchmarks/gluon_fp8_mok.py", ["--models", "gpt-oss-120b"], "must be a multiple of 128"),
    ("benchmarks/gluon_fp8_mok.py", ["--checks", "x"], "--checks 'x': one of"),
    ("benchmarks/gluon_fp8_mok.py", ["--iters", "0"], "--iters: 0 must be an integer >= 1"),
    ("benchmarks/gluon_fp8_mok.py", ["--variants", "+"], "--variants '+': an empty knob"),
    ("benchmarks/gluon_fp8_mok.py", ["--variants", "comm=16++ys"], "an empty knob"),
    ("benchmarks/gluon_fp8_mok.py", ["--variants", "cu1+cu2"], "sets 'cu' twice"),
    ("benchmarks/gluon_fp8_mok.py", ["--variants", "default,,comm=16"], "no empty elements"),
    ("benchmarks/gluon_fp8_mok.py", ["--variants", "comm=16,comm=16"], "names 'comm=16' twice"),
    ("benchmarks/gluon_fp8_mok.py", ["--check-variants", ""], "--check-variants '': a comma list"),
    ("benchmarks/gluon_fp8_mok.py", ["--checks", ""], "--checks '': a comma list"),
    ("benchmarks/gluon_fp8_mok.py", ["--models", ""], "--models '': a comma list"),
    ("benchmarks/gluon_fp8_mok.py", ["--models", "kimi-k2,kimi-k2"], "names 'kimi-k2' twice"),
    ("benchmarks/gluon_fp8_mok.py", ["--no-time", "--baseline"], "--baseline with --no-time"),
    ("benchmarks/gluon_fp8_mok.py", ["--compile-only", "--no-time"], "--no-time with --compile-only"),
    ("benchmarks/gluon_fp8_mok.py", ["--precision", "bf16", "--variants", "default,cu2"],
     "the FP8 copies' quantizing knobs"),
    ("benchmarks/gluon_fp8_gemm.py", ["--compile-only", "--out", "{d}/c.json"],
     "--out with --compile-only"),
    ("benchmarks/gluon_fp8_gemm.py", ["--compile-only", "--grouped"], "--grouped with --compile-only"),
    ("benchmarks/gluon_fp8_gemm.py", ["--grouped", "--rows", "4096"], "--rows with --grouped"),
    ("benchmarks/gluon_fp8_gemm.py", ["--ffn", "--variants", "ws2p"], "--variants with --ffn"),
    ("benchmarks/gluon_fp8_gemm.py", ["--rows", "4096,4096"], "names '4096' twice"),
    ("benchmarks/gluon_bf16_grouped.py", ["--cases", "kimi-k2-down,bogus"], "'bogus' is not one of"),
    ("benchmarks/gluon_bf16_grouped.py", ["--forms", "tn128-s4,tn128-s4"], "names 'tn128-s4' twice"),
    ("benchmarks/gluon_bf16_grouped.py", ["--forms", ""], "'' is not one of"),
    ("benchmarks/gluon_bf16_grouped.py", ["--out", "{d}/missing/x.json"], "does not exist"),
])
def test_scripts_refuse_in_one_line(script, argv, want, files):
    """Scripts under benchmarks/ parse their arguments too: one line, exit 2, no traceback."""
    r = subprocess.run([sys.executable, script, *[a.replace("{d}", str(files)) for a in argv]],
                       capture_output=True, text=True, cwd=REPO, timeout=60,
                       env={**os.environ, "PYTHONPATH": str(REPO), "CUDA_VISIBLE_DEVICES": ""})
    assert r.returncode == 2 and r.stdout == "", (r.returncode, r.stdout[-300:])
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr and want in r.stderr, r.stderr


def test_nvlink_bench_checks_its_flags(files, capsys):
    from calibration.nvlink_bench import main as nvlink_main

    for argv, want in ([["--out", str(files / "r.jsonl"), "--iters", "-1"], "--iters: -1 must be"],
                       [["--out", str(files / "missing" / "r.jsonl")], "does not exist"],
                       # session 29: records are appended, so --out is a records file
                       [["--out", str(files / "notjson.jsonl")], "notjson.jsonl:1: not JSON"],
                       [["--out", str(files / "r.txt")], "must name a .jsonl file"],
                       [["--out", str(files / "r.jsonl"), "--only", "copy,copy"],
                        "names 'copy' twice"],
                       [["--out", str(files / "r.jsonl"), "--iters", "99999999999999999999"],
                        "--iters: 99999999999999999999 must be an integer in [1, 1000000]"]):
        assert nvlink_main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and want in err, err
        assert err.startswith("calibration/nvlink_bench.py: error: "), err


@pytest.mark.parametrize("env, want", [({"RANK": "x", "WORLD_SIZE": "2"}, "RANK='x' must be"),
                                       ({"RANK": "0"}, "WORLD_SIZE=None must be"),
                                       ({"RANK": "2", "WORLD_SIZE": "2"}, "below the world size"),
                                       ({"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "-1"},
                                        "LOCAL_RANK='-1' must be")])
def test_nvlink_bench_names_bad_torchrun_variables_first(env, want, files, capsys, monkeypatch):
    """torchrun's RANK / WORLD_SIZE / LOCAL_RANK garbage raised a ValueError traceback after
    the GPU check; now one line before it."""
    from calibration.nvlink_bench import main as nvlink_main

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert nvlink_main(["--out", str(files / "r.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and want in err, err
    assert err.startswith("calibration/nvlink_bench.py: error: environment "), err


@pytest.mark.skipif(__import__("importlib").util.find_spec("triton") is not None,
                    reason="Triton is installed here: the tool would compile")
def test_gluon_tool_without_triton_says_so_in_one_line():
    r = subprocess.run([sys.executable, "benchmarks/gluon_fp8_gemm.py", "--compile-only"],
                       capture_output=True, text=True, cwd=REPO, timeout=60,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
    assert r.returncode == 2 and r.stdout == "", (r.returncode, r.stdout[-300:])
    assert r.stderr.count("\n") == 1 and "needs Triton with Gluon" in r.stderr, r.stderr


def test_defaults_refuses_an_empty_pass_group_before_any_write(capsys, monkeypatch):
    """--pass-group '' is refused, never taken for the full run that rewrites every params file."""
    from calibration import defaults
    from mok_model.cli import run_tool

    monkeypatch.setattr(defaults, "main", lambda: pytest.fail("the full run started"))
    assert run_tool(defaults.parser(), defaults._main, ["--pass-group", ""]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--pass-group '': one of" in err, err
