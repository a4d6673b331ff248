"""What GNU gettext checks of a catalogue's placeholders, for the placeholder study (`placeholder_study`): the format
flag (`#, c-format`, ...) a msgid's placeholders imply (`format_flag`, by what each of gettext's format checks
parses as a directive), `msgfmt --check-format`'s answer on a .po file and the entries it names (`msgfmt`,
`entries_at`), and whether msgfmt checks each flagged msgid at all (`probe_flags`).
"""

import bisect
import collections
import re
import subprocess
from pathlib import Path

from transformer_mt.text.spans import placeholders


# What each of gettext's format checks parses as a directive (gettext-tools' format-c.c, format-python.c,
# format-pybrace.c, format-qt.c, format-sh.c); a msgid msgfmt cannot parse in its flag's format is not checked.
_C = re.compile(
    r"%(?:[1-9]\d*\$)?[-+ #0'I]*(?:\d+|\*)?(?:\.(?:\d+|\*)?)?(?:hh|h|ll|l|L|q|j|z|Z|t)?"
    r"[diouxXeEfFgGaAcspnCSm%]"
)
_PYTHON = re.compile(r"%(?:\([^)]*\))?[-+ #0]*(?:\d+|\*)?(?:\.(?:\d+|\*)?)?[hlL]?[diouxXeEfFgGcrsa%]")
_QT = re.compile(r"%L?[1-9]\d?")
_BRACE = re.compile(r"\{[A-Za-z_\d]\w*(?:\.\w+|\[\w+\])*(?::[^{}]*)?\}")  # gettext 0.21: no `{}`, no `{!r}`
_SH = re.compile(r"\$\{\w+\}|\$[A-Za-z_]\w*")


def _all_percents_parse(text: str, directive: re.Pattern) -> bool:
    """Whether every `%` of `text` begins a `directive` (scanned left to right, as gettext's parsers do)."""
    at = 0
    while (start := text.find("%", at)) >= 0:
        match = directive.match(text, start)
        if not match:
            return False
        at = match.end()
    return True


def _all_braces_parse(text: str) -> bool:
    """Whether every brace of `text` is doubled (`{{`, `}}`) or belongs to a field gettext's python-brace-format
    parses (`{0}`, `{name}`, `{name.attr}`, `{0[1]}`, `{0:>3}`)."""
    at = 0
    while at < len(text):
        if text.startswith(("{{", "}}"), at):
            at += 2
        elif text[at] == "{":
            match = _BRACE.match(text, at)
            if not match:
                return False
            at = match.end()
        elif text[at] == "}":
            return False
        else:
            at += 1
    return True


def format_flag(msgid: str) -> str | None:
    """The gettext format flag (`#, c-format`) the placeholders of `msgid` imply, or None when gettext has no check
    for them or the message would not parse in the format they suggest (a bare `%` beside printf's, named and
    unnamed Python ones mixed, C's positional and plain ones mixed)."""
    found = placeholders(msgid)
    printf = [p for p in found if _C.fullmatch(p) or _PYTHON.fullmatch(p)]
    if printf:
        named = [p for p in printf if p.startswith("%(")]
        if not named and _all_percents_parse(msgid, _C):
            directives = [m[0] for m in _C.finditer(msgid) if m[0] != "%%"]
            positional = [d for d in directives if re.match(r"%\d+\$", d)]
            return "c-format" if not positional or len(positional) == len(directives) else None
        if _all_percents_parse(msgid, _PYTHON):
            directives = [m[0] for m in _PYTHON.finditer(msgid) if m[0] != "%%"]
            if not named or len(named) == len(directives):
                return "python-format"
        return None
    if any(_QT.fullmatch(p) for p in found):
        return "qt-format"
    if any(p.startswith("{") for p in found):
        return "python-brace-format" if _all_braces_parse(msgid) else None
    if any(p.startswith("${") for p in found):
        return "sh-format"
    return None


def msgfmt(path: Path, use_fuzzy: bool = False) -> dict:
    """`msgfmt --check-format` on `path`: its exit status, its error lines and the line each names."""
    command = ["msgfmt", "--check-format", *(["--use-fuzzy"] if use_fuzzy else []), "-o", "/dev/null", str(path)]
    done = subprocess.run(command, capture_output=True, text=True)
    errors = [line for line in done.stderr.splitlines() if re.match(rf"{re.escape(str(path))}:\d+:", line)]
    return {
        "returncode": done.returncode,
        "errors": len(errors),
        "error_lines": errors,
        "lines": [int(line[len(str(path)) + 1 :].split(":", 1)[0]) for line in errors],
    }


def entries_at(path: Path, lines: list[int]) -> list:
    """The entries of the .po file `path` that hold each of `lines` (msgfmt names an entry's msgstr line)."""
    import polib

    entries = [entry for entry in polib.pofile(str(path), wrapwidth=0) if entry.msgid]
    starts = [entry.linenum for entry in entries]
    return [entries[bisect.bisect_right(starts, line) - 1] for line in lines]


def probe_flags(catalogue, folder: Path) -> dict:
    """How many flagged msgids msgfmt checks at all: each flagged entry given its msgid without its first placeholder
    as msgstr, which msgfmt must refuse where it parses the msgid; per flag, flagged and refused."""
    import polib

    probe = polib.POFile(wrapwidth=0)
    probe.metadata = catalogue.metadata
    for entry in catalogue:
        if entry.flags:
            first = placeholders(entry.msgid)[0]
            probe.append(
                polib.POEntry(
                    msgid=entry.msgid,
                    msgctxt=entry.msgctxt,
                    flags=list(entry.flags),
                    msgstr=entry.msgid.replace(first, "", 1),
                )
            )
    path = folder / "probe.po"
    probe.save(str(path))
    refused = {(entry.msgctxt, entry.msgid) for entry in entries_at(path, msgfmt(path)["lines"])}
    table = collections.defaultdict(collections.Counter)
    unchecked = []
    for entry in probe:
        table[entry.flags[0]]["flagged"] += 1
        if (entry.msgctxt, entry.msgid) in refused:
            table[entry.flags[0]]["checked"] += 1
        else:
            unchecked.append({"flag": entry.flags[0], "msgid": entry.msgid})
    return {"flags": {flag: dict(counts) for flag, counts in sorted(table.items())}, "unchecked": unchecked}
