# SPDX-License-Identifier: MIT
"""png.py - reads the PNG files headless Chromium writes (--screenshot),
with the standard library only (zlib), for tests that look at pixels.

Supported: 8-bit truecolour, with or without alpha (colour types 2 and 6),
not interlaced: what Chromium writes.  Anything else raises ValueError
naming what it met, so a test fails with the reason rather than with
garbage pixels.

  read(path) -> (width, height, rows): rows[y] is a bytes object of width
  pixels, 3 bytes (RGB) each.
"""
import struct
import zlib

SIG = b"\x89PNG\r\n\x1a\n"


def _paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def _unfilter(kind, line, prev, bpp):
    out = bytearray(line)
    n = len(out)
    if kind == 0:
        return out
    if kind == 1:
        for i in range(bpp, n):
            out[i] = (out[i] + out[i - bpp]) & 0xFF
    elif kind == 2:
        for i in range(n):
            out[i] = (out[i] + prev[i]) & 0xFF
    elif kind == 3:
        for i in range(n):
            left = out[i - bpp] if i >= bpp else 0
            out[i] = (out[i] + ((left + prev[i]) >> 1)) & 0xFF
    elif kind == 4:
        for i in range(n):
            left = out[i - bpp] if i >= bpp else 0
            up_left = prev[i - bpp] if i >= bpp else 0
            out[i] = (out[i] + _paeth(left, prev[i], up_left)) & 0xFF
    else:
        raise ValueError("PNG: unknown filter type %d" % kind)
    return out


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != SIG:
        raise ValueError("%s: not a PNG file" % path)
    pos, idat, hdr = 8, [], None
    while pos + 8 <= len(data):
        length, ctype = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if ctype == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif ctype == b"IDAT":
            idat.append(body)
        elif ctype == b"IEND":
            break
    if not hdr:
        raise ValueError("%s: no IHDR chunk" % path)
    width, height, depth, colour, _, _, interlace = hdr
    if depth != 8 or colour not in (2, 6) or interlace:
        raise ValueError("%s: depth %d, colour type %d, interlace %d: only 8-bit RGB(A), "
                         "not interlaced, is read here" % (path, depth, colour, interlace))
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    if len(raw) != height * (stride + 1):
        raise ValueError("%s: %d bytes of image data for %dx%d" % (path, len(raw), width, height))
    rows, prev = [], bytearray(stride)
    for y in range(height):
        off = y * (stride + 1)
        line = _unfilter(raw[off], raw[off + 1:off + 1 + stride], prev, bpp)
        prev = line
        rows.append(bytes(line) if bpp == 3 else
                    bytes(b for i in range(0, stride, 4) for b in line[i:i + 3]))
    return width, height, rows
