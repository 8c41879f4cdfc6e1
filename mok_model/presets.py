"""Hardware and MoE model presets: frozen dataclasses loaded from TOML, validated at the edge.

Built-in presets live in presets/hardware.toml and presets/models.toml; a user passes a path to a
TOML file with the same fields instead of a name. Every number cites its source.
"""

from __future__ import annotations

import dataclasses
import math
import re
import sys
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from .errors import MokInputError

_DIR = Path(__file__).parent / "presets"
MODEL_ALIASES = {"kimi-k2.7-code": "kimi-k2", "glm-5.2": "glm-5"}
HOST_CPUS = ("x86", "grace")
MAX_EXPERTS = 2**20   # routed experts of a model: a million-expert layer (PEER) predicts in ~2 s


@dataclass(frozen=True, slots=True)
class Hardware:
    """One GPU of a scale-up domain and its fabric (rates dense, fabric per GPU per direction)."""

    name: str
    gpu: str
    sms: int
    bf16_tflops: float
    fp8_tflops: float
    mxfp8_tflops: float  # 0 where the tensor cores have no MX block-scaled path
    hbm_tbps: float
    hbm_gb: float
    link_gbps: float
    link_latency_us: float
    domain_size: int
    fabric: str
    host_cpu: str
    launch_us: float
    scaleout_gbps: float = 0.0  # 0: no scale-out link, EP must fit in the domain
    scaleout_latency_us: float = 0.0
    emulated_ranks: bool = False  # one GPU emulating the peers of an EP group in local memory
    # topology of the fabric (sim/network.py): NVLink switch planes per GPU, switch tiers of a
    # domain, GPUs per first-tier (leaf) switch group, oversubscription of the spine links and
    # of the scale-out rails, latency added per switch-to-switch hop, and a --degrade spec
    switch_planes: int = 1
    switch_tiers: int = 1
    leaf_gpus: int = 0  # 0: the whole domain on one tier
    tier_oversubscription: float = 0.0  # 0 or 1: non-blocking
    tier_latency_us: float = 0.0
    rail_oversubscription: float = 0.0  # 0 or 1: non-blocking
    degrade: str = ""
    sources: dict = field(default_factory=dict, compare=False, hash=False)

    def tflops(self, precision: str) -> float:
        """Dense tensor rate for a precision, TFLOP/s."""
        return {"bf16": self.bf16_tflops, "fp8": self.fp8_tflops, "mxfp8": self.mxfp8_tflops}[precision]

    def with_(self, **changes) -> "Hardware":
        """A copy with some fields changed (what-if studies; numpy scalars as their values),
        validated again."""
        return _validated_hardware(dataclasses.replace(self, **_plain(changes)))


@dataclass(frozen=True, slots=True)
class MoEModel:
    """The shape of one MoE layer (SwiGLU experts)."""

    name: str
    hidden: int
    expert_width: int
    routed_experts: int
    top_k: int
    shared_experts: int = 0
    shared_width: int = 0
    moe_layers: int = 1
    layers: int = 1
    source: str = ""

    def with_(self, **changes) -> "MoEModel":
        """A copy with some fields changed (numpy scalars as their values), validated again."""
        return _validated_model(dataclasses.replace(self, **_plain(changes)))


def plain(v):
    """A numpy scalar as the Python value it holds (np.int64(2048) -> 2048, np.float32(0.5) ->
    0.5, np.str_('push') -> 'push'), anything else unchanged: a knob, EP, token count or lag
    handed to the knob API or the tuner from numpy code is read as that value (and then checked
    by check_knob / check_ep_tokens / check_list_lag; np.bool_ stays a bool, refused as one).
    Numpy is not imported for it."""
    return v.item() if type(v).__module__ == "numpy" and hasattr(v, "item") else v


def _plain(changes: dict) -> dict:
    """A with_'s changes, numpy scalars as their values (plain)."""
    return {k: plain(v) for k, v in changes.items()}


def _positive(kind: str, name: str, key: str, value, allow_zero: bool = False) -> None:
    ok = (value >= 0 if allow_zero else value > 0) and math.isfinite(value)
    if not ok:
        rule = "finite and >= 0" if allow_zero else "finite and > 0"
        raise MokInputError(f"{kind} {name!r}: {key}={value!r} must be {rule}")


# The largest value a hardware field may take, with its unit: 100 times or more the largest
# shipped preset (sms 148, 16,700 TFLOP/s, 22 TB/s and 288 GB of HBM, 2,100 GB/s links, 576
# GPUs in a domain, 18 switch planes, latencies under 22 us), room for any real or future GPU;
# a value above is a typo or a unit slip (GB/s written as B/s), and would predict absurd times.
# domain_size reaches MAX_EXPERTS: the model widens a domain to an EP of up to that many GPUs.
HARDWARE_MAX = {
    "sms": (16_384, "SMs"),
    "bf16_tflops": (1e6, "TFLOP/s"), "fp8_tflops": (1e6, "TFLOP/s"), "mxfp8_tflops": (1e6, "TFLOP/s"),
    "hbm_tbps": (1e4, "TB/s"), "hbm_gb": (1e6, "GB"),
    "link_gbps": (1e6, "GB/s"), "scaleout_gbps": (1e6, "GB/s"),
    "link_latency_us": (1e4, "us"), "scaleout_latency_us": (1e4, "us"),
    "tier_latency_us": (1e4, "us"), "launch_us": (1e4, "us"),
    "domain_size": (MAX_EXPERTS, "GPUs"), "leaf_gpus": (MAX_EXPERTS, "GPUs"),
    "switch_planes": (4096, "planes"),
    "tier_oversubscription": (1024, "(spine links per leaf link)"),
    "rail_oversubscription": (1024, "(rail links per spine link)"),
}
# The least value a rate or size may take (a field that may be 0, none, takes 0 or at least
# this): 1/80 or less of the smallest shipped preset (989 TFLOP/s, 3.35 TB/s and 80 GB of HBM,
# 450 GB/s links, 50 GB/s scale-out). Below it a value is a slip too: link_gbps 1e-300 printed
# a latency of 10^300 ms, and bf16_tflops 1e-320 a memory error of nonsense numbers.
HARDWARE_MIN = {
    "bf16_tflops": (1, "TFLOP/s"), "fp8_tflops": (1, "TFLOP/s"), "mxfp8_tflops": (1, "TFLOP/s"),
    "hbm_tbps": (0.01, "TB/s"), "hbm_gb": (1, "GB"),
    "link_gbps": (1, "GB/s"), "scaleout_gbps": (0.1, "GB/s"),
}
_INT_FIELDS = ("sms", "domain_size", "leaf_gpus", "switch_planes", "switch_tiers")


def _plausible(hw: Hardware) -> None:
    """Every number of a hardware an integer where it counts things, and at most HARDWARE_MAX."""
    for key in _INT_FIELDS:
        v = getattr(hw, key)
        if isinstance(v, bool) or not isinstance(v, int):
            raise MokInputError(f"hardware {hw.name!r}: {key}={v!r} must be an integer")
    for key, (high, unit) in HARDWARE_MAX.items():
        v = getattr(hw, key)
        if v > high:
            raise MokInputError(f"hardware {hw.name!r}: {key}={v!r} must be at most {int(high):,} "
                                f"{unit} (a plausible range for any real or future GPU)")
    for key, (low, unit) in HARDWARE_MIN.items():
        v = getattr(hw, key)
        if 0 < v < low:         # 0 is refused, or means none, where _validated_hardware says
            raise MokInputError(f"hardware {hw.name!r}: {key}={v!r} must be at least {low:g} "
                                f"{unit} (a plausible range for any real or future GPU)")


def _check_sources(hw: Hardware) -> None:
    """A hardware's [sources] table (optional in a user's file): for fields it has, a citation
    each, as text."""
    fields = {f.name for f in dataclasses.fields(Hardware)} - {"name", "sources"}
    for key, text in hw.sources.items():
        if key not in fields:
            raise MokInputError(f"hardware {hw.name!r}: sources.{key} names no hardware field; "
                                f"a source cites one of {sorted(fields)}")
        if not isinstance(text, str) or not text.strip():
            raise MokInputError(f"hardware {hw.name!r}: sources.{key}={text!r} must be a "
                                f"non-empty string (where the value comes from)")


def _validated_hardware(hw: Hardware) -> Hardware:
    _typed(hw)
    for key in ("sms", "bf16_tflops", "fp8_tflops", "hbm_tbps", "hbm_gb", "link_gbps",
                "domain_size"):
        _positive("hardware", hw.name, key, getattr(hw, key))
    for key in ("mxfp8_tflops", "link_latency_us", "launch_us", "scaleout_gbps",
                "scaleout_latency_us", "tier_latency_us", "leaf_gpus"):
        _positive("hardware", hw.name, key, getattr(hw, key), allow_zero=True)
    _plausible(hw)
    _check_sources(hw)
    if hw.sms < 2:
        raise MokInputError(f"hardware {hw.name!r}: sms={hw.sms} must be >= 2 (one SM at least "
                            f"moves data and one computes)")
    if hw.host_cpu not in HOST_CPUS:
        raise MokInputError(f"hardware {hw.name!r}: host_cpu={hw.host_cpu!r} must be one of {HOST_CPUS}")
    _positive("hardware", hw.name, "switch_planes", hw.switch_planes)
    if hw.switch_tiers not in (1, 2):
        raise MokInputError(f"hardware {hw.name!r}: switch_tiers={hw.switch_tiers!r} must be 1 or 2")
    for key in ("tier_oversubscription", "rail_oversubscription"):
        if not (getattr(hw, key) == 0 or getattr(hw, key) >= 1.0):
            raise MokInputError(f"hardware {hw.name!r}: {key}={getattr(hw, key)!r} must be >= 1 "
                                f"(1 or 0 = non-blocking)")
    if hw.switch_tiers == 1:     # the second tier's fields: ignored with one tier, never silently
        set_ = [f"{k}={getattr(hw, k)!r}" for k in ("leaf_gpus", "tier_latency_us")
                if getattr(hw, k) != 0]
        set_ += ([f"tier_oversubscription={hw.tier_oversubscription!r}"]
                 if hw.tier_oversubscription not in (0, 1) else [])
        if set_:
            raise MokInputError(f"hardware {hw.name!r}: {', '.join(set_)} "
                                f"describe{'s' if len(set_) == 1 else ''} a second "
                                f"switch tier, and switch_tiers=1 has none: set switch_tiers = 2 "
                                f"or drop {'them' if len(set_) > 1 else 'it'}")
    if hw.switch_tiers == 2 and not 0 < hw.leaf_gpus <= hw.domain_size:
        raise MokInputError(f"hardware {hw.name!r}: two switch tiers need 0 < leaf_gpus <= "
                            f"domain_size {hw.domain_size} (got {hw.leaf_gpus})")
    if (hw.degrade or "").strip():  # parse_degrade takes a blank spec as none
        if hw.emulated_ranks:   # the simulator would ignore it (MoK) or degrade the local copies
            raise MokInputError(f"--degrade {hw.degrade!r}: {hw.name} emulates its peers in one "
                                f"GPU's memory; there are no links to degrade; use a multi-GPU "
                                f"preset such as h200-hgx8 or h100-hgx8")
        # late: the simulator imports this module; and only here: it loads networkx (0.3 s)
        from .sim.network import parse_degrade

        parse_degrade(hw.degrade)
    return hw


# The largest value the other fields of a model may take, as HARDWARE_MAX for a hardware: 100
# times or more the largest shipped preset (hidden 7168, expert width 14336, top-10, one shared
# expert, 94 layers). Above them a value is a typo: a shared width of 10^18 printed a latency of
# 10^12 ms, and top_k 8192 never finished (each token's experts are drawn distinct, k^2 work).
MODEL_MAX = {"hidden": 1 << 20, "expert_width": 1 << 21, "shared_width": 1 << 21, "top_k": 1024,
             "shared_experts": 1024, "moe_layers": 100_000, "layers": 100_000}


def _validated_model(m: MoEModel) -> MoEModel:
    _typed(m)
    for key in ("hidden", "expert_width", "routed_experts", "top_k"):
        _positive("model", m.name, key, getattr(m, key))
    for key in ("shared_experts", "shared_width"):
        _positive("model", m.name, key, getattr(m, key), allow_zero=True)
    if m.routed_experts > MAX_EXPERTS:
        raise MokInputError(f"model {m.name!r}: routed_experts={m.routed_experts} must be at most "
                            f"{MAX_EXPERTS} (the model keeps arrays per expert: 10^7 experts take "
                            f"7 GB and half a minute, 10^9 would not finish)")
    for key, high in MODEL_MAX.items():
        if getattr(m, key) > high:
            raise MokInputError(f"model {m.name!r}: {key}={getattr(m, key)!r} must be at most "
                                f"{high:,} (a plausible range for any real or future MoE layer)")
    if m.top_k > m.routed_experts:
        raise MokInputError(
            f"model {m.name!r}: top_k={m.top_k} must be <= routed_experts={m.routed_experts}")
    if m.shared_experts and not m.shared_width:
        raise MokInputError(f"model {m.name!r}: shared_experts={m.shared_experts} needs shared_width > 0")
    if m.shared_width and not m.shared_experts:
        raise MokInputError(f"model {m.name!r}: shared_width={m.shared_width} needs shared_experts "
                            f"> 0 (with none, the width describes nothing; drop it or set both)")
    for key in ("moe_layers", "layers"):
        _positive("model", m.name, key, getattr(m, key))
    if m.moe_layers > m.layers:
        raise MokInputError(f"model {m.name!r}: moe_layers={m.moe_layers} must be <= "
                            f"layers={m.layers}")
    return m


def _kind(cls) -> str:
    return {"Hardware": "hardware", "MoEModel": "model"}.get(cls.__name__, cls.__name__)


def _build(cls, name: str, table: dict, validate):
    fields = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(table) - fields)
    if unknown:
        raise MokInputError(
            f"{_kind(cls)} {name!r}: unknown field(s) {unknown}; allowed: {sorted(fields - {'name'})}")
    required = sorted(f.name for f in dataclasses.fields(cls)
                      if f.name != "name" and f.default is dataclasses.MISSING
                      and f.default_factory is dataclasses.MISSING)
    missing = [k for k in required if k not in table]
    if missing:
        raise MokInputError(f"{_kind(cls)} {name!r}: missing field(s) {missing}; a "
                            f"{_kind(cls)} needs {required}")
    return validate(cls(name=name, **{k: v for k, v in table.items() if k != "name"}))


def _typed(obj) -> None:
    """Refuse a field of the wrong type (a file's, or a what-if copy's: `with_`), and a name
    that is not one printable line (it appears in one-line error messages)."""
    kind = _kind(type(obj))
    if not isinstance(obj.name, str) or not obj.name or not obj.name.isprintable():
        raise MokInputError(f"{kind} name={obj.name!r} must be a non-empty string of printable "
                            f"characters (no line breaks or escapes)")
    name = obj.name
    for f in dataclasses.fields(obj):
        want, value = f.type, getattr(obj, f.name)
        if want in ("int", "float") and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise MokInputError(f"{kind} {name!r}: {f.name}={value!r} must be a number")
        if want in ("int", "float") and isinstance(value, int) and abs(value) > sys.float_info.max:
            raise MokInputError(f"{kind} {name!r}: {f.name}={str(value)[:12]}... "
                                f"({len(str(abs(value)))} digits) is larger than any number it "
                                f"may be (at most {sys.float_info.max:.3g})")
        if want == "int" and not isinstance(value, int):
            raise MokInputError(f"{kind} {name!r}: {f.name}={value!r} must be an integer")
        kinds = {"str": (str, "a string"), "bool": (bool, "true or false"), "dict": (dict, "a table")}
        if want in kinds and not isinstance(value, kinds[want][0]):
            raise MokInputError(f"{kind} {name!r}: {f.name}={value!r} must be {kinds[want][1]}")


# A line of the flat TOML the preset files are written in: blank or a comment, a table header of
# bare or quoted keys, or `key = value` with a string without escapes, a decimal integer or float,
# or a boolean (what tomllib reads it as: str, int, float, bool)
_TOML_KEY = r'(?:[A-Za-z0-9_-]+|"[^"\\\x00-\x1f\x7f]*")'
_TOML_LINE = re.compile(
    r'[ \t]*(?:(?:#[^\x00-\x08\x0a-\x1f\x7f]*)?'
    r'|\[(?P<head>' + _TOML_KEY + r'(?:[ \t]*\.[ \t]*' + _TOML_KEY + r')*)\]'
    r'|(?P<key>[A-Za-z0-9_-]+)[ \t]*=[ \t]*(?:"(?P<str>[^"\\\x00-\x08\x0a-\x1f\x7f]*)"'
    r'|(?P<int>-?(?:0|[1-9][0-9]*))|(?P<float>-?(?:0|[1-9][0-9]*)\.[0-9]+)|(?P<bool>true|false))'
    r')[ \t]*')
_TOML_PART = re.compile(_TOML_KEY)


def flat_toml(text: str) -> dict | None:
    """`text` read as tomllib reads it, where every line is of the flat form _TOML_LINE takes
    (six times faster: hardware.toml 0.25 ms against 1.4 ms); None for anything else (other
    values, a table or key defined twice, another line ending), for tomllib to read or refuse."""
    doc: dict = {}
    table, defined = doc, set()
    for line in text.split("\n"):
        m = _TOML_LINE.fullmatch(line)
        if m is None:
            return None
        if m["head"] is not None:
            path = tuple(part.strip('"') for part in _TOML_PART.findall(m["head"]))
            if path in defined:
                return None
            defined.add(path)
            table = doc
            for part in path:
                table = table.setdefault(part, {})
                if type(table) is not dict:
                    return None
        elif m["key"] is not None:
            if m["key"] in table:
                return None
            text_, whole, real = m["str"], m["int"], m["float"]
            table[m["key"]] = (text_ if text_ is not None else int(whole) if whole is not None
                               else float(real) if real is not None else m["bool"] == "true")
    return doc


@cache
def _builtin(file: str) -> dict:
    text = (_DIR / file).read_bytes().decode()
    doc = flat_toml(text)
    return tomllib.loads(text) if doc is None else doc


def _load(arg: str, file: str, cls, validate, aliases: dict):
    if not isinstance(arg, str):
        raise MokInputError(f"{_kind(cls)} {arg!r}: name a preset or a TOML file")
    if arg.endswith(".toml"):
        path = Path(arg)
        if not path.is_file():
            raise MokInputError(f"{_kind(cls)} file {arg!r} " + ("is a folder; name a TOML file"
                                                                 if path.is_dir() else "does not exist"))
        try:
            table = tomllib.loads(path.read_text())
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise MokInputError(f"{arg}: not valid TOML ({exc})") from None
        except RecursionError:
            raise MokInputError(f"{arg}: not valid TOML (nested too deeply to read)") from None
        except ValueError:          # int(): "Exceeds the limit (4300 digits) ..."
            raise MokInputError(f"{arg}: not valid TOML (an integer too long to read: more than "
                                f"4,300 digits)") from None
        name = table.pop("name", path.stem)
        if not isinstance(name, str) or not name:
            raise MokInputError(f"{arg}: name={name!r} must be a non-empty string")
        return _build(cls, name, table, validate)
    presets = _builtin(file)
    key = aliases.get(arg, arg)
    if key not in presets:
        raise MokInputError(f"unknown {_kind(cls)} preset {arg!r}; choose one of "
                            f"{sorted(presets) + sorted(aliases)} or a .toml file")
    return _build(cls, key, dict(presets[key]), validate)


def load_hardware(arg: str) -> Hardware:
    """A hardware preset by name, or a TOML file with the same fields."""
    return _load(arg, "hardware.toml", Hardware, _validated_hardware, {})


def load_model(arg: str) -> MoEModel:
    """A model preset by name (aliases allowed), or a TOML file with the same fields."""
    return _load(arg, "models.toml", MoEModel, _validated_model, MODEL_ALIASES)


def model_from_shape(shape: dict, base: str | None = None) -> MoEModel:
    """A model from a shape dict (a run record's "model" object), read as a model TOML file is:
    it names every field a model needs (hidden, expert_width, routed_experts, top_k; a missing
    one is refused, naming it), the others take the file's defaults (no shared expert, one
    layer). `base`: a preset whose fields fill those the shape does not name, for a caller
    that says which (until session 30 every shape was silently filled from kimi-k2)."""
    table = ({} if base is None else
             {k: v for k, v in dataclasses.asdict(load_model(base)).items() if k != "name"})
    table.update({k: v for k, v in shape.items() if k != "name"})
    return _build(MoEModel, str(shape.get("name", "custom")), table, _validated_model)


def hardware_names() -> list[str]:
    return list(_builtin("hardware.toml"))


def model_names() -> list[str]:
    return list(_builtin("models.toml"))
