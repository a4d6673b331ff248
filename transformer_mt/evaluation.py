"""Scores as the field reports them: BLEU, chrF, chrF++ and TER with their sacreBLEU signatures.

`score` takes hypotheses and references; `evaluate_split` translates a split of any parallel data (a directory
of TSV/CSV/JSONL files or a Hub dataset) with a saved model directory or a CTranslate2 export, or reads the
hypotheses from a file, and scores them, as one `ScoreSettings` says (which pairs, how they are decoded, sacreBLEU's
settings). With `bootstrap` N, each score also gets sacreBLEU's bootstrap resampling estimate (mean and 95%
confidence interval over N resamples); the signature then says `bs:N`.
`score_sets` is how the studies score a saved model: greedy, every input whole, on named sets; `score_saved` scores
given pairs. A model or an export is loaded and decoded through `engines.load_for_scoring`, as everywhere else.
scripts/score.py is the command (not scripts/evaluate.py: run as a file, it would shadow the `evaluate` library).
"""

import dataclasses
import os
from collections.abc import Callable

import sacrebleu

from .data import join_consecutive, load_parallel_data
from .engines import load_for_scoring
from .engines.pair_scores import PairScore
from .metrics import translation_scores
from .options import TranslationOptions, guards_in_evaluation
from .translation import translate_texts


METRICS = ("bleu", "chrf", "chrf++", "ter")


TOKENIZERS = tuple(sacrebleu.BLEU.TOKENIZERS)  # sacreBLEU's: 13a (its default), intl, zh, ja-mecab, char, ...


def _metric(name: str, tokenize: str = "13a", lowercase: bool = False):
    if name == "bleu":
        return sacrebleu.BLEU(tokenize=tokenize, lowercase=lowercase)
    if name in ("chrf", "chrf++"):
        return sacrebleu.CHRF(word_order=2 if name == "chrf++" else 0, lowercase=lowercase)
    if name == "ter":
        return sacrebleu.TER()  # case-insensitive already (sacreBLEU's default), --lowercase or not
    raise ValueError(f"metric {name!r} is not one of {', '.join(METRICS)}")


def _reference_streams(hypotheses: list[str], references: list[str], more_references=()) -> list[list[str]]:
    streams = [list(references), *map(list, more_references)]
    for number, stream in enumerate(streams, 1):
        if len(stream) != len(hypotheses):
            raise ValueError(
                f"{len(hypotheses)} hypotheses for {len(stream)} references (reference set {number}): "
                "one each is needed."
            )
    return streams


def score(
    hypotheses: list[str],
    references: list[str],
    metrics=METRICS,
    bootstrap: int | None = None,
    tokenize: str = "13a",
    lowercase: bool = False,
    more_references=(),
) -> dict:
    """{metric: {"score", "signature"[, "mean", "ci95"]}} of `hypotheses` against their references (one each,
    and one more from each of `more_references`); `tokenize` and `lowercase` as sacreBLEU takes them, and named
    in the signature."""
    streams = _reference_streams(hypotheses, references, more_references)
    if bootstrap is not None and bootstrap < 2:
        raise ValueError(f"bootstrap must be >= 2 resamples, got {bootstrap}.")
    results = {}
    for name in metrics:
        metric = _metric(name, tokenize, lowercase)
        result = metric.corpus_score(hypotheses, streams, n_bootstrap=bootstrap or 1)
        entry = {"score": round(result.score, 2), "signature": str(metric.get_signature())}
        if bootstrap:
            entry.update(mean=round(float(result._mean), 2), ci95=round(float(result._ci), 2))  # chrF: float32
        results[name] = entry
    return results


def translator(
    model_path: str, num_beams: int | None = None, batch_size: int = 16, max_new_tokens: int | None = None
) -> Callable[[list[str]], list[str]]:
    """A function that translates a list of sources with a saved model directory (generate()) or a CTranslate2 export
    (a directory with model.bin), loaded once through `engines.load_for_scoring`: beam `num_beams` (default: the
    generation config's, which an export carries), the engines' length bound (or at most `max_new_tokens` tokens),
    each source whole, as one sequence.
    A test set's sources are segments aligned with their references, so they are never split into sentences, nor
    folded to sentence case, nor their lost spans put back: the studies measure what the model itself does with a
    long input, capitals or placeholders, not the sentence splitter, `casing` or `spans`. The guards decode as
    `options.guards_in_evaluation` says of scoring."""
    engine = load_for_scoring(model_path)
    options = TranslationOptions(
        num_beams=num_beams,
        batch_size=batch_size,
        max_new_tokens=max_new_tokens,
        split_sentences=False,
        fold_case=False,
        repair_spans=False,
        guards=guards_in_evaluation(fits_confidence=False),
    )
    return lambda sources: [
        hypotheses[0][0] if hypotheses else "" for hypotheses in translate_texts(engine, sources, options)
    ]


def translate_with(
    model_path: str, sources: list[str], num_beams: int | None = None, batch_size: int = 16
) -> list[str]:
    """Translations of `sources` by a saved model directory or a CTranslate2 export (see `translator`)."""
    return translator(model_path, num_beams, batch_size)(sources)


def score_saved(
    model_path: str, sources: list[str], targets: list[str], batch_size: int = 16, length_penalty: float | None = None
) -> list[PairScore]:
    """Given pairs' scores (`transformer_mt.engines.pair_scores`) under a saved model directory (loaded strictly) or a
    CTranslate2 export (its `score_batch`; its generation config's length penalty is the model's own)."""
    return load_for_scoring(model_path).score_pairs(sources, targets, batch_size, length_penalty)


def score_sets(
    model_path: str,
    sets: dict[str, tuple[list[str], list[str]]],
    num_beams: int | None = 1,
    batch_size: int = 16,
    max_new_tokens: int | None = None,
) -> dict[str, dict]:
    """name -> BLEU, chrF and length ratio (`metrics.translation_scores`, unrounded) of the model's translations of
    every set of (sources, references); greedy unless `num_beams`, each input whole, within the engines' length
    bound unless `max_new_tokens`. What the studies score by."""
    translate = translator(model_path, num_beams, batch_size, max_new_tokens)
    scores = {}
    for name, (sources, references) in sets.items():
        result = translation_scores(translate(sources), references)
        scores[name] = {key: result[key] for key in ("bleu", "chrf", "length_ratio")}
    return scores


def split_pairs(
    data: str,
    split: str = "test",
    source_lang: str = "en",
    target_lang: str = "de",
    config_name: str | None = None,
    max_samples: int | None = None,
    join_pairs: int = 1,
    extra_columns=(),
) -> tuple:
    """(the split's Dataset, its sources, its references): of a data directory, a Hub dataset, or a single
    .tsv/.csv/.jsonl file (scored as the split it is); the first `max_samples` pairs, joined `join_pairs` at a time."""
    files = {split: data} if os.path.isfile(data) else data
    splits = load_parallel_data(files, source_lang, target_lang, config_name=config_name, extra_columns=extra_columns)
    if split not in splits:
        raise ValueError(f"{data} has no {split!r} split; it has: {', '.join(splits)}.")
    pairs = splits[split]
    if max_samples:
        pairs = pairs.select(range(min(max_samples, len(pairs))))
    sources, references = list(pairs[source_lang]), list(pairs[target_lang])
    if join_pairs > 1:
        sources, references = join_consecutive(sources, references, join_pairs)
    return pairs, sources, references


def system_hypotheses(
    system: str, sources: list[str], num_beams: int | None = None, batch_size: int = 16, is_model: bool | None = None
) -> list[str]:
    """A system's translations of `sources`: a saved model directory or a CTranslate2 export translates them (a
    directory, or `is_model`), a file of hypotheses (one a line) is read."""
    if is_model or (is_model is None and os.path.isdir(system)):
        return translate_with(system, sources, num_beams=num_beams, batch_size=batch_size)
    with open(system, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def read_references(paths) -> list[list[str]]:
    """More reference sets: files of one reference a line, aligned with the split."""
    streams = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            streams.append([line.rstrip("\n") for line in f])
    return streams


@dataclasses.dataclass(frozen=True)
class ScoreSettings:
    """How `evaluate_split` scores a split: which pairs, how a model decodes them, and sacreBLEU's settings; checked
    once where it is made (the score command builds it from its flags)."""

    split: str = "test"
    source_lang: str = "en"
    target_lang: str = "de"
    config_name: str | None = None  # the Hub dataset's configuration, e.g. de-en
    max_samples: int | None = None  # the split's first N pairs only
    join_pairs: int = 1  # k > 1: pairs joined k at a time (`data.join_consecutive`), long inputs each translated whole
    by_column: str | None = None  # also the scores of each value of this column of the data, under "by_<column>"
    num_beams: int | None = None  # None: the generation config's
    batch_size: int = 16
    metrics: tuple[str, ...] = METRICS
    bootstrap: int | None = None  # resamples for each score's 95% confidence interval
    tokenize: str = "13a"  # sacreBLEU's BLEU tokenizer
    lowercase: bool = False
    references_files: tuple[str, ...] = ()  # more references: files of one reference a line, aligned with the split
    segments: bool = False  # each line's BLEU and chrF too, under "segments"

    def __post_init__(self):
        object.__setattr__(self, "metrics", tuple(self.metrics))
        object.__setattr__(self, "references_files", tuple(self.references_files))
        if self.by_column is not None and self.join_pairs > 1:
            raise ValueError(
                "score either by a column or with joined pairs: a joined input may mix the column's values"
            )


def scored_pairs(data: str, settings: ScoreSettings, extra_columns=()) -> tuple:
    """`split_pairs` of `data` as `settings` choose them: (the split's Dataset, its sources, its references)."""
    return split_pairs(
        data,
        settings.split,
        settings.source_lang,
        settings.target_lang,
        settings.config_name,
        settings.max_samples,
        settings.join_pairs,
        extra_columns,
    )


def evaluate_split(
    data: str,
    settings: ScoreSettings = ScoreSettings(),
    *,
    model: str | None = None,
    hypotheses_file: str | None = None,
) -> dict:
    """Translate with `model` (a saved model directory or a CTranslate2 export) or read from `hypotheses_file` the
    translations of one split of `data` (`split_pairs`), and score them as `settings` say; returns the scores with
    what was scored and how."""
    if (model is None) == (hypotheses_file is None):
        raise ValueError(
            "give exactly one of a model (a saved model directory or a CTranslate2 export) and a file of hypotheses"
        )
    by_column = settings.by_column
    pairs, sources, references = scored_pairs(data, settings, [by_column] if by_column else ())
    hypotheses = system_hypotheses(
        model or hypotheses_file, sources, settings.num_beams, settings.batch_size, is_model=bool(model)
    )
    more = read_references(settings.references_files)
    sacre = dict(tokenize=settings.tokenize, lowercase=settings.lowercase, more_references=more)
    results = {
        "data": data,
        "split": settings.split,
        "pairs": len(references),
        "system": model or hypotheses_file,
        **({"joined_pairs": settings.join_pairs} if settings.join_pairs > 1 else {}),
        "scores": score(hypotheses, references, settings.metrics, settings.bootstrap, **sacre),
    }
    if by_column is not None:
        groups = {}
        for index, value in enumerate(pairs[by_column]):
            groups.setdefault(value, []).append(index)
        results[f"by_{by_column}"] = {
            value: {
                "pairs": len(rows),
                "scores": score(
                    [hypotheses[i] for i in rows],
                    [references[i] for i in rows],
                    settings.metrics,
                    settings.bootstrap,
                    settings.tokenize,
                    settings.lowercase,
                    [[stream[i] for i in rows] for stream in more],
                ),
            }
            for value, rows in sorted(groups.items())
        }
    if settings.segments:
        results["segments"] = segment_scores(hypotheses, references, **sacre)
    return results


def segment_scores(
    hypotheses: list[str], references: list[str], tokenize: str = "13a", lowercase: bool = False, more_references=()
) -> list[dict]:
    """Per line: sentence BLEU and chrF (sacreBLEU's `sentence_score`, with the corpus metrics' settings)."""
    streams = _reference_streams(hypotheses, references, more_references)
    bleu = sacrebleu.BLEU(tokenize=tokenize, lowercase=lowercase, effective_order=True)  # sentence BLEU's setting
    chrf = _metric("chrf", tokenize, lowercase)
    rows = []
    for index, hypothesis in enumerate(hypotheses):
        line_references = [stream[index] for stream in streams]
        rows.append(
            {
                "bleu": round(bleu.sentence_score(hypothesis, line_references).score, 2),
                "chrf": round(chrf.sentence_score(hypothesis, line_references).score, 2),
            }
        )
    return rows


def compare_systems(
    systems: dict[str, list[str]],
    references: list[str],
    metrics=("bleu", "chrf"),
    test: str = "bs",
    samples: int = 1000,
    tokenize: str = "13a",
    lowercase: bool = False,
    more_references=(),
) -> dict:
    """Paired significance of each system against the first (the baseline): sacreBLEU's paired bootstrap
    resampling (`test` "bs", `samples` resamples) or approximate randomization ("ar"). Per metric: its signature,
    and per system the score, and (bootstrap) the mean and 95% confidence interval, and the p-value against the
    baseline (None for the baseline itself)."""
    from sacrebleu.significance import PairedTest

    if test not in ("bs", "ar"):
        raise ValueError(f"test must be 'bs' (paired bootstrap) or 'ar' (approximate randomization), got {test!r}")
    if len(systems) < 2:
        raise ValueError(f"a paired test compares at least 2 systems, got {len(systems)}")
    for hypotheses in systems.values():
        streams = _reference_streams(hypotheses, references, more_references)
    named = {name: _metric(name, tokenize, lowercase) for name in metrics}
    signatures, results = PairedTest(list(systems.items()), named, streams, test_type=test, n_samples=samples)()
    compared = {
        "test": {"bs": "paired bootstrap resampling", "ar": "approximate randomization"}[test],
        "samples": samples,
        "baseline": next(iter(systems)),
        "metrics": {},
    }
    for name in metrics:
        compared["metrics"][name] = {"signature": str(signatures[_SACREBLEU_NAMES[name]]), "systems": {}}
        for system, result in zip(results["System"], results[_SACREBLEU_NAMES[name]]):
            entry = {"score": round(result.score, 2), "p_value": result.p_value}
            if test == "bs":
                entry.update(mean=round(float(result.mean), 2), ci95=round(float(result.ci), 2))
            compared["metrics"][name]["systems"][system] = entry
    return compared


# sacreBLEU's names for our metrics in a paired test's results
_SACREBLEU_NAMES = {"bleu": "BLEU", "chrf": "chrF2", "chrf++": "chrF2++", "ter": "TER"}


__all__ = [
    "METRICS",
    "TOKENIZERS",
    "ScoreSettings",
    "compare_systems",
    "evaluate_split",
    "read_references",
    "score",
    "score_saved",
    "score_sets",
    "scored_pairs",
    "segment_scores",
    "split_pairs",
    "system_hypotheses",
    "translate_with",
    "translator",
]
