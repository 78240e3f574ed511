"""``ASCEND_PROFILER_OUTPUT/step_trace_time.csv``: one row per iteration, torch_npu's header.

msprof-analyze reads this file for a text-only copy of the layout (no database
beside it) and MindStudio Insight shows it as the step summary. Header, exactly:

    Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,Stage,Bubble,
    Communication(Not Overlapped and Exclude Receive),Preparing

Values are our cluster table's (``cluster.step_table.rank_rows``) in whole µs,
so msprof-analyze's ``cluster_step_trace_time.csv`` equals ours. Only numbers:
msprof-analyze turns any other text into 0 with a warning, so a value we do not
know (``Preparing`` of a first iteration, phases of an iteration without FP/BP
points) is written as 0 here while our own CSV says ``N/A``.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from npu_tf_profiling.reports.encoders.csv_file import write_int_csv

from npu_tf_profiling.reports.cluster import step_table as cst

# (CSV header, cluster.step_table column); analysis.db's StepTraceTime has the same values in this order.
FIELDS = [
    ("Step", cst.STEP),
    ("Computing", cst.COMPUTING),
    ("Communication(Not Overlapped)", cst.COMM_NOT_OVERLAPPED),
    ("Overlapped", cst.OVERLAPPED),
    ("Communication", cst.COMMUNICATION),
    ("Free", cst.FREE),
    ("Stage", cst.STAGE),
    ("Bubble", cst.BUBBLE),
    ("Communication(Not Overlapped and Exclude Receive)", cst.COMM_NOT_OVERLAPPED_EXCL_RECEIVE),
    ("Preparing", cst.PREPARING),
]
HEADER = [name for name, _ in FIELDS]


def step_values(steps: pd.DataFrame) -> pd.DataFrame:
    """The file's rows: Step, then the nine durations in whole µs (0 where unknown)."""
    out = {cst.STEP: steps[cst.STEP].astype("int64").to_numpy()}
    for _, column in FIELDS[1:]:  # cst.whole_us's rounding on the arrays: a rank's layout builds this twice
        whole = np.floor(steps[column].to_numpy(dtype="float64") + 0.5)
        out[column] = np.where(np.isnan(whole), 0.0, whole).astype("int64")
    return pd.DataFrame(out)


def write_step_trace_time_csv(steps: pd.DataFrame, path: Path) -> None:
    """Write one rank's CSV, streamed from the columns."""
    values = step_values(steps)
    write_int_csv(path, HEADER, [(values[c].to_numpy(dtype="int64"), None) for c in values.columns])
