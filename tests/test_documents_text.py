"""Text documents translated in place (transformer_mt.documents: plain text, Markdown, SRT and WebVTT subtitles,
JSON and YAML string files): what is text changes, nothing else does, and the format's own library reads the
result."""

import io
import json
import logging

import pytest

from .utils import require


srt = require("srt", "SRT subtitles need srt: pip install -e '.[files]'")
webvtt = require("webvtt", "WebVTT subtitles need webvtt-py: pip install -e '.[files]'")
markdown_it = require("markdown_it", "Markdown needs markdown-it-py: pip install -e '.[files]'")
ruamel_yaml = require("ruamel.yaml", "YAML string files need ruamel.yaml: pip install -e '.[files]'")
require("bs4", "the fake translator reads HTML as the server does: pip install -e '.[serve]'")

from transformer_mt.documents import FormatError, markdown, strings, subtitles, text  # noqa: E402
from transformer_mt.text.markup import HtmlDocuments  # noqa: E402


class Mark:
    """A translate_texts that shows what was translated: «text»; HTML's runs of text each marked whole, its words
    aligned one to one, as a model keeping the word order would. It records each call."""

    def __init__(self):
        self.calls = []

    def __call__(self, texts, format="text"):
        self.calls.append((list(texts), format))
        if format == "text":
            return [f"«{text}»" for text in texts]
        documents = HtmlDocuments(texts)
        return documents.fill(
            [f"«{text}»" for text in documents.texts],
            [[(i, i) for i in range(len(text.split()))] for text in documents.texts],
        )


def test_spread_cuts_at_spaces_in_proportion():
    assert text.spread("one two three four", [9, 9]) == ["one two", "three four"]
    assert text.spread("one two three four", [1, 20]) == ["one", "two three four"]
    assert text.spread("single", [5, 5]) == ["single", ""]
    assert text.spread("a <b c> d", [3, 3], lambda i: i != 4) == ["a <b c>", "d"]  # never inside the tag


def test_plain_text_is_translated_line_by_line_blank_lines_and_line_ends_kept():
    mark = Mark()
    done = text.translate("First line.\r\n\n  Indented line. \nLast line".encode(), mark)
    assert done.data.decode() == "«First line.»\r\n\n  «Indented line.» \n«Last line»"
    assert done.translated == 3 and mark.calls == [(["First line.", "Indented line.", "Last line"], "text")]


MARKDOWN = """---
title: Front matter stays
---
# The *Title* #

Some **bold words** and _emphasis_ here, with a
[link](http://example.org/page "A title") and `code span` and
an ![alt text](image.png) image.

After a hard break\\
and a [reference link][ex] and [Shortcut].

* item one
* item __two__ with
  a continuation line

> Quoted text
> in a block.

| Column a | Column b |
|----------|:--------:|
| x *y*    | z        |

```python
code = "untouched"
```

    indented code

<div>an HTML block</div>

Setext heading
--------------

[ex]: http://example.com/ref
[Shortcut]: http://example.com/short
"""


def _structure(source: str) -> list:
    tokens = markdown_it.MarkdownIt("commonmark").enable(["table", "strikethrough"]).parse(source)
    return [(token.type, token.markup, token.info, token.map) for token in tokens if token.type != "inline"]


def _targets(source: str) -> list:
    tokens = markdown_it.MarkdownIt("commonmark").enable(["table", "strikethrough"]).parse(source)
    return [
        (child.type, child.attrs.get("href") or child.attrs.get("src") or child.content)
        for token in tokens
        if token.type == "inline"
        for child in token.children
        if child.type in ("link_open", "image", "code_inline")
    ]


def test_markdown_text_is_replaced_in_place_and_its_formatting_kept():
    mark = Mark()
    done = markdown.translate(MARKDOWN.encode(), mark)
    out = done.data.decode()
    assert len(mark.calls) == 1 and mark.calls[0][1] == "html" and done.translated == 11
    # markdown-it reads the same blocks on the same lines, and every link, image and code span as it was
    assert _structure(out) == _structure(MARKDOWN)
    assert _targets(out) == _targets(MARKDOWN)
    source_lines, lines = MARKDOWN.splitlines(), out.splitlines()
    untouched = [n for n, line in enumerate(lines) if "«" not in line and "»" not in line]
    assert [source_lines[n] for n in untouched] == [lines[n] for n in untouched]
    for kept in (
        "---",
        "title: Front matter stays",
        "|----------|:--------:|",
        'code = "untouched"',
        "    indented code",
        "<div>an HTML block</div>",
        "--------------",
        "[ex]: http://example.com/ref",
    ):
        assert kept in lines
    assert lines[3] == "# «The *Title*» #"
    assert lines[5:8] == [
        "«Some **bold words** and _emphasis_ here, with a",
        '[link](http://example.org/page "A title") and `code span` and',
        "an ![alt text](image.png) image.»",
    ]
    assert lines[9:11] == ["«After a hard break»\\", "«and a [reference link][ex] and [Shortcut][Shortcut].»"]
    assert lines[12:15] == ["* «item one»", "* «item __two__ with", "  a continuation line»"]
    assert lines[16:18] == ["> «Quoted text", "> in a block.»"]
    assert lines[21] == "| «x *y*»    | «z»        |"


def test_markdown_escapes_what_the_translation_would_make_markup():
    def translate(texts, format):
        return ["Use *stars* and [brackets] &lt;here&gt;"]

    out = markdown.translate(b"Some words.\n", translate).data.decode()
    assert out == "Use \\*stars\\* and \\[brackets\\] \\<here\\>\n"
    assert _structure(out) == _structure("Some words.\n")


def test_markdown_code_over_a_line_end_and_words_with_underscores():
    source = "A `code\nspan` over a line end, and snake_case\nwords.\n"
    out = markdown.translate(source.encode(), Mark()).data.decode()
    assert out == "«A\n`code span` over a line end, and snake_case\nwords.»\n"  # as many lines, the code on one
    assert _structure(out) == _structure(source) and _targets(out) == _targets(source)


def test_markdown_without_text_sends_nothing():
    mark = Mark()
    source = b"```\ncode\n```\n\n![only an image](a.png)\n"
    assert markdown.translate(source, mark).data == source and mark.calls == []


SRT = """1
00:00:01,000 --> 00:00:03,000
This sentence is long and it
runs over two cues

2
00:00:03,000 --> 00:00:05,500 X1:10 X2:40
before it ends here.

3
00:00:06,000 --> 00:00:07,000
<i>Italic words</i> and more!

4
00:00:08,000 --> 00:00:09,000
No sentence end
"""


def test_srt_sentence_over_two_cues_is_translated_once_and_rewrapped_over_them():
    mark = Mark()
    done = subtitles.translate(SRT.encode(), mark, "srt")
    out = done.data.decode()
    assert ["This sentence is long and it runs over two cues before it ends here.", "No sentence end"] == mark.calls[
        0
    ][0] and mark.calls[0][1] == "text"
    assert mark.calls[1] == (['<span id="0">Italic words</span> and more!'], "html")
    assert done.translated == 3
    before, after = list(srt.parse(SRT)), list(srt.parse(out))
    assert [(s.index, s.start, s.end, s.proprietary) for s in after] == [
        (s.index, s.start, s.end, s.proprietary) for s in before
    ]
    assert [s.content for s in after] == [
        "«This sentence is long and it\nruns over two cues",
        "before it ends here.»",
        "«<i>Italic words</i> and more!»",
        "«No sentence end»",
    ]
    timings = [line for line in SRT.splitlines() if "-->" in line or line.isdigit()]
    assert timings == [line for line in out.splitlines() if "-->" in line or line.isdigit()]


def test_srt_a_tag_a_cut_leaves_open_is_closed_and_reopened():
    def translate(texts, format):
        assert (texts, format) == (['Some words here <span id="0">and in italics.</span>'], "html")
        return ['<span id="0">Alle diese Wörter sind kursiv geschrieben.</span>']

    source = (
        "1\n00:00:01,000 --> 00:00:02,000\nSome words here\n\n2\n00:00:02,000 --> 00:00:03,000\n"
        "<i>and in italics.</i>\n"
    )
    out = subtitles.translate(source.encode(), translate, "srt").data.decode()
    assert [s.content for s in srt.parse(out)] == ["<i>Alle diese Wörter</i>", "<i>sind kursiv geschrieben.</i>"]


VTT = """WEBVTT - a title

NOTE a comment
that runs on

STYLE
::cue { color: yellow }

intro
00:00.000 --> 00:02.000 align:start line:0
<v Roger Bingham>We are in New York City

00:02.000 --> 00:04.000
<v Roger Bingham>and it is <00:03.000>sunny.
"""


def test_webvtt_cue_text_is_translated_and_the_rest_kept_byte_for_byte():
    mark = Mark()
    out = subtitles.translate(VTT.encode(), mark).data.decode()
    assert mark.calls == [
        (
            ['<span id="0">We are in New York City</span> <span id="1">and it is <code id="2"></code>sunny.</span>'],
            "html",
        )
    ]
    source_lines, lines = VTT.splitlines(), out.splitlines()
    assert [line for n, line in enumerate(lines) if n not in (10, 13)] == [
        line for n, line in enumerate(source_lines) if n not in (10, 13)
    ]
    assert lines[10] == "«<v Roger Bingham>We are in New York City</v>"
    assert lines[13].startswith("<v Roger Bingham>and it is <00:03.000>sunny") and lines[13].endswith("»")
    captions = webvtt.from_buffer(io.StringIO(out)).captions
    assert [(c.identifier, c.start, c.end) for c in captions] == [
        ("intro", "00:00:00.000", "00:00:02.000"),
        (None, "00:00:02.000", "00:00:04.000"),
    ]


JSON = """{
    "greeting": "Hello, {name}!",
    "count": 3,
    "flags": {"enabled": true, "title": "Settings"},
    "list": ["Save", "Cancel %s", null, "{{user}} logged in", ""],
    "files": "You have {count, plural, =0 {no files} one {# file} other {# files}}.",
    "gender": "{who, select, female {{n, plural, one {She has # item} other {She has # items}}} other {They do}}"
}
"""


def test_json_values_are_translated_keys_and_other_values_kept():
    mark = Mark()
    done = strings.translate_json(JSON.encode(), mark)
    out = done.data.decode()
    assert mark.calls == [
        (
            [
                "Hello, {name}!",
                "Settings",
                "Save",
                "Cancel %s",
                "{{user}} logged in",
                "You have {count}.",
                "no files",
                "{count} file",
                "{count} files",
                "She has {n} item",
                "She has {n} items",
                "They do",
            ],
            "text",
        )
    ]
    assert json.loads(out) == {
        "greeting": "«Hello, {name}!»",
        "count": 3,
        "flags": {"enabled": True, "title": "«Settings»"},
        "list": ["«Save»", "«Cancel %s»", None, "«{{user}} logged in»", ""],
        "files": "«You have {count, plural, =0 {«no files»} one {«# file»} other {«# files»}}.»",
        "gender": "{who, select, female {{n, plural, one {«She has # item»} other {«She has # items»}}} "
        "other {«They do»}}",
    }
    assert list(json.loads(out)) == list(json.loads(JSON))
    assert out.startswith('{\n    "greeting": ') and out.endswith("}\n")


def test_icu_branches_are_separate_texts_and_hash_travels_as_the_argument():
    mark = Mark()
    strings.translate_json(b'{"a": "{n, plural, offset:1 one {# file} other {# files}}"}', mark)
    assert mark.calls == [(["{n} file", "{n} files"], "text")]
    parts, _ = strings.parse_message("Hi {n, select, a {x {m} y} other {z}} there")
    assert strings.message_texts(parts) == ["Hi {n} there", "x {m} y", "z"]
    with pytest.raises(ValueError):
        strings.parse_message("{n, plural, one {unclosed}")
    # a branch that writes the argument as {n} gets {n} back, one that writes # gets #
    written = strings.translate_json(b'{"a": "{n, plural, one {# file} other {{n} files}}"}', Mark()).data.decode()
    assert written == '{"a": "{n, plural, one {«# file»} other {«{n} files»}}"}'


def test_compact_json_stays_on_one_line():
    out = strings.translate_json(b'{"a":"Yes","b":[1,"No"]}', Mark()).data.decode()
    assert out == '{"a":"«Yes»","b":[1,"«No»"]}'


def test_a_lost_placeholder_keeps_the_translation_and_is_named(caplog):
    def drop(texts, format):
        return [text.replace("%{name}", "").replace("{count}", "") for text in texts]

    with caplog.at_level(logging.WARNING, logger="transformer_mt.documents.strings"):
        out = strings.translate_json(b'{"hi": {"there": "Hello %{name}, {count} new"}}', drop).data.decode()
    assert json.loads(out) == {"hi": {"there": "Hello ,  new"}}
    assert "hi.there: the translation lost {count}, %{name}" in caplog.text


YAML = """# German strings
en:
  greeting: "Hello, %{name}!"
  plain: Save the file
  single: 'Quoted text'
  count: 3
  enabled: true
  # a comment before a list
  list:
    - First item
    - Second item
  block: |
    A literal
    block text.
  folded: >
    Folded text
    here.
"""


def test_yaml_round_trip_keeps_comments_order_quoting_and_layout():
    mark = Mark()
    done = strings.translate_yaml(YAML.encode(), mark)
    out = done.data.decode()
    assert done.translated == 7
    source_lines, lines = YAML.splitlines(), out.splitlines()
    assert len(lines) == len(source_lines)
    for before, after in zip(source_lines, lines):
        if "«" not in after and "»" not in after:
            assert after == before
        else:
            assert after.split(":")[0] == before.split(":")[0] or not before.strip().endswith(":")
    assert lines[2] == '  greeting: "«Hello, %{name}!»"' and lines[4] == "  single: '«Quoted text»'"
    assert lines[9:14] == [
        "    - «First item»",
        "    - «Second item»",
        "  block: |",
        "    «A literal",
        "    block text.»",
    ]
    loaded = ruamel_yaml.YAML(typ="safe").load(out)
    assert loaded["en"]["count"] == 3 and loaded["en"]["folded"] == "«Folded text here.»\n"


def test_a_yaml_alias_keeps_its_anchor_and_is_translated_once():
    mark = Mark()
    out = strings.translate_yaml(b"a: &x Shared text\nb: *x\nc:\n- one\n", mark).data.decode()
    assert out == "a: &x «Shared text»\nb: *x\nc:\n- «one»\n" and mark.calls == [(["Shared text", "one"], "text")]


@pytest.mark.parametrize(
    "translate, data, format",
    [
        (markdown.translate, b"\xff\xfe not UTF-8", "markdown"),
        (text.translate, b"caf\xe9", "text"),
        (subtitles.translate_srt, b"1\n00:00:01,000 --> no time\nx\n", "srt"),
        (subtitles.translate_srt, b"hello world", "srt"),
        (subtitles.translate_vtt, b"hello", "vtt"),
        (strings.translate_json, b'{"a": "b",}', "json"),
        (strings.translate_yaml, b"a: [unclosed\n", "yaml"),
    ],
)
def test_a_broken_file_is_a_format_error_naming_its_format(translate, data, format):
    with pytest.raises(FormatError) as error:
        translate(data, Mark())
    assert error.value.format == format
