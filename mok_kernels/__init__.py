"""The real kernels: reference layer, baselines, the fused Triton megakernel, bench harness."""

from mok_model.errors import MokInputError


def require_cuda() -> None:
    """Refuse a GPU-only tool where torch sees no CUDA GPU (the entry prints one line, exit 2)."""
    import torch

    if not torch.cuda.is_available():
        raise MokInputError("needs a CUDA GPU, and torch.cuda.is_available() is False here")


def require_triton() -> None:
    """Refuse a tool that compiles Triton kernels where Triton is not installed."""
    try:
        import triton  # noqa: F401
    except ImportError:
        raise MokInputError("needs Triton (the GPU machines have it), and it is not installed "
                            "here") from None
