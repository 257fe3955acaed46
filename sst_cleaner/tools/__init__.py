"""Tools around the engine, not part of it: the benchmark runner (``python -m
sst_cleaner.tools.bench``), the hostile-input fuzzer (``python -m sst_cleaner.tools.fuzz``)
and the generated demo site the ``demo`` spiders and the tests crawl."""
