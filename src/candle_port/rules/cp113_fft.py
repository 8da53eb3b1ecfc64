"""CP113: torch.fft transforms and the short-time Fourier transform, which candle has no op for."""

from __future__ import annotations

from candle_port.analysis.sites import Site
from candle_port.rewriters.eligibility import applicable
from candle_port.rules.base import Hit, Rule, describe_call


class Spectral(Rule):
    """`torch.fft.*` (`rfft`, `irfft`, `fft2`, ...) and `torch.stft` / `torch.istft`: candle 0.11.0
    has no FFT and no complex dtype, so neither the forward nor the backward exists.

    Forecasting models take periods and auto-correlations by FFT (Autoformer, FEDformer, TimesNet),
    audio front ends take spectrograms (`torch.stft`), and frequency-domain layers (FNO, GFNet)
    multiply in the spectrum. On a gradient path verify fails them; candle-port-run stops at
    `aten._fft_r2c`. Found on neuralforecast 3.3.0, where no rule reported them.
    """

    code = "CP113"
    name = "fft"
    summary = "torch.fft transform or stft/istft: candle has no FFT"
    why = "candle 0.11.0 has no FFT and no complex dtype (no fft function in candle-core or candle-nn)"
    source = "candle-core 0.11.0 and candle-nn 0.11.0 sources: no fft; verify's op table lists the ATen FFT ops as absent (docs/rules/CP113.md)"
    fix_hint = (
        "no drop-in: a DFT of fixed length is two matmuls with cos and sin matrices (real and imaginary "
        "parts as separate real tensors), which candle differentiates; or keep this stage out of the candle port"
    )
    VALID = (
        "import torch\ny = torch.fft\n",
        "def rfft(x): return x\ny = rfft(x)\n",
        "import numpy as np\ny = np.fft.rfft(x)\n",
    )
    INVALID = (
        "import torch\ny = torch.fft.rfft(x, dim=1)\n",
        "import torch.fft\ny = torch.fft.irfft(z, n=16)\n",
        "from torch.fft import fft2, ifft2\ny = ifft2(fft2(x) * w)\n",
        "import torch\nspec = torch.stft(wave, 400, hop_length=160, return_complex=True)\n",
    )

    def check(self, site: Site):
        if site.api.family != "spectral":
            return
        yield Hit(
            f"{describe_call(site)}: candle has no FFT (no forward, no backward)",
            applicable(site),
            hint=self.fix_hint,
        )
