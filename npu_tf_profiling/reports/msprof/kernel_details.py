"""``kernel_details.csv``: one row per task (per op execution) of the task_trace window.

torch_npu's per-task table, which msprof-analyze's ``advisor`` and ``compare``
read for a text-only copy (CANN's ``op_summary`` has the same per-task
columns under other names: Op Name, OP Type, Task Type, Task Start Time(us),
Task Duration(us), Task Wait Time(us)). Columns and how we fill them:

======================= ==========================================================================
``Step Id``             Iteration ID of the task's iteration (the step trace's)
``Model ID``            the training graph's Model ID
``Task ID``             the task's index in this rank's task table (the database's ``globalTaskId``)
``Stream ID``           a GPU stream, else the TensorFlow thread (as in our task_time CSV)
``Name`` / ``Type``     the TensorFlow op name / op type
``OP State``            ``static``: the op ran inside a graph built once and run each
                        step (graph mode), CANN's static execution, not compiled per call
``Accelerator Core``    our Task Type: ``CPU``, ``GPU kernel``, ``host CPU``, ``communication``
``Start Time(us)``      the op's start, µs since the Unix epoch, 3 decimals (StepStats ns)
``Duration(us)``        the op's duration
``Wait Time(us)``       the idle gap on its track before it (our Task Wait)
other columns           ``N/A``: block counts, HF32, shapes, types, formats and context ids
                        are Ascend kernel properties TensorFlow's step stats do not carry
======================= ==========================================================================
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from npu_tf_profiling.reports.task.op_summary import format_us

OP_STATE_STATIC = "static"
NA = "N/A"
HEADER = [
    "Step Id",
    "Model ID",
    "Task ID",
    "Stream ID",
    "Name",
    "Type",
    "OP State",
    "Accelerator Core",
    "Start Time(us)",
    "Duration(us)",
    "Wait Time(us)",
    "Block Num",
    "Mix Block Num",
    "HF32 Eligible",
    "Input Shapes",
    "Input Data Types",
    "Input Formats",
    "Output Shapes",
    "Output Data Types",
    "Output Formats",
    "Context ID",
]


def kernel_details_csv(tasks: pd.DataFrame) -> str:
    """The CSV text of one rank's tasks (``rank_model.TASK_COLUMNS``)."""
    start = tasks["start_ns"].to_numpy(dtype="int64")
    end = tasks["end_ns"].to_numpy(dtype="int64")
    frame = pd.DataFrame(
        {
            "Step Id": tasks["step"].to_numpy(),
            "Model ID": tasks["model_id"].to_numpy(),
            "Task ID": np.arange(len(tasks)),
            "Stream ID": tasks["stream_id"].to_numpy(),
            "Name": tasks["name"].to_numpy(),
            "Type": tasks["op_type"].to_numpy(),
            "OP State": OP_STATE_STATIC,
            "Accelerator Core": tasks["task_type"].to_numpy(),
            "Start Time(us)": format_us(start.tolist()),
            "Duration(us)": format_us((end - start).tolist()),
            "Wait Time(us)": format_us(tasks["wait_ns"].to_numpy(dtype="int64").tolist()),
        }
    )
    for column in HEADER[len(frame.columns):]:
        frame[column] = NA
    return frame[HEADER].to_csv(index=False, lineterminator="\n")
