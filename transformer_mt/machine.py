"""The machine a number was measured on, stated beside every wall time: its fp32 matmul speed and its processor.

Machines of one kind here differ 3x in speed, so a time means little without them. Imports only torch, so that the
benchmarks, the studies and the main job can all record them.
"""

import platform
import subprocess
import time

import torch


def matmul_gflops(size: int = 2048, threads: int = 2, repeats: int = 5) -> float:
    """fp32 GFLOP/s of a size x size matmul on `threads` threads: the machine's figure, stated beside wall times."""
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        a, b = torch.randn(size, size), torch.randn(size, size)
        a @ b
        start = time.perf_counter()
        for _ in range(repeats):
            a @ b
        return 2 * size**3 * repeats / (time.perf_counter() - start) / 1e9
    finally:
        torch.set_num_threads(previous)


def processor() -> str:
    """The processor's name as the platform reports it (its architecture where it reports none)."""
    return platform.processor() or platform.machine()


def git_commit(directory: str | None = None) -> str | None:
    """The commit the working tree (of `directory`, else the working directory) is at: what a result JSON names
    beside the machine's figure; None outside git."""
    try:
        return subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True, cwd=directory
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


__all__ = ["git_commit", "matmul_gflops", "processor"]
