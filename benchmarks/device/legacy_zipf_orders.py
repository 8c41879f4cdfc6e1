"""Device job (1 s): the expert popularity orders the kernels drew for zipf routing before
2026-12-01 03:40 UTC (torch.randperm on the GPU, commit b03c2ab replaced it by the model's draw).

    PYTHONPATH=. python3 benchmarks/device/legacy_zipf_orders.py $OUT/legacy_zipf_orders.json

For every routed-expert count of the presets and popularity seeds 0-3 it writes the permutation
the old code drew: expert j had popularity rank perm[j] + 1 (mok_kernels/routing.py before
b03c2ab), with the torch version and GPU that drew it. With these the model can read the earlier
zipf records again (copied to mok_model/presets/legacy_zipf_orders.json, read by
mok_model/workload.py legacy_zipf_order)."""

import json
import sys

import torch

from mok_model.cli import doc_parser, run_tool
from mok_model.errors import MokInputError
from mok_model.fileio import check_output_file
from mok_model.presets import load_model, model_names


def main(path: str) -> None:
    if check_output_file(path, "PATH", ".json").exists():
        raise MokInputError(f"PATH {path!r} exists; the orders are written once (name a new file)")
    if not torch.cuda.is_available():
        raise MokInputError("needs a CUDA GPU (the orders are what torch.randperm drew on one), "
                            "and torch.cuda.is_available() is False here")
    counts = sorted({load_model(m).routed_experts for m in model_names()})
    perms = {}
    for e in counts:
        for seed in range(4):
            g = torch.Generator(device="cuda").manual_seed(seed)
            perms[f"{e}:{seed}"] = torch.randperm(e, generator=g, device="cuda").tolist()
    doc = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(),
           "drawn_by": "torch.randperm(E, generator=torch.Generator('cuda').manual_seed(seed), "
                       "device='cuda'); expert j had popularity rank perm[j] + 1",
           "perms": perms}
    with open(path, "x") as f:
        json.dump(doc, f, indent=1)
    print(f"wrote {len(perms)} permutations for expert counts {counts}")


if __name__ == "__main__":
    parser = doc_parser("benchmarks/device/legacy_zipf_orders.py", __doc__)
    parser.add_argument("path", help="the JSON file to write")
    sys.exit(run_tool(parser, lambda a: main(a.path)))
