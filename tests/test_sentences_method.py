"""The informative-sentences method: E(S) against T, per-node tuning."""

from sst_cleaner import SiteCleaner

FOOTER = "Copyright the example gazette and its partners"


def page(story: str) -> str:
    return f'<html><body><div class="nav"><p>{FOOTER}.</p></div><div class="body"><p>{story}</p></div></body></html>'


STORIES = [
    "Apples grow in the northern valley orchards.",
    "Bridges need careful inspection every spring.",
    "Comets cross the night sky rarely.",
    "Dolphins swim along the southern coast.",
]


def test_template_sentence_is_redundant_and_story_is_kept():
    cleaner = SiteCleaner(method="sentences").fit([page(s) for s in STORIES])
    result = cleaner.clean(page("Eagles nest high on the granite cliffs."))
    # the footer's features are on all 4 other pages with tf 1: H = log_4 4 = 1 > 0.5
    assert FOOTER not in result.text
    assert "Eagles nest high" in result.text
    assert result.method == "sentences"


def test_tune_picks_per_node_threshold_from_labels():
    cleaner = SiteCleaner(method="sentences", threshold=1.0)
    cleaner.fit([page(s) for s in STORIES])
    assert FOOTER in cleaner.clean(page("Foxes hunt at dusk.")).text  # T = 1 keeps everything
    tuned = cleaner.tune([(page(s), s) for s in STORIES])
    assert tuned and all(0.0 <= t <= 1.0 for t in tuned.values())
    assert FOOTER not in cleaner.clean(page("Foxes hunt at dusk.")).text
    assert "Foxes hunt at dusk." in cleaner.clean(page("Foxes hunt at dusk.")).text


def test_round_trip_keeps_tuned_thresholds(tmp_path):
    cleaner = SiteCleaner(method="sentences").fit([page(s) for s in STORIES])
    cleaner.tune([(page(s), s) for s in STORIES])
    cleaner.save(tmp_path / "m.json")
    again = SiteCleaner.load(tmp_path / "m.json")
    html = page("Geese fly south in autumn.")
    assert again.clean(html).text == cleaner.clean(html).text
