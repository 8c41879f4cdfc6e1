"""The model's measured error on runs no fit read, as a range around a new prediction.

The fit's band (mok_model/band.py) says how far a prediction moves with the fitted parameters;
it is narrow (often under 2%) and says nothing about shapes, EP sizes or token counts the fit
never saw. This range does: `python -m calibration.heldout_errors` predicts every held-out run
record of a hardware (files no fit reads, e.g. calibration/runs/h200_drawn/) with the shipped
parameters and writes the signed relative errors' quantiles, per engine, pass, precision and
token regime, to mok_model/params/heldout/HARDWARE.json. A prediction p then reads: 90% of
those runs measured between p / (1 + q95) and p / (1 + q05).

The file names the parameters (and GEMM table) it was made with by their SHA-256; after a refit
it no longer applies, and predictions say so instead of showing a stale range (the test suite
checks the shipped file against the shipped parameters).

The file also says how often the model ordered two settings of one held-out workload wrongly,
by how far apart it predicted them ("order"): `mok tune` reads it to say how sure its ranking of
the first two settings is (order_risk).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .errors import MokInputError
from .fileio import loads_json
from .params import PARAMS_DIR, Params

SCHEMA = "mok-heldout-errors/1"
HELDOUT_DIR = PARAMS_DIR / "heldout"
LEVEL = 0.9  # the central share of held-out runs the range covers (quantiles 5% and 95%)
DECODE_TOKENS = 512  # token regimes: up to this many tokens per GPU ("decode"), and above
MIN_RUNS = 20  # a group of fewer held-out runs gives no range (its 5% and 95% quantiles are noise)
# the predicted gaps (|log| of the ratio of two settings' latencies) that file the held-out pairs
# of settings by how often the model ordered them wrongly (the file's "order"; mok tune's note)
ORDER_GAPS = (0.01, 0.03, 0.06, 0.10)


def regime(tokens: int) -> str:
    """The token regime a held-out error is filed under."""
    return f"<={DECODE_TOKENS}" if tokens <= DECODE_TOKENS else f">{DECODE_TOKENS}"


def group_key(engine: str, pass_: str, precision: str, tokens: int, fp8_kernel: str = "triton",
              bwd_tiles: str = "recompute") -> str:
    """A held-out error's group: engine, pass (bwd-train for the backward on the training
    tiles, whose errors are not the recomputing tiles'), precision (fp8-gluon for the Gluon FP8
    kernel, whose errors are not the Triton FP8 kernel's), token regime."""
    if precision == "fp8" and fp8_kernel == "gluon":
        precision = "fp8-gluon"
    if pass_ == "bwd" and bwd_tiles == "training":
        pass_ = "bwd-train"
    return f"{engine} {pass_} {precision} {regime(tokens)}"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@lru_cache(maxsize=16)
def _file_sha(path: str, mtime_ns: int, size: int) -> str:
    return _sha(Path(path))


def fingerprint(params: Params) -> dict | None:
    """SHA-256 of the parameters file and of the GEMM table it names, or None for parameters
    that are not a file as written (changed in memory, or priors)."""
    if params.path is None or not Path(params.path).is_file():
        return None
    out = {}
    files = [("params", Path(params.path))]
    table = getattr(params.gemm_table, "path", None)
    if table:
        files.append(("gemm_table", Path(table)))
    for name, p in files:
        st = p.stat()
        out[name] = _file_sha(str(p.resolve()), st.st_mtime_ns, st.st_size)
    return out


@dataclass(frozen=True)
class Heldout:
    """lo/hi in ms (None when there is no range), and a sentence for the reader."""

    lo: float | None
    hi: float | None
    n: int
    note: str

    def as_json(self) -> dict | None:
        if self.lo is None:
            return None
        return {"lo": self.lo, "hi": self.hi, "level": LEVEL, "n": self.n}

    def text(self) -> str:
        if self.lo is None:
            return self.note
        return (f"{LEVEL:.0%} of {self.n} held-out runs measured {self.lo:.3f}-{self.hi:.3f} ms "
                f"at such a prediction ({self.note})")


def read_heldout(path: str | Path) -> dict:
    """A held-out errors file, checked for the fields a range needs."""
    p = Path(path)
    try:
        doc = loads_json(p.read_text())
    except (OSError, ValueError) as exc:
        raise MokInputError(f"held-out errors file {p}: {exc}") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise MokInputError(f"held-out errors file {p}: schema must be {SCHEMA!r}")
    for key in ("hardware", "fingerprint", "groups", "files", "command"):
        if key not in doc:
            raise MokInputError(f"held-out errors file {p}: missing {key!r}")
    for name, g in doc["groups"].items():
        if not all(k in g for k in ("n", "q05", "q95")) or g["q05"] <= -1 or g["q95"] <= -1:
            raise MokInputError(f"held-out errors file {p}: group {name!r} needs n, q05 and q95 "
                                f"above -1")
    order = doc.get("order", [])
    if not isinstance(order, list) or not all(_order_bucket(b) for b in order):
        raise MokInputError(f"held-out errors file {p}: order must be a list of {{lo, hi, n, "
                            f"wrong}} (lo >= 0, hi > lo or null, n >= 0, wrong in [0, 1] or null)")
    return doc


def _order_bucket(b) -> bool:
    """Whether one entry of a held-out file's "order" has the fields order_risk reads."""
    num = (int, float)
    return (isinstance(b, dict) and {"lo", "hi", "n", "wrong"} <= set(b)
            and isinstance(b["lo"], num) and b["lo"] >= 0
            and (b.get("hi") is None or isinstance(b["hi"], num) and b["hi"] > b["lo"])
            and isinstance(b.get("n"), int) and b["n"] >= 0
            and (b.get("wrong") is None or isinstance(b["wrong"], num) and 0 <= b["wrong"] <= 1))


def heldout_range(pred, params: Params | None, directory: Path = HELDOUT_DIR) -> Heldout:
    """The held-out range of a Prediction made with `params` (see the module docstring)."""
    scn = pred.scenario
    hw = scn.hardware.name
    path = directory / f"{hw}.json"
    none = lambda why: Heldout(None, None, 0, f"no held-out range: {why}")  # noqa: E731
    if pred.system != "mok":
        return none(f"no held-out runs of {pred.system} (the range covers MoK)")
    if not path.is_file():
        return none(f"no held-out runs of {hw} (mok_model/params/heldout/ has none)")
    doc = read_heldout(path)
    if params is None or fingerprint(params) != doc["fingerprint"]:
        return none(f"{path.name} was measured with the shipped parameters of {hw} as of its "
                    f"making; these differ (another file, changed values, or a refit since: "
                    f"rerun {doc['command']})")
    key = group_key(pred.engine, scn.pass_, scn.precision, scn.tokens, scn.fp8_kernel,
                    scn.bwd_tiles)
    g = doc["groups"].get(key)
    if g is None or g["n"] < MIN_RUNS:
        return none(f"{0 if g is None else g['n']} held-out runs of {key.replace(' ', ', ')} "
                    f"tokens per GPU (a range needs {MIN_RUNS})")
    p = pred.latency_ms
    return Heldout(p / (1.0 + g["q95"]), p / (1.0 + g["q05"]), int(g["n"]),
                   f"{key}: predictions {g['q05']:+.0%} to {g['q95']:+.0%} off; "
                   f"python -m calibration.heldout_errors, {doc.get('made', '?')}")


def order_risk(params: Params | None, hardware: str, gap: float,
               directory: Path = HELDOUT_DIR) -> dict | None:
    """How often the model ordered two held-out settings wrongly when it predicted them `gap`
    apart (|log| of their latencies' ratio): {"lo", "hi", "n", "wrong", "made", "command"} of the
    held-out file's bucket, or None (no file, a file of other parameters, no "order", or fewer
    than MIN_RUNS pairs in the bucket)."""
    path = directory / f"{hardware}.json"
    if params is None or not path.is_file():
        return None
    doc = read_heldout(path)
    if fingerprint(params) != doc["fingerprint"] or not doc.get("order"):
        return None
    b = next((b for b in doc["order"] if gap >= b["lo"] and (b["hi"] is None or gap < b["hi"])), None)
    if b is None or b["n"] < MIN_RUNS:
        return None
    return {**b, "made": doc.get("made", "?"), "command": doc["command"]}
