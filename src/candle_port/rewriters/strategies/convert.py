"""The convert strategy: fix the built model, not its source (candle_port.runtime.convert).

Source rewriting cannot reach a layer chosen at run time (indexed out of a dict, built by a
factory or registry, `Pool[Pool.MAX, 2](...)`); `candle_port.runtime.convert(model)` swaps every
module instance the runtime replaces after the model is built, and `candle_port.runtime.routed()`
routes the functional calls made inside it. port-fix does not rewrite anything with it: it names
it where it refuses such a site, and `candle-port verify --strategy convert` checks a model with it.
"""

from __future__ import annotations

from candle_port.analysis.sites import Site
from candle_port.rewriters.strategies.base import Strategy
from candle_port.rewriters.strategies.runtime import CODES

NOTE = (
    "call candle_port.runtime.convert(model) after building the model and run it under "
    "candle_port.runtime.routed() (docs/convert.md)"
)


class Convert(Strategy):
    name = "convert"
    fixed_codes = CODES
    help = "convert the built model with candle_port.runtime.convert (no source change)"
    exact = True
    rewrites_source = False
    splices = False

    def site_refusal(self, site: Site) -> str | None:
        return "the convert strategy changes the built model, not the source: " + NOTE

    def note(self, site: Site) -> str:
        return NOTE


CONVERT = Convert()
