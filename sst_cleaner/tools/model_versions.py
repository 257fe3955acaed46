"""A fitted default-method model written as an older model-file format, for checking that
files of that format still load and clean alike (``tests/test_model_compact.py``,
``benchmarks/model_format.py``)."""

from __future__ import annotations

from typing import Any


def version_1(cleaner: Any) -> dict:
    """The model of ``cleaner`` (a fitted ``SiteCleaner`` of the default method) as format
    version 1 wrote it: every table in full."""
    data = cleaner.to_dict()
    st = cleaner._impl.stats
    data["format_version"] = 1
    data["model"]["site_stats"] = {
        "n_pages": st.n_pages,
        "page_fps": st.page_fps,
        "sent_df": st.sent_df,
        "sent_len": st.sent_len,
        "node_df": st.node_df,
        "node_sent": st.node_sent,
        "node_feat": {
            k: {f: [round(float(c), 6), round(st.node_Q.get(k, {}).get(f, 0.0), 6)] for f, c in d.items()}
            for k, d in st.node_S.items()
        },
    }
    return data
