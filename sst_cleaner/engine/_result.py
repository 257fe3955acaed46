"""What cleaning a page returns."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Optional

from sst_cleaner.engine._text import split_sentences

logger = logging.getLogger(__name__)

#: block labels
INFORMATIVE = "informative"
NOISE = "noise"

#: ``CleanResult.status`` when the site model kept (almost) nothing of the page and the
#: text is the page-level fallback's less the site's template (or, when that adds
#: nothing, what the site model kept: often nothing)
STATUS_SITE_EMPTY = "site_empty"
#: ``CleanResult.status`` of a page that method ``cehtd`` cleaned without layout (it was not
#: rendered): the text is ``cetd``'s (see :mod:`sst_cleaner.engine.methods.cehtd`)
STATUS_NO_LAYOUT = "no_layout"
#: ``CleanResult.status`` of a page whose method kept no text while the page holds prose:
#: the text is a page-level fallback's (see :mod:`sst_cleaner.engine._fallback`)
STATUS_EMPTY_FALLBACK = "empty_fallback"


@dataclass
class Block:
    """One text block of the page and the verdict on it.

    ``xpath`` locates the element in the *cleaned* DOM of the page (scripts, hidden
    elements removed), ``label`` is ``"informative"`` or ``"noise"``, ``score`` the
    method's own evidence (importance, entropy or density; higher = more informative
    unless the method documents otherwise), ``sentences`` the informative sentences of the
    block when the method decides per sentence.
    """

    xpath: str
    text: str
    label: str
    score: float = 0.0
    sentences: Optional[list[str]] = None

    def to_dict(self) -> dict:
        return {"xpath": self.xpath, "text": self.text, "label": self.label, "score": round(self.score, 4)}


@dataclass
class CleanResult:
    """Informative content of one page.

    ``text``: informative text, one block per line. ``sentences``: the informative
    sentences in page order. ``blocks``: every text block with its label. ``method``:
    the method that produced it (for a site model that fell back to the page-level
    method, ``"cetd"``). ``link_blocks``: informative link blocks (WISDOM only).
    ``status``: ``"ok"``; ``"truncated"`` if the page was cut by a size cap before
    cleaning; ``"over_budget"`` if cleaning ran out of its time budget and the text is
    CETD's, or the page whole when that ran out too (see
    :class:`sst_cleaner.engine._limits.Limits`); ``"empty_fallback"`` if the method kept no
    text of a page that holds prose and the text is a page-level fallback's (see
    :mod:`sst_cleaner.engine._fallback`); ``"site_empty"`` if the
    site's model kept (almost) nothing of the page and the text is the page-level
    fallback's less the site's template, or, where that adds nothing (a stub page), what
    the site model kept, often nothing (the default method); ``"no_layout"`` if method
    ``cehtd`` had no layout to read (the page was not rendered) and cleaned it as ``cetd``.

    ``markdown``, ``html`` (see :mod:`sst_cleaner.engine._formats`) and ``metadata`` (see
    :mod:`sst_cleaner.engine._metadata`) are made when first read, from the parsed page the
    result keeps (a result from ``SiteCleaner.clean``; one made otherwise has none, and
    they are empty). A pickled result leaves the parsed page behind.
    """

    text: str
    sentences: list[str]
    blocks: list[Block]
    method: str
    title: str = ""
    link_blocks: list[dict] = field(default_factory=list)
    status: str = "ok"
    #: the parsed page and the page as given, for the formats and metadata made on demand
    page: Any = field(default=None, repr=False, compare=False)
    source: Any = field(default=None, repr=False, compare=False)
    #: seconds of the page's time budget left when cleaning ended (None: no budget);
    #: the metadata is read within them
    time_left: Optional[float] = field(default=None, repr=False, compare=False)

    @classmethod
    def from_blocks(
        cls, blocks: list[Block], method: str, title: str = "", link_blocks: Optional[list[dict]] = None
    ) -> CleanResult:
        """The result of a page cut into labelled ``blocks``: ``text`` has a line per
        informative block and ``sentences`` their sentences, in page order. A block that
        carries its own ``sentences`` (the method decided per sentence) gives those, and
        they joined by spaces are its line; any other gives its text, and the sentences
        split from it."""
        lines: list[str] = []
        sentences: list[str] = []
        for b in blocks:
            if b.label != INFORMATIVE:
                continue
            if b.sentences is None:
                lines.append(b.text)
                sentences.extend(split_sentences(b.text))
            else:
                lines.append(" ".join(b.sentences))
                sentences.extend(b.sentences)
        return cls(
            text="\n".join(lines),
            sentences=sentences,
            blocks=blocks,
            method=method,
            title=title,
            link_blocks=link_blocks if link_blocks is not None else [],
        )

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["page"] = None  # lxml trees do not pickle
        return state

    def as_markdown(self, links: bool = False) -> str:
        """The kept blocks as Markdown; ``links`` writes links as ``[text](url)``."""
        from sst_cleaner.engine._formats import to_markdown
        from sst_cleaner.engine._markdown import text_markdown

        if self.page is None:
            return text_markdown(self.text)
        return to_markdown(self.blocks, self.page, links)

    def as_html(self, links: bool = False) -> str:
        """The kept blocks as a minimal, safe HTML fragment (see
        :func:`sst_cleaner.engine._formats.to_html`); ``links`` keeps web links."""
        from sst_cleaner.engine._formats import safe_html, to_html

        if self.page is None:
            from html import escape

            return safe_html("\n".join(f"<p>{escape(line)}</p>" for line in self.text.split("\n") if line))
        return to_html(self.blocks, self.page, links)

    @property
    def markdown(self) -> str:
        return self.as_markdown()

    @property
    def html(self) -> str:
        return self.as_html()

    @property
    def metadata(self) -> dict:
        """Title, authors, dates, language, canonical URL, site name and description
        of the page, from its markup (see :mod:`sst_cleaner.engine._metadata`).

        Read within what the page's time budget had left when cleaning ended
        (:attr:`time_left`). It never raises, and never costs the result its text: a
        value that cannot be read is dropped and counted in :attr:`metadata_dropped`;
        if the reading fails as a whole or the budget runs out, every field is empty
        (the title is still the page's ``title``) and all of them are counted."""
        cached = self.__dict__.get("_metadata")
        if cached is None:
            cached, dropped = _read_metadata(self)
            if not cached.get("title") and self.title:
                from sst_cleaner.engine._metadata import FIELD_CAPS

                cached["title"] = self.title[: FIELD_CAPS["title"]].rstrip()
            self.__dict__["_metadata"] = cached
            self.__dict__["_metadata_dropped"] = dropped
        return cached

    @property
    def metadata_dropped(self) -> int:
        """Metadata values dropped: unreadable, over their cap, or not read at all (see
        :attr:`metadata`)."""
        _ = self.metadata  # read on first use
        return int(self.__dict__.get("_metadata_dropped", 0))

    @property
    def template_share(self) -> float:
        """Share of the page's text characters judged noise."""
        total = sum(len(b.text) for b in self.blocks)
        if not total:
            return 0.0
        noise = sum(len(b.text) for b in self.blocks if b.label != INFORMATIVE)
        return noise / total


def _read_metadata(result: CleanResult) -> tuple[dict, int]:
    """The metadata of ``result``'s page and the values dropped, within its time left.
    A result without its parsed page reads the page as given, if it has it."""
    from sst_cleaner.engine._dom import PreparedPage, as_page
    from sst_cleaner.engine._gcpause import gc_paused
    from sst_cleaner.engine._limits import run_with_budget
    from sst_cleaner.engine._metadata import FIELDS, empty_fields, read_metadata

    page, left = result.page, result.time_left
    if page is None and result.source is None:
        return {}, 0
    if left is not None and left <= 0:
        return empty_fields(), len(FIELDS)
    try:
        if not isinstance(page, PreparedPage):
            page = None
        # the collector paused as for a clean (see _gcpause): JSON-LD makes containers, no cycles
        with gc_paused(join=False):
            ok, got = run_with_budget(lambda: read_metadata(page if page is not None else as_page(result.source)), left)
    except Exception as exc:  # never the text: the fields go, the result stays
        logger.warning("sst-cleaner: the metadata of a page could not be read (%r); its fields are empty", exc)
        return empty_fields(), len(FIELDS)
    if not ok or got is None:
        logger.info("sst-cleaner: the page's time budget ran out while its metadata was read; its fields are empty")
        return empty_fields(), len(FIELDS)
    return got.fields, got.dropped
