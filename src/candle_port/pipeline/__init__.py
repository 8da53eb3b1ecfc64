"""port-check's pipeline, one module a stage, in the order a file meets them.

discovery (which files) -> sources (read and decode one file) -> prefilter (skip files that name
no torch API) -> checker (parse, run the rules, apply suppressions) -> findings/records (what a
file produced) -> cache and digests (skip unchanged files) -> parallel, isolation and forked (run
files on every core, each within a CPU and memory budget) -> engine (all of the above for a set of
paths: a CheckReport).
"""
