"""`mok bench` and the device jobs (space_sweep, sweep_job, tile_sweep) on bad input, with
torch.cuda hidden: one line on stderr naming the value and the rule, exit 2, no traceback, before
the "needs a CUDA GPU" check and before any GPU work (records are append-only and validated, so a
records file that append_records would refuse is named at the start, not after the first run)."""

from __future__ import annotations

import importlib
import json

import pytest

BENCH = [
    # an empty value is refused, only an absent flag takes the default
    (["--ep", ""], "--ep '': '' is not one of a comma list of integers"),
    (["--capacity", ""], "--capacity '': '' is not one of a comma list of numbers"),
    (["--systems", ""], "--systems '': allowed mok, torch-grouped"),
    (["--gpus", "2", "--capacity", ""], "--capacity '': '' is not one of"),
    (["--gpus", "2", "--systems", ""], "--systems '': allowed mok"),
    (["--gpus", "2", "--ep", ""], "--ep '' with --gpus 2"),
    # grid values the GPU run used to refuse first
    (["--ep", "7"], "--ep 7: kimi-k2's 384 experts do not divide over 7 ranks"),
    (["--model", "glm-5", "--ep", "16,3"], "--ep 3: glm-5's 256 experts"),
    (["--macrobatch", "100", "--minibatch", "4096"],
     "--macrobatch 100 with --minibatch 4096: the ring must hold at least one minibatch"),
    (["--comm-sms", "1000"], "--comm-sms 1000: must leave compute programs, at most 131 of the "
                             "132 SMs of the h200-1 preset"),
    (["--comm-sms", "132"], "--comm-sms 132: must leave compute programs"),
    (["--tokens", "1000000000000"], "--tokens 1000000000000 at EP 16 (kimi-k2): the weights and "
                                    "input buffers alone need"),
    (["--pass", "bwd", "--bwd-tiles", "bn_x=-5"], "--bwd-tiles 'bn_x=-5': bn_x=-5: tile sizes "
                                                  "must be powers of two >= 16"),
    (["--pass", "bwd", "--bwd-tiles", "num_warps=3"], "--bwd-tiles 'num_warps=3': num_warps=3"),
    (["--pass", "bwd", "--bwd-tiles", "diag=9"], "--bwd-tiles 'diag=9': diag=9: allowed 0"),
    (["--pass", "bwd", "--bwd-tiles", "default;;w_flat=1"],
     "--bwd-tiles 'default;;w_flat=1': an empty item"),
    (["--pass", "bwd", "--bwd-tiles", ""], "--bwd-tiles '': an empty item"),
    (["--pass", "bwd", "--bwd-tiles", "w_flat=5"], "--bwd-tiles 'w_flat=5': w_flat=5: 0 or 1"),
    (["--pass", "bwd", "--bwd-tiles", "bn_x=x"], "--bwd-tiles 'bn_x=x': 'x' is not an integer"),
    (["--pass", "bwd", "--bwd-tiles", "bn_a=256"], "bn_a=256 must be at most the forward's bn_gu"),
    (["--pass", "bwd", "--bwd-tiles", "a_epi=64"], "a_epi=64: needs saved_gu=1"),
    (["--pass", "bwd", "--bwd-tiles", "saved_gu=1,bn_a=128,a_epi=48"], "a_epi=48: needs saved_gu=1 "
     "and a power of two from 16 to bn_a (128)"),
    (["--pass", "bwd", "--bwd-tiles", "saved_gu=1,bn_a=512,a_epi=64"],
     "bn_a=512 must be at most 256 with a_epi"),
    (["--pass", "bwd", "--bwd-tiles", "bw=48"], "bw=48: tile sizes must be powers of two"),
    (["--pass", "bwd", "--bwd-tiles", "nope=2"], "--bwd-tiles 'nope=2': expected field=value"),
    # --fp8-kernel gluon (session 26): its grid values, named before the GPU check
    (["--precision", "fp8", "--fp8-kernel", "gluon"], "capacity=0.5 with fp8_kernel='gluon'"),
    (["--precision", "fp8", "--fp8-kernel", "gluon", "--capacity", "1.0", "--dispatch", "push"],
     "dispatch='push' with fp8_kernel='gluon'"),
    (["--precision", "fp8", "--fp8-kernel", "gluon", "--capacity", "1.0", "--list-lag", "2"],
     "list_lag=2 with fp8_kernel='gluon'"),
    (["--precision", "fp8", "--fp8-kernel", "gluon", "--capacity", "1.0", "--model", "gpt-oss-120b"],
     "--fp8-kernel gluon with --model gpt-oss-120b"),
    (["--precision", "fp8", "--fp8-kernel", "gluon,v2,gluon", "--capacity", "1.0"],
     "--fp8-kernel 'gluon,v2,gluon' names 'gluon' twice"),
    (["--precision", "bf16", "--fp8-kernel", "gluon"], "--fp8-kernel gluon with --precision bf16"),
    (["--ep", "16,16"], "--ep '16,16' names '16' twice"),
    (["--precision", "fp8,fp8"], "--precision 'fp8,fp8' names 'fp8' twice"),
    # session 29's fuzzing (2026-12-02): values that reached the GPU check, then a hang, an
    # overflow or a flag ignored
    (["--macrobatch", "99999999999999999999"], "--macrobatch '99999999999999999999': allowed a "
                                               "row count >= 1 (at most 2147483647)"),
    (["--minibatch", "3000000000", "--macrobatch", "3000000000"],
     "--minibatch '3000000000': 3000000000 must be in [1, 2147483647]"),
    (["--seed", "99999999999999999999"], "--seed 99999999999999999999: must be at most "
                                         "9223372036854775807 (torch generators take 64-bit"),
    (["--iters", "99999999999999999999"], "--iters 99999999999999999999: must be at most 1000000"),
    (["--warmup", "1000001"], "--warmup 1000001: must be at most 1000000"),
    (["--timeout", "30"], "--timeout 30 without --gpus: one GPU has no collective"),
    (["--model", "kimi-k2,"], "--model 'kimi-k2,': an empty name in the list"),   # session 34
    (["--gpus", "2", "--model", "glm-5", "--timeout", "99999999999999999999"],
     "--timeout 99999999999999999999: must be 10 to 86400 seconds"),
    (["--auto-hint"], "--auto-hint adds a pick to --auto's: give --auto too"),   # session 43
    (["--source-order", "Rotated"], "--source-order 'Rotated': allowed rank, rotated"),  # 48
    (["--list-lag", "\u00b2"], "--list-lag '\u00b2': an integer from 1 to 8 is required"),
    (["--list-lag", "\uff11"], "--list-lag '\uff11': an integer from 1 to 8 is required"),
    (["--macrobatch", "\u00b2"], "--macrobatch '\u00b2': allowed a row count >= 1"),
    (["--source-order", "rank,rank"], "--source-order 'rank,rank' names 'rank' twice"),
    (["--pass", "bwd", "--source-order", "rotated"],
     "--source-order rotated with --pass bwd: that kernel's schedule is in rank order"),
    (["--precision", "fp8", "--fp8-kernel", "gluon", "--capacity", "1.0", "--source-order",
      "rotated"], "source-order rotated: source_order='rotated' with fp8_kernel='gluon'"),
    (["--gpus", "2", "--model", "glm-5", "--auto", "--auto-hint"],
     "--auto-hint with --gpus: the told pick runs on one GPU emulating its peers only"),
]


@pytest.mark.parametrize("argv, want", BENCH, ids=[" ".join(a) for a, _ in BENCH])
def test_bench_names_bad_values_before_the_gpu_check(argv, want, tmp_path, capsys, monkeypatch):
    import torch

    from mok_kernels import bench

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    rc = bench.cli(["--out", str(tmp_path / "r.jsonl"), *argv])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("mok bench: ") and want in err, err
    assert not (tmp_path / "r.jsonl").exists()


@pytest.mark.parametrize("value", ["", "two words", "a" * 101, "line\nbreak"])
def test_bench_refuses_a_malformed_mok_commit(value, tmp_path, capsys, monkeypatch):
    """MOK_COMMIT becomes every record's software.commit: garbage is named before the GPU
    check instead of being written into the records."""
    import torch

    from mok_kernels import bench

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setenv("MOK_COMMIT", value)
    rc = bench.cli(["--out", str(tmp_path / "r.jsonl")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1, err
    assert err.startswith("mok bench: error: environment variable MOK_COMMIT="), err


@pytest.fixture
def outs(tmp_path):
    """A records file that is not valid records, and one that is."""
    (tmp_path / "bad.jsonl").write_text('{"x": 1}\n')
    (tmp_path / "notjson.jsonl").write_text("{not json\n")
    return tmp_path


OUT_CASES = [("{d}/x.txt", "must name a .jsonl file"), ("{d}/x.json", "must name a .jsonl file"),
             ("{d}/bad.jsonl", "exists and is not a valid run-records file"),
             ("{d}/notjson.jsonl", "notjson.jsonl:1: not JSON"),
             ("{d}/missing/r.jsonl", "does not exist")]


@pytest.mark.parametrize("out, want", OUT_CASES, ids=[o for o, _ in OUT_CASES])
def test_bench_checks_its_records_file_first(out, want, outs, capsys, monkeypatch):
    import torch

    from mok_kernels import bench

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    before = {p.name: p.read_bytes() for p in outs.iterdir()}
    rc = bench.cli(["--out", out.replace("{d}", str(outs))])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("mok bench: ") and want in err and out.split("/")[-1] in err, err
    assert {p.name: p.read_bytes() for p in outs.iterdir()} == before


@pytest.mark.parametrize("argv", [
    [],
    ["--ep", "8,16", "--tokens", "64,8192", "--macrobatch", "half,all,8192"],
    ["--precision", "bf16,fp8", "--fp8-kernel", "v1,v5-bm64", "--comm-sms", "131"],
    ["--pass", "bwd", "--bwd-tiles", "default;w_flat=1,a_fuse_gu=1,bn_x=256;saved_gu=1,bn_a=128"],
    ["--gpus", "2", "--model", "glm-5"],
    ["--precision", "fp8", "--fp8-kernel", "gluon,v2", "--capacity", "1.0"],
], ids=lambda a: " ".join(a) or "defaults")
def test_bench_valid_grids_reach_the_gpu_check(argv, tmp_path, capsys, monkeypatch):
    """Valid grids pass every new check (and an existing valid records file is accepted)."""
    import torch

    from mok_kernels import bench

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    rec = bench.make_record(system="torch-grouped", model="kimi-k2", ep=16, tokens=64, knobs={},
                            routing="uniform", seed=0, times=[1.0], breakdown={}, note="",
                            hardware={"preset": "h200-1"}, software={})
    out = tmp_path / "r.jsonl"
    out.write_text(json.dumps(rec) + "\n")
    rc = bench.cli(["--out", str(out), *argv])
    err = capsys.readouterr().err
    assert rc == 2 and "needs a CUDA GPU" in err, err


# (module, argv with {d} for the folder, text the one line must contain)
TOOLS = [
    ("mok_kernels.space_sweep", ["--plan-out", "{d}/p.jsonl", "--skip-done", "{d}/nope.jsonl"],
     "--skip-done with --plan-out"),
    ("mok_kernels.space_sweep", ["--plan-out", "{d}/p.jsonl", "--skip-done", "{d}/bad.jsonl"],
     "--skip-done with --plan-out"),
    ("mok_kernels.space_sweep", ["--plan-out", "{d}/p.jsonl", "--out", "{d}/r.jsonl"],
     "--out with --plan-out"),
    ("mok_kernels.space_sweep", ["--plan-out", "{d}/p.jsonl", "--compile-only"],
     "--compile-only with --plan-out"),
    ("mok_kernels.space_sweep", ["--plan-out", "{d}/p.jsonl", "--gemm-phases"],
     "--gemm-phases with --plan-out"),
    ("mok_kernels.space_sweep", ["--plan-out", "{d}/p.jsonl", "--iters", "4"],
     "--iters with --plan-out"),
    ("mok_kernels.space_sweep", ["--plan-out", "{d}/p.jsonl", "--deadline-s", "10"],
     "--deadline-s with --plan-out"),
    ("mok_kernels.space_sweep", ["--out", "{d}/r.jsonl", "--compile-only"],
     "--out with --compile-only"),
    ("mok_kernels.space_sweep", ["--plan-out", "{d}/p.jsonl", "--eps", "7", "--models", "kimi-k2"],
     "no workload of kimi-k2 at EP 7: the routed experts (kimi-k2's 384)"),
    ("mok_kernels.space_sweep", ["--plan-out", "{d}/p.jsonl", "--eps", "7"], "at EP 7:"),
    ("mok_kernels.space_sweep", ["--out", "{d}/r.jsonl", "--eps", "16", "--models",
                                 "mixtral-8x7b,kimi-k2"], "no workload of mixtral-8x7b at EP 16"),
    ("mok_kernels.space_sweep", ["--plan-out", "{d}/p.txt"], "--plan-out '{d}/p.txt' must name a "
                                                             ".jsonl file"),
    ("mok_kernels.space_sweep", ["--out", "{d}/r.txt"], "--out '{d}/r.txt' must name a .jsonl"),
    ("mok_kernels.space_sweep", ["--out", "{d}/bad.jsonl"], "--out '{d}/bad.jsonl' exists and is "
                                                            "not a valid run-records file"),
    ("mok_kernels.sweep_job", ["--out", "{d}/bad.jsonl"],
     "--out '{d}/bad.jsonl' exists and is not"),
    ("mok_kernels.sweep_job", ["--out", "{d}/r.json"], "--out '{d}/r.json' must name a .jsonl"),
    ("mok_kernels.sweep_job", ["--out", "{d}/r.jsonl", "--comm-sms", "8,1000"],
     "--comm-sms 1000: must leave compute programs"),
    ("mok_kernels.sweep_job", ["--out", "{d}/r.jsonl", "--workloads", "mixtral-8x7b:1024"],
     "--workloads 'mixtral-8x7b:1024': mixtral-8x7b's 8 experts do not divide over EP 16"),
    ("mok_kernels.sweep_job", ["--out", "{d}/r.jsonl", "--workloads", "kimi-k2:1000000000000"],
     "tokens 1000000000000 at EP 16 (kimi-k2)"),
    ("mok_kernels.tile_sweep", ["--out", "{d}/bad.jsonl"],
     "--out '{d}/bad.jsonl' exists and is not"),
    ("mok_kernels.tile_sweep", ["--out", "{d}/r.txt"], "--out '{d}/r.txt' must name a .jsonl"),
    ("mok_kernels.tile_sweep", ["--out", "{d}/r.jsonl", "--comm-sms", "500"],
     "--comm-sms 500: must leave compute programs"),
    ("mok_kernels.tile_sweep", ["--out", "{d}/r.jsonl", "--workloads", "kimi-k2:7:64"],
     "--workloads 'kimi-k2:7:64': kimi-k2's 384 experts do not divide over EP 7"),
    ("mok_kernels.tile_sweep", ["--out", "{d}/r.jsonl", "--workloads", "kimi-k2:8:1000000000000"],
     "tokens 1000000000000 at EP 8 (kimi-k2)"),
    # session 29's fuzzing (2026-12-02): these reached the GPU check
    ("mok_kernels.space_sweep", ["--out", "{d}/r.jsonl", "--seed", "99999999999999999999"],
     "--seed: 99999999999999999999 must be an integer in [0, 9223372036854775807]"),
    ("mok_kernels.space_sweep", ["--out", "{d}/r.jsonl", "--iters", "99999999999999999999"],
     "--iters: 99999999999999999999 must be an integer in [1, 1000000]"),
    ("mok_kernels.space_sweep", ["--out", "{d}/r.jsonl", "--eps", "16,16"], "names '16' twice"),
    ("mok_kernels.space_sweep", ["--out", "{d}/r.jsonl", "--tokens", "99999999999999999999"],
     "--tokens 99999999999999999999 at EP 4"),
    ("mok_kernels.sweep_job", ["--out", "{d}/r.jsonl", "--minibatch", "99999999999999999999"],
     "--minibatch '99999999999999999999': 99999999999999999999 must be in [1, 2147483647]"),
    ("mok_kernels.sweep_job", ["--out", "{d}/r.jsonl", "--comm-sms", "16,16"], "names '16' twice"),
    ("mok_kernels.sweep_job", ["--out", "{d}/r.jsonl", "--warmup", "99999999999999999999"],
     "--warmup: 99999999999999999999 must be"),
    ("mok_kernels.tile_sweep", ["--out", "{d}/r.jsonl", "--candidates", ""],
     "--candidates '': not one of"),
    ("mok_kernels.tile_sweep", ["--out", "{d}/r.jsonl", "--comm-sms", "16,16"], "names '16' twice"),
    # session 42: a suffix value the kernel refuses, before the GPU check
    ("mok_kernels.tile_sweep", ["--out", "{d}/r.jsonl", "--candidates", "m128-g128-d256-w8-s4-k3"],
     "--candidates 'm128-g128-d256-w8-s4-k3': split_dn=3: allowed 1, 2, 4, 8, 16"),
    ("mok_kernels.tile_sweep", ["--out", "{d}/r.jsonl", "--candidates",
                                "m128-g128-d256-w8-s4-k4-b2"],
     "dn_blocks=2 with split_dn=4: a down item walks whole blocks"),
    ("mok_kernels.tune_job", ["--tokens", "99999999999999999999"],
     "--tokens 99999999999999999999 at EP 16"),
    ("mok_kernels.tune_job", ["--models", "kimi-k2,kimi-k2"], "names 'kimi-k2' twice"),
    ("calibration.microbench", ["--out", "{d}/bad.jsonl"], "exists and is not a valid run-records"),
    ("calibration.microbench", ["--out", "{d}/r.txt"], "must name a .jsonl file"),
    ("calibration.microbench", ["--out", "{d}/r.jsonl", "--only", "copy,copy"], "names 'copy' twice"),
]


@pytest.mark.parametrize("module, argv, want", TOOLS,
                         ids=[f"{m} {' '.join(a)}" for m, a, _ in TOOLS])
def test_device_jobs_name_bad_input_first(module, argv, want, outs, capsys, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    before = {p.name: p.read_bytes() for p in outs.iterdir()}
    tool = importlib.import_module(module)
    rc = tool.main([a.replace("{d}", str(outs)) for a in argv])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"python -m {module}: error: "), err
    assert want.replace("{d}", str(outs)) in err, err
    assert {p.name: p.read_bytes() for p in outs.iterdir()} == before     # nothing written


def test_plan_out_honours_models(tmp_path):
    """--plan-out --models writes that model's part of the same plan (it used to write all)."""
    from mok_kernels import space_sweep as ss

    assert ss.main(["--plan-out", str(tmp_path / "all.jsonl"), "--eps", "8,16"]) == 0
    assert ss.main(["--plan-out", str(tmp_path / "k.jsonl"), "--eps", "8,16", "--models",
                    "kimi-k2"]) == 0
    every = [json.loads(x) for x in (tmp_path / "all.jsonl").read_text().splitlines()]
    mine = [json.loads(x) for x in (tmp_path / "k.jsonl").read_text().splitlines()]
    assert mine and mine == [r for r in every if r["model"] == "kimi-k2"]
