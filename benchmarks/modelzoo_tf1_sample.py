"""Measure how many ModelZoo-TensorFlow TF1 entry scripts get past their imports under `npu-tf-prof run --tf1`.

Why a tool and not a test: the scripts are Ascend's public code, which this
repository must not contain; a checkout of github:Ascend/ModelZoo-TensorFlow is
read from where it lies. `sample` picks entry scripts with a fixed seed (so the
list in docs/modelzoo_tf1_sample.md can be reproduced); `run` starts each as a
new user would, `npu-tf-prof run --tf1 SCRIPT --help` from its model folder
(imports and flag definitions only), and classifies the first failure.

    python benchmarks/modelzoo_tf1_sample.py sample TREE --seed 25 > sample.txt
    python benchmarks/modelzoo_tf1_sample.py run TREE sample.txt --launcher /tmp/venv25/bin/npu-tf-prof > out.json
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

LAUNCH_SCRIPTS = ("test/train_performance_1p.sh", "test/train_full_1p.sh")
QUOTAS = {"cv": 32, "nlp": 14, "recommendation": 8, "audio": 4, "other": 6}
_PYTHON_LINE = re.compile(r"^\s*(?:nohup\s+)?python[0-9.]*\s+(?:-u\s+)?(\S+\.py)\b")


@dataclass(frozen=True)
class Entry:
    """One model folder's training entry script, as its 1p launch script starts it."""

    folder: str  # relative to the tree, e.g. TensorFlow/built-in/cv/.../LeNet_ID0127_for_TensorFlow
    script: str  # relative to the folder


@dataclass(frozen=True)
class Outcome:
    entry: Entry
    returncode: int
    kind: str  # ok | timeout | third-party | own module | contrib | past imports | other
    detail: str


def entry_of(tree: Path, folder: Path) -> Entry | None:
    """The first `python X.py` of the folder's 1p launch script, found under the folder; None if there is none."""
    for launch in LAUNCH_SCRIPTS:
        if not (folder / launch).is_file():
            continue
        for line in (folder / launch).read_text(errors="replace").splitlines():
            match = _PYTHON_LINE.match(line)
            if match is None:
                continue
            tail = re.sub(r"^(\$\{?\w+\}?/)+", "", match.group(1)).lstrip("./")
            tail = re.sub(r"^(\.\./)+", "", tail)
            candidates = [folder / tail] + sorted(folder.rglob(Path(tail).name))
            for candidate in candidates:
                if candidate.is_file() and str(candidate).endswith(tail):
                    return Entry(str(folder.relative_to(tree)), str(candidate.relative_to(folder)))
    return None


def uses_npu_bridge(folder: Path) -> bool:
    return any("npu_bridge" in path.read_text(errors="replace") for path in folder.rglob("*.py"))


def area(entry: Entry) -> str:
    """cv, nlp, recommendation, audio or other (graph, gnn, reinforcement learning): the tree's second level."""
    name = entry.folder.split("/")[2]
    return name if name in QUOTAS else "other"


def sample(tree: Path, seed: int) -> list[Entry]:
    """QUOTAS entry scripts per area, drawn with `seed`: cv is two thirds of the tree and would crowd out the rest."""
    folders = sorted({path.parent.parent for launch in LAUNCH_SCRIPTS for path in (tree / "TensorFlow").rglob(launch)})
    entries = [entry for folder in folders if uses_npu_bridge(folder) and (entry := entry_of(tree, folder))]
    draw = random.Random(seed)
    chosen = []
    for name, quota in QUOTAS.items():
        pool = [entry for entry in entries if area(entry) == name]
        chosen += draw.sample(pool, min(quota, len(pool)))
    return sorted(chosen, key=lambda entry: entry.folder)


def classify(entry: Entry, tree: Path, returncode: int, stdout: str, stderr: str) -> tuple[str, str]:
    """The first failure's kind and a one-line detail, read from the script's traceback.

    absl's `--help` exits with 1 after printing the flags: that is a pass.
    """
    lines = [line for line in stderr.strip().splitlines() if line.strip() and not line.startswith("npu-tf-prof run: hint")]
    last = lines[-1] if lines else ""
    if returncode == 0 or "Try --helpfull" in stdout + stderr:
        return "ok", ""
    missing = re.search(r"ModuleNotFoundError: No module named '([\w.]+)'", stderr)
    if "tf.contrib" in last or "tf-slim" in last:
        return "contrib", last[-200:]
    if missing:
        top = missing.group(1).split(".")[0]
        folder = tree / entry.folder
        own = (folder / top).is_dir() or (folder / f"{top}.py").is_file() or any(folder.rglob(f"{top}.py"))
        return ("own module" if own else "third-party"), missing.group(1)
    code_lines = [line.strip() for line in lines if not line.startswith((" File", "Traceback"))][:-1]
    at_import = bool(code_lines) and code_lines[-1].startswith(("import ", "from "))
    return ("other" if at_import else "past imports"), last[-200:]


def run(tree: Path, entries: list[Entry], launcher: str, timeout: float) -> list[Outcome]:
    outcomes = []
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("PROFILING_", "RANK_", "DEVICE_", "JOB_ID"))}
    environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    for entry in entries:
        folder = tree / entry.folder
        try:
            done = subprocess.run([launcher, "run", "--tf1", entry.script, "--help"], cwd=folder, env=environ,
                                  capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
            kind, detail = classify(entry, tree, done.returncode, done.stdout, done.stderr)
            outcomes.append(Outcome(entry, done.returncode, kind, detail))
        except subprocess.TimeoutExpired:
            outcomes.append(Outcome(entry, -1, "timeout", f"still running after {timeout:.0f} s (past its imports)"))
        print(f"{outcomes[-1].kind:12} {entry.folder}/{entry.script} {outcomes[-1].detail[:120]}", file=sys.stderr)
    return outcomes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    pick = commands.add_parser("sample")
    pick.add_argument("tree", type=Path)
    pick.add_argument("--seed", type=int, default=25)
    start = commands.add_parser("run")
    start.add_argument("tree", type=Path)
    start.add_argument("sample", type=Path, help="the output of `sample`: FOLDER SCRIPT per line")
    start.add_argument("--launcher", default="npu-tf-prof")
    start.add_argument("--timeout", type=float, default=120)
    args = parser.parse_args()
    if args.command == "sample":
        for entry in sample(args.tree, args.seed):
            print(entry.folder, entry.script)
        return 0
    entries = [Entry(*line.split()) for line in args.sample.read_text().splitlines() if line.strip()]
    print(json.dumps([asdict(outcome) for outcome in run(args.tree, entries, args.launcher, args.timeout)], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
