"""Task trace: task_trace.bin -> the per-task table, op summaries and the combined msprof timeline."""
