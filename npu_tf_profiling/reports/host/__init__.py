"""Reports of the host side: CANN's host usage CSVs, the host timeline, memory per iteration, the mstx markers,
and what the host's Python did (``with_stack`` stacks and ``gc_detect_threshold`` pauses: ``stack_time``, ``stack_files``)."""
