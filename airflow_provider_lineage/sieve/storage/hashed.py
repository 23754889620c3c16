"""Hashed-key structures on disk (``hkeys-<token>.svh``): one per build, plus one small one per
sync that added files (merged into one by ``compact``).

A file is a sealed header (fingerprint bits, page bits, file id width, key and pair counts, each
page's byte length, and each file's minimum and maximum key for range predicates), then the pages
(:mod:`..fingerprints`), each sealed on its own (magic, version, CRC32). A lookup reads the header
once (a ranged read) and then the one page its key falls in (a ranged read): a corrupt or
truncated header or page fails its checksum, which makes the reader do a full read.
"""
from __future__ import annotations

import base64
import itertools
import tempfile
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..codec import Reader, Writer, seal, seal_raw, unseal, unseal_raw
from ..errors import IndexUnavailable, SieveError
from ..fingerprints import Page, decode_page, encode_pages, group_pairs, page_bits_for
from .folder import FileRef, Folder


@dataclass(frozen=True)
class HashedRef:
    """One hashed-key structure: its file and the length of its header (read first)."""

    name: str
    bytes: int
    header: int
    keys: int
    pairs: int
    # The page table, copied into the manifest so that a point lookup reads one page and nothing
    # else of the structure: fingerprint bits, page bits, file id width and the pages' byte lengths
    # (zlib'd varints, base64). The header repeats them and is read for ranges and checks.
    layout: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dict(vars(self))  # flat fields of plain values: asdict's deep copy is not needed

    def page_table(self) -> tuple[int, int, int, np.ndarray] | None:
        """(fingerprint bits, page bits, file id width, byte offset of each page and the end), or None."""
        if not self.layout:
            return None
        try:
            r = Reader(zlib.decompress(base64.b64decode(self.layout)))
            fp_bits, page_bits, fid_width = r.uvarint(), r.uvarint(), r.uvarint()
            lengths = r.uints().astype(np.int64)
        except (ValueError, IndexError, zlib.error) as exc:
            raise IndexUnavailable(
                f"the page table of {self.name} in the manifest is corrupt: rebuild the index"
            ) from exc
        starts = np.concatenate([[self.header], self.header + np.cumsum(lengths)]).astype(np.int64)
        if len(lengths) != 1 << page_bits or int(starts[-1]) != self.bytes:
            raise IndexUnavailable(f"the page table of {self.name} does not match the file: rebuild the index")
        return fp_bits, page_bits, fid_width, starts


@dataclass
class HashedHeader:
    fp_bits: int
    page_bits: int
    fid_width: int
    keys: int
    pairs: int
    page_start: np.ndarray  # byte offset of each page in the file, and the end
    file_ids: np.ndarray  # files with keys in this structure (sorted)
    file_min: np.ndarray  # their smallest and largest key (ordered keys of :mod:`..keys`)
    file_max: np.ndarray


SPOOL_BYTES = 64 << 20  # sealed pages held in memory up to this size; beyond it they go to a temporary file
SPOOL_CHUNK = 8 << 20  # bytes read back from the temporary file at a time while the structure is written


class PageSink:
    """A structure's pages, sealed as they are added (in page order), held until the structure is
    written: in memory up to ``spool_bytes``, then in an unnamed temporary file of the system's temp
    dir (``TMPDIR``), so a large build holds neither its encoded pages nor a joined copy of them. A
    failed write there (disk full) is a :class:`..errors.SieveError` naming the fix; the file goes
    when the sink is closed (or collected)."""

    def __init__(self, spool_bytes: int | None = None) -> None:
        self.lengths: list[int] = []
        self._held: list[bytes] = []
        self._held_bytes = 0
        self._spool_bytes = SPOOL_BYTES if spool_bytes is None else spool_bytes
        self._file: Any = None

    def add(self, page: bytes) -> None:
        sealed = seal_raw(b"SVP1", page)
        self.lengths.append(len(sealed))
        if self._file is None and self._held_bytes + len(sealed) <= self._spool_bytes:
            self._held.append(sealed)
            self._held_bytes += len(sealed)
            return
        if self._file is None:
            try:
                self._file = tempfile.TemporaryFile(prefix="sieve-pages-")  # noqa: SIM115 - closed by close()
            except OSError as exc:
                raise self._error(exc) from exc
            held, self._held, self._held_bytes = self._held, [], 0
            for p in held:
                self._spool(p)
        self._spool(sealed)

    def extend(self, pages: Iterable[bytes]) -> None:
        for p in pages:
            self.add(p)

    def _spool(self, data: bytes) -> None:
        try:
            self._file.write(data)
        except OSError as exc:
            raise self._error(exc) from exc

    @staticmethod
    def _error(exc: OSError, doing: str = "spool its pages to") -> SieveError:
        return SieveError(f"the build could not {doing} {tempfile.gettempdir()} ({exc}): free space there or point "
                          "TMPDIR to a larger disk")

    def chunks(self) -> Iterator[bytes]:
        """The sealed pages' bytes in order (from the temporary file: a chunk at a time)."""
        yield from self._held
        if self._file is None:
            return
        try:
            self._file.flush()
            self._file.seek(0)
        except OSError as exc:
            raise self._error(exc, "read back its spooled pages from") from exc
        while chunk := self._read_chunk():
            yield chunk

    def _read_chunk(self) -> bytes:
        try:
            return self._file.read(SPOOL_CHUNK)
        except OSError as exc:  # not the index folder's fault: a SieveError, not IndexNotWritable
            raise self._error(exc, "read back its spooled pages from") from exc

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        self._held = []


class HashedFiles(Folder):
    """Writes and reads hashed-key structures."""

    def write_hashed(self, fps: np.ndarray, fids: np.ndarray, fp_bits: int, file_ids: np.ndarray,
                     file_min: np.ndarray, file_max: np.ndarray) -> HashedRef:
        """A structure over (fingerprint, file id) pairs, with each file's key range."""
        gfps, counts, gfids = group_pairs(fps, fids)
        return self.write_hashed_groups(gfps, counts, gfids, fp_bits, file_ids, file_min, file_max)

    def write_hashed_groups(self, gfps: np.ndarray, counts: np.ndarray, gfids: np.ndarray, fp_bits: int,
                            file_ids: np.ndarray, file_min: np.ndarray, file_max: np.ndarray) -> HashedRef:
        """A structure over grouped pairs (:func:`..fingerprints.group_pairs`' output)."""
        page_bits = page_bits_for(len(gfps), fp_bits)
        fid_width = max(1, int(gfids.max()).bit_length()) if len(gfids) else 1
        pages = encode_pages(gfps, counts, gfids, fp_bits, page_bits, fid_width)
        return self.write_hashed_pages(pages, fp_bits, page_bits, fid_width, len(gfps), len(gfids), file_ids,
                                       file_min, file_max)

    def write_hashed_pages(self, pages: list[bytes] | PageSink, fp_bits: int, page_bits: int, fid_width: int,
                           keys: int, pairs: int, file_ids: np.ndarray, file_min: np.ndarray, file_max: np.ndarray
                           ) -> HashedRef:
        """A structure from its encoded pages (in page order; see :func:`..fingerprints.encode_page`),
        or from a :class:`PageSink` of them (closed here): written header first, then the pages,
        streamed (no joined copy)."""
        sink = pages if isinstance(pages, PageSink) else PageSink(spool_bytes=1 << 62)
        if sink is not pages:
            sink.extend(pages)
        try:
            return self._write_sink(sink, fp_bits, page_bits, fid_width, keys, pairs, file_ids, file_min, file_max)
        finally:
            sink.close()

    def _write_sink(self, sink: PageSink, fp_bits: int, page_bits: int, fid_width: int, keys: int, pairs: int,
                    file_ids: np.ndarray, file_min: np.ndarray, file_max: np.ndarray) -> HashedRef:
        h = Writer()
        for v in (fp_bits, page_bits, fid_width, keys, pairs):
            h.uvarint(v)
        h.uints(np.asarray(sink.lengths, np.int64))
        order = np.argsort(file_ids, kind="stable")
        h.uints(np.asarray(file_ids, np.int64)[order])
        h.keys(np.asarray(file_min)[order])
        h.keys(np.asarray(file_max)[order])
        header = seal(b"SVH1", bytes(h.buf))
        ref = self._write("hkeys", ".svh", itertools.chain([header], sink.chunks()), pairs)
        t = Writer()
        for v in (fp_bits, page_bits, fid_width):
            t.uvarint(v)
        t.uints(np.asarray(sink.lengths, np.int64))
        layout = base64.b64encode(zlib.compress(bytes(t.buf), 9)).decode()
        return HashedRef(ref.name, ref.bytes, len(header), keys, pairs, layout)

    def _range(self, ref: HashedRef, offset: int, length: int) -> bytes:
        return self._read_range(ref.name, offset, length)

    def read_hashed_header(self, ref: HashedRef) -> HashedHeader:
        where = self._full(ref.name)
        data = unseal(b"SVH1", self._range(ref, 0, ref.header), where)
        try:
            r = Reader(data)
            fp_bits, page_bits, fid_width, keys, pairs = (r.uvarint() for _ in range(5))
            lengths = r.uints().astype(np.int64)
            file_ids = r.uints().astype(np.int64)
            fmin, fmax = r.keys(), r.keys()
        except (IndexError, ValueError) as exc:
            raise IndexUnavailable(f"hashed-key header of {where} is truncated (corrupt): rebuild the index") from exc
        starts = np.concatenate([[ref.header], ref.header + np.cumsum(lengths)]).astype(np.int64)
        if len(lengths) != 1 << page_bits or int(starts[-1]) != ref.bytes or keys != ref.keys \
                or not len(file_ids) == len(fmin) == len(fmax):
            raise IndexUnavailable(f"hashed-key header of {where} does not match the file (corrupt or "
                                   "truncated): rebuild the index")
        return HashedHeader(fp_bits, page_bits, fid_width, keys, pairs, starts, file_ids, fmin, fmax)

    def read_hashed_page(self, ref: HashedRef, header: HashedHeader | None, page: int, data: bytes | None = None,
                         *, starts: np.ndarray | None = None, fid_width: int = 0) -> Page:
        """Page ``page`` (one ranged read), located by the header or by the manifest's page table."""
        if header is not None:
            starts, fid_width = header.page_start, header.fid_width
        assert starts is not None
        payload, where = self._page_payload(ref, starts, page, data)
        return decode_page(payload, fid_width, where)

    def _page_payload(self, ref: HashedRef, starts: np.ndarray, page: int, data: bytes | None = None
                      ) -> tuple[bytes, str]:
        """Page ``page``'s bytes with its length and checksum checked (not decoded), and where it is."""
        a, b = int(starts[page]), int(starts[page + 1])
        where = f"{self._full(ref.name)}@{a}"
        raw = data[a:b] if data is not None else self._range(ref, a, b - a)
        if len(raw) != b - a:
            raise IndexUnavailable(f"hashed-key page {where} is truncated (corrupt): rebuild the index")
        return unseal_raw(b"SVP1", raw, where), where

    def check_hashed(self, ref: HashedRef, pages: bool = True) -> None:
        """Verify a structure's header and every page checksum (one read, no page decoded); with
        ``pages=False`` only the header and the last page (two small ranged reads: a missing or
        truncated file, a damaged header or page table, but not a damaged page in the middle)."""
        header = self.read_hashed_header(ref)
        if not pages:  # the last page: one ranged read, its length and checksum checked
            self._page_payload(ref, header.page_start, len(header.page_start) - 2)
            return
        data = self._range(ref, 0, ref.bytes)
        if len(data) != ref.bytes:
            raise IndexUnavailable(f"index file {self._full(ref.name)} is truncated (corrupt): rebuild the index")
        starts = header.page_start.tolist()
        for a, b in itertools.pairwise(starts):
            unseal_raw(b"SVP1", data[a:b], f"{self._full(ref.name)}@{a}")

    def read_hashed_pairs(self, ref: HashedRef) -> tuple[HashedHeader, np.ndarray, np.ndarray]:
        """Every (fingerprint, file id) pair of a structure (one read; for compaction and checks)."""
        header = self.read_hashed_header(ref)
        data = self._range(ref, 0, ref.bytes)
        if len(data) != ref.bytes:
            raise IndexUnavailable(f"index file {self._full(ref.name)} is truncated (corrupt): rebuild the index")
        low_bits = np.uint64(header.fp_bits - header.page_bits)
        fps, counts, fids = [], [], []
        for p in range(1 << header.page_bits):
            page = self.read_hashed_page(ref, header, p, data)
            fps.append((np.uint64(p) << low_bits) | page.low)
            counts.append(page.starts[1:] - page.starts[:-1])
            fids.append(page.fids)
        if not fps:
            return header, np.empty(0, np.uint64), np.empty(0, np.uint32)
        return header, np.repeat(np.concatenate(fps), np.concatenate(counts)), np.concatenate(fids)


def hashed_file_ref(ref: HashedRef) -> FileRef:
    return FileRef(ref.name, ref.bytes, 0, ref.pairs)
