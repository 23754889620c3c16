"""Merge-on-read deltas of the segment structure: sorted (key, file id) records."""
from __future__ import annotations

import numpy as np

from ..codec import Reader, Writer, seal
from ..errors import IndexUnavailable
from .folder import FileRef, Folder


class DeltaFiles(Folder):
    """Writes and reads ``delta-<token>.svd``."""

    def write_delta(self, keys: np.ndarray, fids: np.ndarray) -> FileRef:
        """Merge-on-read delta: records (key, file id) sorted by key."""
        order = np.argsort(keys, kind="stable")
        k = keys[order]
        w = Writer()
        if k.dtype != object and len(k) and int(k[-1]) - int(k[0]) < 1 << 62:
            w.buf.append(0)  # byte planes of the key gaps: compact, and fast to compress
            w.svarint(int(k[0]))
            w.uints(np.diff(k.astype(np.int64)))
        else:
            w.buf.append(1)
            w.keys(k)
        w.uints(np.asarray(fids, np.int64)[order])
        return self._write("delta", ".svd", seal(b"SVD2", bytes(w.buf)), len(keys))

    def read_delta(self, ref: FileRef) -> tuple[np.ndarray, np.ndarray]:
        r = Reader(self._read(ref, b"SVD2"))
        flag = r.buf[r.pos]
        r.pos += 1
        if flag == 0:
            first = r.svarint()
            gaps = r.uints().astype(np.int64)
            keys = np.empty(len(gaps) + 1, np.int64)
            keys[0] = first
            np.cumsum(gaps, out=keys[1:])
            keys[1:] += first
        else:
            keys = r.keys()
        fids = r.uints().astype(np.uint32)
        if len(fids) != len(keys):
            raise IndexUnavailable(f"delta {ref.name} has columns of different lengths (corrupt): rebuild the index")
        return keys, fids

