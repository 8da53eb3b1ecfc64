"""A small U-Net of the kind people port to candle: max-pooling encoder, bilinear decoder.

`port-check examples/unet.py` reports both upsampling sites (CP101: candle has no backward for
upsample_bilinear2d: not trainable in candle as written) and the max pool (CP107, a warning: its
candle gradient is 1/4 of torch's, none for most maxima on odd sizes; docs/candle-measured.md).
"""

import torch
import torch.nn.functional as F
from torch import nn


def block(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU())


class UNet(nn.Module):
    def __init__(self, channels: int = 3, width: int = 8, classes: int = 2):
        super().__init__()
        self.pool = nn.MaxPool2d(2)
        self.down1 = block(channels, width)
        self.down2 = block(width, 2 * width)
        self.bottom = block(2 * width, 2 * width)
        self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.dec2 = block(4 * width, width)
        self.dec1 = block(2 * width, width)
        self.head = nn.Conv2d(width, classes, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        d1 = self.down1(x)
        d2 = self.down2(self.pool(d1))
        b = self.bottom(self.pool(d2))
        u2 = self.dec2(torch.cat([self.up(b), d2], dim=1))
        # Resize to the skip connection's exact size (odd sizes round differently).
        u1 = F.interpolate(u2, size=d1.shape[-2:], mode="bilinear", align_corners=False)
        u1 = self.dec1(torch.cat([u1, d1], dim=1))
        return self.head(u1)
