"""Hold out whole groups of records (a token count, a model shape, a knob value), never random
rows: a fit is judged on workloads or settings it has not seen."""

from __future__ import annotations

import json

from mok_model.errors import MokInputError
from mok_model.records import KNOBS

FIELDS = ("tokens", "model", "ep", "pass", "precision", "routing", "system")


def group_value(rec: dict, by: str) -> str:
    """The value of the grouping key `by` for a record, as a string."""
    if by in KNOBS:
        v = (rec.get("config") or {}).get(by)
        return "unset" if v is None else str(v)
    if by == "model":
        m = rec["model"]
        return m.get("name", json.dumps(m, sort_keys=True)) if isinstance(m, dict) else m
    if by == "routing":
        from .fit import routing_spec  # the model's reading (hot fractions become route shares)

        return routing_spec(rec)
    return str(rec[by])


def _order(v: str):
    try:
        return (0, float(v), v)
    except ValueError:
        return (1, 0.0, v)


def group_values(records: list[dict], by: str) -> list[str]:
    """The distinct values of `by`, numbers in numeric order, then names in sort order."""
    check_key(by)
    return sorted({group_value(r, by) for r in records}, key=_order)


def check_key(by: str, flag: str = "--holdout-by") -> None:
    """Refuse a grouping key that is not a record field or a knob."""
    if by not in FIELDS and by not in KNOBS:
        raise MokInputError(f"{flag} {by!r} must be one of {FIELDS + KNOBS}")


def split(records: list[dict], by: str, value: str | None = None) -> tuple[list[dict], list[dict], str]:
    """(train, held-out, held-out value): every record whose `by` equals the value is held out.

    Without a value the last group is held out (the largest token count or knob value, the last
    model name): the harder, extrapolating side.
    """
    values = group_values(records, by)
    if len(values) < 2:
        raise MokInputError(f"--holdout-by {by}: the records have only the value(s) {values}; "
                            f"holding out one group needs at least two")
    if value is None:
        value = values[-1]
    value = str(value)
    if value not in values:
        # 4096 and 4096.0 name the same group
        match = [v for v in values if _order(v)[0] == 0 and _order(value)[0] == 0
                 and float(v) == float(value)]
        if not match:
            raise MokInputError(f"--holdout {value!r} is not a value of {by} in the records: {values}")
        value = match[0]
    held = [r for r in records if group_value(r, by) == value]
    train = [r for r in records if group_value(r, by) != value]
    return train, held, value
