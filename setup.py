# The project is described in pyproject.toml; this file keeps `pip install -e .` working
# with older pip and setuptools.
from setuptools import setup

setup()
