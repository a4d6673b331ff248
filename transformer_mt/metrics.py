"""Corpus BLEU and chrF as a local `evaluate` metric module, computed with sacrebleu.

`evaluate.load("sacrebleu")` fetches its script from the Hub; this file is the offline replacement, loaded by
path: `evaluate.load("/abs/path/to/translation_metrics.py")` or `load_translation_metric()`. It has to stay a
self-contained script (no relative imports) because evaluate copies it into its module cache before importing it.
`translation_scores` is the computation itself, which `evaluation.score_sets` calls without the `evaluate` wrapper.
"""

import datasets
import evaluate
import sacrebleu


_CITATION = """\
@inproceedings{post-2018-call,
    title = "A Call for Clarity in Reporting {BLEU} Scores",
    author = "Post, Matt",
    booktitle = "Proceedings of the Third Conference on Machine Translation: Research Papers",
    year = "2018",
    pages = "186--191",
}
@inproceedings{popovic-2015-chrf,
    title = "chr{F}: character n-gram {F}-score for automatic {MT} evaluation",
    author = "Popovi{\\'c}, Maja",
    booktitle = "Proceedings of the Tenth Workshop on Statistical Machine Translation",
    year = "2015",
    pages = "392--395",
}
"""

_DESCRIPTION = """\
Corpus-level BLEU (Papineni et al., 2002) and chrF (Popovic, 2015) as implemented by sacrebleu, with the
sacrebleu signatures that make the scores reproducible. Scores are on sacrebleu's 0-100 scale.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `str`): one system output per segment.
    references (`list` of `str`, or `list` of `list` of `str`): the reference(s) of each segment; every
        segment needs the same number of references.
    tokenize (`str`): BLEU tokenizer, one of `sacrebleu.BLEU.TOKENIZERS`; default "13a" (sacrebleu's default).
        Use "intl" or "char"/"zh"/"ja-mecab" for scripts "13a" does not split.
    lowercase (`bool`): lowercase both sides before BLEU; default False.
    chrf_word_order (`int`): word n-gram order of chrF; 0 (default) is chrF, 2 is chrF++.
Returns:
    bleu (`float`): corpus BLEU, 0-100.
    chrf (`float`): corpus chrF (chrF++ when `chrf_word_order=2`), 0-100.
    length_ratio (`float`): output length over reference length, in BLEU's tokens (sacrebleu's `ratio`; a system that
        drops half of each input scores about 0.5).
    bleu_signature (`str`): sacrebleu's signature of the BLEU settings, e.g. "nrefs:1|case:mixed|eff:no|tok:13a|...".
    chrf_signature (`str`): sacrebleu's signature of the chrF settings.
Examples:
    >>> metric = load_translation_metric()
    >>> result = metric.compute(predictions=["the cat sat on the mat"], references=["the cat sat on the mat"])
    >>> round(result["bleu"], 1), round(result["chrf"], 1)
    (100.0, 100.0)
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class TranslationMetrics(evaluate.Metric):
    """Corpus BLEU and chrF of predictions against one or more references per segment."""

    def _info(self):
        string = datasets.Value("string", id="sequence")
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            homepage="https://github.com/mjpost/sacrebleu",
            inputs_description=_KWARGS_DESCRIPTION,
            # Several references per segment first: evaluate tries the feature sets in order.
            features=[
                datasets.Features({"predictions": string, "references": datasets.Sequence(string, id="references")}),
                datasets.Features({"predictions": string, "references": string}),
            ],
            codebase_urls=["https://github.com/mjpost/sacrebleu"],
            reference_urls=["https://aclanthology.org/W18-6319/", "https://aclanthology.org/W15-3049/"],
        )

    def _compute(self, predictions, references, tokenize="13a", lowercase=False, chrf_word_order=0):
        return translation_scores(predictions, references, tokenize, lowercase, chrf_word_order)


def translation_scores(
    predictions: list[str], references: list, tokenize: str = "13a", lowercase: bool = False, chrf_word_order: int = 0
) -> dict:
    """Corpus BLEU, chrF, length ratio and the signatures (see `TranslationMetrics`'s Args and Returns) of
    `predictions` against one reference (a string) or several (a list) per segment."""
    if references and isinstance(references[0], str):
        references = [[reference] for reference in references]
    num_references = len(references[0]) if references else 0
    if any(len(segment) != num_references for segment in references):
        raise ValueError(f"every prediction needs the same number of references (the first has {num_references})")
    # sacrebleu takes one stream per reference position, not one list per segment.
    reference_streams = [[segment[i] for segment in references] for i in range(num_references)]
    # The metric classes rather than corpus_bleu/corpus_chrf: only they expose the signature; the scores are
    # identical because those functions build the same objects.
    bleu = sacrebleu.BLEU(tokenize=tokenize, lowercase=lowercase)
    chrf = sacrebleu.CHRF(word_order=chrf_word_order)
    bleu_score = bleu.corpus_score(predictions, reference_streams)
    return {
        "bleu": bleu_score.score,
        "chrf": chrf.corpus_score(predictions, reference_streams).score,
        "length_ratio": bleu_score.sys_len / bleu_score.ref_len if bleu_score.ref_len else 0.0,
        "bleu_signature": str(bleu.get_signature()),
        "chrf_signature": str(chrf.get_signature()),
    }


def load_translation_metric(**kwargs) -> evaluate.EvaluationModule:
    """Return this module loaded through `evaluate.load` by its own path (works offline); kwargs go to `load`."""
    return evaluate.load(__file__, **kwargs)
