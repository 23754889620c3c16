"""Small binary codecs for index files: varints, key arrays, checksummed containers.

Every index file is ``MAGIC(4) | FORMAT_VERSION(1) | zlib(payload) | crc32(4, big endian)`` where
the CRC covers everything before it. Nothing here executes code on load (no pickle).

Format 2 stores integer columns as *byte planes* (:meth:`Writer.uints`): the narrowest
of 1/2/4/8 bytes, written plane by plane, so the small deltas and counters of a segment become
long runs of zero bytes that zlib squeezes away; decoding stays vectorised (numpy).
Format 3 added the holes (runs of absent keys) to every segment file. Format 4 pages
segment files (:func:`seal_raw` containers whose pages are compressed one by one, so a point lookup
inflates one page of a large segment, not all of it) and stores the segment list column by column.
Format 5 (current) packs the segments one writer writes into one file (the segment list names each
segment's byte range), so an update that rewrites hundreds of small segments writes one file.
Older formats are refused with IndexUnavailable (readers fall back to a full read; ``sieve sync`` or ``sieve build``
rewrites the index).
"""
from __future__ import annotations

import struct
import zlib

import numpy as np

from .errors import IndexUnavailable

FORMAT_VERSION = 5
ZLIB_LEVEL = 6  # level 9 spent up to 3x the time on long runs for indexes 0.1-1 % smaller (any level reads back)
SMALL = 64  # Writer.uints encodes columns up to this length without numpy


def zigzag(n: int) -> int:
    return (n << 1) if n >= 0 else ((-n) << 1) - 1


def unzigzag(z: int) -> int:
    return (z >> 1) if not (z & 1) else -((z + 1) >> 1)


class Writer:
    """Appends varints, fixed-width numpy arrays and key arrays to a bytearray."""

    def __init__(self) -> None:
        self.buf = bytearray()

    def uvarint(self, n: int) -> None:
        if n < 0:
            raise ValueError("uvarint needs n >= 0")
        while True:
            b = n & 0x7F
            n >>= 7
            if n:
                self.buf.append(b | 0x80)
            else:
                self.buf.append(b)
                return

    def svarint(self, n: int) -> None:
        self.uvarint(zigzag(n))

    def array(self, arr: np.ndarray, dtype: str) -> None:
        a = np.ascontiguousarray(arr, dtype=np.dtype(dtype).newbyteorder("<"))
        self.uvarint(len(a))
        self.buf += a.tobytes()

    def uints(self, arr: np.ndarray) -> None:
        """Non-negative integers as byte planes of the narrowest width (1, 2, 4 or 8 bytes)."""
        a = np.asarray(arr)
        if len(a) <= SMALL:  # tiny columns (most segments' pages): plain Python is faster than numpy
            vals = a.tolist()
            if not vals or (min(vals) >= 0 and max(vals) < 1 << 8):
                self.uvarint(len(vals))
                self.buf.append(1)
                self.buf += bytes(vals)
                return
        if len(a) and int(a.min()) < 0:
            raise ValueError("uints needs values >= 0")
        mx = int(a.max()) if len(a) else 0
        width = 1 if mx < 1 << 8 else 2 if mx < 1 << 16 else 4 if mx < 1 << 32 else 8
        self.uvarint(len(a))
        self.buf.append(width)
        planes = a.astype(np.dtype(f"<u{width}")).view(np.uint8).reshape(len(a), width).T
        self.buf += planes.tobytes()

    def blob(self, data: bytes) -> None:
        self.uvarint(len(data))
        self.buf += data

    def keys(self, keys: np.ndarray) -> None:
        """Ascending keys: int64 deltas when they fit, else zigzag varints of Python ints."""
        if keys.dtype != object:
            self.buf.append(0)
            self.array(np.diff(keys.astype(np.int64), prepend=np.int64(0)) if len(keys) else keys, "<i8")
        else:
            self.buf.append(1)
            self.uvarint(len(keys))
            for k in keys:
                self.svarint(int(k))


class Reader:
    """Reads what :class:`Writer` wrote."""

    def __init__(self, buf: bytes) -> None:
        self.buf = memoryview(buf)
        self.pos = 0

    def uvarint(self) -> int:
        shift = n = 0
        while True:
            b = self.buf[self.pos]
            self.pos += 1
            n |= (b & 0x7F) << shift
            if not b & 0x80:
                return n
            shift += 7

    def svarint(self) -> int:
        return unzigzag(self.uvarint())

    def array(self, dtype: str) -> np.ndarray:
        n = self.uvarint()
        dt = np.dtype(dtype).newbyteorder("<")
        end = self.pos + n * dt.itemsize
        out = np.frombuffer(self.buf[self.pos:end], dtype=dt).astype(dt.newbyteorder("="))
        self.pos = end
        return out

    def uints(self) -> np.ndarray:
        """What :meth:`Writer.uints` wrote, as int64 (uint64 for 8-byte planes)."""
        n = self.uvarint()
        width = self.buf[self.pos]
        self.pos += 1
        if width not in (1, 2, 4, 8):
            raise IndexUnavailable(f"bad integer width {width} in an index file (corrupt): rebuild the index")
        end = self.pos + n * width
        if end > len(self.buf):
            raise IndexUnavailable("truncated integer column in an index file (corrupt): rebuild the index")
        if width == 1:
            out1 = np.frombuffer(self.buf[self.pos:end], dtype=np.uint8).astype(np.int64)
            self.pos = end
            return out1
        planes = np.frombuffer(self.buf[self.pos:end], dtype=np.uint8).reshape(width, n)
        self.pos = end
        out = np.ascontiguousarray(planes.T).view(np.dtype(f"<u{width}")).reshape(n)
        return out.astype(np.uint64 if width == 8 else np.int64)

    def blob(self) -> bytes:
        n = self.uvarint()
        out = bytes(self.buf[self.pos:self.pos + n])
        self.pos += n
        return out

    def keys(self) -> np.ndarray:
        flag = self.buf[self.pos]
        self.pos += 1
        if flag == 0:
            return np.cumsum(self.array("<i8"), dtype=np.int64)
        n = self.uvarint()
        return np.asarray([self.svarint() for _ in range(n)], dtype=object)


def seal(magic: bytes, payload: bytes) -> bytes:
    """Wrap a payload: magic, format version, zlib body, CRC32 trailer."""
    body = magic + bytes([FORMAT_VERSION]) + zlib.compress(payload, ZLIB_LEVEL)
    return body + struct.pack(">I", zlib.crc32(body))


def unseal(magic: bytes, data: bytes, what: str) -> bytes:
    """Verify and unwrap :func:`seal` output; raises IndexUnavailable on any mismatch."""
    _check(magic, data, what)
    return inflate(data[5:-4], what)


def _check(magic: bytes, data: bytes, what: str) -> None:
    if len(data) < 9 or data[:4] != magic:
        raise IndexUnavailable(f"{what} is not a Sieve {magic.decode()} file (bad magic): rebuild the index")
    (crc,) = struct.unpack(">I", data[-4:])
    if zlib.crc32(data[:-4]) != crc:
        raise IndexUnavailable(f"{what} failed its checksum (corrupt): rebuild the index")
    if data[4] != FORMAT_VERSION:
        raise IndexUnavailable(f"{what} has format version {data[4]}, this code reads "
                               f"{FORMAT_VERSION}: rebuild the index with this version")


def seal_raw(magic: bytes, payload: bytes) -> bytes:
    """Like :func:`seal` without the zlib body: for payloads that compress their own parts."""
    body = magic + bytes([FORMAT_VERSION]) + payload
    return body + struct.pack(">I", zlib.crc32(body))


def unseal_raw(magic: bytes, data: bytes, what: str) -> memoryview:
    """Verify and unwrap :func:`seal_raw` output (a view: no copy); raises IndexUnavailable."""
    _check(magic, data, what)
    return memoryview(data)[5:-4]


def inflate(data: bytes | memoryview, what: str) -> bytes:
    """zlib-decompress one part of a :func:`seal_raw` payload."""
    try:
        return zlib.decompress(data)
    except zlib.error as exc:  # pragma: no cover - the container's CRC makes this unlikely
        raise IndexUnavailable(f"{what} cannot be decompressed ({exc}): rebuild the index") from exc
