"""What the bad-input tests check of a tool's refusal: stderr is one line, `PROG: error: ...`."""


def one_error(err: str, prog: str = "mok") -> str:
    """The one error line of a tool's stderr (the test fails if there are others)."""
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"{prog}: error: "), err
    return lines[0]
