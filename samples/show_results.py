"""Print where a run's step_trace files are, their first rows, and the summary (used by the samples)."""
from __future__ import annotations

import sys
from pathlib import Path

from npu_tf_profiling.reports import find_prof_dirs, summarize_prof_dir


def print_profiling_result(output: str, rows: int = 5) -> int:
    prof_dirs = find_prof_dirs(Path(output))
    if not prof_dirs:
        print(f"no PROF_* folder under {output}", file=sys.stderr)
        return 1
    newest = max(prof_dirs, key=lambda p: p.stat().st_mtime)
    reports = sorted((newest / "mindstudio_profiler_output").glob("step_trace_*"))
    print(f"== profiling data: {newest}")
    for path in reports:
        print(f"   {path}")
    for path in reports:
        if path.suffix == ".csv":
            lines = path.read_text().splitlines()
            print(f"== first rows of {path.name} ({len(lines) - 1} iterations)")
            print("\n".join(lines[: rows + 1]))
    print("== summary")
    print(summarize_prof_dir(newest).render_text())
    return 0 if reports else 1


if __name__ == "__main__":
    sys.exit(print_profiling_result(sys.argv[1] if len(sys.argv) > 1 else "./demo_output"))
