#!/usr/bin/env bash
# Profile an unmodified plain-TensorFlow script with the two environment variables alone.
# Usage: samples/env_profiling.sh [OUTPUT_DIR]    (uses .venv/bin/python when present)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
python="${PYTHON:-$here/../.venv/bin/python}"
[ -x "$python" ] || python=python3
output="${1:-./demo_output}"

export PROFILING_MODE=true
export PROFILING_OPTIONS="{\"output\":\"$output\",\"training_trace\":\"on\",\"fp_point\":\"\",\"bp_point\":\"\"}"
"$python" "$here/plain_tf_train.py"
unset PROFILING_MODE PROFILING_OPTIONS
"$python" "$here/show_results.py" "$output"
