"""The one error type for bad input: the CLI turns it into one line on stderr and exit status 2."""


class MokInputError(ValueError):
    """Bad input from a user: names the value and the rule it breaks."""
