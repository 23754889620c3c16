"""Retrieval structures on disk (``fuse-<token>.svr``): a build's keys that are in one file each
(:mod:`..fuse`), beside the hashed-key pages that hold the rest.

A file is a sealed header (the parameters, repeated in the manifest's :class:`FuseRef`), then each
shard's segments, every segment ``segment_length`` slots of ``slot_bits`` bits (little-endian bit
order) followed by its CRC32. A key's four slots lie in four consecutive segments, so a lookup is
one ranged read of four segments whose position the manifest alone gives; a damaged or truncated
segment fails its CRC, which makes the reader do a full read.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..codec import Writer, seal, unseal
from ..errors import IndexUnavailable
from ..fuse import ARITY, Shard
from .folder import Folder

PACK_SLOTS = 1 << 20  # slots bit-packed at a time (bounded temporary arrays)


@dataclass(frozen=True)
class FuseRef:
    """One retrieval structure: its file, header length and every parameter a lookup needs."""

    name: str
    bytes: int
    header: int
    keys: int
    slot_bits: int
    fid_bits: int
    max_fid: int  # file ids 0..max_fid; max_fid + 1: "in the pages" (a key in several files)
    key_shift: int  # a key is its value's 64-bit hash >> key_shift (the build's packed file index bits)
    shard_bits: int  # shards by the hash's top bits
    shards: list[list[int]] = field(default_factory=list)  # [seed, segment length, start segments, keys]
    fpp: float = 0.0  # absent keys that name a file or the pages: (max_fid + 2) / 2**slot_bits
    one_file: int = 0  # keys mapped to their file (the others: to the pages)
    pages: str = ""  # the hashed structure holding this build's keys in several files (read for them only)

    def to_dict(self) -> dict[str, Any]:
        return {k: (list(map(list, v)) if k == "shards" else v) for k, v in vars(self).items()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> FuseRef:
        return cls(**d)

    def shard_list(self) -> list[Shard]:
        return [Shard(*s) for s in self.shards]

    def segment_bytes(self, shard: Shard) -> int:
        """Bytes of one segment of ``shard`` on disk (its slots, then a CRC32)."""
        return shard.segment_length * self.slot_bits // 8 + 4

    def shard_offsets(self) -> list[int]:
        """Byte offset of each shard's first segment in the file (and the end)."""
        out = [self.header]
        for s in self.shard_list():
            out.append(out[-1] + s.segments * self.segment_bytes(s))
        return out


def pack_slots(table: np.ndarray, bits: int) -> bytes:
    """``table``'s values, ``bits`` bits each, little-endian bit order (compiled when numba is
    installed, else numpy a chunk at a time: the same bytes)."""
    from ..fuse import compiled_available

    if compiled_available() and len(table):
        from .._fuse_compiled import pack

        out = np.zeros((len(table) * bits + 7) // 8, np.uint8)
        pack(np.ascontiguousarray(table, np.uint32), bits, out)
        return out.tobytes()
    parts = []
    for a in range(0, len(table), PACK_SLOTS):
        chunk = np.ascontiguousarray(table[a:a + PACK_SLOTS], "<u4").view(np.uint8).reshape(-1, 4)
        parts.append(np.packbits(np.unpackbits(chunk, axis=1, bitorder="little")[:, :bits],
                                 bitorder="little").tobytes())
    return b"".join(parts)


def slot_value(segment: bytes, j: int, bits: int) -> int:
    """Slot ``j`` of a segment's packed bytes."""
    bit = j * bits
    return (int.from_bytes(segment[bit >> 3:(bit >> 3) + 5], "little") >> (bit & 7)) & ((1 << bits) - 1)


class FuseFiles(Folder):
    """Writes and reads retrieval structures."""

    def write_fuse(self, parts: list[tuple[bytes, Shard]], *, slot_bits: int, fid_bits: int, max_fid: int,
                   key_shift: int, shard_bits: int, fpp: float, one_file: int, pages: str) -> FuseRef:
        """A structure of peeled tables (one per shard, in shard order), each packed by :func:`pack_slots`."""
        shards = [[s.seed, s.segment_length, s.starts, s.keys] for _, s in parts]
        header = seal(b"SVR1", bytes(_params(slot_bits, fid_bits, max_fid, key_shift, shard_bits, shards).buf))

        def chunks() -> Any:
            yield header
            for packed, s in parts:
                step = s.segment_length * slot_bits // 8
                for a in range(0, len(packed), step):
                    seg = packed[a:a + step]
                    yield seg + zlib.crc32(seg).to_bytes(4, "little")

        ref = self._write("fuse", ".svr", chunks(), sum(s.keys for _, s in parts))
        return FuseRef(ref.name, ref.bytes, len(header), ref.records, slot_bits, fid_bits, max_fid, key_shift,
                       shard_bits, shards, fpp, one_file, pages)

    def _fuse_range(self, ref: FuseRef, offset: int, length: int) -> bytes:
        data = self._read_range(ref.name, offset, length)
        if len(data) != length:
            raise IndexUnavailable(f"retrieval structure {self._full(ref.name)} is truncated (corrupt): "
                                   "rebuild the index")
        return data

    def read_fuse_segments(self, ref: FuseRef, shard: int, first: int) -> list[bytes]:
        """The :data:`..fuse.ARITY` segments from ``first`` of shard ``shard``: one ranged read, each
        segment's CRC checked."""
        s = ref.shard_list()[shard]
        size = self.segment_bytes_checked(ref, s, first)
        at = ref.shard_offsets()[shard] + first * size
        data = self._fuse_range(ref, at, ARITY * size)
        return [_checked_segment(data[i * size:(i + 1) * size], f"{self._full(ref.name)}@{at + i * size}")
                for i in range(ARITY)]

    @staticmethod
    def segment_bytes_checked(ref: FuseRef, s: Shard, first: int) -> int:
        if not 0 <= first < s.starts:
            raise IndexUnavailable(f"retrieval structure {ref.name} has no segment {first} (corrupt manifest): "
                                   "rebuild the index")
        return ref.segment_bytes(s)

    def check_fuse(self, ref: FuseRef, segments: bool = True) -> None:
        """Verify the header against the manifest and every segment's CRC (one read), or with
        ``segments=False`` the header and the last segment only (two small ranged reads)."""
        where = self._full(ref.name)
        data = unseal(b"SVR1", self._fuse_range(ref, 0, ref.header), where)
        want = bytes(_params(ref.slot_bits, ref.fid_bits, ref.max_fid, ref.key_shift, ref.shard_bits,
                             ref.shards).buf)
        offsets = ref.shard_offsets()
        if data != want or offsets[-1] != ref.bytes:
            raise IndexUnavailable(f"retrieval structure {where} does not match the manifest (corrupt): "
                                   "rebuild the index")
        if not segments:
            s = ref.shard_list()[-1] if ref.shards else None
            if s is not None and s.segments:
                size = ref.segment_bytes(s)
                _checked_segment(self._fuse_range(ref, ref.bytes - size, size), f"{where}@{ref.bytes - size}")
            return
        body = self._fuse_range(ref, 0, ref.bytes)
        for s, a in zip(ref.shard_list(), offsets, strict=False):
            size = ref.segment_bytes(s)
            for i in range(s.segments):
                _checked_segment(body[a + i * size:a + (i + 1) * size], f"{where}@{a + i * size}")


def _checked_segment(raw: bytes, where: str) -> bytes:
    seg = raw[:-4]
    if len(raw) < 4 or zlib.crc32(seg) != int.from_bytes(raw[-4:], "little"):
        raise IndexUnavailable(f"retrieval segment {where} failed its checksum (corrupt): rebuild the index")
    return seg


def _params(slot_bits: int, fid_bits: int, max_fid: int, key_shift: int, shard_bits: int,
            shards: list[list[int]]) -> Writer:
    w = Writer()
    for v in (slot_bits, fid_bits, max_fid, key_shift, shard_bits, len(shards)):
        w.uvarint(v)
    for s in shards:
        for v in s:
            w.uvarint(int(v))
    return w
