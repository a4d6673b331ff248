"""format="html": translate the text of an HTML fragment and keep its markup.

The fragment is parsed by BeautifulSoup over Python's own `html.parser` (no regular expressions on markup). Every
text node is translated except inside `<script>`, `<style>`, `<code>`, `<pre>`, `<textarea>` and any element marked
`translate="no"` (HTML's own attribute, with its descendants); as LibreTranslate does, each text node is one text,
its leading and trailing whitespace kept. BeautifulSoup writes the result back, so tags, attributes and entities
stay as they were and translated text is escaped: a translation can never add markup.
"""

from collections.abc import Callable

from bs4 import BeautifulSoup, Comment, Declaration, Doctype, NavigableString, ProcessingInstruction

from .sentences import rewrap


UNTRANSLATED_ELEMENTS = {"script", "style", "code", "pre", "textarea", "template"}
_NOT_TEXT = (Comment, Declaration, Doctype, ProcessingInstruction)


def _translatable(node: NavigableString) -> bool:
    if isinstance(node, _NOT_TEXT) or not node.strip():
        return False
    return not any(parent.name in UNTRANSLATED_ELEMENTS or parent.get("translate", "").lower() == "no"
                   for parent in node.parents if parent.name not in (None, "[document]"))


class HtmlDocuments:
    """HTML fragments taken apart: `texts`, the text nodes to translate (stripped), in document order; `fill` puts
    their translations back and returns the fragments."""

    def __init__(self, documents: list[str]):
        self.soups = [BeautifulSoup(document, "html.parser") for document in documents]
        self.nodes = [node for soup in self.soups for node in soup.find_all(string=True) if _translatable(node)]
        self.texts = [node.strip() for node in self.nodes]

    def fill(self, translations: list[str]) -> list[str]:
        for node, translation in zip(self.nodes, translations, strict=True):
            node.replace_with(NavigableString(rewrap(str(node), translation)))
        return [str(soup) for soup in self.soups]



def translate_html(documents: list[str], translate_texts: Callable[[list[str]], list[str]]) -> list[str]:
    """Each HTML fragment of `documents` with its text translated by `translate_texts` (one call for all of them:
    a list of texts in, their translations out, in order)."""
    parts = HtmlDocuments(documents)
    return parts.fill(translate_texts(parts.texts))


def html_text(document: str) -> str:
    """The text of an HTML fragment (what language identification reads)."""
    return BeautifulSoup(document, "html.parser").get_text(" ", strip=True)
