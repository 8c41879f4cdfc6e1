import os
import shutil
import tempfile

import pytest

_ROUTE_CACHE = None


def pytest_configure(config):
    """The suite's route-statistics cache (mok_model.route_cache) is a folder of its own, removed
    at the end: tests never read or fill the user's."""
    global _ROUTE_CACHE
    _ROUTE_CACHE = tempfile.mkdtemp(prefix="mok-route-cache-")
    os.environ["MOK_ROUTE_CACHE_DIR"] = _ROUTE_CACHE


def pytest_unconfigure(config):
    if _ROUTE_CACHE:
        shutil.rmtree(_ROUTE_CACHE, ignore_errors=True)


def pytest_collection_modifyitems(config, items):
    """GPU tests skip on machines without CUDA."""
    try:
        import torch

        has_cuda = torch.cuda.is_available()
    except ImportError:
        has_cuda = False
    if has_cuda:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
