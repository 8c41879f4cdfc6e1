"""Session 64's bad GEMM tables and parameters files (found by fuzzing): each is refused in one
line naming the file, the value and the rule, instead of a wrong latency (a NaN, 1.2532 ms for
1.934) or an error from deep inside (ValueError, KeyError, ZeroDivisionError, TypeError,
RecursionError)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mok_model.cli import main
from mok_model.errors import MokInputError
from mok_model.gemm_table import read_table
from mok_model.params import COUNTS, read_params

SHIPPED = Path("mok_model/params")
GOOD = json.loads((SHIPPED / "gemm/h200-1.json").read_text())
MECH = dict(GOOD["mechanism"])


def table(tmp_path: Path, edit) -> Path:
    """A copy of h200-1's table with `edit` applied to its document."""
    doc = json.loads(json.dumps(GOOD))
    edit(doc)
    path = tmp_path / "x.json"
    path.write_text(json.dumps(doc))
    return path


def each_shape(key, change):
    return lambda g: [c.update({key: change(c[key])}) for c in g["curves"]["shapes"]]


def first_shape(key, value):
    return lambda g: g["curves"]["shapes"][0].update({key: value})


def curves(key, value):
    return lambda g: g["curves"].update({key: value})


def mechanism(**changes):
    return lambda g: g.update(mechanism={k: v for k, v in {**MECH, **changes}.items()
                                         if v is not None})


def setting(key, value):
    return lambda g: g.update({key: value})


CASES = [  # (edit, what the one line says)
    (each_shape("values", lambda v: ["nan"] * len(v)), r"values\[0\]='nan' must be a finite"),
    (each_shape("values", lambda v: ["inf"] * len(v)), r"values\[0\]='inf' must be a finite"),
    (each_shape("values", lambda v: [-x for x in v]), r"values\[0\]=-\d\.\d+ must be a finite"),
    (each_shape("values", lambda v: [0] * len(v)), r"values\[0\]=0 must be a finite positive"),
    (each_shape("log2_rows", lambda v: v[::-1]), r"log2_rows\[1\]=.* \(strictly ascending\)"),
    (each_shape("log2_rows", lambda v: ["nan"] + v[1:]), r"log2_rows\[0\]='nan' must be a finite"),
    (each_shape("log2_rows", lambda v: [True] + v[1:]), r"log2_rows\[0\]=True must be a finite"),
    (curves("uses_mechanism", "no"), "uses_mechanism='no' must be true or false"),
    (curves("median_eff", "nan"), "median_eff='nan' must be a finite positive"),
    (curves("median_eff", -1), "median_eff=-1 must be a finite positive"),
    (curves("measured", "fwd"), "measured='fwd' must be a list of"),
    (first_shape("shape", ["nan", 1, 1]), r"shape=\['nan', 1, 1\] must be three positive whole"),
    (first_shape("shape", [1.5, 1, 1]), r"shape=\[1.5, 1, 1\] must be three positive whole"),
    (first_shape("shape", [10 ** 400, 1, 1]), "must be three positive whole"),
    (mechanism(item_us=None, foo=1.0), r"mechanism must hold exactly tensor_eff, item_us, "
                                       r"hbm_gbps, launch_us \(and sustain_loss and sustain_ms "
                                       r"together, or neither\): it lacks item_us and has unknown foo"),
    (mechanism(foo=1.0), r"or neither\): it has unknown foo$"),
    (mechanism(launch_us=None), r"or neither\): it lacks launch_us$"),
    (mechanism(sustain_loss=0.05, sustain_ms=None), r"or neither\): it lacks sustain_ms$"),
    (mechanism(sustain_loss=-0.1, sustain_ms=5.0),
     r"mechanism sustain_loss=-0.1 must be a number >= 0$"),
    (mechanism(tensor_eff=0), r"mechanism tensor_eff=0 must be a number > 0 \(it divides\)"),
    (mechanism(hbm_gbps=0), r"mechanism hbm_gbps=0 must be a number > 0 \(it divides\)"),
    (mechanism(item_us=-1), "mechanism item_us=-1 must be a number >= 0"),
    (lambda g: g.pop("mechanism"), "uses_mechanism is true but the file has no mechanism"),
    (setting("records", 5), "records=5 must be a list of run-record files"),
    (setting("records", "abc"), "records='abc' must be a list of run-record files"),
]


@pytest.mark.parametrize("edit,why", CASES)
def test_a_bad_table_is_refused_in_one_line(tmp_path, edit, why):
    path = table(tmp_path, edit)
    with pytest.raises(MokInputError, match=why) as err:
        read_table(path)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


def transferred(tmp_path: Path, name: str, source: str) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"schema": "mok-gemm-table/2", "hardware": "h100-1",
                                "transferred_from": source, "mechanism": MECH}))
    return path


def test_a_table_transferred_from_itself_or_a_cycle_is_refused(tmp_path):
    """It read itself until Python's recursion limit (the CLI said "not JSON (nested too deeply
    to read)")."""
    self_ = transferred(tmp_path, "self.json", "self.json")
    with pytest.raises(MokInputError, match=r"transferred_from 'self.json' must be a measured "
                                            r"table \(not itself transferred\): it is "
                                            r"transferred from 'self.json'$"):
        read_table(self_)
    transferred(tmp_path, "a.json", "b.json")
    b = transferred(tmp_path, "b.json", "a.json")
    with pytest.raises(MokInputError, match=r"b.json'.*transferred_from 'a.json' .* it is "
                                            r"transferred from 'b.json'$"):
        read_table(b)


def test_the_shipped_transferred_table_still_reads():
    t = read_table(SHIPPED / "gemm/h100-1.json")
    assert t.transferred_from is not None and t.uses_mechanism


def params_with(tmp_path: Path, gemm_edit=None, **values) -> Path:
    """A copy of h200-1's parameters file (its table copied beside it, `gemm_edit` applied)."""
    shutil.copytree(SHIPPED / "gemm", tmp_path / "gemm")
    doc = json.loads((SHIPPED / "h200-1.json").read_text())
    doc.pop("fit_record", None)
    for k, v in values.items():
        doc["values"][k]["value"] = v
    if gemm_edit is not None:
        doc["gemm_table"] = str(table(tmp_path / "gemm", gemm_edit).relative_to(tmp_path))
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    return path


def test_counts_are_whole_numbers(tmp_path):
    """gemm_tile_m 100.5 (within its bounds) gave 1.586 ms for 1.934: a tile has whole rows."""
    assert COUNTS == {"gemm_tile_m", "gemm_tile_n", "fp8_tile_m", "fp8_gluon_tile_m", "nccl_ops",
                      "deepep_sms", "deepep_ops", "hybridep_sms", "hybridep_ops", "comet_sms"}
    with pytest.raises(MokInputError, match=r"gemm_tile_m=100.5 must be a whole number \(it "
                                            r"counts\) in \[16, 256\]"):
        read_params(params_with(tmp_path / "a", gemm_tile_m=100.5))
    with pytest.raises(MokInputError, match="deepep_sms=23.5 must be a whole number"):
        read_params(params_with(tmp_path / "b", deepep_sms=23.5))
    assert read_params(params_with(tmp_path / "c", gemm_tile_m=128.0))["gemm_tile_m"] == 128


def test_the_cli_says_one_line(tmp_path, capsys):
    args = ["predict", "--hardware", "h200-1", "--model", "kimi-k2", "--ep", "8", "--tokens",
            "1024", "--comm-sms", "32"]
    bad = params_with(tmp_path / "a", each_shape("values", lambda v: [-x for x in v]))
    assert main([*args, "--params", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "values[0]=" in err[0] and "must be a finite positive number" in err[0]
    assert main([*args, "--params", str(params_with(tmp_path / "b", lambda g: None))]) == 0
