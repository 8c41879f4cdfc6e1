"""presets.flat_toml, the fast reader of the preset files: what tomllib reads, value for value and
type for type, or None (then tomllib reads or refuses the text)."""

import tomllib

import pytest

from mok_model import presets


def typed(x):
    """A value with the type of every leaf spelled out (1, 1.0 and True compare equal)."""
    if isinstance(x, dict):
        return [(k, typed(v)) for k, v in x.items()]
    return (type(x).__name__, x)


@pytest.mark.parametrize("file", ["hardware.toml", "models.toml"])
def test_the_preset_files_read_as_tomllib_reads_them(file):
    text = (presets._DIR / file).read_text()
    fast = presets.flat_toml(text)
    assert fast is not None, f"{file} left the flat form: every question now parses it with tomllib"
    assert typed(fast) == typed(tomllib.loads(text))
    assert presets._builtin(file) == fast


READ = [
    "",
    "# only a comment\n\n",
    'a = 1\nb = -2\nc = 0\nd = 1.5\ne = -0.0\nf = true\ng = false\nh = "x y"\ni = ""\n',
    '[t]\nk = "tab\there, unicode \u00e9"\n  indented = 3  \n[t.sub]\nx = 1\n',
    '["glm-4.5"]\nhidden = 5120\n["glm-4.5".sources]\nhidden = "spec"\n',
    "[a.b]\nx = 1\n[a]\ny = 2\n",  # a table defined after a table inside it
    "[a . b]\nx = 1\n",
    '["a.b"]\nx = 1\n',
]
LEFT_TO_TOMLLIB = [  # valid TOML outside the flat form
    'a = "esc\\"aped"\n', "a = 1e3\n", "a = 1_000\n", "a = +1\n", "a = 0x1f\n", "a = inf\n",
    "a = [1, 2]\n", "a = {x = 1}\n", "a = 1 # comment\n", "[t] # comment\nx = 1\n",
    "a.b = 1\n", '"quoted" = 1\n', "[[t]]\nx = 1\n", 'a = """\nmulti\n"""\n', "a = 'literal'\n",
    "a = 1\r\nb = 2\r\n", "a = 1979-05-27\n", "[ a ]\nx = 1\n",
]
REFUSED = [  # not TOML: tomllib's error stands
    "a = 1\na = 2\n", "[t]\n[t]\n", "[t]\nx = 1\n[t.x]\n", "a = 1\n[a]\n", "[a]\nb = 1\n[a.b]\n",
    '["a"]\nx = 1\n[a]\ny = 2\n', "a = 01\n", "a = 1.\n", "a = .5\n", "a =\n", "a = tru\n",
    "[a\n", "# bell \x07\n", 'a = "ctl \x01"\n',
]


@pytest.mark.parametrize("text", READ)
def test_flat_text_reads_as_tomllib(text):
    fast = presets.flat_toml(text)
    assert fast is not None and typed(fast) == typed(tomllib.loads(text))


@pytest.mark.parametrize("text", LEFT_TO_TOMLLIB)
def test_other_toml_is_left_to_tomllib(text):
    tomllib.loads(text)
    assert presets.flat_toml(text) is None


@pytest.mark.parametrize("text", REFUSED)
def test_invalid_toml_is_left_to_tomllib_to_refuse(text):
    with pytest.raises(tomllib.TOMLDecodeError):
        tomllib.loads(text)
    assert presets.flat_toml(text) is None
