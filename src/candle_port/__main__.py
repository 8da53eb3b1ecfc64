"""`python -m candle_port ...` is `candle-port ...`."""

from candle_port.cli.entry import app_entry

app_entry()
