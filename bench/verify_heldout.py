"""Held-out transformers models of issue 33 for `candle-port verify --candle`, tiny configs, offline.

Each factory builds the model from a small config (random weights, no download) and returns one
tensor from its forward. Reproduce a row of docs/verify-candle.md's "Held-out models" table with,
e.g.:

    SITE=$(python -c 'import transformers, os; print(os.path.dirname(transformers.__file__))')
    candle-port verify bench/verify_heldout.py:sam --input-shape 1,3,64,64 --dtype float64 \
        --source-root $SITE/models/sam --candle --output-format json

Optional: needs `transformers`, which CI does not install.
"""

from __future__ import annotations

import torch


class Field(torch.nn.Module):
    """One named field of a model's output, for a model called with pixel values (and fixed
    keyword arguments: CLIPSeg's token ids)."""

    def __init__(self, model: torch.nn.Module, field: str, **fixed: torch.Tensor):
        super().__init__()
        self.model = model
        self.field = field
        for name, value in fixed.items():
            self.register_buffer(name, value, persistent=False)
        self.fixed = list(fixed)

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        extra = {name: getattr(self, name) for name in self.fixed}
        if "input_ids" in extra:  # one prompt per image
            extra["input_ids"] = extra["input_ids"].expand(pixel_values.shape[0], -1)
        return self.model(pixel_values=pixel_values, **extra)[self.field]


def sam() -> torch.nn.Module:
    """SamModel: windowed ViT encoder with relative positions (x[idx] on a permuted tensor), the
    mask decoder's repeat_interleave, no prompt."""
    from transformers import SamConfig, SamMaskDecoderConfig, SamModel, SamPromptEncoderConfig, SamVisionConfig

    vision = SamVisionConfig(hidden_size=32, output_channels=16, num_hidden_layers=2, num_attention_heads=2,
                             image_size=64, patch_size=8, window_size=4, global_attn_indexes=[1], mlp_dim=64,
                             num_pos_feats=8)
    prompt = SamPromptEncoderConfig(hidden_size=16, image_size=64, patch_size=8, mask_input_channels=4)
    decoder = SamMaskDecoderConfig(hidden_size=16, mlp_dim=32, num_hidden_layers=1, num_attention_heads=2,
                                   iou_head_hidden_dim=16)
    return Field(SamModel(SamConfig(vision_config=vision.to_dict(), prompt_encoder_config=prompt.to_dict(),
                                    mask_decoder_config=decoder.to_dict())), "pred_masks")


def clipseg() -> torch.nn.Module:
    """CLIPSeg: the text pooler picks each sequence's end token, h[arange(b), eos]."""
    from transformers import CLIPSegConfig, CLIPSegForImageSegmentation

    config = CLIPSegConfig(
        text_config={"vocab_size": 50, "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 2,
                     "num_attention_heads": 2, "max_position_embeddings": 16, "bos_token_id": 1,
                     "eos_token_id": 49, "pad_token_id": 0},
        vision_config={"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
                       "image_size": 32, "patch_size": 8},
        projection_dim=16, reduce_dim=8, extract_layers=[0, 1], decoder_num_attention_heads=2,
        decoder_intermediate_size=16)
    return Field(CLIPSegForImageSegmentation(config), "logits", input_ids=torch.tensor([[1, 7, 3, 49, 0, 0]]))


def rtdetr() -> torch.nn.Module:
    """RT-DETR (ResNet backbone): per level a conv and a BatchNorm, flattened and concatenated."""
    from transformers import RTDetrConfig, RTDetrForObjectDetection, RTDetrResNetConfig

    backbone = RTDetrResNetConfig(embedding_size=8, hidden_sizes=[8, 16, 24, 32], depths=[1, 1, 1, 1],
                                  out_features=["stage2", "stage3", "stage4"])
    config = RTDetrConfig(backbone_config=backbone, encoder_hidden_dim=16, encoder_in_channels=[16, 24, 32],
                          encoder_ffn_dim=32, encoder_attention_heads=2, d_model=16, num_queries=10,
                          decoder_in_channels=[16, 16, 16], decoder_ffn_dim=32, decoder_layers=1,
                          decoder_attention_heads=2, decoder_n_points=2, num_denoising=0, num_labels=3,
                          anchor_image_size=None, eval_size=None)
    return Field(RTDetrForObjectDetection(config), "logits")


def dinov2() -> torch.nn.Module:
    """DINOv2 at input sizes other than the config's: it resizes its position embedding in float32."""
    from transformers import Dinov2Config, Dinov2Model

    config = Dinov2Config(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                          image_size=56, patch_size=14)
    return Field(Dinov2Model(config), "last_hidden_state")
