"""Where the msprof-analyze / MindStudio Insight layout of one rank goes, and its file names.

One folder per rank, beside the run's ``PROF_*`` folders in the output folder:

    <output>/<host>_<pid>_<prof id>_rank<r>_<YYYYmmddHHMMSS>_ascend_pt/
        profiler_info_<r>.json
        profiler_metadata.json
        ASCEND_PROFILER_OUTPUT/
            step_trace_time.csv  trace_view.json  communication.json  communication_matrix.json
            kernel_details.csv                    (only where task_trace ran)
            ascend_pytorch_profiler_<r>.db  analysis.db

Why this name and place (msprof-analyze 26.2.0 decides; see ``docs/msprof_layout.md``):

* a rank is found by a folder that holds ``ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_<r>.db``
  (its rank is in the file name), or, for text-only copies, a folder whose name
  **ends with** ``ascend_pt`` and holds ``profiler_info_<r>.json``;
* ``advisor`` and ``compare`` only accept a folder ending with ``ascend_pt``
  (or ``ascend_ms``), and ``advisor`` counts a cluster's ranks among the
  *direct* children of the folder it is given: so the rank folders sit directly
  in the output folder, where the workers' ``PROF_*`` folders are;
* when two folders claim one rank, msprof-analyze keeps the newest by the
  number before ``_ascend_pt``: the PROF folder's time.

The ``PROF_*`` folder keeps its CANN layout; our own readers ignore these
folders (no ``device_*`` inside), so both tools read the same output folder.
"""
from __future__ import annotations

import re
from pathlib import Path

ASCEND_PT_SUFFIX = "_ascend_pt"
PROFILER_OUTPUT_DIR = "ASCEND_PROFILER_OUTPUT"

STEP_TRACE_TIME_CSV = "step_trace_time.csv"
TRACE_VIEW_JSON = "trace_view.json"
KERNEL_DETAILS_CSV = "kernel_details.csv"
COMMUNICATION_JSON = "communication.json"
COMMUNICATION_MATRIX_JSON = "communication_matrix.json"
ANALYSIS_DB = "analysis.db"
PROFILER_METADATA_JSON = "profiler_metadata.json"

_UNSAFE = re.compile(r"[^A-Za-z0-9.-]+")
_PROF_NAME = re.compile(r"^PROF_(\d+)_(\d{14})_(\w+)$")


def profiler_info_name(rank: int) -> str:
    return f"profiler_info_{rank}.json"


def profiler_db_name(rank: int) -> str:
    return f"ascend_pytorch_profiler_{rank}.db"


def rank_folder_name(prof_dir: Path | str, host: str, rank: int) -> str:
    """The rank folder's name for one device of one PROF folder (the same on every rewrite).

    Built from the PROF folder's name (pid, time, random id) so rebuilding the
    reports replaces the folder's files instead of adding a second folder. A
    PROF folder with an unexpected name (a renamed copy) uses its whole name
    in place of pid and id, and no time (then 0).
    """
    name = Path(prof_dir).name
    match = _PROF_NAME.match(name)
    safe_host = _UNSAFE.sub("-", host or "host").strip("-.") or "host"  # no leading dot: never a hidden folder
    if match:
        pid, stamp, prof_id = match.groups()
        return f"{safe_host}_{pid}_{prof_id}_rank{rank}_{stamp}{ASCEND_PT_SUFFIX}"
    return f"{safe_host}_{_UNSAFE.sub('-', name)}_rank{rank}_0{ASCEND_PT_SUFFIX}"


def rank_folder(prof_dir: Path | str, host: str, rank: int) -> Path:
    """The rank folder of one device of ``prof_dir``: a sibling of the PROF folder."""
    prof_dir = Path(prof_dir)
    return prof_dir.parent / rank_folder_name(prof_dir, host, rank)


def profiler_output_dir(folder: Path) -> Path:
    return Path(folder) / PROFILER_OUTPUT_DIR


def is_rank_folder(path: Path) -> bool:
    """A folder in this layout (ours or torch_npu's): the name ends with ``ascend_pt``."""
    return path.name.endswith(ASCEND_PT_SUFFIX.lstrip("_"))
