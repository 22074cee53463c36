"""A ragged batch's float members solved as integers (``dtype="int32"`` or ``"int64"``), converted
before packing (lapcli.ragged.pack), whose +inf padding only integers one above the largest cost
replace; a packed stack's refusal of an int dtype told in the members' own terms; and whether a
requested dtype is the one every member holds already (it then changes nothing)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .arrays import all_true
from .errors import LapInputError, members_text
from .problem import check_entries, invalid_entries
from .ragged import Members, concatenated
from .work_dtypes import floats_as_integers


def holds_dtype(members: Members, requested: str | None) -> bool:
    """Whether every member is already of the ``requested`` dtype (None: asks for none), so that a
    route solving each member as it is (scipy-batch) honours it without packing them into one
    padded stack (a 200 × 200 member beside 500 of 1 × 1, asked float64: 2.9 s and 1 GB, not 0.3 s)."""
    if requested is None:
        return True
    own = members.dtypes if members.dtypes is not None else {members.dtype}
    return all(np.dtype(dtype) == np.dtype(requested) for dtype in own)


def as_integers(members: Members, requested: str, maximize: bool = False) -> Members:
    """int64 members, refused as a stack's are (lapcli.work's rules) unless every value is an
    integer; integer members as they are. NaN or the wrong-signed infinity is refused as a stack's
    entries are, naming its members, before forbidden (+inf) entries are refused for the dtype."""
    xp = members.xp
    matrices = [members.member(b) for b in range(len(members))]
    if all(m.dtype.kind == "f" for m in matrices):  # one pass over them all (20,000 members: ~15 ms)
        matrices = [concatenated(matrices, members.rows, members.cols, members.origin, xp).flat]
    infinite = any(m.dtype.kind == "f" and m.size and not all_true(xp.isfinite(m)) for m in matrices)
    if infinite:
        _refuse_invalid_entries(members, maximize)
    if any(m.dtype.kind == "u" and m.size and int(m.max()) >= 2**63 for m in matrices):
        raise LapInputError(f"costs do not fit {requested}")
    whole = [floats_as_integers(m, xp, requested, infinite) if m.dtype.kind == "f" else m for m in matrices]
    packed = concatenated(whole, members.rows, members.cols, members.origin, xp, np.int64)
    return replace(packed, padded_rows=members.padded_rows)


def _refuse_invalid_entries(members: Members, maximize: bool) -> None:
    """scipy's error for NaN or the wrong-signed infinity (lapcli.problem.check_entries' rule), naming
    the members that hold one (a check a member, only where some entry is not finite)."""
    bad = []
    for b in range(len(members)):
        try:
            check_entries(members.member(b)[None], members.xp, maximize)
        except LapInputError:
            bad.append(b)
    if bad:
        raise invalid_entries(f": {members_text(bad, len(members))}")


def range_refusal(members: Members, maximize: bool, requested: str) -> LapInputError:
    """The refusal of an int ``requested`` dtype by the packed stack (lapcli.work), in the members'
    terms: the stack's range holds the dummy rows' 0 and the padding's cost one past the extreme,
    which are not the caller's, and the padding alone may be what the dtype cannot hold."""
    own = [members.member(b) for b in range(len(members)) if members.rows[b] * members.cols[b]]
    lo, hi = min(int(m.min()) for m in own), max(int(m.max()) for m in own)  # integers: floats were converted
    what = "costs"
    if maximize:
        lo, hi, what = -hi, -lo, "the costs negated to maximise"
    info = np.iinfo(requested)
    if info.min <= lo and hi <= info.max:
        return LapInputError(f"{what} lie in [{lo}, {hi}], but a ragged batch pads its members with a cost one "
                             f"past them, which {requested} does not hold; ask for dtype int64 or float64")
    return LapInputError(f"{what} lie in [{lo}, {hi}] and do not fit {requested}; ask for dtype int64 or float64")
