"""Translation speed of generate() vs CTranslate2 (float32 and int8) on the same sentences, batches and threads.

Exports the model to CTranslate2 twice (float32, int8) into a temporary directory, then decodes the first
`--num_sentences` source sentences of the test split with greedy search and with beam search, in the same
batches (in corpus order), with the same maximum length and the same number of CPU threads for both engines.
Only the decoding calls are timed: tokenization happens before, and each engine first decodes one untimed
batch. Beam search in generate() runs with `early_stopping=True`, the beam search CTranslate2 implements. The
table also counts the sentences whose output equals generate()'s token for token.

Threads matter: on a small model and few cores CTranslate2's per-operation OpenMP parallelism can cost more than
it gains (on a 2-vCPU VM, the main job's model decoded about 5x slower with 2 threads than with 1), so compare
`--threads 1` with the machine's count.
"""

import functools
import tempfile
import time

import ctranslate2
import torch

from .checkpoints import load_translator
from .bridges.ctranslate2 import export_ctranslate2, generated_tokens, source_tokens, translate_options


def batches(items: list, size: int) -> list[list]:
    return [items[start:start + size] for start in range(0, len(items), size)]


def generate_batch(model, tokenizer, num_beams: int, max_new_tokens: int, batch) -> list[list[str]]:
    """generate() on one tokenized batch, as Translator-style token lists."""
    with torch.no_grad():
        output = model.generate(**batch, num_beams=num_beams, do_sample=False, max_new_tokens=max_new_tokens,
                                early_stopping=True)
    return generated_tokens(tokenizer, output, model.generation_config.eos_token_id)


def translate_batch(translator, num_beams: int, max_new_tokens: int, batch) -> list[list[str]]:
    """CTranslate2 on one batch of source token lists."""
    results = translator.translate_batch(batch, **translate_options(num_beams, max_new_tokens))
    return [result.hypotheses[0] for result in results]


def timed(decode, inputs: list) -> tuple[list, float]:
    """Decode every batch in `inputs` after one untimed warm-up batch; return the outputs and the seconds."""
    decode(inputs[0])
    start = time.perf_counter()
    outputs = [hypothesis for batch in inputs for hypothesis in decode(batch)]
    return outputs, time.perf_counter() - start


def benchmark(model_dir: str, sentences: list[str], batch_size: int, max_new_tokens: int, threads: int,
              beam_sizes=(1, 4)) -> list[dict]:
    """One row per engine and beam size: sentences/second, speed-up over generate(), outputs equal to generate()'s."""
    torch.set_num_threads(threads)
    model, tokenizer = load_translator(model_dir)
    model.eval()
    torch_inputs = [tokenizer(batch, return_tensors="pt", padding=True) for batch in batches(sentences, batch_size)]
    ct2_inputs = batches(source_tokens(tokenizer, sentences), batch_size)
    rows = []
    with tempfile.TemporaryDirectory(prefix="benchmark-ctranslate2-") as export_root:
        translators = {
            compute_type: ctranslate2.Translator(
                export_ctranslate2(model_dir, f"{export_root}/{compute_type}", quantization=compute_type),
                compute_type=compute_type, intra_threads=threads, inter_threads=1,
            )
            for compute_type in ("float32", "int8")
        }
        for num_beams in beam_sizes:
            search = "greedy" if num_beams == 1 else f"beam {num_beams}"
            decode = functools.partial(generate_batch, model, tokenizer, num_beams, max_new_tokens)
            reference, seconds = timed(decode, torch_inputs)
            rows.append({"engine": "generate()", "search": search, "seconds": seconds, "identical": None})
            for compute_type, translator in translators.items():
                decode = functools.partial(translate_batch, translator, num_beams, max_new_tokens)
                outputs, seconds = timed(decode, ct2_inputs)
                identical = sum(output == expected for output, expected in zip(outputs, reference, strict=True))
                rows.append({"engine": f"CTranslate2 {compute_type}", "search": search, "seconds": seconds,
                             "identical": identical})
    for row in rows:
        row["sentences_per_second"] = len(sentences) / row["seconds"]
        baseline = next(r for r in rows if r["engine"] == "generate()" and r["search"] == row["search"])
        row["speedup"] = baseline["seconds"] / row["seconds"]
    return rows


def format_table(rows: list[dict], num_sentences: int) -> str:
    lines = [f"{'engine':<22}{'search':<9}{'sent/s':>9}{'x generate()':>14}  identical to generate()"]
    for row in rows:
        identical = "-" if row["identical"] is None else f"{row['identical']}/{num_sentences}"
        lines.append(f"{row['engine']:<22}{row['search']:<9}{row['sentences_per_second']:>9.1f}"
                     f"{row['speedup']:>14.2f}  {identical}")
    return "\n".join(lines)

