"""generate() against CTranslate2 (float32 and int8) on a trained model, each engine in a process of its own."""

import tempfile
import time

import torch

from transformer_mt.checkpoints import load_translator

from .harness import interleaved_order, markdown_table, ratio_rows, run_worker, sample_stats


def ctranslate2_worker(spec: dict) -> dict:
    """One engine (generate(), or CTranslate2 at a compute type) decoding every batch once: tokens/s and outputs."""
    from transformer_mt.bridges.ctranslate2 import generated_tokens, source_tokens, translate_options

    model, tokenizer = load_translator(spec["model_dir"])
    sentences, size = spec["sentences"], spec["batch_size"]
    batches = [sentences[i : i + size] for i in range(0, len(sentences), size)]
    if spec["engine"] == "generate()":
        model.eval()
        inputs = [tokenizer(batch, return_tensors="pt", padding=True) for batch in batches]

        def decode(batch):
            with torch.inference_mode():
                ids = model.generate(
                    **batch,
                    num_beams=spec["num_beams"],
                    do_sample=False,
                    max_new_tokens=spec["max_new_tokens"],
                    early_stopping=True,
                )
            return generated_tokens(tokenizer, ids, model.generation_config.eos_token_id)
    else:
        import ctranslate2

        translator = ctranslate2.Translator(
            spec["export_dir"], compute_type=spec["engine"], intra_threads=torch.get_num_threads(), inter_threads=1
        )
        inputs = [source_tokens(tokenizer, batch) for batch in batches]
        options = translate_options(spec["num_beams"], spec["max_new_tokens"])

        def decode(batch):
            return [result.hypotheses[0] for result in translator.translate_batch(batch, **options)]

    decode(inputs[0])  # warm-up
    start = time.perf_counter()
    outputs = [hypothesis for batch in inputs for hypothesis in decode(batch)]
    seconds = time.perf_counter() - start
    return {"tokens_per_second": sum(map(len, outputs)) / seconds, "outputs": outputs}


def agreement(outputs: list, reference: list) -> str:
    """How many of `outputs` equal the reference's, as "equal/total"."""
    return f"{sum(a == b for a, b in zip(outputs, reference))}/{len(reference)}"


def compare_with_ctranslate2(
    model_dir: str,
    sentences: list[str],
    batch_size: int = 16,
    max_new_tokens: int = 64,
    threads: int = 1,
    repeats: int = 3,
    beam_sizes=(1, 4),
) -> dict:
    """generate() vs CTranslate2 float32 and int8: each engine in its own process per repeat, interleaved."""
    from transformer_mt.bridges.ctranslate2 import export_ctranslate2

    engines = ["generate()", "float32", "int8"]
    results = {"threads": threads, "sentences": len(sentences), "batch_size": batch_size, "search": {}}
    with tempfile.TemporaryDirectory(prefix="transformer-mt-ct2-") as workdir:
        exports = {kind: export_ctranslate2(model_dir, f"{workdir}/{kind}", quantization=kind) for kind in engines[1:]}
        for num_beams in beam_sizes:
            runs = {engine: [] for engine in engines}
            for engine in interleaved_order(engines, repeats):
                runs[engine].append(
                    run_worker(
                        ctranslate2_worker,
                        {
                            "model_dir": model_dir,
                            "export_dir": exports.get(engine),
                            "engine": engine,
                            "sentences": sentences,
                            "batch_size": batch_size,
                            "num_beams": num_beams,
                            "max_new_tokens": max_new_tokens,
                        },
                        threads,
                    )
                )
            reference = runs["generate()"][0]["outputs"]
            search = "greedy" if num_beams == 1 else f"beam {num_beams}"
            results["search"][search] = {
                ("generate()" if engine == "generate()" else f"CTranslate2 {engine}"): {
                    **sample_stats([run["tokens_per_second"] for run in engine_runs]),
                    "outputs equal to generate()": agreement(engine_runs[0]["outputs"], reference),
                }
                for engine, engine_runs in runs.items()
            }
    return results


def ctranslate2_report(results: dict) -> str:
    rows = ratio_rows(results["search"], "generate()", "tokens/s")
    return (
        f"{results['sentences']} sentences, batch {results['batch_size']}, {results['threads']} thread(s)\n\n"
        + markdown_table(rows)
    )
