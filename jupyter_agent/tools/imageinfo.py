"""An image's pixel size read from its header (PNG, JPEG, GIF, WebP), without an imaging library.

Read puts one line beside the image it returns (``monthly.png: PNG, 1200×800 px, 58 KB``), so
the model knows what it is looking at (and a transcript, which keeps no image, says it too).
"""

from __future__ import annotations

import struct

_NAMES = {"image/png": "PNG", "image/jpeg": "JPEG", "image/gif": "GIF", "image/webp": "WebP"}
# JPEG start-of-frame markers (baseline, progressive, lossless...): not DHT, JPG or DAC.
_SOF = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}


def pixel_size(data: bytes, media_type: str) -> tuple[int, int] | None:
    """``(width, height)`` from the header, or None when the header does not say (a damaged file)."""
    try:
        if media_type == "image/png" and data[12:16] == b"IHDR":
            return struct.unpack(">II", data[16:24])
        if media_type == "image/gif":
            return struct.unpack("<HH", data[6:10])
        if media_type == "image/webp":
            return _webp_size(data)
        if media_type == "image/jpeg":
            return _jpeg_size(data)
    except struct.error:  # a header cut short: the size is unknown, the image is still sent
        return None
    return None


def _webp_size(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8X":
        width = int.from_bytes(data[24:27], "little") + 1
        height = int.from_bytes(data[27:30], "little") + 1
        return width, height
    if chunk == b"VP8L" and data[20:21] == b"\x2f":
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8 " and data[23:26] == b"\x9d\x01\x2a":
        width, height = struct.unpack("<HH", data[26:30])
        return width & 0x3FFF, height & 0x3FFF
    return None


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:  # markers without a length
            i += 2
            continue
        length = struct.unpack(">H", data[i + 2:i + 4])[0]
        if marker in _SOF:
            height, width = struct.unpack(">HH", data[i + 5:i + 9])
            return width, height
        i += 2 + length
    return None


def describe_image(name: str, data: bytes, media_type: str) -> str:
    """One line: ``monthly.png: PNG, 1200×800 px, 58 KB``."""
    size = pixel_size(data, media_type)
    pixels = f"{size[0]}×{size[1]} px" if size else "size unknown"
    return f"{name}: {_NAMES.get(media_type, media_type)}, {pixels}, {_bytes(len(data))}"


def _bytes(n: int) -> str:
    if n < 1024:
        return f"{n} bytes"
    if n < 1024 * 1024:
        return f"{round(n / 1024)} KB"
    return f"{n / (1024 * 1024):.1f} MB"
