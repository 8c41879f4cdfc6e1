"""GPU tests of the Gluon pass with BF16 operands (mok_kernels/gluon_fp8/mok.py GluonBF16MoK,
session 60), skipped without CUDA, an sm_90 GPU or a Triton with Gluon (all four passed on one
H100 in session 61): benchmarks/gluon_fp8_mok.py's check (run_check, --precision bf16) on every rank of EP 8
at production widths (kimi-k2, glm-5, qwen3-30b under a hot rank, and I = 320 padded to 384):
home output within 1e-2 of float32, every served combine slot written, bits over repeats and
across the store knob (ys), no wait timed out."""

from __future__ import annotations

import pytest
import torch

pytestmark = pytest.mark.gpu
if not torch.cuda.is_available():  # pragma: no cover - CPU CI
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

from benchmarks.gluon_fp8_mok import parse_variant, run_check  # noqa: E402
from tests.test_gluon_fp8_gpu import needs_sm90  # noqa: E402  (the FP8 pass's marker)


@needs_sm90
@pytest.mark.parametrize("name", ["kimi-k2-widths", "glm-5-widths", "qwen3-30b-widths",
                                  "padded-widths"])
def test_gluon_bf16_pass_matches_float32_on_every_rank(name):
    configs = [dict(parse_variant(v), comm=16) for v in ("default", "ys=0", "join=1000")]
    fails = run_check(name, configs, precision="bf16")
    assert not fails, fails
