#!/usr/bin/env bash
# Regenerates docs/charts_page.png, the README's picture of the charts page, from a real profiled run:
# the Estimator sample (as `make demo` runs it, 200 steps) into a scratch folder, its page (`npu-tf-prof view`),
# and a screenshot of that page in headless Chromium (the page is offline plotly.js: no network).
# Usage: docs/charts_page.sh   (or `make docs-picture`; uses .venv/bin/python when present)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
python="${PYTHON:-$root/.venv/bin/python}"
[ -x "$python" ] || python=python3
browser="$(command -v chromium || command -v chromium-browser || true)"
[ -n "$browser" ] || { echo "chromium not found (apt-get install chromium)" >&2; exit 2; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
"$python" "$root/samples/estimator_profiling.py" --steps 200 --output prof > sample.log 2>&1 || { cat sample.log >&2; exit 1; }
"$python" -m npu_tf_profiling view prof/PROF_* -o view.html > /dev/null
# 1200x1400 holds the page's header, the phases chart, the Iteration Time distribution and the slowest
# iterations at a size that stays small as a PNG (about 150-190 KB); the virtual time budget lets plotly draw.
"$browser" --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$work/profile" \
  --host-resolver-rules="MAP * ~NOTFOUND" --hide-scrollbars --window-size=1200,1400 \
  --virtual-time-budget=5000 --screenshot="$root/docs/charts_page.png" "file://$work/view.html" > /dev/null 2>&1
echo "$root/docs/charts_page.png"
