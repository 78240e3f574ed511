"""The msprof-analyze / MindStudio Insight layout of our data (TensorFlow-free).

Huawei's analysis tools read torch_npu's output: one ``*_ascend_pt`` folder per
rank with text files and two SQLite databases. These modules write that layout
from our raw data, beside the PROF folders, whenever our reports are written,
so ``msprof-analyze cluster/advisor/compare`` and MindStudio Insight open our
output and show our numbers. ``docs/msprof_layout.md`` documents every file,
table and column. One module per job:

* ``names``: folder and file names (and why the ``_ascend_pt`` suffix);
* ``rank_model``: one rank's steps, all-reduces and tasks, which every file is written from;
* ``comm_names``: HCCL-style names of our all-reduces and msprof-analyze's group hash;
* ``step_trace_time``, ``communication_json``, ``kernel_details``, ``trace_view``
  (with ``overlap``), ``profiler_info``: the text files;
* ``db_schema``, ``profiler_db``, ``analysis_db``: the databases;
* ``writer``: writing a rank folder, and every rank folder of a PROF folder.
"""
