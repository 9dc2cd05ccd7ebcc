"""BiRefNet background removal (ZhengPeng7/BiRefNet, MIT): general and Lite at 1024², HR and HR-matting at 2048².

The official inference (the model card's and the repository's inference.py), step by step:
- `transforms.Resize((h, w))` on the PIL image: PIL's bilinear resize of the 8-bit RGB image, a stretch with no
  letterbox (background.py does exactly that: over black, rounded to 8 bits, PIL bilinear in 8 bits);
- ToTensor and ImageNet mean/std (catalog `normalization`, imagenet for every published export);
- `model(x)[-1].sigmoid()`: the published ONNX files end in the logits (catalog `final_activation: none`),
  so the sigmoid is ours; an export that already ends in one is declared `sigmoid` and not squashed twice;
- `F.interpolate(..., mode="bilinear", align_corners=True)` back to the image size (inference.py), in float.
No min–max stretch (unlike BEN2): the sigmoid is the matte. Then the source alpha multiplies it.

The file is checked when it loads: one image input, one one-channel output, and a last operation that agrees
with the catalog (a logits file declared as sigmoid-ended, or the reverse, is refused in one sentence).
"""

from __future__ import annotations

import numpy as np
from PIL import Image as PILImage

from ...contract.catalog import ModelEntry
from ..inference import SessionHandle
from ..media import resize_bilinear
from .background import BackgroundAdapter, matte_plane


class BiRefNetAdapter(BackgroundAdapter):
    name = "birefnet"
    model_name = "BiRefNet"
    input_filter = PILImage.Resampling.BILINEAR
    final_activations = ("none", "sigmoid")

    def __init__(self, entry: ModelEntry, handle: SessionHandle):
        super().__init__(entry, handle)
        if self.final_activation is None:  # the published files output logits: checked even when undeclared
            self.final_activation = "none"
            self._check_final_activation("none")

    def postprocess(self, raw: np.ndarray, size: tuple[int, int], source_alpha: np.ndarray | None) -> np.ndarray:
        """Raw output → float32 (H, W) alpha in [0, 1] at `size` (width, height), times the source alpha:
        sigmoid (unless the graph ends in one) at the model's size, then bilinear with align_corners=True."""
        matte = matte_plane(raw)
        if self.final_activation != "sigmoid":
            matte = _sigmoid(matte)
        alpha = resize_bilinear(matte, size, align_corners=True)
        np.clip(alpha, 0.0, 1.0, out=alpha)
        if source_alpha is not None:
            alpha *= source_alpha
        return alpha


def _sigmoid(logits: np.ndarray) -> np.ndarray:
    """1 / (1 + e^−x) without overflow warnings for large |x| (float32)."""
    positive = np.exp(-np.abs(logits))
    result: np.ndarray = np.where(logits >= 0, 1.0 / (1.0 + positive), positive / (1.0 + positive)).astype(np.float32)
    return result
