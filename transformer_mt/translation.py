"""The batch API: texts in, translations out, through an engine (`transformer_mt.engines`) and one
`TranslationOptions`.

- `translate_texts(engine, texts, options)`: each text's hypotheses; `translate` and `translate_nbest` are its
  keyword form for a model and tokenizer (`translate(model, tokenizer, texts, num_beams=4)`), as user code calls it.
- `translate_stream(engine, lines, write, options)`: a stream of any size, a chunk at a time, on one process or
  several (`accelerate launch`), each line's translation handed to `write` in input order.
- `segment` and `assemble`: the steps around the engine, which the server runs around its batcher too. A text is
  taken apart into the sentences the engine sees (HTML fragments into their text nodes first, with
  `format="html"`; each text or node split into sentences by its language unless `split_sentences=False`; each
  sentence begun with `source_prefix`), and the sentences' hypotheses are put back together in the same order.

The seed, when the options give one, is set once per call of an entry (`start`), whatever the input.
"""

import dataclasses
import logging
from collections.abc import Callable, Iterable, Iterator

import torch

from .checkpoints import check_tokenizer_matches
from .constraints import first_sentence_prefixes
from .engines import Engine, attach_calibration, resolve_engine
from .engines.alignment import join_alignments
from .engines.inputs import Hypotheses, Layout, join_hypotheses, length_batches, split_texts
from .options import OptionError, TranslationOptions, from_keywords
from .quality import Flags, Translation, together
from .steps import Decoded, decode
from .text import sentences
from .text.casing import fold_label
from .text.html_fragments import as_written
from .text.languages import languages_of


logger = logging.getLogger(__name__)


@dataclasses.dataclass
class Segments:
    """Texts taken apart for an engine: `sentences` (untagged: `decode` begins each with the source tag), their
    names in warnings, the `layout` that joins them back per text (or per HTML text node), the parsed HTML
    documents with `format="html"`, each sentence's forced prefix, and whether each is an inline element's own
    text (`alone`: translated alone as a hint for where the element goes, decoded without guards or alignment)."""

    texts: list[str]
    sentences: list[str]
    names: list[str]
    layout: Layout
    options: TranslationOptions
    documents: object | None = None  # markup.HtmlDocuments
    prefixes: list[str | None] | None = None
    alone: list[bool] | None = None


def segment(
    texts: list[str],
    options: TranslationOptions,
    config,
    numbers: Iterable[int] | None = None,
    target_prefix: list[str | None] | None = None,
) -> Segments:
    """`texts` taken apart as `options` say: HTML text nodes (`format="html"`), then sentences by the language of
    `options.source_lang` or the model `config`'s (a ValueError says what to pass when neither is known), or each
    text whole; `numbers` name the texts in warnings (default 1, 2, ...); `target_prefix`: one per text."""
    documents, units = None, texts
    if options.format == "html":
        if target_prefix is not None:
            raise OptionError("format", "html takes no target prefixes: a fragment has no one first sentence")
        from .text.markup import HtmlDocuments  # BeautifulSoup: the [serve] or [files] extra

        documents = HtmlDocuments(texts)
        source = languages_of(config, options.source_lang, options.target_lang).source
        own = [fold_label(text, source) for text in documents.own_texts] if options.fold_case else documents.own_texts
        units, numbers = documents.texts + own, None  # the elements' own texts too, for `assemble`
    language = sentences.segmenter_language(config, options.source_lang) if options.split_sentences else None
    flat, names, layout = split_texts(units, language, numbers or range(1, len(units) + 1))
    prefixes = first_sentence_prefixes(layout, target_prefix, len(flat)) if target_prefix is not None else None
    alone = None
    if documents is not None:  # the elements' own texts, after the runs
        first_own = sum(len(span) for span, _ in layout[: len(documents.texts)])
        alone = [i >= first_own for i in range(len(flat))]
    return Segments(texts, flat, names, layout, options, documents, prefixes, alone)


def assemble(segments: Segments, hypotheses: list[Hypotheses]) -> list[Hypotheses]:
    """Each text's hypotheses from its sentences' (`hypotheses`, in `segments.sentences`' order): the k-th joins
    each sentence's k-th with the source's separators. A blank text has none; an HTML fragment gets one per rank,
    each run of its text filled with the run's k-th translation (its best where it has fewer) and its inline
    elements placed by the sentences' word alignments (`decode` gives them with `format="html"`)."""
    joined = [join_hypotheses([hypotheses[i] for i in span], separators) for span, separators in segments.layout]
    if segments.documents is None:
        return joined
    from .text.markup import HtmlDocuments

    count = segments.options.num_return_sequences
    runs_count = len(segments.documents.texts)
    own = {
        text: hypotheses[0][0]
        for text, hypotheses in zip(segments.documents.own_texts, joined[runs_count:])
        if hypotheses
    }
    ranks = []
    for k in range(count):
        documents = segments.documents if k == 0 else HtmlDocuments(segments.texts)
        runs, alignments = [], []
        for (span, separators), run in zip(segments.layout[:runs_count], joined[:runs_count], strict=True):
            run = run or [("", None)]
            runs.append(run[min(k, len(run) - 1)])
            chosen = [min(k, len(hypotheses[i]) - 1) for i in span]
            alignments.append(
                join_alignments(
                    [_alignment(hypotheses[i], rank) for i, rank in zip(span, chosen)],
                    [segments.sentences[i] for i in span],
                    [hypotheses[i][rank][0] for i, rank in zip(span, chosen)],
                    separators,
                )
            )
        scores = [score for _, score in runs]
        filled = [
            as_written(source, text)
            for source, text in zip(
                segments.texts, documents.fill([text for text, _ in runs], alignments, own), strict=True
            )
        ]  # the tags as the client wrote them
        if documents.fallbacks:
            logger.warning(
                f"{documents.fallbacks} inline element(s) had no aligned words in the translation: "
                "each was put after the translation of the word before it, holding its own text's "
                "translation (or its source text)"
            )
        ranks.append([(text, None if None in scores else sum(scores)) for text in filled])
    return [[rank[i] for rank in ranks] for i in range(len(segments.texts))]


def text_flags(segments: Segments, hypotheses: list[Hypotheses]) -> list[Flags]:
    """Each text's flags, its sentences' (`Decoded.flags`) together (`quality.together`): for an HTML fragment,
    those of its runs of text."""
    units = iter(
        [together([getattr(hypotheses[i], "flags", None) or Flags() for i in span]) for span, _ in segments.layout]
    )
    if segments.documents is None:
        return list(units)
    runs = segments.documents.runs
    return [together([next(units) for owner, _ in runs if owner is soup]) for soup in segments.documents.soups]


def _alignment(hypotheses: Hypotheses, rank: int) -> list:
    alignments = getattr(hypotheses, "alignments", None)  # none: the engine's tokenizer gives no offsets
    return alignments[rank] if alignments else []


def start(engine: Engine, options: TranslationOptions) -> None:
    """What every entry does once before it translates: the seed, when the options give one."""
    if options.seed is not None:
        engine.seed(options.seed)


def translate_texts(
    engine: Engine,
    texts: list[str],
    options: TranslationOptions,
    numbers: Iterable[int] | None = None,
    target_prefix: list[str | None] | None = None,
) -> list[Hypotheses]:
    """Each text's `options.num_return_sequences` hypotheses, best first, `(text, score)` (score None unless
    `options.scores`; a text's is the sum of its sentences'); none for a blank text. All the texts' sentences are
    translated by `engine` in length-sorted batches; `numbers` name texts in warnings ("Text 3, sentence 2")."""
    start(engine, options)
    segments = segment(texts, options, engine.config, numbers, target_prefix)
    decoded = decode(engine, segments.sentences, options, segments.names, segments.prefixes, segments.alone)
    return [
        Decoded(hypotheses, flags=flags)
        for hypotheses, flags in zip(assemble(segments, decoded), text_flags(segments, decoded))
    ]


def translate(
    model,
    tokenizer,
    texts: list[str],
    options: TranslationOptions | None = None,
    *,
    engine="transformers",
    numbers: list[int] | None = None,
    check_tokenizer: bool = True,
    target_prefix: list[str | None] | None = None,
    **keywords,
) -> list[str]:
    """Translate `texts` (their order kept); a blank text gives "" without a model call.

    Each text is split into sentences, every sentence of every text is translated in batches of similar length,
    and each text's translations are joined with the whitespace that separated its sentences. `options` (a
    `TranslationOptions`), changed by `keywords` named after its fields (`num_beams=4`, `split_sentences=False`,
    `source_lang=`, `target_lang=`, `source_prefix=`, `bad_words=`, `max_new_tokens=`, ...); any other keyword is a
    generate() control (`typical_p=0.9`). The beam size and length defaults are the model's generation config's.
    A sentence longer than the tokenizer's `model_max_length` is cut there with a warning; one a position table
    cannot hold is refused, naming it. A tokenizer that is not the model's own is warned about (`check_tokenizer`:
    callers that translate batch after batch check once themselves).

    `engine`: "transformers" (generate()), "ctranslate2" (a CTranslate2 export of the model's saved files, made once
    into a cache; the model must hold exactly those weights), "auto" (CTranslate2 where it can, else generate()),
    or an `Engine` from `transformer_mt.engines.load_engine`, the fast way to translate call after call.
    `target_prefix`: one per text (None for none), its translation's forced beginning (`transformer_mt.constraints`).

    Each translation is a `quality.Translation`: a str that also holds `flags` (a `quality.Flags`: protected spans
    put back or lost, guards, an abstention) and, with `confidence=True` (or `min_confidence=`), `confidence`, the
    model's calibrated confidence (its calibration.json: `transformer-mt-score --calibrate`).
    """
    return [
        Translation(hypotheses[0][0] if hypotheses else "", hypotheses.flags)
        for hypotheses in translate_nbest(
            model,
            tokenizer,
            texts,
            options,
            engine=engine,
            numbers=numbers,
            check_tokenizer=check_tokenizer,
            target_prefix=target_prefix,
            **keywords,
        )
    ]


def translate_nbest(
    model,
    tokenizer,
    texts: list[str],
    options: TranslationOptions | None = None,
    *,
    engine="transformers",
    numbers: list[int] | None = None,
    check_tokenizer: bool = True,
    target_prefix: list[str | None] | None = None,
    **keywords,
) -> list[Hypotheses]:
    """`translate`, with `num_return_sequences` hypotheses per text, best first, each `(text, score)` (none for a
    blank text): `translate_texts` with the model's engine. A sentence's score (with `scores=True`) is what beam
    search ranks by: the hypothesis' log-probability divided by its length to the power `length_penalty` (for
    greedy search and sampling: under the decoding distribution). Each text's list is a `steps.Decoded`, whose
    `flags` (a `quality.Flags`) say what the steps around the engine found in its best hypothesis."""
    if check_tokenizer:
        check_tokenizer_matches(model.config, tokenizer, "translate()")
    options = from_keywords(options, **keywords)
    resolved = resolve_engine(model, tokenizer, engine)
    if options.calibrated and getattr(resolved, "calibration", None) is None and isinstance(engine, str):
        attach_calibration(resolved, getattr(model, "name_or_path", None), model)  # its directory's, if it fits
    return translate_texts(resolved, texts, options, numbers, target_prefix)


def translate_stream(
    engine: Engine,
    lines: Iterable[str],
    write: Callable[..., object],
    options: TranslationOptions,
    *,
    target_prefix: Iterable[str | None] | None = None,
    chunk_size: int = 4096,
    progress: Callable[[int], object] | None = None,
) -> int:
    """Translate a stream of lines into `write` (one call per line, in input order); returns the line count.

    `write` gets the translation (a `quality.Translation`: a str with its `flags` and `confidence`), or with
    `options.nbest` the list of `(text, score)` hypotheses (a `steps.Decoded` with its `flags`; a blank line gets
    an empty list); with `options.alignments` also a second argument, the word alignment of the line and its
    translation (`engines.alignment`: each sentence aligned by the engine, the sentences' word pairs numbered
    within the line). `target_prefix`: an iterable of prefixes beside `lines` (None for none), read along with them.

    Reads `chunk_size` lines at a time, so memory does not grow with the input. Under a distributed launch
    (`accelerate launch`, torchrun) every process reads the stream, translates every num_processes-th length batch
    of each chunk, and the main process joins and writes all of them: the batches, so the output, are the same for
    any number of processes. `progress(n)` is called on the main process after each chunk with its line count.
    """
    if options.alignments and options.format != "text":
        raise OptionError("alignments", "aligns plain text: drop {format} html")
    state = process_state()
    check_tokenizer_matches(engine.config, engine.tokenizer, "translate_stream()")
    start(engine, options)
    total = 0
    prefixes = iter(target_prefix) if target_prefix is not None else None
    for chunk in _chunks(lines, chunk_size):
        segments = segment(
            chunk,
            options,
            engine.config,
            range(total + 1, total + len(chunk) + 1),
            _take(prefixes, len(chunk)) if prefixes else None,
        )
        mine = _translate_share(engine, segments, state)
        if state.is_main_process:
            decoded = [mine.hypotheses[i] for i in range(len(segments.sentences))]
            for number, (hypotheses, flags) in enumerate(
                zip(assemble(segments, decoded), text_flags(segments, decoded))
            ):
                translation = (
                    Decoded(hypotheses, flags=flags)
                    if options.nbest
                    else Translation(hypotheses[0][0] if hypotheses else "", flags)
                )
                write(translation, *([mine.alignments[number]] if options.alignments else []))
            if progress is not None:
                progress(len(chunk))
        total += len(chunk)
    return total


@dataclasses.dataclass
class _Share:
    hypotheses: dict[int, Hypotheses]  # sentence index -> its hypotheses, gathered from every process
    alignments: list | None = None  # per line, on the main process


def _translate_share(engine: Engine, segments: Segments, state) -> _Share:
    """This process's length batches of a chunk's sentences, handed to the engine in one call (it cuts the same
    batches again: they are consecutive runs of one length order), gathered on the main process."""
    from accelerate.utils import gather_object

    options, flat = segments.options, segments.sentences
    lengths = [len(ids) for ids in engine.tokenizer(flat)["input_ids"]] if flat else []
    indices = [
        i
        for batch in length_batches(lengths, options.batch_size)[state.process_index :: state.num_processes]
        for i in batch
    ]
    prefixes = [segments.prefixes[i] for i in indices] if segments.prefixes else None
    alone = [segments.alone[i] for i in indices] if segments.alone else None
    outputs = decode(
        engine, [flat[i] for i in indices], options, [segments.names[i] for i in indices], prefixes, alone
    )
    mine = dict(zip(indices, outputs))
    found = {}
    if options.alignments:  # each process aligns its own sentences with their best translations
        aligned = [i for i in indices if mine[i] and mine[i][0][0]]
        found = (
            dict(
                zip(aligned, engine.align_pairs([flat[i] for i in aligned], [mine[i][0][0] for i in aligned], options))
            )
            if aligned
            else {}
        )
    if state.num_processes > 1:
        parts = gather_object([(mine, found)])
        mine = {index: value for part, _ in parts for index, value in part.items()}
        found = {index: value for _, part in parts for index, value in part.items()}
    share = _Share(mine)
    if options.alignments:
        share.alignments = [
            join_alignments(
                [found.get(i, []) for i in span],
                [flat[i] for i in span],
                [mine[i][0][0] if mine[i] else "" for i in span],
                separators,
            )
            for span, separators in segments.layout
        ]
    return share


def process_state():
    """accelerate's view of the processes started together (one, without a launcher). Without an accelerator they
    form one gloo group on the CPU; accelerate would otherwise let each run alone."""
    from accelerate import PartialState

    return PartialState(cpu=not torch.accelerator.is_available())


def _take(prefixes: Iterator, count: int) -> list:
    """The next `count` prefixes; an error when the prefixes end before the lines do."""
    taken = [next(prefixes, StopIteration) for _ in range(count)]
    if StopIteration in taken:
        raise ValueError("target_prefix ended before the lines did: give one prefix per line (empty for none)")
    return taken


def _chunks(lines: Iterable[str], size: int) -> Iterator[list[str]]:
    chunk = []
    for line in lines:
        chunk.append(line)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


__all__ = [
    "Decoded",
    "Segments",
    "assemble",
    "decode",
    "process_state",
    "segment",
    "start",
    "text_flags",
    "translate",
    "translate_nbest",
    "translate_stream",
    "translate_texts",
]
