"""``npu-tf-prof watch OUTPUT [--json]``: follow a running job, one or many ranks, a line every second.

Each line: the iterations so far, the recent median Iteration Time, the phase
shares of the recent iterations, and the anomalies anomaly_capture wrote. It
reads the raw files as they grow (`reports.live`), never TensorFlow, so it runs
beside the job or on another machine that sees the folder.

The job is the PROF folders that are running when watch starts, and those that
appear while it watches (folders of finished or killed jobs already there are
past, and left alone). Exit codes: 0 when every folder of the job is closed; 5
(EXIT_JOB_KILLED) when one was never closed and its writer process is gone; 3
when no job appeared within ``--wait`` seconds; 2 for a missing or unreadable
path.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Optional

from npu_tf_profiling.exit_codes import EXIT_BAD_INPUT, EXIT_JOB_KILLED, EXIT_NOT_FOUND, EXIT_OK
from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.reports.anomalies import read_anomaly_lines
from npu_tf_profiling.reports.live import CLOSED, KILLED, RUNNING, DeviceFollower, job_state, read_info

PROG = "npu-tf-prof watch"
DEFAULT_WAIT_S = 60.0
DEFAULT_INTERVAL_S = 1.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", metavar="OUTPUT", help="the job's output folder (or one PROF_* folder)")
    parser.add_argument("--json", action="store_true", help="print one JSON object a line instead of text")
    parser.add_argument("--wait", type=float, default=DEFAULT_WAIT_S, metavar="S",
                        help=f"how long to wait for a job to appear before exit 3 (default {DEFAULT_WAIT_S:g} s)")
    parser.add_argument("--interval", type=float, default=DEFAULT_INTERVAL_S, metavar="S",
                        help=f"seconds between lines, 0.2 to 60 (default {DEFAULT_INTERVAL_S:g})")


def run(args: argparse.Namespace) -> int:
    path = Path(args.path)
    if not 0.2 <= args.interval <= 60 or args.wait < 0:
        sys.stderr.write(f"{PROG}: --interval must be 0.2 to 60 s and --wait at least 0 s\n")
        return EXIT_BAD_INPUT
    try:
        past = {d for d in _device_dirs(path) if _state(d) != RUNNING}
    except OSError as exc:
        sys.stderr.write(f"{PROG}: {path}: cannot read ({exc.strerror or exc}); expected a job's output folder\n")
        return EXIT_BAD_INPUT
    return _Watch(path, past, args).follow()


def _device_dirs(path: Path) -> list[Path]:
    """Every device folder under `path`: a PROF folder, an output folder, or one whose sub-folders (ranks) hold them."""
    if not path.is_dir():
        raise FileNotFoundError(2, "no such folder" if not path.exists() else "not a folder")
    if path.name.startswith(layout.PROF_DIR_PREFIX):
        return layout.device_dirs(path)
    found = []
    for child in sorted(path.iterdir()):
        if child.name.startswith(layout.PROF_DIR_PREFIX) and child.is_dir():
            found += layout.device_dirs(child)
        elif child.is_dir() and not child.name.startswith(layout.DEVICE_DIR_PREFIX):
            found += [d for prof in sorted(child.glob(layout.PROF_DIR_PREFIX + "*")) if prof.is_dir() for d in layout.device_dirs(prof)]
    return found


def _state(device_dir: Path) -> Optional[str]:
    info = read_info(device_dir)
    return None if info is None else job_state(info)


class _Watch:
    def __init__(self, path: Path, past: set[Path], args: argparse.Namespace) -> None:
        self.path, self.past, self.args = path, past, args
        self.followers: dict[Path, DeviceFollower] = {}
        self.started = time.monotonic()

    def follow(self) -> int:
        while True:
            try:
                self._discover()
            except OSError as exc:
                sys.stderr.write(f"{PROG}: {self.path}: cannot read ({exc.strerror or exc})\n")
                return EXIT_BAD_INPUT
            if not self.followers:
                if time.monotonic() - self.started >= self.args.wait:
                    past = f" ({len(self.past)} device folder(s) of finished or killed jobs left alone)" if self.past else ""
                    sys.stderr.write(f"{PROG}: no running job appeared in {self.path} within {self.args.wait:g} s{past}\n")
                    return EXIT_NOT_FOUND
                time.sleep(min(self.args.interval, 0.5))
                continue
            states = {d: _state(d) or RUNNING for d in self.followers}
            for follower in self.followers.values():
                follower.read_new()  # after the states: a folder seen closed has all its rows read here
            self._print(states)
            if all(s != RUNNING for s in states.values()):
                return self._finish(states)
            time.sleep(self.args.interval)

    def _discover(self) -> None:
        for device_dir in _device_dirs(self.path):
            if device_dir not in self.past and device_dir not in self.followers:
                self.followers[device_dir] = DeviceFollower(device_dir)

    def _line(self, states: dict[Path, str]) -> dict[str, Any]:
        ranks = []
        for device_dir, follower in self.followers.items():
            anomalies = [a for a in read_anomaly_lines(device_dir) if a.get("kind") == "anomaly"]
            ranks.append({"folder": str(device_dir), "state": states[device_dir],
                          "iterations": sum(follower.iterations.values()), **follower.phases(),
                          "anomalies": len(anomalies), "captured": sum(1 for a in anomalies if a.get("captured"))})
        counts = [r["iterations"] for r in ranks]
        medians = sorted(r["median_us"] for r in ranks if r["median_us"] is not None)
        return {"elapsed_s": round(time.monotonic() - self.started, 1), "running": sum(r["state"] == RUNNING for r in ranks),
                "ranks": ranks, "iterations": max(counts), "iterations_min": min(counts),
                "median_us": medians[len(medians) // 2] if medians else None,
                "anomalies": sum(r["anomalies"] for r in ranks), "captured": sum(r["captured"] for r in ranks)}

    def _print(self, states: dict[Path, str]) -> None:
        line = self._line(states)
        if self.args.json:
            sys.stdout.write(json.dumps(line) + "\n")
        else:
            first = line["ranks"][0]
            spread = "" if line["iterations_min"] == line["iterations"] else f" (ranks {line['iterations_min']}..{line['iterations']})"
            median = "n/a" if line["median_us"] is None else f"{line['median_us'] / 1e3:.2f} ms"
            shares = "  ".join(f"{label} {_pct(first[key])}" for key, label in
                               (("data_aug", "Data Aug Bound"), ("fp_to_bp", "FP to BP"), ("refresh", "Refresh")))
            sys.stdout.write(f"[{line['elapsed_s']:7.1f}s] {line['running']}/{len(line['ranks'])} running: "
                             f"{line['iterations']} iterations{spread}, median {median}, {shares}, "
                             f"anomalies {line['anomalies']} ({line['captured']} captured)\n")
        sys.stdout.flush()

    def _finish(self, states: dict[Path, str]) -> int:
        killed = [d for d, s in states.items() if s == KILLED]
        if killed:
            sys.stdout.write(f"job killed: {len(killed)} of {len(states)} device folder(s) never closed and their "
                             f"process is gone: {', '.join(str(d) for d in killed)}\n")
            return EXIT_JOB_KILLED
        sys.stdout.write(f"job finished: {sum(s == CLOSED for s in states.values())} device folder(s) closed\n")
        return EXIT_OK


def _pct(value: Optional[float]) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"
