"""The model of one sweep row: estimate's Report flattened with dots, as `estimate --format csv` writes it, without
``explain``. `estimator.planning.sweep` builds rows as plain dicts (a million model instances would cost more than
the sweep itself); this model names and types their keys for the JSON Schema (`estimator schema sweep`), and the
tests check that the rows' keys are its fields, in order.
"""

from __future__ import annotations

from estimator.inference.report import Report
from estimator.report import flat_model

LEFT_OUT = ("explain",)  # per-row arithmetic would dwarf the row; `estimate --explain` prints it for one point

SweepRow = flat_model(Report, "SweepRow", leave_out=LEFT_OUT)
