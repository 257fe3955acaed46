"""What one page may add to a site model, and how big a site model may grow.

``partial_fit`` adds a page to a live model, so it cannot be cut half-way the way a page's
cleaning is; instead its cost is bounded by construction. The page's analysis (the
expensive part, which touches no model state) runs under the page's time budget, and what
it hands to the model is capped here: sentences and feature occurrences per page (one page
of 400,000 tiny unique sentences would otherwise add tens of MB), and entries per site
model, so that a saved model always stays under the model-file cap and reloads.

The caps sit far above real pages (the dev corpora's largest page has 3,607 sentences and
23,152 feature occurrences), so they change nothing for them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

#: sentences of one page a model learns (the rest of the page is not learnt)
MAX_PAGE_SENTENCES = 8_000
#: feature occurrences of one page a model learns
MAX_PAGE_FEATURES = 60_000
#: entries (dict keys, all tables together) a site model may hold: about 130 bytes of
#: JSON each at worst (a 100-character feature with its two sums), so a full model stays
#: well under the 256 MB model-file cap
MAX_SITE_ENTRIES = 1_000_000


def for_learning(pa: Any) -> tuple[Any, int]:
    """``pa`` (a ``PageAnalysis``) cut to its first blocks and sentences within the caps
    (``pa`` itself when it is within them), and at most how many entries learning it
    adds (see :func:`stats_entries`). The fingerprint is kept, so the page still knows
    itself when it is cleaned."""
    from sst_cleaner.engine.methods.sitestats.site_stats import BlockText

    max_sentences, max_features = MAX_PAGE_SENTENCES, MAX_PAGE_FEATURES
    n_sent = n_feat = 0
    for b in pa.blocks:
        n_sent += len(b.text_info.hashes)
        n_feat += len(b.text_info.feats)
    if n_sent <= max_sentences and n_feat <= max_features:
        return pa, _entries_added(n_sent, n_feat)
    kept = []
    n_sent = n_feat = 0
    for b in pa.blocks:
        sentences = []
        for s in b.sentences:
            if n_sent + 1 > max_sentences or n_feat + len(s.feats) > max_features:
                break
            sentences.append(s)
            n_sent += 1
            n_feat += len(s.feats)
        if len(sentences) == len(b.sentences):
            kept.append(b)
            continue
        if sentences:
            kept.append(replace(b, text_info=BlockText(tuple(sentences))))
        break
    return replace(pa, blocks=kept), _entries_added(n_sent, n_feat)


def _entries_added(n_sent: int, n_feat: int) -> int:
    # each sentence: sent_df, sent_len, its node's table; each feature occurrence: S and
    # Q of its node; and the page's fingerprint
    return 3 * n_sent + 2 * n_feat + 1


def stats_entries(stats: Any) -> int:
    """Entries of a ``SiteStats``: its sentence tables, and per node its sentences and
    feature sums (counted as the tables grow, so asking costs nothing)."""
    return int(stats.entries)
