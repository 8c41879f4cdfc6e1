"""FP8 (e4m3) block quantization: the one rule the megakernel and the FP8 reference share.

Blocks: activations one scale per 1 x 128 (a row's 128 columns of K), weights one per 128 x 128
(DeepSeek-V3-style fine-grained scaling; the Hopper counterpart of MXFP8). Per block, in float32:

    amax  = max(max |x|, AMAX_FLOOR)           # the floor keeps an all-zero block finite
    scale = amax / 448                         # 448: the largest e4m3 value
    q     = e4m3(clamp(x * (448 / amax), -448, 448))   # round to nearest even

and x is approximated by q * scale. Both divisions are correctly rounded and the product is one
float32 multiply, so the megakernel's in-register quantization of BF16 rows (tl.math.div_rn,
cvt.rn.satfinite) gives the same bits as these functions. Edge blocks may be partial: their amax
covers the present elements only, which equals the kernel's zero-padded blocks.
"""

from __future__ import annotations

import torch

FP8 = torch.float8_e4m3fn
FP8_MAX = 448.0
BLOCK = 128           # scale block along K (and along N for weights)
AMAX_FLOOR = 1e-12    # a block whose |x| are all below this quantizes as if its amax were this

# What FP8 may cost against the unquantized float32 reference (relative error norm of the layer
# output). e4m3 keeps 3 mantissa bits: round-to-nearest leaves at most 2^-4 relative error per
# element, about 2.6% RMS for values spread over a binade. The forward rounds four operands (x,
# gate/up weights, h, down weights); independent errors add in quadrature through the K-long dot
# products and SwiGLU, sqrt(4 x 2.6^2) ~ 5-6%, whatever H, I or K. Measured with
# reference.moe_reference(fp8=True) on random data (std 1/sqrt(fan_in) weights, randn tokens):
# 6.2-6.4% at H x I = 1536 x 512, 2560 x 1536, 7168 x 2048 (uniform and zipf routing), worst
# token 7.4%. The tolerance adds ~25% margin; the megakernel's BF16 output rounding (~0.2%)
# adds in quadrature.
FP8_REL_TOL = 0.08


def quantize_blocks(x: torch.Tensor, rows: int, cols: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Quantize the last two dims of x (..., R, C) in rows x cols blocks (the last ones partial):
    (q (..., R, C) e4m3, scale (..., ceil(R/rows), ceil(C/cols)) float32)."""
    *lead, r, c = x.shape
    rb, cb = -(-r // rows), -(-c // cols)
    xp = torch.nn.functional.pad(x.float(), (0, cb * cols - c, 0, rb * rows - r))
    xb = xp.reshape(*lead, rb, rows, cb, cols)
    amax = xb.abs().amax(dim=(-3, -1)).clamp_min(AMAX_FLOOR)          # (..., rb, cb)
    # tensor / tensor: torch turns a scalar divisor or dividend into a reciprocal multiply,
    # which is not the kernel's correctly rounded division
    fmax = torch.full_like(amax, FP8_MAX)
    inv = (fmax / amax)[..., :, None, :, None]
    q = (xb * inv).clamp(-FP8_MAX, FP8_MAX).to(FP8)
    q = q.reshape(*lead, rb * rows, cb * cols)[..., :r, :c]
    return q.contiguous(), amax / fmax


def dequantize_blocks(q: torch.Tensor, scale: torch.Tensor, rows: int, cols: int) -> torch.Tensor:
    """float32 q * scale, each scale spread over its rows x cols block."""
    r, c = q.shape[-2:]
    s = scale.repeat_interleave(rows, dim=-2).repeat_interleave(cols, dim=-1)[..., :r, :c]
    return q.float() * s


def fake_quant(x: torch.Tensor, rows: int, cols: int) -> torch.Tensor:
    """x rounded through FP8 with rows x cols block scales, back in float32."""
    return dequantize_blocks(*quantize_blocks(x, rows, cols), rows, cols)


def quantize_rows(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Activations (M, K): one scale per row per 128 columns -> (q (M, K), scale (M, ceil(K/128)))."""
    return quantize_blocks(x, 1, BLOCK)


def quantize_weight(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Weights (..., K, N): 128 x 128 blocks -> (q, scale (..., ceil(K/128), ceil(N/128)))."""
    return quantize_blocks(w, BLOCK, BLOCK)
