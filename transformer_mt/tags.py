"""Tags: tokens a user puts in the text, kept whole by the tokenizer, and the target-language tokens of a model that
writes several languages.

- Special tokens (`add_special_tokens`): a back-translation tag (`<BT>`), a domain tag, any token a run names with
  `--special_tokens` or `--source_prefix`. The trained byte-level tokenizer would split `<BT>` into byte pieces; as
  a special token it is one id, never split, saved with the tokenizer. Added to a tokenizer that a model was
  trained with, the model's token tables grow by as many rows (`fit_model_to_tokenizer`).
- Target languages: a data set with a target-language column trains one model for several targets. Each target
  sequence begins with its language's token, `>>de<<` as Opus-MT (Marian) writes them, and translation forces that
  token first: generate()'s `forced_bos_token_id`, CTranslate2's `target_prefix` (`target_language_id`). The
  languages a model writes are the language tokens of its tokenizer.
- Opus-MT models of several targets (imported: `config.source_language_tokens`) read the token on the source side
  instead: each source begins with the one its vocabulary lists for the target, `>>fra<<` or `>>fr<<`
  (`source_language_token`).
"""

import logging
import re

import torch

from .modeling.embeddings import token_init_std
from .tokenization import target_side, tokenizer_fingerprint


logger = logging.getLogger(__name__)

LANGUAGE_TOKEN = re.compile(r">>([^\s<>]+)<<")
# ISO 639-1 codes and their ISO 639-3 ones (Debian's iso-codes), which Opus-MT's language tokens mostly use.
_ISO_639 = (
    "aaaar ababk aeave afafr akaka amamh anarg arara asasm avava ayaym azaze babak bebel bgbul bibis bmbam bnben "
    "bobod brbre bsbos cacat ceche chcha cocos crcre csces cuchu cvchv cycym dadan dedeu dvdiv dzdzo eeewe elell "
    "eneng eoepo esspa etest eueus fafas ffful fifin fjfij fofao frfra fyfry gagle gdgla glglg gngrn guguj gvglv "
    "hahau heheb hihin hohmo hrhrv hthat huhun hyhye hzher iaina idind ieile igibo iiiii ikipk ioido isisl itita "
    "iuiku jajpn jvjav kakat kgkon kikik kjkua kkkaz klkal kmkhm knkan kokor krkau kskas kukur kvkom kwcor kykir "
    "lalat lbltz lglug lilim lnlin lolao ltlit lulub lvlav mgmlg mhmah mimri mkmkd mlmal mnmon mrmar msmsa mtmlt "
    "mymya nanau nbnob ndnde nenep ngndo nlnld nnnno nonor nrnbl nvnav nynya ococi ojoji omorm orori ososs papan "
    "pipli plpol pspus ptpor quque rmroh rnrun roron rurus rwkin sasan scsrd sdsnd sesme sgsag shhbs sisin skslk "
    "slslv smsmo snsna sosom sqsqi srsrp ssssw stsot susun svswe swswa tatam tetel tgtgk ththa titir tktuk tltgl "
    "tntsn toton trtur tstso tttat twtwi tytah uguig ukukr ururd uzuzb veven vivie vovol wawln wowol xhxho yiyid "
    "yoyor zazha zhzho zuzul"
)
ISO_639_3 = {pair[:2]: pair[2:] for pair in _ISO_639.split()}  # "fr" -> "fra"
ISO_639_1 = {three: two for two, three in ISO_639_3.items()}  # "fra" -> "fr"


def language_token(code: str) -> str:
    """The token that makes a model write `code`: `>>de<<`."""
    if not code or not isinstance(code, str) or any(character.isspace() or character in "<>" for character in code):
        raise ValueError(f"a target language is a code such as 'de' (no spaces, '<' or '>'), got {code!r}")
    return f">>{code}<<"


def target_languages(tokenizer) -> list[str]:
    """The languages of a tokenizer's target-language tokens (special tokens `>>xx<<`), sorted."""
    return sorted(
        match[1] for token in target_side(tokenizer).all_special_tokens if (match := LANGUAGE_TOKEN.fullmatch(token))
    )


def model_target_languages(config, tokenizer) -> list[str]:
    """The languages a model of several targets writes; empty for a model of one, whose config names its
    `target_lang` (a `>>fr<<` tag it was trained with on the source side makes no target language). An imported
    Opus-MT model of several targets writes those its source vocabulary lists (`source_languages`), by their ISO
    639-1 codes where they have one (`fr` for `>>fra<<`, as `source_language_token` reads it)."""
    if getattr(config, "source_language_tokens", False):
        return sorted({ISO_639_1.get(code, code) for code in source_languages(tokenizer)})
    return [] if getattr(config, "target_lang", None) else target_languages(tokenizer)


def source_languages(tokenizer) -> list[str]:
    """The languages of the `>>xx<<` tokens of a tokenizer's source vocabulary, sorted."""
    tokens = (token for token in tokenizer.get_vocab() if token.startswith(">>"))
    return sorted(match[1] for token in tokens if (match := LANGUAGE_TOKEN.fullmatch(token)))


def source_language_token(config, tokenizer, target_lang: str | None) -> str | None:
    """The token that begins each source of an imported Opus-MT model of several targets (`config.
    source_language_tokens`) for `target_lang` (else its config's): the one its vocabulary lists, as given or in
    the other ISO 639 form ("fr" finds `>>fr<<`, else `>>fra<<`); None for any other model. A ValueError names the
    target and the listed codes when the vocabulary lists neither, and asks for one when none is given."""
    if not getattr(config, "source_language_tokens", False):
        return None
    listed = source_languages(tokenizer)
    name = getattr(config, "_name_or_path", "") or "the model"
    target = target_lang or getattr(config, "target_lang", None)
    for code in (target, ISO_639_3.get(target), ISO_639_1.get(target)):
        if code in listed:
            return language_token(code)
    if target_lang is None:
        raise ValueError(
            f"{name} writes several languages ({', '.join(listed)}): say which, with --target_lang "
            "(target_lang= from Python)"
        )
    raise ValueError(f"{name} does not write {target_lang!r}: its vocabulary lists {', '.join(listed)}")


def add_special_tokens(tokenizer, tokens) -> list[str]:
    """Add `tokens` to the tokenizer's vocabularies (both, where source and target have their own) as special
    tokens, kept whole and saved with it; returns those it did not hold yet."""
    tokens = list(dict.fromkeys(tokens))
    for token in tokens:
        if not isinstance(token, str) or not token or any(character.isspace() for character in token):
            raise ValueError(f"a special token is one piece of text without spaces, such as '<BT>', got {token!r}")
    added = [token for token in tokens if token not in tokenizer.get_vocab()]
    for side in {id(side): side for side in (tokenizer, target_side(tokenizer))}.values():
        kept = [str(token) for token in side.extra_special_tokens]  # the key below replaces the list
        missing = [token for token in tokens if token not in kept]
        if missing:  # a token the vocabulary holds already (an Opus-MT >>fr<<) becomes special, with its own id
            side.add_special_tokens({"additional_special_tokens": kept + missing})
    return added


def fit_model_to_tokenizer(model, tokenizer) -> bool:
    """Grow a model's token tables to a tokenizer that gained tokens and record the tokenizer's fingerprint, so that
    strict loading accepts the pair. Returns whether the model changed.

    Each new row is drawn as a new model's token rows are (`new_token_rows`), not set to the mean of the others as
    transformers' resizing does: with the mean, every added token starts as one vector, and tags that must be told
    apart (`<formal>`, `<informal>`) stay close until training separates them. An output table of its own (not tied
    to the input's) gets the same rows."""
    size = len(tokenizer)
    if size <= model.config.vocab_size:
        return False
    if not model.config.share_encoder_decoder_embeddings:
        raise ValueError(
            f"the tokenizer holds {size} tokens and the model's tables {model.config.vocab_size}: "
            "adding tokens to a model with separate source and target vocabularies is not supported; "
            "train a new model with --special_tokens instead"
        )
    logger.warning(
        f"The model's token tables grow from {model.config.vocab_size} to {size} rows for the tokens "
        "added to its tokenizer."
    )
    known = model.config.vocab_size
    model.resize_token_embeddings(size)
    drawn = new_token_rows(model.config, known, size)
    rows, output = model.get_input_embeddings().weight, model.get_output_embeddings()
    with torch.no_grad():
        rows[known:] = drawn.to(rows.dtype)
        if output is not None and output.weight is not rows:  # a tied output table is the input's, written above
            output.weight[known:] = drawn.to(output.weight.dtype)
    model.config.decoder_vocab_size = size
    model.config.tokenizer_fingerprint = tokenizer_fingerprint(tokenizer)
    return True


def new_token_rows(config, first: int, end: int):
    """Rows for the token ids first..end-1 with a new model's spread (`token_init_std`), each id's row from a
    generator seeded by the id: the same id gets the same row every run, and tokens added later, at other ids, get
    other rows."""
    std = token_init_std(config)
    rows = [
        torch.normal(0.0, std, (config.d_model,), generator=torch.Generator().manual_seed(token_id))
        for token_id in range(first, end)
    ]
    return torch.stack(rows)


def target_language_id(config, tokenizer, target_lang: str | None) -> int | None:
    """The id of the token that starts a translation into `target_lang`, for a model of several targets; None for a
    model of one. A ValueError names the languages when a multi-target model is given none or another one, and a
    one-target model's language when asked for another. An imported Opus-MT model of several targets reads the
    language on the source side (`source_language_token`, checked here): None."""
    if source_language_token(config, tokenizer, target_lang) is not None:
        return None
    languages = model_target_languages(config, tokenizer)
    name = getattr(config, "_name_or_path", "") or "the model"
    if not languages:
        own = getattr(config, "target_lang", None)
        if target_lang is not None and target_lang != own:
            raise ValueError(
                f"{name} translates into {own or 'one language (its config names none)'} only, not "
                f"{target_lang!r}: --target_lang picks one of the languages of a model trained with "
                "--target_lang_column"
            )
        return None
    if target_lang is None:
        raise ValueError(
            f"{name} writes several languages ({', '.join(languages)}): say which, with --target_lang "
            "(target_lang= from Python)"
        )
    if target_lang not in languages:
        raise ValueError(f"{name} does not write {target_lang!r}; it writes: {', '.join(languages)}")
    return target_side(tokenizer).convert_tokens_to_ids(language_token(target_lang))


__all__ = [
    "ISO_639_1",
    "ISO_639_3",
    "LANGUAGE_TOKEN",
    "add_special_tokens",
    "fit_model_to_tokenizer",
    "language_token",
    "model_target_languages",
    "source_language_token",
    "source_languages",
    "target_language_id",
    "target_languages",
]
