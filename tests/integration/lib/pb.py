"""pb.py - the protobuf wire format, both directions (the one varint encoder
of the test suite).

Writing: varint(n) (negative numbers as 64-bit two's complement, as
protobuf does for int64), key(field, wire type), field_varint, field_bytes,
field_packed (packed varints), field_fixed64.
Reading: read_varint(buf, i) -> (value, next i), fields(buf) yields (field,
wire type, value) of one message (varint and fixed as ints, length-delimited
as bytes), packed(wire type, value) -> list (accepts packed and unpacked
encodings), s64(x) reinterprets a varint as a signed int64.  A malformed
message raises ValueError or IndexError.
"""

VARINT, FIXED64, LEN, FIXED32 = 0, 1, 2, 5


def varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def key(field, wt):
    return varint(field << 3 | wt)


def field_varint(field, v):
    return key(field, VARINT) + varint(v)


def field_bytes(field, b):
    if isinstance(b, str):
        b = b.encode()
    return key(field, LEN) + varint(len(b)) + b


def field_packed(field, xs):
    return field_bytes(field, b"".join(varint(x) for x in xs))


def field_fixed64(field, v):
    return key(field, FIXED64) + (v & ((1 << 64) - 1)).to_bytes(8, "little")


def read_varint(b, i):
    x = shift = 0
    while True:
        c = b[i]
        i += 1
        x |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return x, i
        if shift >= 70:
            raise ValueError("varint longer than 10 bytes")


def fields(b):
    """Yields (field number, wire type, value) of one message."""
    i = 0
    while i < len(b):
        k, i = read_varint(b, i)
        fn, wt = k >> 3, k & 7
        if wt == VARINT:
            v, i = read_varint(b, i)
        elif wt == FIXED64:
            v = int.from_bytes(b[i:i + 8], "little")
            i += 8
        elif wt == LEN:
            n, i = read_varint(b, i)
            v = b[i:i + n]
            i += n
        elif wt == FIXED32:
            v = int.from_bytes(b[i:i + 4], "little")
            i += 4
        else:
            raise ValueError("wire type %d" % wt)
        if i > len(b):
            raise ValueError("truncated message")
        yield fn, wt, v


def packed(wt, v):
    """A repeated varint field's values from one occurrence."""
    if wt == VARINT:
        return [v]
    out, i = [], 0
    while i < len(v):
        x, i = read_varint(v, i)
        out.append(x)
    return out


def s64(x):
    return x - (1 << 64) if x >= 1 << 63 else x


def message(b):
    """{field: last value} of a message whose fields are not repeated."""
    return {f: v for f, _, v in fields(b)}
