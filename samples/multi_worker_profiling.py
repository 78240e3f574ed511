"""Profile a multi-worker (MultiWorkerMirroredStrategy) Estimator job, then analyse the cluster.

Locally, the script starts N workers (default 2) on this machine as
subprocesses, each with its own TF_CONFIG on free localhost ports. Every worker
trains the same Estimator with profiling on and writes its own
``PROF_*/device_<rank>`` folder into the shared output folder; then
``npu-tf-prof cluster`` merges the ranks and prints the verdict:

    .venv/bin/python samples/multi_worker_profiling.py [--workers 2] [--steps 30] [--output DIR]

Demonstrations (one rank misbehaves on purpose):

    --slow-rank 2 --slow-input-ms 40      rank 2's input pipeline sleeps 40 ms per batch
    --slow-rank 1 --slow-compute-ms 40    rank 1's forward pass sleeps 40 ms per step
    --kill-rank 1 --kill-at-step 12       rank 1 dies (SIGKILL) in step 12, right after its all-reduce
    --regime-rank 1 --regime-steps 26-28  rank 1's forward pass sleeps 400 ms in steps 26-28 only; with
      --anomaly-capture every rank detects the stretch (the others wait in the all-reduce), captures its
      tasks, and the cluster verdict pins it on rank 1

Profiling is switched on through NPURunConfig(profiling_config=...) by default,
or through PROFILING_MODE/PROFILING_OPTIONS with ``--via env``; ``--task-trace``
also captures the tasks of steps 10-12, which the merged timeline then shows;
``--host-switches`` records in every rank what its host does (stacks, GC pauses,
CPU and memory, peak memory per iteration).

On real hosts, run one worker per host yourself with ``--worker``, a TF_CONFIG
naming every host, and an output folder on shared storage:

    TF_CONFIG='{"cluster":{"worker":["host1:12345","host2:12345"]},"task":{"type":"worker","index":0}}' \\
        python samples/multi_worker_profiling.py --worker --output /shared/prof --model-dir /shared/model
    ...same on host2 with "index":1...
    npu-tf-prof cluster /shared/prof
"""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

FEATURES, CLASSES, BATCH = 16, 4, 32
EXIT_WORKER_FAILED = 1
EXIT_BAD_OUTPUT = 2


# ----------------------------------------------------------------------------- worker
# What the host switches record (docs/options.md): Python stacks, GC pauses >= 1 ms, host CPU and memory, peak memory.
HOST_SWITCHES = {"with_stack": True, "gc_detect_threshold": 1, "host_sys": "cpu,mem", "profile_memory": True}


def profiling_options(output: str, task_trace: bool, host_switches: bool = False, anomaly_capture: bool = False) -> str:
    """The profiling_options JSON: the step trace on every step, tasks (FULL_TRACE) on steps 10-12 only;
    with `host_switches`, what the host does (HOST_SWITCHES) in every rank; with `anomaly_capture`, each
    rank's own capture of slow stretches (its defaults)."""
    options = {"output": output, "training_trace": "on", **({"anomaly_capture": "on"} if anomaly_capture else {})}
    if task_trace:
        options.update({"task_trace": "on", "start_step": 10, "stop_step": 12})
    if host_switches:
        options.update(HOST_SWITCHES)
    return json.dumps(options)


def _steps(text: str) -> tuple[int, int]:
    """``A-B`` (or ``A``): steps A through B, counting from 1."""
    first, _, last = text.partition("-")
    return int(first), int(last or first)


def _rank_from_tf_config() -> int:
    task = json.loads(os.environ.get("TF_CONFIG", "{}")).get("task", {})
    return int(task.get("index", 0))


def _worker(args: argparse.Namespace) -> int:
    import numpy as np

    from npu_tf_profiling.npu_init import NPUEstimator, NPUEstimatorSpec, NPURunConfig, ProfilingConfig, tf

    rank = _rank_from_tf_config()
    slow = rank == args.slow_rank
    input_sleep = args.slow_input_ms / 1000.0 if slow else 0.0
    compute_sleep = args.slow_compute_ms / 1000.0 if slow else 0.0
    regime = _steps(args.regime_steps) if rank == args.regime_rank else None
    kill_at = args.kill_at_step if rank == args.kill_rank else None

    def input_fn():
        rng = np.random.default_rng(0)
        x = rng.normal(size=(1024, FEATURES)).astype(np.float32)
        y = np.argmax(x @ rng.normal(size=(FEATURES, CLASSES)), axis=1).astype(np.int32)
        ds = tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat().batch(BATCH)
        if input_sleep:
            def slow_read(features, labels):
                def wait(v):
                    time.sleep(input_sleep)
                    return v

                x_slow = tf.py_function(wait, [features["x"]], tf.float32)
                x_slow.set_shape(features["x"].shape)
                return {"x": x_slow}, labels

            ds = ds.map(slow_read)
        return ds

    def model_fn(features, labels, mode):
        hidden = tf.layers.dense(features["x"], 64, activation=tf.nn.relu, name="dense")
        if compute_sleep and mode == tf.estimator.ModeKeys.TRAIN:
            def wait(v):
                time.sleep(compute_sleep)
                return v

            stall = tf.py_function(wait, [hidden[0, 0]], tf.float32)  # in the forward pass, between the layers
            with tf.control_dependencies([stall]):
                hidden = tf.identity(hidden)
        if regime is not None and mode == tf.estimator.ModeKeys.TRAIN:
            first, last = regime

            def wait_in_regime(v, step):
                if first <= int(step) + 1 <= last:  # the step being run, counting from 1
                    time.sleep(args.regime_ms / 1000.0)
                return v

            stall = tf.py_function(wait_in_regime, [hidden[0, 0], tf.train.get_or_create_global_step()], tf.float32)
            with tf.control_dependencies([stall]):
                hidden = tf.identity(hidden)
        logits = tf.layers.dense(hidden, CLASSES, name="logits")
        loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
        if mode == tf.estimator.ModeKeys.EVAL:
            return NPUEstimatorSpec(mode, loss=loss)
        global_step = tf.train.get_or_create_global_step()
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=global_step)
        if kill_at is not None:
            def die_at(step):
                if int(step) >= kill_at:
                    # Let the peers fetch this rank's last all-reduce chunks first, so they
                    # finish (and record) this step, as when a host fails just after it.
                    time.sleep(1.0)
                    sys.stdout.flush()
                    os.kill(os.getpid(), signal.SIGKILL)
                return step

            with tf.control_dependencies([train_op]):  # after this step's all-reduce and update
                killer = tf.py_function(die_at, [tf.identity(global_step)], tf.int64)
            train_op = tf.group(train_op, killer)
        return NPUEstimatorSpec(mode, loss=loss, train_op=train_op)

    strategy = tf.distribute.experimental.MultiWorkerMirroredStrategy()
    common = dict(train_distribute=strategy, model_dir=args.model_dir, save_checkpoints_steps=1000,
                  log_step_count_steps=None, save_summary_steps=1000)
    if args.via == "config":
        options = profiling_options(args.output, args.task_trace, args.host_switches, args.anomaly_capture)
        config = NPURunConfig(profiling_config=ProfilingConfig(enable_profiling=True, profiling_options=options), **common)
    else:  # PROFILING_MODE / PROFILING_OPTIONS are in the environment (the launcher sets them)
        config = tf.estimator.RunConfig(**common)
    estimator = NPUEstimator(model_fn=model_fn, config=config)
    started = time.time()
    tf.estimator.train_and_evaluate(
        estimator,
        tf.estimator.TrainSpec(input_fn=input_fn, max_steps=args.steps),
        tf.estimator.EvalSpec(input_fn=input_fn, steps=2, throttle_secs=0),
    )
    print(f"worker {rank}: trained {args.steps} steps in {time.time() - started:.1f} s", flush=True)
    return 0


# ----------------------------------------------------------------------------- launcher
def free_ports(n: int) -> list[int]:
    """n consecutive free TCP ports on localhost, below the kernel's ephemeral port range.

    Why not bind(0): it hands out a port from the ephemeral range, which every
    outgoing connection on the machine also draws from (other workers' gRPC
    channels among them). Seconds pass between choosing the port and a worker's
    server binding it (TensorFlow imports first), and such a connection can take
    it meanwhile: "Could not start gRPC server". Below the range only a listener
    that names its port can collide, and a random start makes that unlikely.
    Consecutive, because a rank table derives each rank's port from one base.
    """
    first_ephemeral = _first_ephemeral_port()
    chooser = random.SystemRandom()
    for _ in range(1000):
        base = chooser.randrange(10_000, first_ephemeral - n)
        if all(_bindable(port) for port in range(base, base + n)):
            return list(range(base, base + n))
    raise RuntimeError(f"no {n} consecutive free ports between 10000 and {first_ephemeral}")


def _first_ephemeral_port() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default; elsewhere the range starts higher still


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("", port))
        except OSError:
            return False
        return True


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=3)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def launch_local_workers(
    output: Path,
    workers: int = 2,
    steps: int = 30,
    via: str = "config",
    extra_args: list[str] | None = None,
    timeout: float = 300.0,
    grace: float = 5.0,
    expect_death: int | None = None,
    extra_env: dict[str, str] | None = None,
) -> dict[int, int]:
    """Run `workers` local workers of this script; returns {rank: exit code}.

    When a worker dies, the others would wait for it in the next all-reduce
    forever, so they get `grace` seconds and are then stopped (exit codes of
    stopped workers are negative, as subprocess reports signals). Raises
    RuntimeError (with the log tails) on timeout, or when a worker other than
    `expect_death` fails. `extra_env` is added to every worker's environment.
    """
    output = Path(output).resolve()
    logs = output / "worker_logs"
    logs.mkdir(parents=True, exist_ok=True)
    model_dir = tempfile.mkdtemp(prefix="multi_worker_model_")
    cluster = {"worker": [f"localhost:{p}" for p in free_ports(workers)]}
    procs: dict[int, subprocess.Popen] = {}
    for rank in range(workers):
        env = dict(os.environ, TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": "worker", "index": rank}}))
        for name in ("DEVICE_ID", "RANK_ID", "PROFILING_MODE", "PROFILING_OPTIONS"):
            env.pop(name, None)
        env.update(extra_env or {})
        if via == "env":
            env["PROFILING_MODE"] = "true"
            env["PROFILING_OPTIONS"] = profiling_options(str(output), "--task-trace" in (extra_args or []),
                                                         "--host-switches" in (extra_args or []),
                                                         "--anomaly-capture" in (extra_args or []))
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--output", str(output), "--model-dir", model_dir,
               "--steps", str(steps), "--via", via, *(extra_args or [])]
        with open(logs / f"worker_{rank}.log", "wb") as log:
            procs[rank] = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + timeout
    first_death: float | None = None
    try:
        while True:
            codes = {r: p.poll() for r, p in procs.items()}  # poll every worker (any() would stop early)
            if all(c is not None for c in codes.values()):
                break
            now = time.monotonic()
            if first_death is None and any(c not in (None, 0) for c in codes.values()):
                first_death = now
            if first_death is not None and now - first_death > grace:
                break
            if now > deadline:
                tails = "\n".join(f"--- worker {r} ({logs}/worker_{r}.log):\n{_tail(logs / f'worker_{r}.log')}" for r in procs)
                raise RuntimeError(f"workers did not finish within {timeout:.0f} s\n{tails}")
            time.sleep(0.1)
    finally:
        for p in procs.values():
            _stop(p)
    codes = {r: p.returncode for r, p in procs.items()}
    if expect_death is not None and codes.get(expect_death, 0) != 0:
        unexpected = []  # it died as planned; the others were stopped (or failed) waiting for it
    else:
        unexpected = [r for r, c in codes.items() if c != 0]
    if unexpected:
        tails = "\n".join(f"--- worker {r} (exit {codes[r]}):\n{_tail(logs / f'worker_{r}.log')}" for r in unexpected)
        raise RuntimeError(f"worker(s) {unexpected} failed\n{tails}")
    return codes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--output", default=None, help="shared profiling output folder (default: ./multi_worker_output/run_<time>)")
    parser.add_argument("--via", choices=("config", "env"), default="config", help="NPURunConfig(profiling_config) or PROFILING_* env vars")
    parser.add_argument("--slow-rank", type=int, default=None)
    parser.add_argument("--slow-input-ms", type=float, default=0.0)
    parser.add_argument("--slow-compute-ms", type=float, default=0.0)
    parser.add_argument("--task-trace", action="store_true", help="also capture the tasks of steps 10-12 (FULL_TRACE)")
    parser.add_argument("--host-switches", action="store_true",
                        help="also record the host: with_stack, gc_detect_threshold, host_sys, profile_memory")
    parser.add_argument("--anomaly-capture", action="store_true",
                        help="each rank captures the tasks of its slow stretches itself (anomaly_capture: on)")
    parser.add_argument("--regime-rank", type=int, default=None, help="this rank's forward pass sleeps --regime-ms ...")
    parser.add_argument("--regime-steps", default="26-28", help="... in these steps only (A-B, counting from 1)")
    parser.add_argument("--regime-ms", type=float, default=400.0)
    parser.add_argument("--kill-rank", type=int, default=None)
    parser.add_argument("--kill-at-step", type=int, default=None)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds before the local workers are stopped")
    parser.add_argument("--worker", action="store_true", help="run one worker (TF_CONFIG from the environment)")
    parser.add_argument("--model-dir", default=None)
    args = parser.parse_args(argv)

    if args.worker:
        if args.output is None:
            parser.error("--worker needs --output")
        args.model_dir = args.model_dir or tempfile.mkdtemp(prefix="multi_worker_model_")
        return _worker(args)

    output = Path(args.output or f"./multi_worker_output/run_{time.strftime('%Y%m%d-%H%M%S')}")
    if output.is_dir() and any(output.glob("PROF_*")):
        print(f"error: {output} already holds PROF_* folders of another run; give an empty --output", file=sys.stderr)
        return EXIT_BAD_OUTPUT
    extra: list[str] = (["--task-trace"] if args.task_trace else []) + (["--host-switches"] if args.host_switches else [])
    extra += ["--anomaly-capture"] if args.anomaly_capture else []
    if args.regime_rank is not None:
        extra += ["--regime-rank", str(args.regime_rank), "--regime-steps", args.regime_steps, "--regime-ms", str(args.regime_ms)]
    if args.slow_rank is not None:
        extra += ["--slow-rank", str(args.slow_rank), "--slow-input-ms", str(args.slow_input_ms),
                  "--slow-compute-ms", str(args.slow_compute_ms)]
    if args.kill_rank is not None:
        extra += ["--kill-rank", str(args.kill_rank), "--kill-at-step", str(args.kill_at_step or args.steps // 2)]
    print(f"== starting {args.workers} local workers ({args.steps} steps, profiling via {args.via}) -> {output}", flush=True)
    started = time.time()
    try:
        codes = launch_local_workers(output, args.workers, args.steps, args.via, extra, timeout=args.timeout,
                                     expect_death=args.kill_rank)
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_WORKER_FAILED
    print(f"== workers finished in {time.time() - started:.1f} s, exit codes {codes}; logs in {output / 'worker_logs'}", flush=True)
    if args.kill_rank is not None:
        print(f"   (rank {args.kill_rank} was killed on purpose; the others, stuck in the next all-reduce, were stopped)")

    from npu_tf_profiling.cli import main as cli_main

    print(f"== npu-tf-prof cluster {output}", flush=True)
    return cli_main(["cluster", str(output)])


if __name__ == "__main__":
    sys.exit(main())
