"""Example spiders of sst-cleaner: ``scrapy crawl demo`` and ``scrapy crawl site -a url=...``."""
