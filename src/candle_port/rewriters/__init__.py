"""port-fix: rewrite the sites port-check finds, with the strategy the user picks.

`strategies` turns one matched call into its replacement (pure functions), `eligibility` says
where a strategy is safe, `fixer` applies them to one source text and verifies the result, and
`files` does it for files on disk (atomic writes, diffs, the vendored runtime from `vendor`).
"""
