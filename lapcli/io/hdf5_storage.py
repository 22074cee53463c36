"""Where an HDF5 dataset's values lie, checked before they are read: HDF5 gives its fill value (0)
for what it cannot find (a virtual dataset's missing source, a short external raw file) and for
what was never written, and those zeros must not be solved as costs."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import LapInputError


def check_storage_written(path: Path, dataset: str, node) -> None:
    """Refuse a dataset whose values lie where HDF5 finds nothing: it reads the fill value (0) for
    storage never allocated (chunks never written too, unless the writer set a fill value), for a
    virtual dataset's missing source file or dataset and past the end of a short external raw file,
    costs nobody wrote. Files are looked for where HDF5 looks by default: a virtual source under
    HDF5_VDS_PREFIX, as named, or beside the file (by its name alone too); an external file under
    HDF5_EXTFILE_PREFIX or as named (from the working folder)."""
    import h5py
    from h5py import h5d

    if (node.size and not node.is_virtual and not node.external
            and node.id.get_space_status() != h5d.SPACE_STATUS_ALLOCATED
            and node.id.get_create_plist().fill_value_defined() != h5d.FILL_VALUE_USER_DEFINED):
        # created and not (wholly) written, as a writer that stopped leaves it; a fill value the
        # writer chose stands for the values it did not write, the default 0 for nothing
        raise LapInputError(f"{path}:{dataset} was never written, or only in part: HDF5 reads 0 where no value "
                            "is stored")
    beside = Path(node.file.filename).parent

    def found(name: str, variable: str, *more: Path) -> Path | None:
        prefixes = [Path(p.replace("${ORIGIN}", str(beside))) for p in os.environ.get(variable, "").split(":") if p]
        places = [*(prefix / name for prefix in prefixes), Path(name), *more]
        return next((place for place in places if place.is_file()), None)

    for source in node.virtual_sources() if node.is_virtual else ():
        if source.file_name == ".":
            continue
        place = found(source.file_name, "HDF5_VDS_PREFIX", beside / source.file_name, beside / Path(source.file_name).name)
        try:
            with h5py.File(place, "r") as held:
                present = source.dset_name in held
        except (OSError, TypeError):  # not found (None), or no HDF5 file there
            present = False
        if not present:
            raise LapInputError(f"{path}:{dataset} is a virtual dataset whose source {source.file_name}:"
                                f"{source.dset_name} is missing")
    needed = node.size * node.dtype.itemsize  # the external files' segments are read in order
    for name, offset, size in node.external or ():
        place, wanted = found(name, "HDF5_EXTFILE_PREFIX"), min(size, needed)
        needed -= wanted
        if wanted and (place is None or place.stat().st_size < offset + wanted):
            raise LapInputError(f"{path}:{dataset} is stored in {name}, which is missing or shorter than the dataset")
