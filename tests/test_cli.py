"""The offline command line on a small generated site."""

import json

from test_default_method import site_page

from sst_cleaner.cli._main import main


def write_site(folder, n=6):
    folder.mkdir()
    paras = {}
    for i in range(n):
        html, p = site_page(i)
        (folder / f"page{i}.html").write_text(html, encoding="utf-8")
        paras[f"page{i}.html"] = p
    return paras


def test_site_command_cleans_every_page(tmp_path, capsys):
    paras = write_site(tmp_path / "site")
    out = tmp_path / "out.jsonl"
    assert main(["site", str(tmp_path / "site"), "-o", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 6
    for row in rows:
        name = row["path"].rsplit("/", 1)[-1]
        assert "All rights reserved" not in row["text"]
        assert sum(1 for p in paras[name] if p in row["text"]) >= 4


def test_fit_then_clean_with_saved_model(tmp_path, capsys):
    write_site(tmp_path / "site")
    model = tmp_path / "m.json"
    assert main(["fit", str(tmp_path / "site"), "--model", str(model)]) == 0
    assert json.loads(model.read_text())["format"] == "sst-cleaner-model"
    capsys.readouterr()
    assert main(["clean", str(tmp_path / "site" / "page0.html"), "--model", str(model), "--sentences"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["sentences"] and "We use cookies" not in row["text"]


def test_fit_on_two_processes_saves_the_same_model(tmp_path, capsys, monkeypatch, caplog):
    import logging

    from sst_cleaner.engine import _parallel_fit as parallel_fit

    monkeypatch.setattr(parallel_fit, "MIN_SIZE_PER_PROCESS", 1)
    caplog.set_level(logging.WARNING, logger="sst_cleaner.engine._parallel_fit")
    write_site(tmp_path / "site", n=8)
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    assert main(["fit", str(tmp_path / "site"), "--model", str(one), "--jobs", "1"]) == 0
    assert main(["fit", str(tmp_path / "site"), "--model", str(two), "--jobs", "2"]) == 0
    assert not caplog.text  # a worker learnt half the pages
    models = [json.loads(p.read_text(encoding="utf-8"))["model"]["site_stats"] for p in (one, two)]
    assert models[0]["n_pages"] == models[1]["n_pages"] == 8
    assert models[0]["sents"] == models[1]["sents"] and models[0]["once"] == models[1]["once"]
    assert [{k: v[:3] for k, v in m["nodes"].items()} for m in models] == [
        {k: v[:3] for k, v in models[0]["nodes"].items()}
    ] * 2


def test_jobs_must_be_positive_or_minus_one(tmp_path):
    import pytest

    write_site(tmp_path / "site", n=2)
    with pytest.raises(SystemExit):
        main(["fit", str(tmp_path / "site"), "--model", str(tmp_path / "m.json"), "--jobs", "0"])
