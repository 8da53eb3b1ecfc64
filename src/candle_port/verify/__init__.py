"""candle-port verify: prove, per model, that a rewrite keeps the numbers and that nothing left in
its traced graph lacks a backward in candle.

The modules here have one job each: ``spec`` (which model, which files), ``workspace`` (the
rewritten temporary copy), ``worker`` (builds and runs one model in its own subprocess),
``trace`` + ``classify`` + ``optable`` + ``conditions`` (the graph against candle's op table),
``compare`` (tensor differences), ``runner`` (the whole check) and ``report`` (text and JSON).
Importing this package does not import torch; only the worker and the comparison do.
"""
