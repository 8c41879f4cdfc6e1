"""Input checks shared by the calibration tools: messages that name the tool's own flag.

mok_model's readers name `mok predict`'s flags (a bad parameters file is "--params ..."; a
hardware without a shipped file suggests --params and --allow-params-mismatch); a calibration
tool reads the same files under other flags, so these wrap them with the flag the user typed.
"""

from __future__ import annotations

from pathlib import Path

from mok_model.errors import MokInputError
from mok_model.params import PARAMS_DIR, Params, load_params, read_params


def required_text(value: str | None, flag: str, what: str = "file path") -> str | None:
    """Refuse an empty or blank string flag (it must never fall back to a default); None (not
    given) passes."""
    if value is not None and not value.strip():
        raise MokInputError(f"{flag} {value!r}: a {what} is required")
    return value


def param_names(value: str | None, flag: str) -> list[str] | None:
    """A comma list of model parameters (--free, --fix): each one mok_model.params BOUNDS knows,
    none empty, none twice (a repeated name would be fitted as two parameters); None (not
    given) passes."""
    from mok_model.params import BOUNDS

    if value is None:
        return None
    names = value.split(",")
    unknown = [f for f in names if f not in BOUNDS]
    if unknown:
        raise MokInputError(f"{flag} {value!r}: unknown parameter(s) {unknown}; choose from "
                            f"{', '.join(sorted(BOUNDS))}")
    twice = sorted({f for f in names if names.count(f) > 1})
    if twice:
        raise MokInputError(f"{flag} {value!r} names {twice[0]!r} twice; each parameter once")
    return names


def params_file(path: str | Path, flag: str) -> Params:
    """read_params, its messages naming `flag` (e.g. --base) instead of --params."""
    required_text(str(path), flag)
    try:
        return read_params(path)
    except MokInputError as exc:
        msg = str(exc)
        if msg.startswith("--params "):
            msg = flag + msg[len("--params"):]
        raise MokInputError(msg) from None


def shipped_params(hardware: str, flag: str = "--hardware", other: str | None = None) -> Params:
    """The shipped parameters of a hardware preset, or a refusal naming `flag` and the presets
    that ship one (and `other`, e.g. "--params FILE", where the tool has such a flag)."""
    required_text(hardware, flag, "preset name")
    if not (PARAMS_DIR / f"{hardware}.json").is_file():
        shipped = sorted(p.stem for p in PARAMS_DIR.glob("*.json"))
        raise MokInputError(f"{flag} {hardware!r}: no shipped parameters for it; one of "
                            f"{', '.join(shipped)}" + (f" (or pass {other})" if other else ""))
    return load_params(None, hardware)
