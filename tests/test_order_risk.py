"""How sure mok tune's ranking is: the held-out pairs of settings the model ordered wrongly, by
how far apart it predicted them (calibration.heldout_errors.misordered, the held-out file's
"order"), and the note `mok tune` prints from them (mok_model.heldout.order_risk)."""

from __future__ import annotations

import json

import pytest

from calibration.heldout_errors import misordered
from mok_model.cli import main
from mok_model.heldout import HELDOUT_DIR, MIN_RUNS, ORDER_GAPS, order_risk
from mok_model.params import load_params


def test_misordered_files_pairs_by_predicted_gap():
    """Pairs of one workload and file only, a setting timed twice no pair, each filed by its
    predicted gap; wrong where the measured order is the other way."""
    w = ("h200-1", "m", 8)
    rows = [("f", w, "a", 1.000, 1.00), ("f", w, "b", 1.005, 0.99),   # 0.5 % apart, wrong
            ("f", w, "c", 1.200, 1.30),                               # 18 %, 18 %: right
            ("f", w, "a", 1.000, 1.02),                               # a again: no pair with a
            ("g", w, "d", 1.001, 5.0)]                                # another file: no pair
    b = misordered(rows)
    assert [x["lo"] for x in b] == [0.0, *ORDER_GAPS] and b[-1]["hi"] is None
    assert b[0]["n"] == 2 and b[0]["wrong"] == 1.0        # (a, b) and (b, a again): both wrong
    assert b[-1]["n"] == 3 and b[-1]["wrong"] == 0.0      # c against a, b, a again
    assert sum(x["n"] for x in b) == 5 and b[1]["wrong"] is None


def test_shipped_order_says_close_pairs_are_less_sure():
    """On h200-1's held-out runs the model orders settings it predicts under 1 % apart wrongly
    far more often than ones over 10 % apart."""
    doc = json.loads((HELDOUT_DIR / "h200-1.json").read_text())
    first, last = doc["order"][0], doc["order"][-1]
    assert first["n"] >= 100 and last["n"] >= 100
    assert first["wrong"] > 0.25 and last["wrong"] < 0.05


def test_tune_names_how_sure_its_first_two_are(capsys):
    """A near tie (kimi-k2, EP 8, 640 tokens on h200-1: the first two within 1 %) carries a note
    with the held-out share of such pairs ordered wrongly, and --json its numbers; parameters
    other than the held-out file's give none."""
    args = ["tune", "--hardware", "h200-1", "--model", "kimi-k2", "--ep", "8", "--tokens", "640"]
    assert main(args) == 0
    out = capsys.readouterr().out
    note = next(x for x in out.splitlines() if x.startswith("note: ranks 1 and 2 are predicted"))
    assert "under 1% apart the wrong way" in note and "python -m calibration.heldout_errors" in note
    assert main([*args, "--json"]) == 0
    risk = json.loads(capsys.readouterr().out)["order_risk"]
    assert 0 <= risk["gap"] < 0.01 and risk["n"] >= MIN_RUNS and 0 < risk["wrong"] < 1
    p = load_params(None, "h200-1").with_values(mok_fixed_us=1.0)   # not the shipped file
    assert order_risk(p, "h200-1", 0.001) is None
    assert order_risk(load_params(None, "h200-1"), "h200-1", 0.001)["wrong"] == pytest.approx(
        risk["wrong"])


@pytest.mark.parametrize("order", [{"lo": 0}, [{"lo": 0, "hi": 0.01, "n": 3}],
                                   [{"lo": 0, "hi": 0.01, "n": 3, "wrong": 1.5}],
                                   [{"lo": 0.1, "hi": 0.01, "n": 3, "wrong": 0.5}]])
def test_a_held_out_file_with_a_bad_order_is_refused(tmp_path, order):
    """read_heldout checks the order buckets as it checks the groups: one line, not a KeyError."""
    from mok_model.errors import MokInputError
    from mok_model.heldout import read_heldout

    doc = json.loads((HELDOUT_DIR / "h200-1.json").read_text())
    path = tmp_path / "h200-1.json"
    path.write_text(json.dumps({**doc, "order": order}))
    with pytest.raises(MokInputError, match="order must be a list"):
        read_heldout(path)
    path.write_text(json.dumps({k: v for k, v in doc.items() if k != "order"}))
    assert "order" not in read_heldout(path)        # files made before session 59 still read
