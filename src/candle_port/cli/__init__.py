"""The command-line tools: port-check, port-fix and candle-port (check, fix, verify, rules)."""
