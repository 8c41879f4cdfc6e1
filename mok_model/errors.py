"""The one error type for bad input: the CLI turns it into one line on stderr and exit status 2."""


class MokInputError(ValueError):
    """Bad input from a user: names the value and the rule it breaks."""


class SimInvariantError(RuntimeError):
    """An internal invariant of the simulation was broken (a bug in the simulator); here, not in
    the simulator, so that the CLI can catch it without importing SimPy."""


class ModelError(RuntimeError):
    """The model computed no number (NaN) where it must: a bug in mok, reported as such, never
    as bad input and never as a number."""


def is_whole(v, low: int = 1) -> bool:
    """Whether `v` is a whole number >= low: an int or a numpy integer, never a bool."""
    import numbers
    return not isinstance(v, bool) and isinstance(v, numbers.Integral) and v >= low


def check_whole(low: int = 1, **sizes) -> None:
    """Refuse (MokInputError, one line) the first of `sizes` that is not a whole number >= low."""
    for name, v in sizes.items():
        if not is_whole(v, low):
            raise MokInputError(f"{name}={v!r}: an integer >= {low} is required")
