"""Choose how a result video is encoded: the source's container and codec family, frame rate, timing and
pixel format, so the result drops into the artist's edit where the source was.

Alpha: only some families can carry it (ProRes 4444 in MOV, VP8/VP9 in WebM, FFV1 in MKV, PNG and QuickTime
Animation in MOV). A transparent result of an H.264/HEVC/AV1/MPEG-4 source is composited over black in the
same family and the plan says `keeps_alpha=False`, so the job can tell the artist that the PNG sequence
output is the way to keep transparency. Stills and sequences (no source codec) get H.264 MP4, or ProRes
4444 MOV when alpha is wanted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

import av

from .image import SampleKind
from .video_read import VideoInfo


@dataclass(frozen=True)
class _Family:
    encoders: tuple[str, ...]
    alpha_pix_fmt: str | None  # None: this family cannot store alpha


_FAMILIES: dict[str, _Family] = {
    "h264": _Family(("libx264", "libopenh264"), None),
    "hevc": _Family(("libx265",), None),
    "av1": _Family(("libsvtav1", "libaom-av1"), None),
    "mpeg4": _Family(("mpeg4",), None),
    "mjpeg": _Family(("mjpeg",), None),
    "vp8": _Family(("libvpx",), "yuva420p"),
    "vp9": _Family(("libvpx-vp9",), "yuva420p"),
    "prores": _Family(("prores_ks",), "yuva444p10le"),
    "ffv1": _Family(("ffv1",), "yuva420p"),
    "png": _Family(("png",), "rgba"),
    "qtrle": _Family(("qtrle",), "argb"),
}
_CONTAINERS = {".mp4": "mp4", ".m4v": "mp4", ".mov": "mov", ".mkv": "matroska", ".webm": "webm"}
# Visually transparent quality (a result goes back into an edit, possibly for more passes). x264 "veryfast"
# at CRF 16 measured 0.10 s per 1080p frame here against 0.32 s for "medium": with a GPU model, encoding
# would otherwise dominate a video job. x264's macroblock tree is off: with it, the same 320×180 frames encoded
# eight times in one process gave two different files (its SIMD code), so a clip assembled from farm chunks
# could not be the single run's video bit for bit; without it every encode was the same (docs/farm.md).
_OPTIONS: dict[str, dict[str, str]] = {
    "libx264": {"crf": "16", "preset": "veryfast", "x264-params": "mbtree=0"},
    "libx265": {"crf": "18", "preset": "fast", "x265-params": "log-level=error"},
    "libvpx-vp9": {"crf": "20", "row-mt": "1"},
    "libvpx": {"crf": "8"},
    "libsvtav1": {"crf": "24"},
    "libaom-av1": {"crf": "24", "cpu-used": "6"},
}
_BITRATE_ENCODERS = {"libopenh264", "mpeg4", "mjpeg", "libvpx"}  # need a bit rate to reach good quality
_ALPHA_OF = {
    "rgb24": "rgba",
    "bgr24": "bgra",
    "rgb48be": "rgba64be",
}


@dataclass(frozen=True)
class VideoPlan:
    """Everything VideoWriter needs; build it with `plan_video_output`."""

    container_format: str  # FFmpeg muxer: "mp4", "mov", "matroska", "webm"
    suffix: str  # file extension of the result, e.g. ".mp4"
    encoder: str
    pix_fmt: str
    width: int
    height: int
    frame_rate: Fraction
    time_base: Fraction
    keeps_alpha: bool
    deep: bool  # feed the encoder 16-bit RGB (10/12-bit sources and ProRes)
    options: dict[str, str] = field(default_factory=dict)
    bit_rate: int = 0
    colorspace: int = 0
    color_range: int = 0
    color_primaries: int = 0
    color_trc: int = 0
    pixel_aspect: Fraction = Fraction(1)


def plan_video_output(
    source: VideoInfo | None,
    *,
    size: tuple[int, int],
    alpha: bool,
    frame_rate: Fraction = Fraction(24),
) -> VideoPlan:
    """The encoding of a result video of `size` (width, height) for `source` (None: a still or sequence).

    `alpha`: the frames written will carry meaningful transparency; honoured when the family allows.
    """
    width, height = size
    if source is None:
        codec, suffix, rate = ("prores" if alpha else "h264"), (".mov" if alpha else ".mp4"), Fraction(frame_rate)
        time_base, source_pix, deep = 1 / rate, None, alpha
        tags = (1, 1, 1, 1)  # BT.709, limited range: what players assume for untagged HD video
    else:
        suffix = source.path.suffix.lower()
        codec = source.codec if source.codec in _FAMILIES else ("vp9" if suffix == ".webm" else "h264")
        rate, time_base, source_pix = source.frame_rate, source.time_base, source.pix_fmt
        deep = source.sample_kind is SampleKind.UINT16 or codec == "prores"
        tags = (source.colorspace, source.color_range, source.color_primaries, source.color_trc)
    aspect = source.pixel_aspect if source is not None else Fraction(1)
    family = _FAMILIES[codec]
    encoder = _first_available(family.encoders) or _first_available(_FAMILIES["h264"].encoders) or "mpeg4"
    keeps_alpha = alpha and family.alpha_pix_fmt is not None
    pix_fmt = _pixel_format(encoder, source_pix, family.alpha_pix_fmt if keeps_alpha else None, width, height)
    options = dict(_OPTIONS.get(encoder, {}))
    if encoder == "prores_ks":
        options["profile"] = "4444" if keeps_alpha else "hq"
    bit_rate = int(width * height * float(rate) * 0.3) if encoder in _BITRATE_ENCODERS else 0
    return VideoPlan(
        container_format=_CONTAINERS.get(suffix, "mp4"),
        suffix=suffix if suffix in _CONTAINERS else ".mp4",
        encoder=encoder,
        pix_fmt=pix_fmt,
        width=width,
        height=height,
        frame_rate=Fraction(rate),
        time_base=Fraction(time_base),
        keeps_alpha=keeps_alpha,
        deep=deep,
        options=options,
        bit_rate=bit_rate,
        colorspace=tags[0],
        color_range=tags[1],
        color_primaries=tags[2],
        color_trc=tags[3],
        pixel_aspect=aspect,
    )


def _first_available(encoders: tuple[str, ...]) -> str | None:
    return next((name for name in encoders if name in av.codecs_available and _is_encoder(name)), None)


def _is_encoder(name: str) -> bool:
    try:
        av.Codec(name, "w")
    except (av.FFmpegError, ValueError):
        return False
    return True


def _pixel_format(encoder: str, source_pix: str | None, alpha_pix: str | None, width: int, height: int) -> str:
    """Keep the source's sampling and depth where the encoder can; add alpha if asked; fit odd sizes."""
    supported = [fmt.name for fmt in (av.Codec(encoder, "w").video_formats or ())]
    wanted = []
    if alpha_pix is not None:
        wanted += [_alpha_variant(source_pix or ""), alpha_pix]
    else:
        wanted += [source_pix or "", "yuv420p"]
    for name in wanted:
        if name in supported and _has_alpha(name) == (alpha_pix is not None):
            return _fit_odd_size(name, supported, width, height)
    usable = [name for name in supported if _has_alpha(name) == (alpha_pix is not None)] or supported
    return _fit_odd_size(usable[0], supported, width, height)


def _alpha_variant(pix_fmt: str) -> str:
    if pix_fmt.startswith("yuv") and not pix_fmt.startswith("yuva"):
        return "yuva" + pix_fmt[3:]
    return _ALPHA_OF.get(pix_fmt, "")


def _has_alpha(pix_fmt: str) -> bool:
    return len(av.VideoFormat(pix_fmt).components) in (2, 4)


def _fit_odd_size(pix_fmt: str, supported: list[str], width: int, height: int) -> str:
    """4:2:0 needs even sizes and 4:2:2 an even width; fall back to 4:4:4 of the same depth and alpha."""
    needs_even_width = "420" in pix_fmt or "422" in pix_fmt
    needs_even_height = "420" in pix_fmt
    if (needs_even_width and width % 2) or (needs_even_height and height % 2):
        full = pix_fmt.replace("420", "444").replace("422", "444")
        if full in supported:
            return full
        raise ValueError(f"{pix_fmt} cannot encode an odd size {width}×{height} and 4:4:4 is unavailable")
    return pix_fmt
