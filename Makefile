# Two commands for a new user: `make demo` and `make test`. Both are idempotent.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
VPY := $(VENV)/bin/python
DEPS_STAMP := $(VENV)/.deps-installed
PKG_STAMP := $(VENV)/.pkg-installed
PKG_SOURCES := setup.py $(shell find npu_tf_profiling -name '*.py' -o -name '*.pth' 2>/dev/null)
PYTEST_ARGS ?=
# Huawei's msprof-analyze, in its own venv (its numpy/pandas pins differ from TensorFlow's): the tests run it on our output.
MSPROF_VENV := .venv-msprof
MSPROF_STAMP := $(MSPROF_VENV)/.installed

.PHONY: demo test install msprof-analyze check-latest docs-picture clean

$(VPY):
	$(PYTHON) -m venv $(VENV)

$(DEPS_STAMP): $(VPY) constraints.txt requirements-dev.txt
	$(VPY) -m pip install -q --disable-pip-version-check -c constraints.txt -r requirements-dev.txt
	touch $@

# A real (non-editable) install, so the start-up hook (.pth) for the env-var path is in site-packages.
$(PKG_STAMP): $(DEPS_STAMP) $(PKG_SOURCES)
	$(VPY) -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation --force-reinstall .
	touch $@

install: $(PKG_STAMP)

$(MSPROF_STAMP): constraints-msprof.txt
	test -x $(MSPROF_VENV)/bin/python || $(PYTHON) -m venv $(MSPROF_VENV)
	$(MSPROF_VENV)/bin/python -m pip install -q --disable-pip-version-check -c constraints-msprof.txt msprof-analyze
	touch $@

msprof-analyze: $(MSPROF_STAMP)

# Ends by printing the path of the run's charts page (npu-tf-prof view on the newest PROF folder).
demo: install
	$(VPY) samples/estimator_profiling.py
	@echo "== charts of this run (one offline HTML page; open it in any browser):"
	@$(VPY) -m npu_tf_profiling view "$$(ls -td demo_output/PROF_* | head -1)"

# The README's picture of the charts page, from a real run of the demo's sample (docs/charts_page.sh; needs chromium).
docs-picture: install
	docs/charts_page.sh

# The linter (pyproject.toml), then the suite on TEST_PROCESSES processes (pytest-xdist; a file's tests stay in one process, so its
# module fixtures run once; a worker ended by a hung test (tests/helpers/hang_guard.py) ends the phase, since with --dist loadfile
# a replaced worker was never given the crashed file's tests and the run waited for ever), then the `timing` tests alone (pytest.ini says why), once the host has settled after the
# first phase (tests/helpers/host_busy.py: at most 60 s; it names the busiest processes if it never does). Exit status 5 is
# pytest's "no test selected" (a PYTEST_ARGS -k that picks tests of one phase only).
TEST_PROCESSES ?= 2
test: install $(MSPROF_STAMP)
	$(VENV)/bin/ruff check .
	$(VPY) -m pytest -q -n $(TEST_PROCESSES) --dist loadfile --max-worker-restart=0 -m "not timing" $(PYTEST_ARGS) tests || [ $$? -eq 5 ]
	$(VPY) -m tests.helpers.host_busy --wait 60
	$(VPY) -m pytest -q -m timing $(PYTEST_ARGS) tests || [ $$? -eq 5 ]

# Proves the package imports, and the Session and env paths profile real training, on the newest TensorFlow.
LATEST_RUNTIME_TESTS := tests/test_runtime_session.py tests/test_runtime_robustness.py tests/test_runtime_accuracy.py \
	tests/test_runtime_tasks.py tests/test_dynamic.py tests/test_runtime_ring.py tests/test_runtime_parameter_server.py \
	tests/test_tf2_install.py tests/test_tf2_step_trace.py tests/test_tf2_multi_worker.py tests/test_tf2_accuracy.py tests/test_tf2_tasks.py tests/test_task_xspace.py \
	tests/test_tf2_wiring.py tests/test_tf2_gan.py tests/test_tf_private.py tests/test_session_init_wrappers.py
check-latest:
	test -x .venv-latest/bin/python || $(PYTHON) -m venv .venv-latest
	.venv-latest/bin/python -m pip install -q --disable-pip-version-check -c constraints-latest.txt tensorflow-cpu pandas pytest pytest-timeout dask distributed
	.venv-latest/bin/python -m pip install -q --disable-pip-version-check --no-deps --force-reinstall .
	.venv-latest/bin/python -m pytest -q tests/test_latest_tf.py $(LATEST_RUNTIME_TESTS)

clean:
	rm -rf $(VENV) .venv-latest $(MSPROF_VENV) build *.egg-info
