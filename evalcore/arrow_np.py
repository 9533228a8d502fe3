"""numpy views of Arrow arrays, and Arrow arrays of numpy data, without pyarrow's pandas layer.

pyarrow routes ``Array.to_numpy``, ``np.asarray(array)``, ``pa.array(ndarray)``, ``pa.scalar`` and every
``pyarrow.compute`` call given a Python literal through its pandas-compatibility code, which imports pandas
on first use: 0.3 s, about an eighth of a 10M-row ``evalcore evaluate``. The engine's streaming path only
needs flat numeric columns and a few literals, whose Arrow buffers already have numpy's layout, so these
helpers read and build them directly (zero-copy where possible) and fall back to pyarrow for anything
else (nulls, nested or string types). ``tests/test_arrow_np.py`` checks both directions and that the
parquet evaluation path never imports pandas.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

_NUMPY_OF = {
    pa.int8(): np.int8, pa.int16(): np.int16, pa.int32(): np.int32, pa.int64(): np.int64,
    pa.uint8(): np.uint8, pa.uint16(): np.uint16, pa.uint32(): np.uint32, pa.uint64(): np.uint64,
    pa.float32(): np.float32, pa.float64(): np.float64,
}
_ARROW_OF = {np.dtype(numpy_type): arrow_type for arrow_type, numpy_type in _NUMPY_OF.items()}


def to_numpy(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """The values as a numpy array: a read-only view of the Arrow buffer for null-free numeric arrays, an
    unpacked copy for null-free booleans, ``Array.to_numpy(zero_copy_only=False)`` otherwise."""
    if isinstance(values, pa.ChunkedArray):
        values = values.chunk(0) if values.num_chunks == 1 else values.combine_chunks()
    if values.null_count == 0:
        dtype = _NUMPY_OF.get(values.type)
        if dtype is not None:
            data = values.buffers()[1]
            if data is None or len(values) == 0:
                return np.zeros(0, dtype=dtype)
            return np.frombuffer(data, dtype=dtype, count=len(values), offset=values.offset * np.dtype(dtype).itemsize)
        if pa.types.is_boolean(values.type):
            if len(values) == 0:
                return np.zeros(0, dtype=bool)
            bits = np.frombuffer(values.buffers()[1], dtype=np.uint8)
            return np.unpackbits(bits, bitorder="little", count=values.offset + len(values))[values.offset:].astype(bool)
    return values.to_numpy(zero_copy_only=False)


def from_numpy(values: np.ndarray) -> pa.Array:
    """A numeric or boolean numpy array as an Arrow array (no nulls), copying only to make it contiguous."""
    values = np.ascontiguousarray(values)
    if values.dtype == np.bool_:
        packed = np.packbits(values, bitorder="little")
        return pa.Array.from_buffers(pa.bool_(), len(values), [None, pa.py_buffer(packed)])
    arrow_type = _ARROW_OF.get(values.dtype)
    if arrow_type is None:
        raise TypeError(f"from_numpy handles numeric and boolean arrays, got {values.dtype}")
    return pa.Array.from_buffers(arrow_type, len(values), [None, pa.py_buffer(values)])


def indices(values) -> pa.Array:
    """Row indices (anything integer-like) as an int64 Arrow array, for ``take``."""
    return from_numpy(np.asarray(values, dtype=np.int64))


def scalar(value, arrow_type: pa.DataType) -> pa.Scalar:
    """A numeric or boolean literal as an Arrow scalar of ``arrow_type`` (for compute functions)."""
    numpy_type = bool if arrow_type == pa.bool_() else _NUMPY_OF[arrow_type]
    return from_numpy(np.array([value], dtype=numpy_type))[0]


def strings(values: list[str]) -> pa.Array:
    """Python strings as an Arrow string array, built from their UTF-8 bytes and offsets."""
    encoded = [value.encode("utf-8") for value in values]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int32)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    return pa.Array.from_buffers(pa.string(), len(encoded), [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))])


def to_numpy_filled(values: pa.Array | pa.ChunkedArray, fill) -> np.ndarray:
    """:func:`to_numpy` with nulls replaced by ``fill`` (e.g. -1 for "not found" positions)."""
    if values.null_count == 0:
        return to_numpy(values)
    import pyarrow.compute as pc

    return to_numpy(pc.fill_null(values, scalar(fill, values.type)))
