"""Scores as the field reports them: BLEU, chrF, chrF++ and TER with their sacreBLEU signatures.

`score` takes hypotheses and references; `evaluate_split` translates a split of any parallel data (a directory
of TSV/CSV/JSONL files or a Hub dataset) with a saved model directory or a CTranslate2 export, or reads the
hypotheses from a file, and scores them. With `bootstrap` N, each score also gets sacreBLEU's bootstrap
resampling estimate (mean and 95% confidence interval over N resamples); the signature then says `bs:N`.
`score_sets` is how the studies score a saved model: greedy, every input whole, on named sets.
scripts/score.py is the command (not scripts/evaluate.py: run as a file, it would shadow the `evaluate` library).
"""

import json
import os
from collections.abc import Callable

import sacrebleu

from .data import join_consecutive, load_parallel_data


METRICS = ("bleu", "chrf", "chrf++", "ter")


def _metric(name: str, tokenize: str):
    if name == "bleu":
        return sacrebleu.BLEU(tokenize=tokenize)
    if name in ("chrf", "chrf++"):
        return sacrebleu.CHRF(word_order=2 if name == "chrf++" else 0)
    if name == "ter":
        return sacrebleu.TER()
    raise ValueError(f"metric {name!r} is not one of {', '.join(METRICS)}")


def score(hypotheses: list[str], references: list[str], metrics=METRICS, bootstrap: int | None = None,
          tokenize: str = "13a") -> dict:
    """{metric: {"score", "signature"[, "mean", "ci95"]}} of `hypotheses` against one reference each."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses for {len(references)} references: one each is needed.")
    if bootstrap is not None and bootstrap < 2:
        raise ValueError(f"bootstrap must be >= 2 resamples, got {bootstrap}.")
    results = {}
    for name in metrics:
        metric = _metric(name, tokenize)
        result = metric.corpus_score(hypotheses, [references], n_bootstrap=bootstrap or 1)
        entry = {"score": round(result.score, 2), "signature": str(metric.get_signature())}
        if bootstrap:
            entry.update(mean=round(result._mean, 2), ci95=round(result._ci, 2))
        results[name] = entry
    return results


def translator(model_path: str, num_beams: int | None = None, batch_size: int = 16,
               device: str = "cpu") -> Callable[[list[str]], list[str]]:
    """A function that translates a list of sources with a saved model directory (generate()) or a CTranslate2 export
    (a directory with model.bin), loaded once and decoded alike: beam `num_beams` (default: the model's generation
    config; 4 for CTranslate2). Each source is translated whole, as one sequence (no sentence splitting)."""
    from .checkpoints import load_translator

    if os.path.isfile(os.path.join(model_path, "model.bin")):  # a CTranslate2 export
        import ctranslate2
        from transformers import AutoTokenizer

        from .bridges.ctranslate2 import hypothesis_text, source_tokens, translate_options

        tokenizer = AutoTokenizer.from_pretrained(model_path)
        ct2_translator = ctranslate2.Translator(model_path, device=device)

        def translate_ct2(sources: list[str]) -> list[str]:
            results = ct2_translator.translate_batch(source_tokens(tokenizer, sources), max_batch_size=batch_size,
                                                     **translate_options(num_beams or 4, max_new_tokens=256))
            return [hypothesis_text(tokenizer, result.hypotheses[0]).strip() for result in results]

        return translate_ct2
    from .translation import translate

    model, tokenizer = load_translator(model_path)
    model = model.to(device)

    def translate_whole(sources: list[str]) -> list[str]:
        # a test set's sources are segments aligned with their references: each is scored as one sequence, as the
        # CTranslate2 path above translates it (and as the recorded scores were made); the studies measure what the
        # model itself does with a long input, not the sentence splitter
        return translate(model, tokenizer, sources, num_beams=num_beams, batch_size=batch_size, split_sentences=False)

    return translate_whole


def translate_with(model_path: str, sources: list[str], num_beams: int | None = None, batch_size: int = 16,
                   device: str = "cpu") -> list[str]:
    """Translations of `sources` by a saved model directory or a CTranslate2 export (see `translator`)."""
    return translator(model_path, num_beams, batch_size, device)(sources)


def score_sets(model_path: str, sets: dict[str, tuple[list[str], list[str]]], num_beams: int | None = 1,
               batch_size: int = 16) -> dict[str, dict]:
    """name -> BLEU, chrF and length ratio (`metrics.translation_scores`, unrounded) of the model's translations of
    every set of (sources, references); greedy unless `num_beams`, each input whole. What the studies score by."""
    from .metrics import translation_scores

    translate = translator(model_path, num_beams, batch_size)
    scores = {}
    for name, (sources, references) in sets.items():
        result = translation_scores(translate(sources), references)
        scores[name] = {key: result[key] for key in ("bleu", "chrf", "length_ratio")}
    return scores


def evaluate_split(data: str, split: str = "test", model: str | None = None, hypotheses_file: str | None = None,
                   source_lang: str = "en", target_lang: str = "de", config_name: str | None = None,
                   max_samples: int | None = None, metrics=METRICS, bootstrap: int | None = None,
                   num_beams: int | None = None, batch_size: int = 16, join_pairs: int = 1,
                   by_column: str | None = None) -> dict:
    """Translate (or read) and score one split; returns the scores with what was scored and how. `join_pairs` k > 1
    scores the split's pairs joined k at a time (sources and references alike, `data.join_consecutive`): long,
    multi-sentence inputs, each translated whole. `by_column` (e.g. "origin"): the scores of each value of that
    column of the data too, under "by_<column>"."""
    if (model is None) == (hypotheses_file is None):
        raise ValueError("give exactly one of a model (a saved model directory or a CTranslate2 export) and a file "
                         "of hypotheses")
    if by_column is not None and join_pairs > 1:
        raise ValueError("score either by a column or with joined pairs: a joined input may mix the column's values")
    splits = load_parallel_data(data, source_lang, target_lang, config_name=config_name,
                                extra_columns=[by_column] if by_column else ())
    if split not in splits:
        raise ValueError(f"{data} has no {split!r} split; it has: {', '.join(splits)}.")
    pairs = splits[split]
    if max_samples:
        pairs = pairs.select(range(min(max_samples, len(pairs))))
    sources, references = list(pairs[source_lang]), list(pairs[target_lang])
    if join_pairs > 1:
        sources, references = join_consecutive(sources, references, join_pairs)
    if hypotheses_file is not None:
        with open(hypotheses_file, encoding="utf-8") as f:
            hypotheses = [line.rstrip("\n") for line in f]
    else:
        hypotheses = translate_with(model, sources, num_beams=num_beams, batch_size=batch_size)
    results = {"data": data, "split": split, "pairs": len(references), "system": model or hypotheses_file,
               **({"joined_pairs": join_pairs} if join_pairs > 1 else {}),
               "scores": score(hypotheses, references, metrics, bootstrap)}
    if by_column is not None:
        groups = {}
        for value, hypothesis, reference in zip(pairs[by_column], hypotheses, references):
            groups.setdefault(value, ([], []))
            groups[value][0].append(hypothesis)
            groups[value][1].append(reference)
        results[f"by_{by_column}"] = {value: {"pairs": len(group[1]), "scores": score(*group, metrics, bootstrap)}
                                      for value, group in sorted(groups.items())}
    return results


def signature_line(results: dict) -> str:
    """One line per metric as papers print them: `BLEU 23.31 (nrefs:1|...)`; then, scored by a column, one line
    per value: `origin=ddtp (1,500 pairs): BLEU 15.20, chrF 40.10`."""
    names = {"bleu": "BLEU", "chrf": "chrF", "chrf++": "chrF++", "ter": "TER"}
    lines = []
    for name, entry in results["scores"].items():
        interval = f" (mean {entry['mean']} ± {entry['ci95']})" if "ci95" in entry else ""
        lines.append(f"{names[name]} {entry['score']}{interval}  {entry['signature']}")
    for key, groups in results.items():
        if key.startswith("by_"):
            for value, group in groups.items():
                scores = ", ".join(f"{names[name]} {entry['score']:.2f}" for name, entry in group["scores"].items())
                lines.append(f"{key[3:]}={value} ({group['pairs']:,} pairs): {scores}")
    return "\n".join(lines)


def write_results(results: dict, path: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(results, f, indent=2, ensure_ascii=False)


__all__ = ["METRICS", "evaluate_split", "score", "score_sets", "signature_line", "translate_with", "translator",
           "write_results"]
