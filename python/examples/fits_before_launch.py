"""Check whether a training run fits before launching it (README, "Python").

    python3 python/examples/fits_before_launch.py config.json [GPU]

Exits 0 when the job fits on the GPU (default "RTX 4090"), 1 when it does not, 2 on a bad request.
"""

import json
import sys

import vram_planner

config = json.load(open(sys.argv[1]))  # the model's HF config.json
request = {
    "model": {"config": config},
    "task": "train",
    "train": {"method": "qlora", "micro_batch": 1, "seq_len": 2048, "grad_checkpointing": True},
    "gpu": {"name": sys.argv[2] if len(sys.argv) > 2 else "RTX 4090"},
}
try:
    r = vram_planner.estimate(request)
except vram_planner.EstimatorError as e:  # e.code, e.message, e.path (the field at fault)
    print(f"request error at {e.path}: {e.message}", file=sys.stderr)
    sys.exit(2)
gib = r["peak_bytes"] / 2**30
if not r["fit"]["fits"]:
    print(f"does not fit: {gib:.1f} GiB at {r['peak_phase']}, "
          f"{r['fit']['capacity_bytes'] / 2**30:.1f} GiB usable; largest micro-batch: {r['fit']['max_micro_batch']}")
    sys.exit(1)
print(f"fits: {gib:.1f} GiB peak per GPU ({r['peak_phase']}); launching")
