"""The PyTorch originals of candle-transformers 0.11.0's vision ports (examples/parity-ports),
each a factory for `candle-port reference tests/parity/originals.py:NAME`.

Small configurations where the candle port takes one (vit, segformer, beit's depth and width),
so the runs fit CI in candle's dev build; the fixed architectures as published otherwise. timm
comes from the real corpus (CANDLE_PORT_CORPUS, default .corpus: timm 1.0.31, unpacked from its
wheel, not installed); transformers and torchvision are test dependencies.
"""

import json
import os
import sys
from pathlib import Path

import torch
from torch import nn

_ROOT = Path(__file__).resolve().parents[2]


def _timm():
    corpus = Path(os.environ.get("CANDLE_PORT_CORPUS", _ROOT / ".corpus")).resolve()
    path = str(corpus / "timm")
    if path not in sys.path:
        sys.path.insert(0, path)
    import timm

    return timm


# The transformers configs, given to candle's Config as JSON (its fields are transformers' names).
VIT_CONFIG = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64,
              "hidden_act": "gelu", "layer_norm_eps": 1e-12, "image_size": 32, "patch_size": 8, "num_channels": 3,
              "qkv_bias": True}
SEGFORMER_CONFIG = {"num_channels": 3, "num_encoder_blocks": 2, "depths": [1, 1], "sr_ratios": [2, 1],
                    "hidden_sizes": [16, 32], "patch_sizes": [7, 3], "strides": [4, 2],
                    "num_attention_heads": [1, 2], "mlp_ratios": [2, 2], "hidden_act": "gelu",
                    "layer_norm_eps": 1e-6, "decoder_hidden_size": 32}
CLASSES = 10


def candle_config(name: str) -> str:
    return json.dumps({"vit": VIT_CONFIG, "segformer": SEGFORMER_CONFIG}[name])


def vit():
    from transformers import ViTConfig, ViTForImageClassification

    return ViTForImageClassification(ViTConfig(**VIT_CONFIG, num_labels=CLASSES))


def segformer():
    from transformers import SegformerConfig, SegformerForImageClassification

    return SegformerForImageClassification(SegformerConfig(**SEGFORMER_CONFIG, num_labels=CLASSES))


def resnet18():
    import torchvision

    return torchvision.models.resnet18(num_classes=CLASSES)


def efficientnet_b0():
    import torchvision

    return torchvision.models.efficientnet_b0(num_classes=CLASSES)


def convnext_atto():
    """ConvNeXt V2: candle's convnext.rs asks for each block's mlp.grn (V2's global response norm),
    which timm's V1 convnext_atto lacks (the first run against V1 showed 24 such names)."""
    return _timm().create_model("convnextv2_atto", num_classes=CLASSES)


def repvgg_a0():
    return _timm().create_model("repvgg_a0", num_classes=CLASSES)


def mobilenetv4_small():
    return _timm().create_model("mobilenetv4_conv_small", num_classes=CLASSES)


def dinov2_small():
    """timm's DINOv2 ViT-S/14 with the linear classifier of facebookresearch/dinov2 that candle's
    port carries: head(cat(class token, mean of patch tokens)), 1000 classes."""
    model = _timm().create_model("vit_small_patch14_dinov2", num_classes=0, dynamic_img_size=True)

    class Dinov2Linear(type(model)):
        def forward(self, x):
            x = self.forward_features(x)
            return self.head(torch.cat([x[:, 0], x[:, 1:].mean(1)], dim=-1))

    model.__class__ = Dinov2Linear
    model.head = nn.Linear(2 * model.embed_dim, 1000)
    return model


def beit_tiny():
    """timm's BEiT at candle's fixed 384x384 and 16x16 patches, 2 blocks of width 32, 2 heads."""
    _timm()
    from timm.models.beit import Beit

    model = Beit(img_size=384, patch_size=16, embed_dim=32, depth=2, num_heads=2, mlp_ratio=4, qkv_bias=True,
                 use_abs_pos_emb=False, use_rel_pos_bias=True, init_values=0.1, num_classes=1000)
    # candle's beit.rs reads one qkv bias (timm keeps q_bias, a zero k bias and v_bias) and each
    # block's layer scale as ls1/ls2.gamma (RENAMES): the checkpoint layout it was written for.
    # The same function with the bias fused: the key bias gets a gradient of exactly zero, as it
    # should (softmax ignores a constant added along the keys).
    with torch.no_grad():
        for block in model.blocks:
            attn = block.attn
            fused = nn.Linear(attn.qkv.in_features, attn.qkv.out_features, bias=True)
            fused.weight.copy_(attn.qkv.weight)
            fused.bias.copy_(torch.cat((attn.q_bias, attn.k_bias, attn.v_bias)))
            attn.qkv, attn.q_bias, attn.v_bias = fused, None, None
            del attn.k_bias
            attn.register_buffer("k_bias", None, persistent=False)
    return model


# transformers 5 renamed ViT's and SegFormer's modules; candle-transformers 0.11.0 reads the
# transformers 4 names. TORCH=PORT rules for `candle-port reference --rename` (first match wins).
_B = "segformer.stages.{i}.blocks.{j}."
_P = "segformer.encoder.block.{i}.{j}."
RENAMES = {
    "vit": [
        "vit.layers.{i}.attention.q_proj.=vit.encoder.layer.{i}.attention.attention.query.",
        "vit.layers.{i}.attention.k_proj.=vit.encoder.layer.{i}.attention.attention.key.",
        "vit.layers.{i}.attention.v_proj.=vit.encoder.layer.{i}.attention.attention.value.",
        "vit.layers.{i}.attention.o_proj.=vit.encoder.layer.{i}.attention.output.dense.",
        "vit.layers.{i}.mlp.fc1.=vit.encoder.layer.{i}.intermediate.dense.",
        "vit.layers.{i}.mlp.fc2.=vit.encoder.layer.{i}.output.dense.",
        "vit.layers.{i}.=vit.encoder.layer.{i}.",
    ],
    "segformer": [
        "segformer.stages.{i}.patch_embeddings.=segformer.encoder.patch_embeddings.{i}.",
        f"{_B}layernorm_before.={_P}layer_norm_1.",
        f"{_B}layernorm_after.={_P}layer_norm_2.",
        f"{_B}attention.q_proj.={_P}attention.self.query.",
        f"{_B}attention.k_proj.={_P}attention.self.key.",
        f"{_B}attention.v_proj.={_P}attention.self.value.",
        f"{_B}attention.o_proj.={_P}attention.output.dense.",
        f"{_B}attention.sequence_reduction.sequence_reduction.={_P}attention.self.sr.",
        f"{_B}attention.sequence_reduction.layer_norm.={_P}attention.self.layer_norm.",
        f"{_B}mlp.fc1.={_P}mlp.dense1.",
        f"{_B}mlp.fc2.={_P}mlp.dense2.",
        f"{_B}={_P}",
        "segformer.stages.{i}.layer_norm.=segformer.encoder.layer_norm.{i}.",
    ],
    # timm names BEiT's pooled-token norm fc_norm and its layer scales gamma_1/gamma_2.
    "beit_tiny": ["fc_norm.=norm.", "blocks.{i}.gamma_1=blocks.{i}.ls1.gamma", "blocks.{i}.gamma_2=blocks.{i}.ls2.gamma"],
}


def efficientnet_b0_eps3():
    """torchvision's EfficientNet-B0 with BatchNorm eps 1e-3, the eps candle's efficientnet.rs
    hard-codes (torchvision's B0 keeps BatchNorm2d's 1e-5; its V2 models use 1e-3)."""
    import functools

    import torchvision

    return torchvision.models.efficientnet_b0(num_classes=CLASSES, norm_layer=functools.partial(nn.BatchNorm2d, eps=1e-3))
