"""Scrapy settings of the example project (``scrapy.cfg`` points here)."""

BOT_NAME = "sst_cleaner_examples"
SPIDER_MODULES = ["spiders"]
NEWSPIDER_MODULE = "spiders"

# the whole Scrapy layer of sst-cleaner in one line
ADDONS = {"sst_cleaner.Addon": 0}

SST_METHOD = "default"
SST_SAMPLE_PAGES = 20

ROBOTSTXT_OBEY = True
CONCURRENT_REQUESTS_PER_DOMAIN = 8
FEED_EXPORT_ENCODING = "utf-8"
LOG_LEVEL = "INFO"
TELNETCONSOLE_ENABLED = False
