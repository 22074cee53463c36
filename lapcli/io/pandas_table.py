"""A DataFrame that pandas wrote to HDF5 with ``to_hdf(format="table")``, read as a matrix: pandas
stores it as a group of records (index and value columns), not as one 2-D dataset."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import LapInputError


def is_pandas_table(node) -> bool:
    """A DataFrame pandas wrote with ``to_hdf(format="table")``: a group marked frame_table."""
    kind = node.attrs.get("pandas_type") if hasattr(node, "attrs") else None
    return (kind.decode() if isinstance(kind, bytes) else kind) == "frame_table" and "table" in node


def in_table_index(handle, name: str) -> bool:
    """Whether ``name`` lies in a PyTables index group, ``_i_T`` beside the table T it indexes (as pandas'
    to_hdf(format="table") writes), whose arrays are no costs (a name holding "_i_" is no sign of one)."""
    parts = name.split("/")
    return any(part.startswith("_i_") and part[3:] in handle["/".join(parts[:i]) or "/"]
               for i, part in enumerate(parts))


def read_pandas_table(path: Path, name: str, group):
    """The values of a pandas table as a matrix: its one values block (a frame of one dtype), or
    its numeric columns (``data_columns=True``); the index is not a cost."""
    table = group["table"][()] if hasattr(group["table"], "dtype") else None
    if table is None or table.dtype.names is None:
        raise LapInputError(f"{path}:{name} is marked a pandas table, but its 'table' holds no table's records")
    fields = [field for field in table.dtype.names if field != "index"]
    blocks = [field for field in fields if field.startswith("values_block_")]
    if len(blocks) == 1 and len(fields) == 1:
        values = table[blocks[0]]
    elif not blocks and all(table.dtype[field].shape == () for field in fields):
        values = np.stack([table[field] for field in fields], axis=1) if fields else np.empty((len(table), 0))
    else:
        raise LapInputError(f"{path}:{name} is a pandas table with columns of several dtypes; save it with one "
                            "(df.astype(float).to_hdf(...)) or as a plain array")
    if values.ndim != 2 or values.dtype.kind not in "biuf":
        raise LapInputError(f"{path}:{name} is a pandas table whose values are not a numeric matrix")
    return np.ascontiguousarray(values)
