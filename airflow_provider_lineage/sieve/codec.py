"""Small binary codecs for index files: varints, key arrays, checksummed containers.

Every index file is ``MAGIC(4) | FORMAT_VERSION(1) | zlib(payload) | crc32(4, big endian)`` where
the CRC covers everything before it. Nothing here executes code on load (no pickle).
"""
from __future__ import annotations

import struct
import zlib

import numpy as np

from .errors import IndexUnavailable

FORMAT_VERSION = 1


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

    def keys(self) -> np.ndarray:
        flag = self.buf[self.pos]
        self.pos += 1
        if flag == 0:
            return np.cumsum(self.array("<i8"), dtype=np.int64)
        n = self.uvarint()
        return np.asarray([self.svarint() for _ in range(n)], dtype=object)


def seal(magic: bytes, payload: bytes) -> bytes:
    """Wrap a payload: magic, format version, zlib body, CRC32 trailer."""
    body = magic + bytes([FORMAT_VERSION]) + zlib.compress(payload, 6)
    return body + struct.pack(">I", zlib.crc32(body))


def unseal(magic: bytes, data: bytes, what: str) -> bytes:
    """Verify and unwrap :func:`seal` output; raises IndexUnavailable on any mismatch."""
    if len(data) < 9 or data[:4] != magic:
        raise IndexUnavailable(f"{what} is not a Sieve {magic.decode()} file (bad magic): rebuild the index")
    (crc,) = struct.unpack(">I", data[-4:])
    if zlib.crc32(data[:-4]) != crc:
        raise IndexUnavailable(f"{what} failed its checksum (corrupt): rebuild the index")
    if data[4] != FORMAT_VERSION:
        raise IndexUnavailable(f"{what} has format version {data[4]}, this code reads "
                               f"{FORMAT_VERSION}: rebuild the index with this version")
    try:
        return zlib.decompress(data[5:-4])
    except zlib.error as exc:  # pragma: no cover - CRC makes this unlikely
        raise IndexUnavailable(f"{what} cannot be decompressed ({exc}): rebuild the index") from exc
