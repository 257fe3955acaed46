"""What cleaning a page returns."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

#: block labels
INFORMATIVE = "informative"
NOISE = "noise"

#: ``CleanResult.status`` when the site model kept (almost) nothing of the page and the
#: text is the page-level fallback's
STATUS_SITE_EMPTY = "site_empty"


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
    cleaning; ``"over_budget"`` if cleaning ran out of its time budget and the page was
    returned whole (see :class:`sst_cleaner.limits.Limits`); ``"site_empty"`` if the
    site's model kept (almost) nothing of the page and the text is the page-level
    fallback's (the default method).
    """

    text: str
    sentences: list[str]
    blocks: list[Block]
    method: str
    title: str = ""
    link_blocks: list[dict] = field(default_factory=list)
    status: str = "ok"

    @property
    def template_share(self) -> float:
        """Share of the page's text characters judged noise."""
        total = sum(len(b.text) for b in self.blocks)
        if not total:
            return 0.0
        noise = sum(len(b.text) for b in self.blocks if b.label != INFORMATIVE)
        return noise / total
