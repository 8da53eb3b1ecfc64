"""Imported once by the workers' fork server, before any user code: torch and the tracer.

Every worker is forked from that server, so each starts with torch loaded (about 6 CPU-seconds
saved per worker) and with no module of the user's: the original and the rewritten model still
never share a module cache.
"""

import torch  # noqa: F401
import torch.export  # noqa: F401
import torch.fx.experimental.proxy_tensor  # noqa: F401

from candle_port.verify import classify, trace, worker  # noqa: F401


def _warm_up() -> None:
    """One tiny export here, so the lazy set-up of the tracer (about 1-3 s) is not paid per worker.

    Threads stay at one: a fork after OpenMP has started its pool is unsafe."""
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Conv2d(1, 1, 1), torch.nn.ReLU())
    try:
        torch.export.export(model, (torch.zeros(1, 1, 2, 2),), strict=False)
    except Exception:  # only an optimisation
        pass


_warm_up()
