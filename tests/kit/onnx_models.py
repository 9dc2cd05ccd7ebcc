"""Tiny hand-built ONNX models with the real signatures of ImageForge's model families.

Every builder writes a ``.onnx`` file (opset 17, IR version 10, loadable by onnxruntime 1.23) whose
input/output names, ranks, dtypes and dynamic dimensions match the real downloads described in
``/work/shared/facts/models.md``, but whose graph computes a simple, exactly known function so that
tests can assert the results a host pipeline produces.  Each family also has a numpy reference
(``*_reference``) that computes the documented function.

Builders (all return ``pathlib.Path(path)``):

* :func:`build_ben2`      background removal (``input`` [1,3,S,S] -> ``output`` [1,1,S,S] fp16)
* :func:`build_ben2_fp16` the same signature with fp16 weights and arithmetic (the published fp16 layout)
* :func:`build_upscaler`  Real-ESRGAN style (``input`` [batch,3,h,w] -> ``output`` [batch,3,4h,4w])
* :func:`build_moge2`     MoGe-2 (``image``, ``num_tokens`` -> ``points``, ``normal``, ``mask``,
  ``metric_scale``) rendering a known tilted plane
* :func:`build_da3`       Depth Anything 3 (multi-view with cameras, or depth-only)
* :func:`build_lama`      LaMa inpainting (``input`` [1,4,h,w] -> ``output`` [1,3,h,w], h and w multiples of 32)
* :func:`build_sam2`     SAM 2.1 as converter/sam2_export.py writes it: ``encoder.onnx`` (``image`` -> three
  feature maps) and ``decoder.onnx`` (features, ``point_coords``, ``point_labels`` -> ``masks`` [1,4,256,256],
  ``iou_predictions`` [1,4], ``object_score_logits``), segmenting by colour around the first point

:func:`signature` reads a model's inputs/outputs back through an onnxruntime CPU session.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 10

_F32 = TensorProto.FLOAT
_F16 = TensorProto.FLOAT16
_I64 = TensorProto.INT64

_ORT_DTYPES = {
    "tensor(float)": "float32",
    "tensor(float16)": "float16",
    "tensor(double)": "float64",
    "tensor(int64)": "int64",
    "tensor(int32)": "int32",
    "tensor(uint8)": "uint8",
    "tensor(bool)": "bool",
}


# --------------------------------------------------------------------------------------------------
# helpers


class _Graph:
    """Small accumulator of nodes and constant initializers."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self._n = 0

    def _name(self, hint: str) -> str:
        self._n += 1
        return f"{hint}_{self._n}"

    def const(self, value, dtype=np.float32, hint: str = "c") -> str:
        name = self._name(hint)
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def op(self, op_type: str, inputs: Sequence[str], out: str | None = None, **attrs) -> str:
        out = out or self._name(op_type.lower())
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], **attrs))
        return out

    def save(self, path, name: str, inputs, outputs, metadata: dict[str, str] | None = None) -> Path:
        graph = helper.make_graph(self.nodes, name, inputs, outputs, initializer=self.inits)
        model = helper.make_model(
            graph,
            opset_imports=[helper.make_opsetid("", OPSET)],
            producer_name="imageforge-test-kit",
        )
        for key, value in (metadata or {}).items():
            model.metadata_props.add(key=key, value=value)
        model.ir_version = IR_VERSION
        onnx.checker.check_model(model, full_check=True)
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        onnx.save(model, str(path))
        return path


def signature(path) -> dict:
    """Inputs/outputs of the model at *path* as an onnxruntime CPU session reports them.

    Returns ``{"inputs": [(name, shape, dtype)], "outputs": [...]}`` where ``shape`` is a list of ints
    (static dims) and strings (symbolic dims; ``None`` for unnamed dynamic dims) and ``dtype`` is a
    numpy-style name (``"float32"``, ``"float16"``, ``"int64"``; unknown types keep onnxruntime's
    ``"tensor(...)"`` string).
    """
    import onnxruntime as ort

    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])

    def describe(args):
        return [(a.name, list(a.shape), _ORT_DTYPES.get(a.type, a.type)) for a in args]

    return {"inputs": describe(sess.get_inputs()), "outputs": describe(sess.get_outputs())}


# --------------------------------------------------------------------------------------------------
# BEN2

BEN2_LUMA = (0.299, 0.587, 0.114)


def build_ben2(
    path,
    *,
    size: int = 1024,
    fp16_output: bool = True,
    function: str = "luma",
    input_name: str = "input",
    output_name: str = "output",
    final_sigmoid: bool = False,
) -> Path:
    """BEN2-shaped background remover: ``input`` float32 [1,3,size,size] (static) ->
    ``output`` [1,1,size,size], float16 when *fp16_output* (as in ``onnx/model_fp16.onnx``) else float32.

    Known functions of the (already preprocessed) input ``x``:

    * ``"luma"``:      ``output = 0.299*x[:,0] + 0.587*x[:,1] + 0.114*x[:,2]`` (keepdims on channel).
      Real pipelines min-max normalise this afterwards, so the alpha a host produces is
      ``(luma - luma.min()) / (luma.max() - luma.min())``.
    * ``"threshold"``: ``output = 1.0 where x[:,0] > 0.5 else 0.0`` (a crisp matte; min-max
      normalisation leaves it unchanged when both values occur).

    *final_sigmoid* applies a Sigmoid before the output Cast, as the published BEN2 graph ends.
    """
    if function not in ("luma", "threshold"):
        raise ValueError(f"unknown BEN2 test function {function!r}")
    g = _Graph()
    if function == "luma":
        w = g.const(np.array(BEN2_LUMA, np.float32).reshape(1, 3, 1, 1), hint="luma_w")
        y = g.op("Conv", [input_name, w], kernel_shape=[1, 1])
    else:
        red = g.op(
            "Slice",
            [input_name, g.const([0], np.int64), g.const([1], np.int64), g.const([1], np.int64)],
        )
        y = g.op("Cast", [g.op("Greater", [red, g.const(0.5)])], to=_F32)
    if final_sigmoid:
        y = g.op("Sigmoid", [y])
    out_type = _F16 if fp16_output else _F32
    g.op("Cast", [y], out=output_name, to=out_type)
    return g.save(
        path,
        "ben2_test",
        [helper.make_tensor_value_info(input_name, _F32, [1, 3, size, size])],
        [helper.make_tensor_value_info(output_name, out_type, [1, 1, size, size])],
    )


def ben2_reference(x: np.ndarray, function: str = "luma") -> np.ndarray:
    """numpy reference of :func:`build_ben2`'s raw output (float32, before any fp16 cast)."""
    x = np.asarray(x, np.float32)
    if function == "luma":
        w = np.array(BEN2_LUMA, np.float32).reshape(1, 3, 1, 1)
        return (x * w).sum(axis=1, keepdims=True, dtype=np.float32)
    if function == "threshold":
        return (x[:, :1] > 0.5).astype(np.float32)
    raise ValueError(f"unknown BEN2 test function {function!r}")


BIREFNET_GAIN = 8.0  # build_birefnet's logits: gain × (luma of the model input − offset)
BIREFNET_OFFSET = 0.5


def build_birefnet(
    path,
    *,
    size: int = 64,
    height: int | None = None,
    final_sigmoid: bool = False,
    channels: int = 1,
    input_name: str = "input_image",
    output_name: str = "output_image",
) -> Path:
    """BiRefNet-shaped matte model (the published ONNX signature): ``input_image`` float32 [1,3,H,S] (static) →
    ``output_image`` float32 [1,channels,H,S], **logits** (the published files have no final sigmoid):
    ``BIREFNET_GAIN * (luma(x) - BIREFNET_OFFSET)`` of the (already normalised) input ``x``. *final_sigmoid*
    ends the graph in a Sigmoid (as some re-exports do); *channels* ≠ 1 makes a graph that is not a matte."""
    height = height or size
    g = _Graph()
    weights = np.tile(np.array(BEN2_LUMA, np.float32).reshape(1, 3, 1, 1) * BIREFNET_GAIN, (channels, 1, 1, 1))
    bias = np.full(channels, -BIREFNET_GAIN * BIREFNET_OFFSET, np.float32)
    y = g.op(
        "Conv",
        [input_name, g.const(weights, hint="luma_w"), g.const(bias, hint="luma_b")],
        kernel_shape=[1, 1],
        out=None if final_sigmoid else output_name,
    )
    if final_sigmoid:
        g.op("Sigmoid", [y], out=output_name)
    return g.save(
        path,
        "birefnet_test",
        [helper.make_tensor_value_info(input_name, _F32, [1, 3, height, size])],
        [helper.make_tensor_value_info(output_name, _F32, [1, channels, height, size])],
    )


def birefnet_reference(x: np.ndarray) -> np.ndarray:
    """numpy reference of :func:`build_birefnet`'s logits (one channel) for a normalised [1,3,H,W] input."""
    luma = (np.asarray(x, np.float32) * np.array(BEN2_LUMA, np.float32).reshape(1, 3, 1, 1)).sum(axis=1, keepdims=True)
    return BIREFNET_GAIN * (luma - BIREFNET_OFFSET)


def build_ben2_fp16(path, *, size: int = 32, features: int = 8, seed: int = 7, ballast_bytes: int = 0) -> Path:
    """BEN2's published precision layout (``onnx/model_fp16.onnx``): ``input`` float32 [1,3,S,S] cast to fp16
    inside, fp16 weights and arithmetic, ``output`` float16 [1,1,S,S].

    The graph holds what an fp16 export really contains: a 3×3 Conv (fp16 weights, seeded), torch's erf-GELU
    pattern with fp16 constants (``x * 0.5 * (1 + erf(x / √2))``, √2 rounded to fp16), a ``Resize`` wrapped in
    Casts to float32 and back (as converters do for operators they keep in fp32), a 1×1 Conv, a Sigmoid,
    and a Cast from an integer (the input's height, from ``Shape``) to fp16 that scales the matte by
    ``height / size`` = 1. Its function is not simple: compare it with an fp32 run, not a closed form.
    ``ballast_bytes`` adds an fp16 weight of about that size (the matte × (1 − its mean, ~1e-3)), to make a file
    larger than the server rewrites in its own process (cpu_copy.IN_PROCESS_BYTES).
    """
    rng = np.random.default_rng(seed)
    g = _Graph()
    half = g.op("Cast", ["input"], to=_F16)
    w1 = g.const(rng.normal(0, 0.5, (features, 3, 3, 3)), np.float16, hint="conv1_w")
    b1 = g.const(rng.normal(0, 0.1, features), np.float16, hint="conv1_b")
    x = g.op("Conv", [half, w1, b1], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    erf = g.op("Erf", [g.op("Div", [x, g.const(math.sqrt(2.0), np.float16, hint="sqrt2")])])
    gelu = g.op("Mul", [g.op("Mul", [x, g.op("Add", [erf, g.const(1.0, np.float16, hint="one")])]),
                        g.const(0.5, np.float16, hint="half")])  # fmt: skip
    wide = g.op("Cast", [gelu], to=_F32)
    scales = g.const([1.0, 1.0, 1.0, 1.0], np.float32, hint="scales")
    resized = g.op("Resize", [wide, "", scales], mode="nearest")
    y = g.op("Cast", [resized], to=_F16)
    w2 = g.const(rng.normal(0, 0.5, (1, features, 1, 1)), np.float16, hint="conv2_w")
    matte = g.op("Sigmoid", [g.op("Conv", [y, w2], kernel_shape=[1, 1])])
    height = g.op("Gather", [g.op("Shape", ["input"]), g.const(2, np.int64)], axis=0)
    ratio = g.op("Div", [g.op("Cast", [height], to=_F16), g.const(float(size), np.float16)])
    if ballast_bytes:
        ballast = g.const(rng.uniform(0, 2e-3, ballast_bytes // 2), np.float16, hint="ballast")
        damping = g.op("Sub", [g.const(1.0, np.float16, hint="one"), g.op("ReduceMean", [ballast], keepdims=0)])
        ratio = g.op("Mul", [ratio, damping])
    g.op("Mul", [matte, ratio], out="output")
    return g.save(
        path,
        "ben2_fp16_test",
        [helper.make_tensor_value_info("input", _F32, [1, 3, size, size])],
        [helper.make_tensor_value_info("output", _F16, [1, 1, size, size])],
    )


# --------------------------------------------------------------------------------------------------
# Real-ESRGAN family


def build_upscaler(
    path,
    *,
    scale: int = 4,
    receptive_radius: int = 0,
    legacy_output_dims: bool = True,
    channel_gains: tuple[float, float, float] | None = None,
) -> Path:
    """Real-ESRGAN-shaped upscaler: ``input`` float32 [batch,3,height,width] (symbolic dims
    ``"batch"``, ``"height"``, ``"width"``) -> ``output`` float32 [batch,3,scale*h,scale*w].

    Known function:

    1. if ``receptive_radius = r > 0``: a per-channel box blur, i.e. a depthwise Conv with a
       (2r+1)x(2r+1) kernel of weights ``1/(2r+1)**2`` and **zero** padding r (pixels near the image
       border get darker: out-of-image samples count as 0).  A single non-zero pixel therefore spreads
       to exactly r pixels in each direction; the model's receptive radius is r input pixels, so
       tiles cropped with an overlap of at least r (in input pixels) stitch seam-free and equal a
       whole-image run exactly.
    2. nearest-neighbour upscale by *scale*: ``output[..., y, x] = blurred[..., y // scale, x // scale]``
       (ONNX Resize, mode nearest, asymmetric coordinates, floor).

    3. with *channel_gains* ``(r, g, b)``: output channel c is multiplied by its gain, so a grey input
       comes back with different channels (what a real network does to an alpha fed as grey).

    No clamping is done in the graph (values stay in [0,1] for inputs in [0,1] and gains <= 1).

    Declared output dims: with *legacy_output_dims* the output is labelled with the *same* symbols
    as the input, ``["batch", 3, "height", "width"]`` (wrong, as legacy exports are); otherwise
    ``["batch", 3, "out_height", "out_width"]``.
    """
    if scale < 1 or receptive_radius < 0:
        raise ValueError("scale must be >= 1 and receptive_radius >= 0")
    g = _Graph()
    x = "input"
    if receptive_radius > 0:
        k = 2 * receptive_radius + 1
        w = g.const(np.full((3, 1, k, k), 1.0 / (k * k), np.float32), hint="box_w")
        r = receptive_radius
        x = g.op("Conv", [x, w], group=3, kernel_shape=[k, k], pads=[r, r, r, r])
    if channel_gains is not None:
        x = g.op("Mul", [x, g.const(np.asarray(channel_gains, np.float32).reshape(1, 3, 1, 1), hint="gains")])
    scales = g.const([1.0, 1.0, float(scale), float(scale)], hint="scales")
    g.op(
        "Resize",
        [x, "", scales],
        out="output",
        mode="nearest",
        coordinate_transformation_mode="asymmetric",
        nearest_mode="floor",
    )
    out_dims = ["batch", 3, "height", "width"] if legacy_output_dims else ["batch", 3, "out_height", "out_width"]
    return g.save(
        path,
        "upscaler_test",
        [helper.make_tensor_value_info("input", _F32, ["batch", 3, "height", "width"])],
        [helper.make_tensor_value_info("output", _F32, out_dims)],
    )


def upscaler_reference(
    x: np.ndarray, *, scale: int = 4, receptive_radius: int = 0, channel_gains: tuple[float, float, float] | None = None
) -> np.ndarray:
    """numpy reference of :func:`build_upscaler` for ``x`` [B,3,h,w] float32."""
    x = np.asarray(x, np.float32)
    r = receptive_radius
    if r > 0:
        k = 2 * r + 1
        p = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (r, r), (r, r)))
        h, w = x.shape[2:]
        acc = np.zeros(x.shape, np.float64)
        for dy in range(k):
            for dx in range(k):
                acc += p[:, :, dy : dy + h, dx : dx + w]
        x = (acc / (k * k)).astype(np.float32)
    if channel_gains is not None:
        x = x * np.asarray(channel_gains, np.float32).reshape(1, 3, 1, 1)
    return x.repeat(scale, axis=2).repeat(scale, axis=3)


# --------------------------------------------------------------------------------------------------
# MoGe-2

MOGE2_DEFAULTS = {
    "focal": 1.2,
    "shift": 0.5,
    "plane": (2.0, -0.4),
    "metric_scale": 2.5,
    "mask_border": 0,
}


def build_moge2(
    path,
    *,
    focal: float = 1.2,
    shift: float = 0.5,
    plane: tuple[float, float] = (2.0, -0.4),
    metric_scale: float = 2.5,
    mask_border: int = 0,
    step: tuple[float, float, float, float, float] | None = None,
) -> Path:
    """MoGe-2-shaped geometry model that renders one known plane, for any batch, H and W.

    Signature: inputs ``image`` float32 [batch,3,H,W] (symbols ``"batch"``, ``"height"``, ``"width"``;
    only its shape is used) and ``num_tokens`` int64 0-d scalar (used as ``+ 0*num_tokens`` on
    ``metric_scale`` after an Unsqueeze+Concat, so it is never pruned, never changes results, and a
    ``[1]`` tensor fails at run time, as in some real exports); outputs ``points``
    [B,H,W,3] float32, ``normal`` [B,H,W,3], ``mask`` [B,H,W], ``metric_scale`` [B].

    Conventions (MoGe's, OpenCV camera: x right, y down, z forward).  With ``a = W/H`` and pixel
    column i / row j (pixel centres)::

        span_x = a / sqrt(1 + a**2),  span_y = 1 / sqrt(1 + a**2)     # half-diagonal = 1
        u = ((i + 0.5) / W * 2 - 1) * span_x                            # MoGe normalized_view_plane_uv
        v = ((j + 0.5) / H * 2 - 1) * span_y
        rx = u / focal,  ry = v / focal                                 # ray (rx, ry, 1)

    Scene: the plane ``Z = d0 + tilt * Y`` with ``(d0, tilt) = plane`` (requires |tilt| < focal), so
    along each ray ``Z = d0 / (1 - tilt * ry)`` (depends only on the row).  The outputs are::

        points[b, j, i] = (Z * rx, Z * ry, Z - shift)     # affine-invariant: z is shifted by -shift
        normal[b, j, i] = (0, tilt, -1) / sqrt(1 + tilt**2)   # unit normal facing the camera
        mask[b, j, i]   = 1.0, except 0.0 within `mask_border` pixels of the image edge
        metric_scale[b] = metric_scale

    What a correct host post-processor recovers (MoGe's ``recover_focal_shift`` solves
    ``focal * xy / (z + shift) = uv``; here the residual is exactly zero at the true values, and a
    tilt != 0 makes the solution unique; tilt = 0 would make focal and shift ambiguous):

    * focal = *focal*, shift = *shift*;
    * normalised intrinsics ``fx = focal/2 * sqrt(1+a**2) / a``, ``fy = focal/2 * sqrt(1+a**2)``,
      ``cx = cy = 0.5`` (fx in units of the image width, fy of the height), i.e. in pixels
      ``fx_px = fx * W``, ``fy_px = fy * H``; note ``fx_px == fy_px == focal * W / (2 * span_x)``;
    * metric depth ``= (z + shift) * metric_scale = Z * metric_scale = d0 * metric_scale / (1 - tilt * ry)``;
    * metric points ``= (X, Y, Z) * metric_scale``; projecting them with the intrinsics gives back the
      pixel centres: ``fx * X / Z + 0.5 == (i + 0.5) / W``, ``fy * Y / Z + 0.5 == (j + 0.5) / H``.

    ``step = (left, top, right, bottom, factor)`` adds a depth discontinuity: the pixels whose centres lie in
    that box, given as fractions of the width and height, are ``factor`` times as far along their rays (a
    card in front of the plane for factor < 1). Points stay on their pixel rays, so focal and shift are
    recovered exactly as before; normals are the plane's everywhere.

    See :func:`moge2_reference` and :func:`moge2_intrinsics`.
    """
    d0, tilt = (float(plane[0]), float(plane[1]))
    if focal <= 0 or d0 <= 0:
        raise ValueError("focal and the plane distance must be positive")
    if abs(tilt) >= focal:
        raise ValueError("|tilt| must be < focal so the plane is in front of the camera everywhere")
    g = _Graph()
    shp = g.op("Shape", ["image"])
    b1 = g.op("Slice", [shp, g.const([0], np.int64), g.const([1], np.int64)])  # [B]
    hw = g.op("Slice", [shp, g.const([2], np.int64), g.const([4], np.int64)])  # [H, W]
    h_i = g.op("Gather", [shp, g.const(2, np.int64)], axis=0)  # scalar
    w_i = g.op("Gather", [shp, g.const(3, np.int64)], axis=0)
    h_f = g.op("Cast", [h_i], to=_F32)
    w_f = g.op("Cast", [w_i], to=_F32)
    one = g.const(1.0)
    zero_i, one_i = g.const(0, np.int64), g.const(1, np.int64)

    aspect = g.op("Div", [w_f, h_f])
    inv_diag = g.op("Reciprocal", [g.op("Sqrt", [g.op("Add", [one, g.op("Mul", [aspect, aspect])])])])
    span_x = g.op("Mul", [aspect, inv_diag])
    span_y = inv_diag

    def ray(n_i, n_f, span):
        idx = g.op("Cast", [g.op("Range", [zero_i, n_i, one_i])], to=_F32)
        twice = g.op("Mul", [g.op("Add", [idx, g.const(0.5)]), g.const(2.0)])
        ndc = g.op("Sub", [g.op("Div", [twice, n_f]), one])  # (idx + 0.5) * 2 / n - 1
        return idx, g.op("Div", [g.op("Mul", [ndc, span]), g.const(focal)])

    ix, rx = ray(w_i, w_f, span_x)  # [W]
    iy, ry = ray(h_i, h_f, span_y)  # [H]
    ry_col = g.op("Reshape", [ry, g.const([-1, 1], np.int64)])  # [H,1]
    rx_row = g.op("Reshape", [rx, g.const([1, -1], np.int64)])  # [1,W]
    z_col = g.op("Div", [g.const(d0), g.op("Sub", [one, g.op("Mul", [g.const(tilt), ry_col])])])  # [H,1]
    z_hw = g.op("Expand", [z_col, hw])  # [H,W]
    if step is not None:
        left, top, right, bottom, factor = (float(value) for value in step)

        def within(idx, n_f, low, high):  # pixel centres (idx + 0.5) / n in [low, high)
            centre = g.op("Div", [g.op("Add", [idx, g.const(0.5)]), n_f])
            inside = g.op(
                "And", [g.op("GreaterOrEqual", [centre, g.const(low)]), g.op("Less", [centre, g.const(high)])]
            )
            return g.op("Cast", [inside], to=_F32)

        card = g.op(
            "Mul",
            [
                g.op("Reshape", [within(iy, h_f, top, bottom), g.const([-1, 1], np.int64)]),
                g.op("Reshape", [within(ix, w_f, left, right), g.const([1, -1], np.int64)]),
            ],
        )  # [H,W]: 1 on the card
        z_hw = g.op("Mul", [z_hw, g.op("Add", [one, g.op("Mul", [card, g.const(factor - 1.0)])])])
    px = g.op("Mul", [z_hw, rx_row])  # [H,W]
    py = g.op("Mul", [z_hw, ry_col])
    pz = g.op("Sub", [z_hw, g.const(shift)])
    last = g.const([-1], np.int64)
    hw3 = g.op("Concat", [g.op("Unsqueeze", [c, last]) for c in (px, py, pz)], axis=-1)  # [H,W,3]
    bhw3_shape = g.op("Concat", [b1, hw, g.const([3], np.int64)], axis=0)
    axis0 = g.const([0], np.int64)
    g.op("Expand", [g.op("Unsqueeze", [hw3, axis0]), bhw3_shape], out="points")

    n = np.array([0.0, tilt, -1.0], np.float64) / math.sqrt(1.0 + tilt * tilt)
    g.op("Expand", [g.const(n.astype(np.float32), hint="normal"), bhw3_shape], out="normal")

    border = g.const(float(mask_border))

    def inside(idx, n_f):
        lo = g.op("GreaterOrEqual", [idx, border])
        hi = g.op("Less", [idx, g.op("Sub", [n_f, border])])
        return g.op("Cast", [g.op("And", [lo, hi])], to=_F32)

    m_row = g.op("Reshape", [inside(ix, w_f), g.const([1, -1], np.int64)])
    m_col = g.op("Reshape", [inside(iy, h_f), g.const([-1, 1], np.int64)])
    m_hw = g.op("Mul", [m_col, m_row])  # [H,W]
    bhw_shape = g.op("Concat", [b1, hw], axis=0)
    g.op("Expand", [g.op("Unsqueeze", [m_hw, axis0]), bhw_shape], out="mask")

    scale_b = g.op(
        "ConstantOfShape",
        [b1],
        value=numpy_helper.from_array(np.array([metric_scale], np.float32)),
    )
    # Shape-style use, as in real exports: Unsqueeze(num_tokens) is concatenated with a 1-D tensor, so a
    # [1]-shaped num_tokens (-> [1,1]) fails at run time with a rank mismatch.
    tokens = g.op("Concat", [g.op("Unsqueeze", ["num_tokens", axis0]), g.const([0], np.int64)], axis=0)
    tokens_sum = g.op("ReduceSum", [g.op("Cast", [tokens], to=_F32)], keepdims=0)  # = num_tokens
    tokens_zero = g.op("Mul", [tokens_sum, g.const(0.0)])
    g.op("Add", [scale_b, tokens_zero], out="metric_scale")

    return g.save(
        path,
        "moge2_test",
        [
            helper.make_tensor_value_info("image", _F32, ["batch", 3, "height", "width"]),
            helper.make_tensor_value_info("num_tokens", _I64, []),
        ],
        [
            helper.make_tensor_value_info("points", _F32, ["batch", "height", "width", 3]),
            helper.make_tensor_value_info("normal", _F32, ["batch", "height", "width", 3]),
            helper.make_tensor_value_info("mask", _F32, ["batch", "height", "width"]),
            helper.make_tensor_value_info("metric_scale", _F32, ["batch"]),
        ],
    )


def moge2_intrinsics(focal: float, height: int, width: int) -> np.ndarray:
    """Normalised 3x3 intrinsics a correct host derives from MoGe's *focal* for an H x W image:
    ``fx = focal/2*sqrt(1+a^2)/a``, ``fy = focal/2*sqrt(1+a^2)``, ``cx = cy = 0.5`` with ``a = W/H``."""
    a = width / height
    fx = focal / 2 * math.sqrt(1 + a * a) / a
    fy = focal / 2 * math.sqrt(1 + a * a)
    return np.array([[fx, 0.0, 0.5], [0.0, fy, 0.5], [0.0, 0.0, 1.0]])


def moge2_reference(
    batch: int,
    height: int,
    width: int,
    *,
    focal: float = 1.2,
    shift: float = 0.5,
    plane: tuple[float, float] = (2.0, -0.4),
    metric_scale: float = 2.5,
    mask_border: int = 0,
    step: tuple[float, float, float, float, float] | None = None,
) -> dict:
    """float64 reference of :func:`build_moge2`'s outputs plus what a host should recover.

    Returns a dict with the four model outputs (``points``, ``normal``, ``mask``, ``metric_scale``)
    and ``focal``, ``shift``, ``intrinsics`` (normalised 3x3), ``depth`` [B,H,W] metric depth
    ``(z + shift) * metric_scale`` and ``metric_points`` [B,H,W,3].
    """
    d0, tilt = float(plane[0]), float(plane[1])
    a = width / height
    span_x, span_y = a / math.sqrt(1 + a * a), 1 / math.sqrt(1 + a * a)
    rx = ((np.arange(width) + 0.5) / width * 2 - 1) * span_x / focal
    ry = ((np.arange(height) + 0.5) / height * 2 - 1) * span_y / focal
    ryg, rxg = np.meshgrid(ry, rx, indexing="ij")
    z = d0 / (1 - tilt * ryg)
    if step is not None:
        left, top, right, bottom, factor = step
        across = ((np.arange(width) + 0.5) / width >= left) & ((np.arange(width) + 0.5) / width < right)
        down = ((np.arange(height) + 0.5) / height >= top) & ((np.arange(height) + 0.5) / height < bottom)
        z = np.where(down[:, None] & across[None, :], z * factor, z)
    pts = np.stack([z * rxg, z * ryg, z - shift], axis=-1)
    normal = np.broadcast_to(np.array([0.0, tilt, -1.0]) / math.sqrt(1 + tilt * tilt), pts.shape)
    mask = np.zeros((height, width))
    b = mask_border
    mask[b : height - b, b : width - b] = 1.0
    tile = (batch,) + (1,) * 3
    return {
        "points": np.tile(pts[None], tile),
        "normal": np.tile(normal[None], tile),
        "mask": np.tile(mask[None], tile[:3]),
        "metric_scale": np.full((batch,), metric_scale),
        "focal": focal,
        "shift": shift,
        "intrinsics": moge2_intrinsics(focal, height, width),
        "depth": np.tile((z * metric_scale)[None], tile[:3]),
        "metric_points": np.tile((np.stack([z * rxg, z * ryg, z], axis=-1) * metric_scale)[None], tile),
    }


# --------------------------------------------------------------------------------------------------
# Depth Anything 3


def build_da3(
    path,
    *,
    size: int | tuple[int, int] | None = 56,
    cameras: bool = True,
    depth_offset: float = 3.0,
    baseline: float = 0.1,
    export_revision: str | None = "2",
) -> Path:
    """Depth-Anything-3-shaped model.

    ``export_revision`` is written as the converter writes it (ONNX metadata ``imageforge.da3_export``; None:
    an export without it, converted before two-view runs were gated).

    ``cameras=True`` (multi-view export): input ``image`` float32 [1,"views",3,S,S] (N dynamic,
    S = *size* fixed, a multiple of 14; ``size=(H, W)``: a fixed non-square canvas, as a per-aspect
    conversion; ``size=None``: [1,"views",3,"height","width"], both dynamic); outputs

    * ``depth`` [1,N,S,S]      = ``depth_offset + mean over the 3 channels of image`` (default offset
      3.0 keeps depth > 0 for ImageNet-normalised input, whose channel mean is >= -1.99);
    * ``depth_conf`` [1,N,S,S] = 1.0;
    * ``extrinsics`` [1,N,3,4] (world->camera) = ``[I | (i*baseline, 0, 0)]`` for view i = 0..N-1;
    * ``intrinsics`` [1,N,3,3] = ``[[W,0,W/2],[0,W,H/2],[0,0,1]]`` (pixels of the H x W input) per view.

    ``cameras=False`` (depth-only export): ``image`` [batch,3,S,S] -> ``depth`` [batch,1,S,S]
    with the same depth function (mean over axis 1, kept).  ``size=None`` makes H and W dynamic
    (symbols ``"height"``, ``"width"``) for the depth-only export; real community exports are
    fixed at 504.
    """
    g = _Graph()
    if not cameras:
        dims = ["batch", 3, "height", "width"] if size is None else ["batch", 3, size, size]
        mean = g.op("ReduceMean", ["image"], axes=[1], keepdims=1)
        g.op("Add", [mean, g.const(depth_offset)], out="depth")
        return g.save(
            path,
            "da3_depth_test",
            [helper.make_tensor_value_info("image", _F32, dims)],
            [helper.make_tensor_value_info("depth", _F32, [dims[0], 1, dims[2], dims[3]])],
        )
    fixed = (size, size) if isinstance(size, int) else size
    if fixed is not None and any(side % 14 for side in fixed):
        raise ValueError("the multi-view export needs sides that are multiples of 14 (or None: dynamic)")
    mean = g.op("ReduceMean", ["image"], axes=[2], keepdims=0)  # [1,N,H,W]
    depth = g.op("Add", [mean, g.const(depth_offset)], out="depth")
    g.op(
        "ConstantOfShape",
        [g.op("Shape", [depth])],
        out="depth_conf",
        value=numpy_helper.from_array(np.array([1.0], np.float32)),
    )

    shp = g.op("Shape", ["image"])
    n_i = g.op("Gather", [shp, g.const(1, np.int64)], axis=0)
    n1 = g.op("Slice", [shp, g.const([1], np.int64), g.const([2], np.int64)])  # [N]
    idx = g.op("Cast", [g.op("Range", [g.const(0, np.int64), n_i, g.const(1, np.int64)])], to=_F32)
    tx = g.op("Reshape", [g.op("Mul", [idx, g.const(baseline)]), g.const([1, -1, 1, 1], np.int64)])
    onehot = np.zeros((3, 4), np.float32)
    onehot[0, 3] = 1.0
    base = np.eye(3, 4, dtype=np.float32)
    g.op("Add", [g.op("Mul", [tx, g.const(onehot)]), g.const(base)], out="extrinsics")
    # K = W·[[1,0,.5],[0,1,0],[0,0,0]] + H·[[0,0,0],[0,0,.5],[0,0,0]] + [[0,0,0],[0,0,0],[0,0,1]]
    hw = g.op("Cast", [g.op("Slice", [shp, g.const([3], np.int64), g.const([5], np.int64)])], to=_F32)  # [H, W]
    height = g.op("Gather", [hw, g.const(0, np.int64)], axis=0)
    width = g.op("Gather", [hw, g.const(1, np.int64)], axis=0)
    per_width = np.array([[1, 0, 0.5], [0, 1, 0], [0, 0, 0]], np.float32)
    per_height = np.array([[0, 0, 0], [0, 0, 0.5], [0, 0, 0]], np.float32)
    k = g.op(
        "Add",
        [
            g.op("Add", [g.op("Mul", [g.const(per_width), width]), g.op("Mul", [g.const(per_height), height])]),
            g.const(np.diag([0.0, 0.0, 1.0]).astype(np.float32)),
        ],
    )
    k_shape = g.op("Concat", [g.const([1], np.int64), n1, g.const([3, 3], np.int64)], axis=0)
    g.op("Expand", [k, k_shape], out="intrinsics")
    rows, cols = ("height", "width") if fixed is None else (int(fixed[0]), int(fixed[1]))
    return g.save(
        path,
        "da3_test",
        [helper.make_tensor_value_info("image", _F32, [1, "views", 3, rows, cols])],
        [
            helper.make_tensor_value_info("depth", _F32, [1, "views", rows, cols]),
            helper.make_tensor_value_info("depth_conf", _F32, [1, "views", rows, cols]),
            helper.make_tensor_value_info("extrinsics", _F32, [1, "views", 3, 4]),
            helper.make_tensor_value_info("intrinsics", _F32, [1, "views", 3, 3]),
        ],
        None if export_revision is None else {"imageforge.da3_export": export_revision},
    )


def da3_reference(image: np.ndarray, *, cameras: bool = True, depth_offset: float = 3.0, baseline: float = 0.1) -> dict:
    """numpy reference of :func:`build_da3` for ``image`` [1,N,3,H,W] (cameras) or [B,3,H,W]."""
    image = np.asarray(image, np.float32)
    if not cameras:
        return {"depth": image.mean(axis=1, keepdims=True, dtype=np.float64) + depth_offset}
    n, (h, w) = image.shape[1], image.shape[-2:]
    depth = image.mean(axis=2, dtype=np.float64) + depth_offset
    ext = np.tile(np.eye(3, 4), (1, n, 1, 1))
    ext[0, :, 0, 3] = np.arange(n) * baseline
    k = np.array([[w, 0, w / 2], [0, w, h / 2], [0, 0, 1]], np.float64)
    return {
        "depth": depth,
        "depth_conf": np.ones_like(depth),
        "extrinsics": ext,
        "intrinsics": np.tile(k, (1, n, 1, 1)),
    }


# --------------------------------------------------------------------------------------------------
# LaMa (inpainting)

LAMA_FILL = (0.2, 0.6, 0.4)
LAMA_MULTIPLE = 32


def build_lama(path, *, fill: tuple[float, float, float] = LAMA_FILL, size: int | None = None) -> Path:
    """LaMa-shaped inpainter: ``input`` float32 [1,4,"height","width"] (RGB with the hole zeroed, then the
    mask, 1 = fill) -> ``output`` float32 [1,3,"height","width"].

    Known function: ``output = rgb + mask * fill``. A host that zeroes the hole (as LaMa expects) therefore
    gets exactly *fill* inside the hole and its own RGB outside it; a host that forgets to zero it gets
    rgb + fill there instead. Like the real network (five 2× downsamplings), the graph only runs when height
    and width are multiples of 32: a SpaceToDepth/DepthToSpace round trip with block 32 fails otherwise.
    *size* fixes height and width (like the published 512² variants) instead of leaving them symbolic.
    """
    g = _Graph()
    blocks = g.op("SpaceToDepth", ["input"], blocksize=LAMA_MULTIPLE)
    x = g.op("DepthToSpace", [blocks], blocksize=LAMA_MULTIPLE, mode="DCR")
    starts, ends, axes = g.const([0], np.int64), g.const([3], np.int64), g.const([1], np.int64)
    rgb = g.op("Slice", [x, starts, ends, axes])
    mask = g.op("Slice", [x, ends, g.const([4], np.int64), axes])
    colour = g.const(np.array(fill, np.float32).reshape(1, 3, 1, 1), hint="fill")
    g.op("Add", [rgb, g.op("Mul", [mask, colour])], out="output")
    return g.save(
        path,
        "lama_test",
        [helper.make_tensor_value_info("input", _F32, [1, 4, *(dims := [size or "height", size or "width"])])],
        [helper.make_tensor_value_info("output", _F32, [1, 3, *dims])],
    )


def lama_reference(x: np.ndarray, *, fill: tuple[float, float, float] = LAMA_FILL) -> np.ndarray:
    """numpy reference of :func:`build_lama` for ``x`` [1,4,h,w] float32 (h, w multiples of 32)."""
    x = np.asarray(x, np.float32)
    if x.shape[2] % LAMA_MULTIPLE or x.shape[3] % LAMA_MULTIPLE:
        raise ValueError("LaMa inputs must be multiples of 32")
    return x[:, :3] + x[:, 3:4] * np.array(fill, np.float32).reshape(1, 3, 1, 1)


# --------------------------------------------------------------------------------------------------
# SAM 2.1

SAM2_SCORES = (0.95, 0.6, 0.9, 0.7)  # token 0 (single mask), then the three multimask candidates
SAM2_THRESHOLDS = (0.5, 0.1, 0.5, 2.0)  # squared colour distance each token's mask reaches
SAM2_STEEPNESS = 8.0


def build_sam2(directory, *, scores: Sequence[float] = SAM2_SCORES) -> tuple[Path, Path]:
    """SAM 2.1-shaped pair in *directory*: ``encoder.onnx`` and ``decoder.onnx`` with the export's names and shapes.

    Known function: the encoder averages the normalised image over 4×4, 8×8 and 16×16 blocks into the first three
    channels of ``high_res_feats_0``, ``high_res_feats_1`` and ``image_embed`` (the rest zero). The decoder reads
    the colour of ``high_res_feats_0`` under the first point (coordinates in the 1024² input, so /4 on its 256²
    grid) and gives token k the logits ``8 · (t_k − |colour − that colour|²)`` with t = SAM2_THRESHOLDS: a mask of
    the region of similar colour, wider or narrower per token; ``iou_predictions`` are *scores* whatever the
    input. Other points, labels and the other features are ignored. :func:`sam2_reference` computes the same.
    """
    directory = Path(directory)
    g = _Graph()
    outputs = []
    for name, block, channels in (("high_res_feats_0", 4, 32), ("high_res_feats_1", 8, 64), ("image_embed", 16, 256)):
        pooled = g.op("AveragePool", ["image"], kernel_shape=[block, block], strides=[block, block])
        weight = np.zeros((channels, 3, 1, 1), np.float32)
        weight[0, 0] = weight[1, 1] = weight[2, 2] = 1.0
        g.op("Conv", [pooled, g.const(weight, hint="w")], out=name)
        outputs.append(helper.make_tensor_value_info(name, _F32, [1, channels, 1024 // block, 1024 // block]))
    encoder = g.save(
        directory / "encoder.onnx", "sam2_encoder_test",
        [helper.make_tensor_value_info("image", _F32, [1, 3, 1024, 1024])], outputs,
    )  # fmt: skip

    g = _Graph()
    colour = g.op("Slice", ["high_res_feats_0", g.const([0], np.int64), g.const([3], np.int64), g.const([1], np.int64)])
    first = g.op("Slice", ["point_coords", g.const([0], np.int64), g.const([1], np.int64), g.const([1], np.int64)])
    cell = g.op("Clip", [g.op("Floor", [g.op("Div", [first, g.const(4.0)])]), g.const(0.0), g.const(255.0)])
    cell = g.op("Cast", [g.op("Reshape", [cell, g.const([2], np.int64)])], to=_I64)
    x = g.op("Slice", [cell, g.const([0], np.int64), g.const([1], np.int64)])
    y = g.op("Slice", [cell, g.const([1], np.int64), g.const([2], np.int64)])
    index = g.op("Add", [g.op("Mul", [y, g.const([256], np.int64)]), x])
    flat = g.op("Reshape", [colour, g.const([1, 3, 256 * 256], np.int64)])
    picked = g.op("Reshape", [g.op("Gather", [flat, index], axis=2), g.const([1, 3, 1, 1], np.int64)])
    difference = g.op("Sub", [colour, picked])
    distance = g.op("ReduceSum", [g.op("Mul", [difference, difference]), g.const([1], np.int64)], keepdims=1)
    thresholds = g.const(np.array(SAM2_THRESHOLDS, np.float32).reshape(1, 4, 1, 1), hint="t")
    g.op("Mul", [g.op("Sub", [thresholds, distance]), g.const(SAM2_STEEPNESS)], out="masks")
    g.op("Identity", [g.const(np.array([scores], np.float32), hint="iou")], out="iou_predictions")
    g.op("Identity", [g.const(np.array([[10.0]], np.float32), hint="objects")], out="object_score_logits")
    features = [
        helper.make_tensor_value_info(name, _F32, [1, channels, size, size])
        for name, channels, size in (
            ("image_embed", 256, 64),
            ("high_res_feats_0", 32, 256),
            ("high_res_feats_1", 64, 128),
        )
    ]
    decoder = g.save(
        directory / "decoder.onnx", "sam2_decoder_test",
        [
            *features,
            helper.make_tensor_value_info("point_coords", _F32, [1, "points", 2]),
            helper.make_tensor_value_info("point_labels", _F32, [1, "points"]),
        ],
        [
            helper.make_tensor_value_info("masks", _F32, [1, 4, 256, 256]),
            helper.make_tensor_value_info("iou_predictions", _F32, [1, 4]),
            helper.make_tensor_value_info("object_score_logits", _F32, [1, 1]),
        ],
    )  # fmt: skip
    return encoder, decoder


def sam2_reference(model_input: np.ndarray, point: tuple[float, float]) -> np.ndarray:
    """numpy reference of :func:`build_sam2`: the decoder's ``masks`` [4, 256, 256] for ``model_input``
    [1,3,1024,1024] and a first point in the input's 1024² pixels."""
    colour = model_input[0].reshape(3, 256, 4, 256, 4).mean(axis=(2, 4))
    x, y = (min(max(int(np.floor(value / 4)), 0), 255) for value in point)
    distance = ((colour - colour[:, y, x][:, None, None]) ** 2).sum(axis=0)
    return SAM2_STEEPNESS * (np.array(SAM2_THRESHOLDS, np.float32)[:, None, None] - distance[None])
