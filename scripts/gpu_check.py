"""The device check: everything a CUDA machine should show, in one run of under 10 minutes, as one JSON.

    python scripts/gpu_check.py                      # on a CUDA machine: writes runs/gpu-check/gpu_check.json
    python scripts/gpu_check.py --dry_run            # any machine: every check at a tiny size, in about a minute

bf16 vs fp32, sdpa vs eager, base-model training throughput and MFU in bf16, generate() against MarianMTModel on
the same weights, and a short main job on the GPU recipe with its BLEU (see `transformer_mt.experiments.gpu_check`).
"""

import argparse
import json
import os

import torch

from transformer_mt.commands.cli import command
from transformer_mt.experiments.gpu_check import run_checks


@command
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default="data/en-de", help="Parallel data for the short main job.")
    parser.add_argument("--output_dir", default="runs/gpu-check")
    parser.add_argument("--device", help="A torch device (default: cuda).")
    parser.add_argument("--dry_run", action="store_true", help="Tiny sizes on any device: checks the script.")
    parser.add_argument("--main_job_minutes", type=float, default=4.0, help="Training minutes of the main job.")
    args = parser.parse_args(argv)
    if not args.dry_run and not (args.device or torch.cuda.is_available()):
        parser.error("no CUDA device here: --dry_run checks the script at a tiny size on the CPU")
    if os.path.exists(os.path.join(args.output_dir, "gpu_check.json")):
        parser.error(f"{args.output_dir}/gpu_check.json exists; choose another --output_dir")
    os.makedirs(args.output_dir, exist_ok=True)
    results = run_checks(
        args.data, os.path.join(args.output_dir, "main-job"), args.device, args.dry_run, args.main_job_minutes
    )
    with open(os.path.join(args.output_dir, "gpu_check.json"), "w", encoding="utf-8") as f:
        json.dump(results, f, indent=2)
    print(json.dumps(results, indent=2))
    failed = [name for name in ("bf16", "attention") if not results[name]["ok"]]
    failed += [task for task, result in results["generation"].items() if not result["same_tokens"]]
    failed += [] if results["server"]["same"] else ["server (the engines answered differently)"]
    if failed:
        raise ValueError(f"checks failed: {', '.join(failed)} (details in {args.output_dir}/gpu_check.json)")


if __name__ == "__main__":
    main()
