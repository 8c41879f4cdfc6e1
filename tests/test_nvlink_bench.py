"""calibration/nvlink_bench.py: slot and buffer layout (CPU), and the --emulate run (GPU)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from calibration.nvlink_bench import STRIDE, Fabric, signal_tables
from mok_model.records import read_records

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "calibration" / "nvlink_bench.py"


def _env():
    return dict(os.environ, PYTHONPATH=str(ROOT))


def test_signal_slots_spread_over_responders():
    # rank r's flag region lies at flag_off[r] elements from this rank's own (0 for itself)
    r0 = SimpleNamespace(emulate=False, world=3, rank=0, flag_off=[0, 1000, 5000])
    outs, ins, ack, nacks = signal_tables(r0, 4)
    assert outs == [1000 + STRIDE, 5000 + 2 * STRIDE, 1000 + 3 * STRIDE, 5000 + 4 * STRIDE]
    assert ins == [] and ack == 0 and nacks == 2
    r2 = SimpleNamespace(emulate=False, world=3, rank=2, flag_off=[-7000, -5000, 0])
    outs, ins, ack, nacks = signal_tables(r2, 4)
    assert ins == [2 * STRIDE, 4 * STRIDE] and ack == -7000 and nacks == 2
    one = signal_tables(SimpleNamespace(emulate=False, world=4, rank=0, flag_off=[0, 8, 16, 24]), 1)
    assert one[3] == 1 and one[0] == [8 + STRIDE]


def test_emulated_slots_are_one_region_and_match():
    f = SimpleNamespace(emulate=True, world=1, rank=0, flag_off=[0, 544])
    outs, ins, ack, nacks = signal_tables(f, 3)
    assert outs == ins == [544 + STRIDE, 544 + 2 * STRIDE, 544 + 3 * STRIDE]
    assert ack == 0 and nacks == 1


def test_copy_offsets_pull_reads_peer_push_writes_peer():
    f = SimpleNamespace(rows=10, peer_off=123456)
    src, dst = Fabric.offsets(f, "pull")
    assert src == 123456 and dst == 10 * 7168          # peer's rows -> my upper half
    src, dst = Fabric.offsets(f, "push")
    assert src == 0 and dst == 123456 + 10 * 7168      # my rows -> peer's upper half


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without CUDA")
def test_refuses_without_gpu(tmp_path):
    r = subprocess.run([sys.executable, str(SCRIPT), "--emulate", "--out", str(tmp_path / "x.jsonl")],
                       capture_output=True, text=True, env=_env())
    assert r.returncode == 2 and "needs a CUDA GPU" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "x.jsonl").exists()


@pytest.mark.gpu
def test_emulate_quick_writes_valid_records(tmp_path):
    out = tmp_path / "nvlink.jsonl"
    r = subprocess.run([sys.executable, str(SCRIPT), "--emulate", "--quick", "--iters", "3",
                        "--deadline-s", "240", "--out", str(out)],
                       capture_output=True, text=True, env=_env(), timeout=400)
    assert r.returncode == 0, r.stderr[-3000:]
    recs = read_records([out])                       # validates every line
    systems = {x["system"] for x in recs}
    assert systems == {"micro-nvlink-copy", "micro-nvlink-bidir", "micro-nvlink-signal",
                       "micro-nvlink-gemm-copy", "micro-copy-beside-gemm"}, systems
    for x in recs:
        assert x["emulated_peers"] is True and x["hardware"]["fabric"] == "local-hbm"
        assert x["note"].startswith("EMULATED")
        lat = x["latency_ms"]
        assert len(lat["samples"]) == lat["n"] == 3 and lat["p10"] <= lat["median"] <= lat["p90"]
    pull = {x["metrics"]["sms"]: x["metrics"]["GBps"] for x in recs
            if x["system"] == "micro-nvlink-copy" and x["metrics"]["direction"] == "pull"}
    assert pull[max(pull)] > 4 * pull[1]             # more copy programs move more bytes
    sig = {x["metrics"]["peers"]: x["metrics"]["roundtrip_us"] for x in recs
           if x["system"] == "micro-nvlink-signal"}
    assert set(sig) == {1, 2, 8} and 0 < sig[1] < 100 and sig[8] >= sig[1] * 0.9
    for x in recs:
        if x["system"] == "micro-nvlink-gemm-copy":
            assert 0 < x["metrics"]["ratio"] < 1.3
        if x["system"] == "micro-copy-beside-gemm":   # both roles ran, and in one launch
            m = x["metrics"]
            assert m["copy_alone_ms"] > 0 and m["gemm_alone_ms"] > 0
            assert m["copy_beside_ms"] >= 0.9 * m["copy_alone_ms"] and -0.1 < m["copy_slowdown"] < 1
    # the fit reads them (emulated: only when allowed, for the one-GPU preset)
    from calibration.fit_fabric import main as fit_main
    assert fit_main([str(out), "--out", str(tmp_path / "p.json")]) == 2
    assert fit_main([str(out), "--out", str(tmp_path / "p.json"), "--allow-emulated"]) == 0


def test_gemm_shapes_are_three_whole_numbers_each_once(tmp_path):
    """--gemm-shapes refuses a shape that is not MxKxN of whole numbers 1-65536, or one named
    twice, before any GPU check (one line, exit 2)."""
    for bad, why in (("128x7168", "MxKxN"), ("0x1x1", "1-65536"), ("1x1x1,1X1X1", "twice"),
                     ("1x1x1,", "MxKxN")):
        r = subprocess.run([sys.executable, str(SCRIPT), "--emulate", "--gemm-shapes", bad,
                            "--out", str(tmp_path / "x.jsonl")], capture_output=True, text=True,
                           env=_env())
        assert r.returncode == 2 and why in r.stderr and len(r.stderr.strip().splitlines()) == 1
    from calibration.nvlink_bench import gemm_shapes
    assert gemm_shapes("128x7168x4096,2688X3328X2560") == ((128, 7168, 4096), (2688, 3328, 2560))


def test_alltoall_pairs_push_and_pull_move_the_same_rows():
    # 4 ranks, buffers 1000 elements apart: push (rank p writes slice q to q's slot p) and pull
    # (rank q reads p's slice q into its slot p) describe the same exchange, every slot filled once
    from types import SimpleNamespace
    import importlib.util
    from pathlib import Path
    spec = importlib.util.spec_from_file_location(
        "nvlink_bench", Path(__file__).parents[1] / "calibration" / "nvlink_bench.py")
    nb = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(nb)
    world, rows, gap = 4, 64, 10**9
    moves = {"push": set(), "pull": set()}
    for me in range(world):
        f = SimpleNamespace(rows=rows, rank=me, world=world,
                            buf_off=[(q - me) * gap for q in range(world)])
        for direction in moves:
            pairs, s = nb.alltoall_pairs(f, direction)
            assert s == rows // world and len(pairs) == world - 1
            for src, dst in pairs:       # back to (rank, element offset in that rank's buffer)
                absolute = lambda off, me=me: divmod(off + me * gap, gap)  # noqa: E731
                moves[direction].add((absolute(src), absolute(dst)))
    assert moves["push"] == moves["pull"] and len(moves["push"]) == world * (world - 1)
    slots = {dst for _, dst in moves["push"]}
    assert all(off >= rows * nb.H for _, off in slots) and len(slots) == world * (world - 1)
