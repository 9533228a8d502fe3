"""64-bit integer keys for string ids, computed straight from Arrow buffers (no Python object per row).

A key mixes an id's length with its first and last eight bytes, so hashing ten million ids costs a few
vectorised numpy passes. Different ids can share a key only when they are longer than 16 bytes and agree
on length, prefix and suffix, or through the final 64-bit mix; callers therefore treat equal keys as
*candidates* and confirm them by comparing the strings (see :func:`equal_strings`).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_BYTE = np.arange(8)
_M1 = np.uint64(0x9E3779B97F4A7C15)
_M2 = np.uint64(0xC2B2AE3D27D4EB4F)
_M3 = np.uint64(0x165667B19E3779F9)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser: spreads every input bit over the whole word."""
    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> np.uint64(27))
    x = x * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def string_keys(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """uint64 key per string (nulls are not expected: readers reject them)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if pa.types.is_string(values.type):
        offset_type = np.int32
    else:
        values = values if pa.types.is_large_string(values.type) else values.cast(pa.large_string())
        offset_type = np.int64
    _, offsets_buffer, data_buffer = values.buffers()
    offsets = np.frombuffer(offsets_buffer, dtype=offset_type)[values.offset: values.offset + len(values) + 1]
    offsets = offsets.astype(np.int64)
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    lo, hi = int(offsets[0]) if len(offsets) else 0, int(offsets[-1]) if len(offsets) else 0
    padded = np.zeros(hi - lo + 16, dtype=np.uint8)
    padded[: hi - lo] = data[lo:hi]
    start = offsets[:-1] - lo
    length = offsets[1:] - offsets[:-1]
    inside = _BYTE[None, :] < length[:, None]
    first = np.where(inside, padded[start[:, None] + _BYTE], 0).astype(np.uint8)
    last_start = np.maximum(start + length - 8, start)
    last = np.where(inside, padded[last_start[:, None] + _BYTE], 0).astype(np.uint8)
    first_word = np.ascontiguousarray(first).view(np.uint64).ravel()
    last_word = np.ascontiguousarray(last).view(np.uint64).ravel()
    return _mix(_mix(first_word * _M1 ^ length.astype(np.uint64)) ^ last_word * _M2)


def combine(query_codes: np.ndarray, id_keys: np.ndarray) -> np.ndarray:
    """Key of a (query, id) pair from a query's integer code and the id's key."""
    return _mix(id_keys ^ (query_codes.astype(np.uint64) * _M3))


def equal_strings(left: pa.Array, right: pa.Array) -> np.ndarray:
    """Element-wise exact equality of two string arrays as a numpy bool array."""
    if len(left) == 0:
        return np.zeros(0, dtype=bool)
    return pc.equal(left, right).to_numpy(zero_copy_only=False)
