"""The NCCL all-to-all microbenchmark (calibration/nvlink_bench.py bench_nccl): its traffic
pattern (CPU), and calibration/fit_fabric.py recovering nccl_peer_gbps and nccl_eff from
records timed by the model's own formula (baselines.nccl_alltoall_s) plus a fixed cost."""

from __future__ import annotations

import pytest

from calibration.fit_fabric import fit_fabric
from calibration.nvlink_bench import nccl_peer_sets, nccl_splits
from mok_model.baselines import nccl_alltoall_s
from mok_model.params import PARAMS_DIR, read_params
from mok_model.presets import load_hardware
from tests.test_fit_fabric import _rec

HW = load_hardware("h200-hgx8")
MIB = 2 ** 20


def test_peer_sets_cover_one_and_every_peer():
    assert nccl_peer_sets(2, False) == [1]
    assert nccl_peer_sets(4, False) == [1, 2, 3]
    assert nccl_peer_sets(8, False) == [1, 2, 4, 7]
    assert nccl_peer_sets(8, True) == [1, 7]
    assert nccl_peer_sets(72, False) == [1, 2, 4, 8, 16, 32, 64, 71]


@pytest.mark.parametrize("world", [2, 3, 8])
def test_splits_pair_every_send_with_a_receive(world):
    """What rank r sends to q is what q expects from r; no rank sends to itself; each rank
    sends to and receives from exactly `peers` ranks."""
    for peers in range(1, world):
        table = [nccl_splits(world, r, peers, 5) for r in range(world)]
        for r in range(world):
            send, recv = table[r]
            assert send[r] == recv[r] == 0
            assert sum(x > 0 for x in send) == sum(x > 0 for x in recv) == peers
            for q in range(world):
                assert send[q] == table[q][1][r]


def nccl_records(world: int, truth: dict, fixed_us: float = 25.0) -> list[dict]:
    base = read_params(PARAMS_DIR / "h200-hgx8.json").with_values(**truth)
    out = []
    for k in nccl_peer_sets(world, False):
        for mb in (0.25, 1, 4, 16, 64):
            ms = nccl_alltoall_s(HW, base, k, mb * MIB) * 1e3 + fixed_us * 1e-3
            out.append(_rec("micro-nccl-alltoall", ms, {"peers": k, "bytes_per_peer": mb * MIB}))
    return out


def test_fit_recovers_channels_and_link_share_at_eight_gpus():
    truth = {"nccl_peer_gbps": 58.0, "nccl_eff": 0.7}
    base = read_params(PARAMS_DIR / "h200-hgx8.json")
    res = fit_fabric(nccl_records(8, truth), base, HW)
    assert res.params["nccl_peer_gbps"] == pytest.approx(58.0, rel=0.02)
    assert res.params["nccl_eff"] == pytest.approx(0.7, rel=0.02)
    # the fixed cost is measured and reported, not folded into a rate
    assert res.measurements["nccl_alltoall"]["1"]["fixed_us"] == pytest.approx(25.0 + 1 * HW.link_latency_us, abs=0.5)
    rows = [r for r in res.residuals if r["system"] == "micro-nccl-alltoall"]
    assert len(rows) == 20
    big = [r for r in rows if r["bytes_per_peer"] == 64 * MIB]   # where the fixed cost is small
    assert max(abs(r["rel_error"]) for r in big) < 0.03


def test_two_gpus_measure_the_channels_only():
    """One peer cannot fill the link: nccl_peer_gbps is fitted, nccl_eff stays the base's and a
    note says why; a base share below what one peer moved is raised to it (a bound)."""
    base = read_params(PARAMS_DIR / "h200-hgx8.json")
    res = fit_fabric(nccl_records(2, {"nccl_peer_gbps": 90.0}), base, HW)
    assert res.params["nccl_peer_gbps"] == pytest.approx(90.0, rel=0.02)
    assert "nccl_eff" not in res.fitted
    assert res.params["nccl_eff"] == base["nccl_eff"]
    assert any("nccl_eff is not measured" in n for n in res.notes)
    low = base.with_values(nccl_eff=0.1)
    res = fit_fabric(nccl_records(2, {"nccl_peer_gbps": 90.0, "nccl_eff": 0.1}), low.with_values(nccl_eff=0.1), HW)
    # at nccl_eff 0.1 the link share (450 x link_eff x 0.1 ~ 34 GB/s) binds the one peer
    assert "nccl_eff" in res.fitted and res.params["nccl_eff"] == pytest.approx(0.1, rel=0.03)


def test_records_that_fit_no_line_change_nothing():
    """One message size a peer count, or times that fall with the bytes: nothing is fitted and
    a note says so (never a rate from a line that cannot be drawn)."""
    base = read_params(PARAMS_DIR / "h200-hgx8.json")
    one_size = [_rec("micro-nccl-alltoall", 1.0, {"peers": 1, "bytes_per_peer": 64 * MIB})]
    falling = [_rec("micro-nccl-alltoall", ms, {"peers": 1, "bytes_per_peer": mb * MIB})
               for mb, ms in ((1, 0.5), (64, 0.4))]
    for recs in (one_size, falling):
        res = fit_fabric(recs, base, HW)
        assert not res.fitted and res.params.values == base.values
        assert any("nothing fitted" in n for n in res.notes)


@pytest.mark.parametrize("ep", [2, 4, 8])
def test_microbenchmark_time_is_the_layer_exchange(ep):
    """nccl_alltoall_s is what the nccl-torch baseline's exchange (_exchange) charges a GPU
    whose rows go evenly to every peer: the fit and the layer read one formula."""
    import numpy as np

    from mok_model.baselines import _exchange
    from mok_model.presets import load_model
    from mok_model.scenario import Scenario
    p = read_params(PARAMS_DIR / "h200-hgx8.json")
    scn = Scenario(HW, load_model("kimi-k2"), ep, 2048)
    rows, row_bytes = 3000.0, 2.0 * 7168
    layer = _exchange(scn, p, row_bytes, np.full(ep, rows), np.full(ep, rows), None, p["nccl_eff"])
    micro = nccl_alltoall_s(HW, p, ep - 1, rows * row_bytes / (ep - 1))
    assert np.allclose(layer, micro, rtol=1e-12)
