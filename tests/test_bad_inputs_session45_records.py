"""Bad input found by session 45's fuzzing pass: run records' times outside a plausible range and
mistyped `diagnostic` / `note`, knob tables (non-UTF-8, comm_sms above the SMs, a bad routing),
`calibration.register --plan FOLDER`, and benchmarks/kernel_space.py given records it cannot pair.
Each case is one line naming the value and the rule, exit status 2; valid input still works."""

from __future__ import annotations

import importlib
import importlib.util
import json

import pytest

from mok_kernels import knobs
from mok_model.cli import main
from mok_model.fileio import file_text
from mok_model.records import LATENCY_MS, read_records, record_files

from test_bad_inputs_session30 import REPO, _one_line

RUN = "calibration/runs/h200_space/space.jsonl.gz"
PARAMS = str(REPO / "mok_model/params/h200-1.json")


def _record(**change) -> dict:
    """The first MoK record of RUN (one `mok validate` predicts), with `change`."""
    line = next(x for x in file_text(REPO / RUN).splitlines() if '"system": "mok"' in x)
    return {**json.loads(line), **change}


def _write(path, *recs) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return str(path)


# ---- 1. run records: times in [1e-4, 1e6] ms, diagnostic a boolean, note a string ----

def _lat(**change):
    return lambda r: {**r, "latency_ms": {**r["latency_ms"], **change}}


RANGE = "must be a time in [0.0001, 1e+06] ms"
BAD_RECORDS = [
    (_lat(median=1e300), f"latency_ms.median=1e+300 {RANGE}"),
    (_lat(median=1e-300), f"latency_ms.median=1e-300 {RANGE}"),
    (_lat(median=1e300, p90=1e301), f"latency_ms.median=1e+300 {RANGE}"),
    (_lat(p10=1e-300), f"latency_ms.p10=1e-300 {RANGE}"),
    (_lat(p90=2e6), f"latency_ms.p90=2000000.0 {RANGE}"),
    (_lat(samples=[5.6, 1e300]), "latency_ms.samples=[5.6, 1e+300] must be a list of times in "
                                 "[0.0001, 1e+06] ms"),
    (lambda r: {**r, "rank_ms": [[5.6], [1e-9]]}, "rank_ms=[[5.6], [1e-09]] must be a list (one "
                                                  "per rank) of lists of times in [0.0001, 1e+06] ms"),
    (lambda r: {**r, "breakdown_ms": {"gemm": 1e300}}, "breakdown_ms={'gemm': 1e+300} must be an "
                                                       "object of times in [0, 1e+06] ms"),
    (lambda r: {**r, "diagnostic": "yes"}, "diagnostic='yes' must be true or false"),
    (lambda r: {**r, "diagnostic": 1}, "diagnostic=1 must be true or false"),
    (lambda r: {**r, "note": [[[[]]]]}, "note=[[[[]]]] must be a string"),
    (lambda r: {**r, "note": None}, "note=None must be a string"),
]


@pytest.mark.parametrize("mutate, want", BAD_RECORDS, ids=[w.split(" ")[0] for _, w in BAD_RECORDS])
def test_bad_record_is_refused_naming_file_line_and_field(mutate, want, tmp_path, capsys):
    """`mok validate` took a median of 1e300 ms or 1e-300 ms, `diagnostic: "yes"` and a note
    of nested lists; now one line naming file, line and field, exit 2."""
    path = _write(tmp_path / "r.jsonl", _record(), mutate(_record(id="second")))
    rc = main(["validate", path, "--params", PARAMS])
    _one_line(rc, capsys.readouterr().err, f"mok: error: {path}:2: ", want)


def test_records_at_the_range_ends_and_with_typed_fields_are_read(tmp_path, capsys):
    low, high = LATENCY_MS
    recs = [_record(id="low", latency_ms={"median": low, "p10": low, "p90": low, "samples": [low]}),
            _record(id="high", latency_ms={"median": high, "p10": high, "p90": high}),
            _record(id="typed", diagnostic=False, note="", rank_ms=[[5.6], [5.7]]),
            _record(id="diag", diagnostic=True, breakdown_ms={"gemm": 0.0})]
    got = read_records([_write(tmp_path / "ok.jsonl", *recs)])
    assert [r["id"] for r in got] == ["low", "high", "typed", "diag"]
    assert main(["validate", _write(tmp_path / "one.jsonl", _record()), "--params", PARAMS]) == 0


def test_every_shipped_record_is_inside_the_range():
    """The range is wide of every record measured or published so far (about 1 us to 100 ms)."""
    files = record_files(REPO / "calibration/runs", "**/*.jsonl")
    records = read_records(files)
    medians = [r["latency_ms"]["median"] for r in records]
    assert len(records) > 20000
    assert LATENCY_MS[0] * 5 < min(medians) and max(medians) < LATENCY_MS[1] / 1000


# ---- 2. knob tables ----

@pytest.fixture(scope="module")
def table(tmp_path_factory):
    path = tmp_path_factory.mktemp("kt") / "t.json"
    assert main(["tune", "--hardware", "h200-hgx8", "--model", "deepseek-v3", "--ep", "8",
                 "--table", str(path), "--tokens-buckets", "64,1024"]) == 0
    return path


def _table_error(path) -> str:
    with pytest.raises(knobs.KnobTableError) as e:
        knobs.choose_knobs("h200-hgx8", knobs.shape_of(knobs.load_model("deepseek-v3")), 8, 64,
                           table=path)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"knob table {path}: "), msg
    return msg


def test_a_non_utf8_table_is_refused_naming_the_file(tmp_path):
    bad = tmp_path / "bin.json"
    bad.write_bytes(b"\xff\xfe{}")
    assert _table_error(bad) == f"knob table {bad}: not UTF-8 text (byte 0); a knob table is JSON"


@pytest.mark.parametrize("mutate, want", [
    (lambda d: d["buckets"][0]["config"].update(comm_sms=999),
     "bucket 64: --comm-sms 999 must leave compute SMs: at most 131 on h200-hgx8"),
    (lambda d: d["buckets"][1]["config"].update(comm_sms=132),
     "bucket 1024: --comm-sms 132 must leave compute SMs: at most 131 on h200-hgx8"),
    (lambda d: d.update(sms=12), "bucket 64: --comm-sms 12 must leave compute SMs: at most 11"),
    (lambda d: d.update(routing="zipf:-1"),
     "--routing 'zipf:-1': the Zipf exponent must be in (0, 10]"),
    (lambda d: d.update(routing="hot:0.5"),
     "--routing 'hot:0.5': the hot expert's share of routes must be in (0, 1/top_k = 0.125]"),
    (lambda d: d.update(routing="sideways"), "--routing 'sideways' is neither an existing file"),
    (lambda d: d["shape"].update(top_k=0), "shape.top_k=0 must be an integer >= 1"),
])
def test_a_table_breaking_the_knob_rules_is_refused(table, tmp_path, mutate, want):
    """A bucket's comm_sms of 999 on 132 SMs and a routing of zipf:-1 were taken; now the rules
    `mok tune` applies (Config.check_for, workload.parse_routing) refuse them."""
    doc = json.loads(table.read_text())
    assert doc["buckets"][0]["config"]["comm_sms"] == 12 and doc["sms"] == 132
    mutate(doc)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    assert want in _table_error(bad)


@pytest.mark.parametrize("routing", ["robust", "uniform", "zipf:1.2", "hot:0.1"])
def test_valid_tables_are_still_taken(table, tmp_path, routing):
    doc = json.loads(table.read_text())
    doc["routing"] = routing
    doc["buckets"][0]["config"]["comm_sms"] = 131                  # the most the SMs allow
    ok = tmp_path / "ok.json"
    ok.write_text(json.dumps(doc))
    shape = knobs.shape_of(knobs.load_model("deepseek-v3"))
    assert knobs.choose_knobs("h200-hgx8", shape, 8, 64, table=ok).knobs["comm_sms"] == 131
    assert knobs.load_table(table)["routing"] == "robust"


# ---- 3. calibration.register --plan FOLDER ----

def test_register_plan_folder_is_named_a_folder(tmp_path, capsys):
    main_ = importlib.import_module("calibration.register").main
    rc = main_(["--out", str(tmp_path / "r.jsonl"), "--plan", str(tmp_path)])
    _one_line(rc, capsys.readouterr().err, "python -m calibration.register: error: ",
              f"--plan {str(tmp_path)!r} is a folder; name a plan file (JSON lines) inside it")
    rc = main_(["--out", str(tmp_path / "r.jsonl"), "--plan", str(tmp_path / "none.jsonl")])
    _one_line(rc, capsys.readouterr().err, "python -m calibration.register: error: ",
              "none.jsonl': no such file")
    assert not (tmp_path / "r.jsonl").exists()


# ---- 4. benchmarks/kernel_space.py with nothing to pair ----

def _kernel_space():
    spec = importlib.util.spec_from_file_location("kernel_space",
                                                  REPO / "benchmarks" / "kernel_space.py")
    ks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ks)
    return ks.main


NO_PAIR = ("has both a MoK record of today's kernel and a GEMMs-alone (gemm-only) record of the "
           "same run (BF16 forward); nothing to compare")


def test_kernel_space_without_pairs_is_refused(tmp_path, capsys, monkeypatch):
    """An empty table, exit 0, for files without MoK + GEMMs-alone pairs of one run."""
    monkeypatch.chdir(REPO)
    ks = _kernel_space()
    micro = "calibration/runs/h200/micro.jsonl"
    _one_line(ks([micro]), capsys.readouterr().err, "benchmarks/kernel_space.py: error: ",
              f"no workload in {micro} {NO_PAIR}")
    space = file_text(REPO / "calibration/runs/h200_space/space.jsonl.gz").splitlines()
    gemm = [line for line in space if '"system": "gemm-only"' in line][:3]
    mok = [line for line in space if '"system": "mok"' in line][:3]
    assert gemm and mok
    for name, lines in (("gemm.jsonl", gemm), ("mok.jsonl", mok)):  # one half of the pair only
        (tmp_path / name).write_text("\n".join(lines) + "\n")
        _one_line(ks([str(tmp_path / name)]), capsys.readouterr().err,
                  "benchmarks/kernel_space.py: error: ", f"no workload in {tmp_path / name} {NO_PAIR}")
    assert ks(["calibration/runs/h200_space/space.jsonl.gz"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("| preset | tokens/GPU |") and "| deepseek-v3 | 64-512 |" in out
