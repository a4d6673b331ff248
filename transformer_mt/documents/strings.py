"""String files (JSON and YAML i18n catalogues): every string value translated, keys never; nested objects and
lists walked, other values (numbers, booleans, null) kept.

- JSON keeps its key order and its layout where it can be read off the input: the indentation of its first
  indented line (spaces or a tab; none: one line, with or without spaces after `:` and `,` as the input has them),
  `\\uXXXX` escapes only where the input used them and wrote no other non-ASCII character, and its final newline.
- YAML is read and written by ruamel.yaml in round-trip mode: comments, key order, each string's quoting style
  (plain, '', "", |, and > folded over as many lines) and the indentation (read off the file) survive; a string
  an alias repeats is translated once and stays aliased (an anchor no alias uses is dropped, as ruamel does); one
  document a file, the top-level keys (Rails' `en:`) kept as they are.

With `contexts` (`translate.py --context_from keys`, for a model trained with context), each value's key path
(`settings.account.delete`, a list item's index as its key, a Rails file's locale key first) is read as its
context, as a .po message's msgctxt is: "Open" under `menu.file.open` and under `dialog.door.open` may be
translated apart. Every value has a path of its own, so each costs an engine call (the texts of one ICU message
share one); a key holding a dot reads as a path (`{"x.y": ...}` and `{"x": {"y": ...}}` give one context).

Placeholders (`{name}`, `%s`, `%1$s`, `{{name}}`, `%{name}`) are protected downstream, as spans; here each value's
translation is checked for them, and one that lost some is kept but named in a warning (key path and what it lost).

ICU MessageFormat: a value with a `plural`, `select` or `selectordinal` argument keeps that structure as it is
(argument name, keyword, `offset:`, each selector and the braces), and the text of each branch is a text of its
own; `#` in a plural branch travels as `{name}` (the argument it counts) and comes back as `#`. The text around the
argument is a text too, with the argument in it as `{name}`, and the argument is put back there (where the
translation lost it, the argument is written after it). Branches holding arguments of their own are taken apart
the same way, recursively. Apostrophe quoting is not read; a value whose braces do not balance is one plain text.
"""

import io
import json
import logging
import re

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError
from ruamel.yaml.scalarstring import ScalarString

from ..text.sentences import rewrap
from ..text.spans import placeholders
from . import FormatError, Translated, in_contexts
from .text import decode, encode, spread


logger = logging.getLogger(__name__)
I18N_PLACEHOLDER = re.compile(r"\{\{\s*[\w.]+\s*\}\}|%\{\w+\}")  # {{name}} (i18next, Angular), %{name} (Rails)
COMPLEX = re.compile(r"\{\s*(\w+)\s*,\s*(plural|selectordinal|select)\s*,")
SELECTOR = re.compile(r"\s*(?:offset:\s*\d+\s+)?(?:=\d+|[\w-]+)\s*")
SIMPLE = re.compile(r"\{\s*(\w+)\s*(?=[,}])")


class Complex:
    """One plural/select argument: its name, `head` (`{count, plural,`), its branches (the source before each
    branch's `{`, and the branch's parts) and `tail` (the whitespace and `}` that close it)."""

    def __init__(self, name: str, kind: str, head: str):
        self.name, self.kind, self.head = name, kind, head
        self.branches: list[tuple[str, list]] = []
        self.tail = ""


def _braced(value: str, start: int) -> int:
    """The end of the argument that begins at value[start] ("{"), its nested braces counted; -1: unbalanced."""
    depth = 0
    for i in range(start, len(value)):
        depth += {"{": 1, "}": -1}.get(value[i], 0)
        if depth == 0:
            return i + 1
    return -1


def parse_message(value: str, start: int = 0, inner: bool = False) -> tuple[list, int]:
    """An ICU message from value[start:] as parts (text, a simple argument `("arg", source)`, a `Complex`) up to
    its end (inside a branch, the `}` that closes it); ValueError where the braces do not balance."""
    parts, i, text = [], start, []
    while i < len(value) and not (inner and value[i] == "}"):
        if value[i] != "{":
            text.append(value[i])
            i += 1
            continue
        parts += ["".join(text)] if text else []
        text = []
        found = COMPLEX.match(value, i)
        if found:
            argument, i = _complex(value, found)
            parts.append(argument)
        else:
            end = _braced(value, i)
            if end < 0 or not SIMPLE.match(value, i):
                raise ValueError(f"not an ICU argument at {i}")
            parts.append(("arg", value[i:end]))
            i = end
    if inner and i == len(value):
        raise ValueError("a branch not closed")
    return parts + (["".join(text)] if text else []), i


def _complex(value: str, found: re.Match) -> tuple[Complex, int]:
    argument, i = Complex(found[1], found[2], found[0]), found.end()
    while True:
        selector = SELECTOR.match(value, i)
        if not selector or selector.end() >= len(value) or value[selector.end()] != "{":
            break
        parts, end = parse_message(value, selector.end() + 1, inner=True)
        argument.branches.append((value[i : selector.end() + 1], parts))
        i = end + 1
    closing = re.compile(r"\s*\}").match(value, i)
    if not argument.branches or not closing:
        raise ValueError(f"an ICU {argument.kind} argument not closed")
    argument.tail = closing[0]
    return argument, closing.end()


def _outer(parts: list, counted: str | None) -> str:
    """The text the engine sees for one message level: each argument as `{name}` (a simple one as written), `#`
    as `{counted}` in a plural branch."""
    out = []
    for part in parts:
        if isinstance(part, str):
            out.append(part.replace("#", "{%s}" % counted) if counted else part)
        else:
            out.append(part[1] if isinstance(part, tuple) else "{%s}" % part.name)
    return "".join(out)


def message_texts(parts: list, counted: str | None = None) -> list[str]:
    """The texts of a parsed message, in the order `rebuilt` takes their translations: its own (where it holds
    words), then each complex argument's branches, depth first."""
    own = _outer(parts, counted)
    texts = [own] if re.search(r"[^\W\d_]", re.sub(r"\{[^{}]*\}", "", own)) else []
    for part in parts:
        if isinstance(part, Complex):
            for _, branch in part.branches:
                texts += message_texts(branch, part.name if part.kind != "select" else None)
    return texts


def rebuilt(parts: list, translations, counted: str | None = None) -> str:
    """The message written back with the translations (an iterator) in `message_texts`'s order."""
    own = _outer(parts, counted)
    has_own = bool(re.search(r"[^\W\d_]", re.sub(r"\{[^{}]*\}", "", own)))
    text = next(translations) if has_own else own
    hashed = any(isinstance(part, str) and "#" in part for part in parts)  # `{count}` written as such stays so
    text = text.replace("{%s}" % counted, "#") if counted and hashed else text
    for part in parts:
        if isinstance(part, Complex):
            branches = "".join(
                before + rebuilt(branch, translations, part.name if part.kind != "select" else None) + "}"
                for before, branch in part.branches
            )
            written = part.head + branches + part.tail
            placeholder = "{%s}" % part.name
            text = text.replace(placeholder, written, 1) if placeholder in text else text + written
    return text


def _parsed(value: str) -> list:
    """A value's ICU parts; a value without plural/select, or one that does not parse, is one text."""
    if COMPLEX.search(value):
        try:
            return parse_message(value)[0]
        except ValueError:
            pass
    return [value]


def _held(text: str) -> list[str]:
    return placeholders(I18N_PLACEHOLDER.sub(" ", text)) + I18N_PLACEHOLDER.findall(text)


def lost_string_placeholders(source: str, translation: str) -> list[str]:
    """The source's placeholders (`spans.placeholders`, `{{name}}`, `%{name}`) the translation holds fewer of."""
    held = {text: _held(translation).count(text) for text in _held(source)}
    return [text for text in dict.fromkeys(_held(source)) if _held(source).count(text) > held[text]]


def _slots(node, path: str = "", seen: set | None = None):
    """(container, key, path) of every string value under `node`, in document order, a container a YAML alias
    repeats once; keys are never values."""
    seen = set() if seen is None else seen
    if id(node) in seen:
        return
    seen.add(id(node))
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        where = f"{path}.{key}" if path else str(key)
        if isinstance(value, str):
            yield node, key, where
        else:
            yield from _slots(value, where, seen)


def translate_values(root, translate_texts, contexts: bool = False) -> int:
    """Every string value under `root` replaced by its translation, in one call, a ruamel scalar keeping its type
    (its quoting style); returns how many texts were sent. `contexts`: each value's key path (`menu.file.open`,
    a list item's index as a key) given as its context (`documents.in_contexts`: one call per distinct path)."""
    slots = list(_slots(root))
    aliased = {
        id(slot[0][slot[1]]): slot for slot in reversed(slots) if _anchor(slot[0][slot[1]])
    }  # a YAML anchor's string, translated once for each of its aliases
    unique = [slot for slot in slots if aliased.get(id(slot[0][slot[1]]), slot) is slot]
    messages = [_parsed(container[key].strip()) for container, key, _ in unique]
    each = [message_texts(parts) for parts in messages]  # a value's texts, and the key path each is read under
    texts = [text for own in each for text in own]
    paths = [where if contexts else None for (*_, where), own in zip(unique, each) for _ in own]
    translations, written = iter(in_contexts(texts, paths, translate_texts, _as_text)), {}
    for (container, key, where), parts, own in zip(unique, messages, each):
        value = container[key]
        if not own:
            continue
        translation = rewrap(value, rebuilt(parts, translations))  # a block scalar's final newline is the file's
        if lost := lost_string_placeholders(value, translation):
            logger.warning(f"{where}: the translation lost {', '.join(lost)}: {translation!r}")
        written[id(value)] = _styled(value, translation)
    for container, key, _ in slots:
        container[key] = written.get(id(container[key]), container[key])
    return len(texts)


def _as_text(texts: list[str], translate) -> list[str]:
    return translate(texts, "text") if texts else []


def _anchor(value) -> str | None:
    return getattr(getattr(value, "anchor", None), "value", None)


def _styled(value: str, translation: str) -> str:
    """`translation` as a value of `value`'s type (a ruamel scalar keeps its quoting style); a folded block (`>`)
    folded over as many lines as the source, in proportion to their lengths."""
    if not isinstance(value, ScalarString):
        return translation
    styled = type(value)(translation, anchor=_anchor(value))
    folds = getattr(value, "fold_pos", None)
    if folds:
        bounds = [0, *folds, len(value.rstrip())]
        pieces = [
            piece for piece in spread(translation, [end - start for start, end in zip(bounds, bounds[1:])]) if piece
        ]
        if " ".join(pieces) == translation.strip():
            styled.fold_pos = [sum(map(len, pieces[: k + 1])) + k for k in range(len(pieces) - 1)]
    return styled


def _json_layout(text: str) -> dict:
    """json.dumps's arguments that write a document as `text` is laid out."""
    indented = re.search(r"\n([ \t]+)\S", text.strip())
    key = re.search(r"\"\s*:( ?)", text)
    separators = ("," if indented or not re.search(r",\s", text) else ", ", ":" + (key[1] if key else " "))
    indent = None if not indented else len(indented[1]) if indented[1].strip(" ") == "" else indented[1]
    return dict(indent=indent, separators=separators, ensure_ascii=text.isascii() and "\\u" in text)


def translate_json(data: bytes, translate_texts, contexts: bool = False) -> Translated:
    """A JSON string file translated: its string values, in one call (one a key path, with `contexts`)."""
    text, bom = decode(data, "json")
    try:
        root = json.loads(text)
    except json.JSONDecodeError as error:
        raise FormatError("json", str(error)) from None
    sent = translate_values(root, translate_texts, contexts)
    written = json.dumps(root, **_json_layout(text)) + text[len(text.rstrip()) :]
    return Translated(encode(written, bom), sent)


def _yaml_indents(text: str) -> dict:
    """ruamel's indents as `text` has them: a mapping's under its key, a sequence's dash under its key (offset)
    and the item's text after the dash (sequence); ruamel's defaults (2, 2, 0) for what it does not show."""
    found, above = {}, None  # the column of the line above, where it opens a block (ends with ":")
    for line in text.splitlines():
        content = line.lstrip(" ")
        if not content or content.startswith("#"):
            continue
        column = len(line) - len(content)
        if above is not None and column > above:
            if content.startswith("- "):
                found.setdefault("offset", column - above)
                found.setdefault("sequence", column - above + len(content) - len(content[1:].lstrip(" ")))
            else:
                found.setdefault("mapping", column - above)
        above = column if re.sub(r"\s+#.*$", "", content).rstrip().endswith(":") else None
    return {"mapping": 2, "sequence": 2, "offset": 0} | found


def translate_yaml(data: bytes, translate_texts, contexts: bool = False) -> Translated:
    """A YAML string file translated in round-trip mode: its string values, in one call (one a key path, with
    `contexts`)."""
    text, bom = decode(data, "yaml")
    yaml = YAML()
    yaml.preserve_quotes, yaml.width = True, 4096  # a translated line is not folded
    try:
        root = yaml.load(text)
    except YAMLError as error:
        raise FormatError("yaml", str(error).strip()) from None
    yaml.indent(**_yaml_indents(text))
    yaml.explicit_start = text.lstrip().startswith("---")
    if root is None:  # nothing but comments, or nothing
        return Translated(data, 0)
    sent = translate_values(root, translate_texts, contexts)
    out = io.StringIO()
    yaml.dump(root, out)
    return Translated(encode(out.getvalue(), bom), sent)


def translate(data: bytes, translate_texts, format: str = "json", contexts: bool = False) -> Translated:
    """A string file translated: `format` "json" or "yaml"; `contexts`: each value's key path as its context."""
    return {"json": translate_json, "yaml": translate_yaml}[format](data, translate_texts, contexts)


__all__ = [
    "I18N_PLACEHOLDER",
    "lost_string_placeholders",
    "message_texts",
    "parse_message",
    "rebuilt",
    "translate",
    "translate_json",
    "translate_values",
    "translate_yaml",
]
