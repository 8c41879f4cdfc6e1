"""A full `python -m calibration.defaults` run starts h200-1 from calibration/priors.py, so every
value the shipped file holds without fitting it must be the prior's: session 40 set the measured
pipe_copy_scale (1.25) into the shipped files by hand, and session 69's full refit wrote the 1.0
prior in its place."""

from __future__ import annotations

from calibration.defaults import FITTED_SOURCES
from calibration.priors import H200_LOCAL, prior_params
from mok_model.params import load_params


def test_every_unfitted_h200_value_is_the_prior_a_refit_starts_from():
    shipped = load_params(None, "h200-1")
    priors = prior_params("h200-1", H200_LOCAL)
    unfitted = [k for k in shipped.values if not shipped.sources[k].startswith(FITTED_SOURCES)]
    assert "pipe_copy_scale" in unfitted and len(unfitted) > 20
    for k in unfitted:
        assert priors[k] == shipped[k], k


def test_the_full_refit_names_every_value_it_moved_that_no_fit_had_moved():
    """calibration.defaults warns about each changed value whose source was not a fit's: session
    69's candidate h200-1 (frozen under calibration/predictions/params/) shows the one it lost,
    and the share of joining comm SMs it fitted where the shipped file holds the design value
    (session 73)."""
    from pathlib import Path

    from calibration.defaults import file_values, unfitted_changes

    def values(path):
        return {"h200-1.json": file_values(Path(__file__).resolve().parents[1] / path)}

    shipped = values("mok_model/params/h200-1.json")
    candidate = values("calibration/predictions/params/h200-1_sustain_2026-12-07.json")
    changed = unfitted_changes(shipped, candidate)
    assert len(changed) == 2
    assert changed[0].startswith("h200-1.json comm_join_share: 1 (design: mok_kernels/megakernel.py")
    assert changed[1].startswith("h200-1.json pipe_copy_scale: 1.25 (measured")
    assert unfitted_changes(shipped, shipped) == []
