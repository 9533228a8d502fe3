"""64-bit hashes of string ids computed straight from Arrow buffers (no Python object per row).

The hash folds each id eight bytes at a time (an unaligned uint64 view of the data buffer), so hashing
ten million short ids costs a few vectorised numpy passes. Equal ids always hash equal; different ids
may collide, so callers treat equal hashes as *candidates* and confirm them exactly (formats'
``check_unique_pairs``).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

_HASHED_ID_MAX_BYTES = 256
_ORDERED_ID_MAX_BYTES = 64
# for an id of n <= 8 bytes read as a little-endian word: the mask keeping its n bytes, and n in the top byte
_KEEP_BYTES = np.array([(1 << (8 * n)) - 1 for n in range(9)], dtype=np.uint64)
_LENGTH_TAG = np.array([n << 56 for n in range(9)], dtype=np.uint64)


def _offsets_and_data(strings: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The value offsets (int64, len + 1) and the data bytes of a string array."""
    is_large = pa.types.is_large_string(strings.type)
    offsets = np.frombuffer(strings.buffers()[1], dtype=np.int64 if is_large else np.int32)
    offsets = offsets[strings.offset: strings.offset + len(strings) + 1].astype(np.int64)
    data_buffer = strings.buffers()[2]
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    return offsets, data


def byte_order_keys(strings: pa.Array, rows: np.ndarray) -> np.ndarray | None:
    """uint64 keys of ``strings[rows]`` whose order is byte-lexicographic order (trec_eval's ``strcmp``;
    equal to code-point order for UTF-8), computed from the Arrow buffers without materialising strings.

    Ids of at most 7 bytes (the common case) become one big-endian word, zero-padded, plus the length in
    its free lowest byte; ids of at most 8 bytes without NUL bytes become the word alone: one vectorised
    gather, no sort. Longer ids get dense ranks from a sort on (big-endian 8-byte words..., length): a
    zero-padded tie means one string is a prefix of the other, so the shorter comes first. Keys may use
    the whole uint64 range. None when a selected string is longer than _ORDERED_ID_MAX_BYTES (the
    caller then ranks with arrow).
    """
    offsets, data = _offsets_and_data(strings)
    starts = offsets[rows]
    lengths = offsets[rows + 1] - starts
    longest = int(lengths.max()) if len(lengths) else 0
    if longest > _ORDERED_ID_MAX_BYTES:
        return None
    if len(rows) == 0 or longest == 0:
        return lengths.astype(np.uint64)
    width = 8 * max(1, -(-longest // 8))
    position = np.arange(width)
    inside = position[None, :] < lengths[:, None]
    raw = data[np.minimum(starts[:, None] + position[None, :], len(data) - 1)]
    outside = ~inside
    raw[outside] = 0
    words = raw.view(">u8").astype(np.uint64)  # (n, width / 8), most significant byte first
    if longest <= 7:
        return words[:, 0] + lengths.astype(np.uint64)
    if longest == 8 and np.count_nonzero(raw == 0) == np.count_nonzero(outside):
        return words[:, 0]  # no NUL byte inside an id: zero padding cannot make two ids equal
    keys = [lengths] + [words[:, j] for j in range(words.shape[1] - 1, -1, -1)]
    order = np.lexsort(keys)
    differs = np.zeros(len(order), dtype=bool)
    for key in keys:
        ordered = key[order]
        differs[1:] |= ordered[1:] != ordered[:-1]
    ranks = np.empty(len(order), dtype=np.uint64)
    ranks[order] = np.cumsum(differs)
    return ranks


def order_keys(strings: pa.Array) -> np.ndarray | None:
    """Exact uint64 keys that sort like the strings (byte order) and are equal only for equal strings,
    for the common case of short ids: every id at most 7 bytes (big-endian bytes, zero-padded, plus the
    length in the free lowest byte), or at most 8 bytes with no NUL byte (zero padding is then
    unambiguous). None otherwise. One gather and three vectorised passes over the column.
    """
    offsets, data = _offsets_and_data(strings)
    lengths = np.diff(offsets)
    longest = int(lengths.max()) if len(lengths) else 0
    if longest > 8 or (longest == 8 and np.count_nonzero(data[offsets[0]: offsets[-1]] == 0)):
        return None
    padded = np.zeros(len(data) + 8, dtype=np.uint8)
    padded[: len(data)] = data
    words_at = np.ndarray(shape=(len(data) + 1,), dtype="<u8", buffer=padded, strides=(1,))
    keys = words_at[offsets[:-1]]  # little-endian: the id's first byte is the lowest
    keys &= _KEEP_BYTES[lengths]
    keys.byteswap(inplace=True)  # now the first byte is the most significant: integer order = byte order
    if longest <= 7:
        keys += lengths.astype(np.uint64)
    return keys


def string_hashes(strings: pa.Array) -> np.ndarray | None:
    """A 64-bit hash per string, vectorised over 8-byte words (one numpy pass per 8 bytes); when every
    id is at most 8 bytes long, the hash is the id's bytes with the length xor-ed into the top byte
    (collision-free when every id is at most 7 bytes long).

    None when some string is longer than _HASHED_ID_MAX_BYTES (the caller then hashes with arrow).
    """
    offsets, data = _offsets_and_data(strings)
    lengths = np.diff(offsets)
    longest = int(lengths.max()) if len(lengths) else 0
    if longest > _HASHED_ID_MAX_BYTES:
        return None
    data = data if longest else np.zeros(0, np.uint8)
    padded = np.zeros(len(data) + 8, dtype=np.uint8)
    padded[: len(data)] = data
    # little-endian uint64 starting at every byte offset (unaligned view, no copy)
    words_at = np.ndarray(shape=(len(data) + 1,), dtype="<u8", buffer=padded, strides=(1,))
    if longest <= 8:  # short ids: the bytes themselves, the length xor-ed into the top byte
        keys = words_at[offsets[:-1]]  # every start is <= len(data), a valid index of words_at
        keys &= _KEEP_BYTES[lengths]
        keys ^= _LENGTH_TAG[lengths]
        return keys
    hashes = lengths.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    starts = offsets[:-1]
    for word_start in range(0, longest, 8):
        words = words_at[np.minimum(starts + word_start, len(data))]
        remaining = np.clip(lengths - word_start, 0, 8).astype(np.uint64)
        partial_mask = (np.uint64(1) << (np.minimum(remaining, np.uint64(7)) * np.uint64(8))) - np.uint64(1)
        words &= np.where(remaining == 8, np.uint64(0xFFFFFFFFFFFFFFFF), partial_mask)
        hashes = (hashes ^ words) * np.uint64(0x100000001B3)
        hashes ^= hashes >> np.uint64(29)
    return hashes
