"""Compiled generation: a static cache and a full-graph-compiled decoding step, on any device.

transformers compiles the decoding step by itself only on GPUs with a static cache. `compile_generation(model)`
asks for it everywhere, through the model's generation config, so `generate()`, `translate()` and
`pipeline("translation")` all use it:

    model = compile_generation(AutoModelForSeq2SeqLM.from_pretrained("runs/main-sinusoidal").eval())
    model.generate(**batch)  # first call per batch shape compiles (seconds); later calls reuse it

The outputs are the eager model's (tests/test_generation.py). What it buys depends on the shape: the decoding
step's Python overhead goes, its matrix products stay (see docs/results.md, "Speed"). transformers 5.24 compiles greedy
search and sampling; beam search runs the eager step with the static cache.
"""

from transformers import CompileConfig


def compile_config() -> CompileConfig:
    """One graph per decoding step (no breaks, fixed shapes), on any device.

    TransformerMT's models add `guard_filter_fn` when they compile (`get_compiled_call`): a function cannot be
    saved in a generation config, which this one may be.
    """
    config = CompileConfig(fullgraph=True, dynamic=False, mode=None)  # "reduce-overhead" is CUDA graphs: GPUs only
    # transformers 5.24 compiles on GPUs only unless told by this private field (it has no public switch; it is
    # also left out of the saved config). Pinned by transformers<6 and by tests/test_generation.py, which fails if
    # generate() stops compiling on the CPU.
    config._compile_all_devices = True
    return config


def compile_generation(model):
    """Make `model.generate()` use a static cache and a compiled decoding step by default; returns the model."""
    model.generation_config.cache_implementation = "static"
    model.generation_config.compile_config = compile_config()
    return model
