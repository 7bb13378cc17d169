"""The benchmarks of ``make bench``: ``run.py`` is the command line (see README.md in this folder)."""
