"""Every npu_bridge name that 3 or more public Ascend ModelZoo-TensorFlow scripts use resolves under the alias.

`tests/data/npu_bridge_usage.json` counts, over 4,144 ModelZoo-TensorFlow files,
the modules they import, the `from X import Y` pairs, the names of the
`npu_init` star import they reference and the `module.attribute` uses. Here
each entry is resolved the way a script would (import, from-import, star
import, attribute), with the alias installed in this process.
"""
from __future__ import annotations

import importlib
import json
import re
import sys
from pathlib import Path
from typing import Iterator

import pytest

from npu_tf_profiling import install_npu_bridge_alias
from npu_tf_profiling.bridge.alias import COMPAT_ROOT

CORPUS = json.loads((Path(__file__).parent / "data" / "npu_bridge_usage.json").read_text())
MIN_FILES = 3
README = Path(__file__).parent.parent / "README.md"

# Attribute-use prefixes that are not star-import names: the aliases scripts bind them to,
# e.g. `from npu_bridge.estimator.npu import npu_loss_scale_manager as lsm_lib`.
IMPORT_ALIASES = {
    "lsm_lib": "npu_bridge.estimator.npu.npu_loss_scale_manager",
    "lso": "npu_bridge.estimator.npu.npu_loss_scale_optimizer",
}


@pytest.fixture(scope="module")
def alias() -> Iterator[dict]:
    """The alias installed in this process; sys.path and the aliased modules are restored afterwards."""
    saved_path = list(sys.path)
    assert install_npu_bridge_alias() == ("npu_bridge", "npu_device", "hccl", "npu_convert_dropout")
    star: dict = {}
    exec("from npu_bridge.npu_init import *", star)
    yield star
    sys.path[:] = saved_path
    for name in [m for m in sys.modules if m.split(".")[0] in ("npu_bridge", "npu_device", "hccl", "npu_convert_dropout")]:
        del sys.modules[name]


def _resolves_module(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def _resolves_import(module: str, name: str) -> bool:
    namespace: dict = {}
    try:
        exec(f"from {module} import {name}", namespace)
    except ImportError:
        return False
    return name == "*" or name in namespace


def _resolves_attribute(use: str, star: dict) -> bool:
    prefix, attribute = use.split(".", 1)
    if prefix in star:
        owner = star[prefix]
    elif prefix in IMPORT_ALIASES and _resolves_module(IMPORT_ALIASES[prefix]):
        owner = sys.modules[IMPORT_ALIASES[prefix]]
    else:
        return False
    return hasattr(owner, attribute)


def coverage(star: dict, min_files: int) -> tuple[list[str], list[str]]:
    """(resolved, missing) entries used in at least `min_files` corpus files."""
    checks: list[tuple[str, bool]] = []
    checks += [(f"import {m}", _resolves_module(m)) for m, n in CORPUS["modules"] if n >= min_files]
    checks += [(f"from {m} import {name}", _resolves_import(m, name)) for m, name, n in CORPUS["explicit_imports"] if n >= min_files]
    checks += [(f"star {name}", name in star) for name, n in CORPUS["star_names_used"] if n >= min_files]
    checks += [(f"attribute {use}", _resolves_attribute(use, star)) for use, n in CORPUS["attribute_uses"] if n >= min_files]
    return [c for c, ok in checks if ok], [c for c, ok in checks if not ok]


def _public(namespace: object) -> dict:
    return {key: value for key, value in vars(namespace).items() if not key.startswith("_")}


def test_corpus_is_the_published_count() -> None:
    assert CORPUS["files_parsed"] == 4144 and len(CORPUS["modules"]) == 22


def test_every_name_used_in_three_or_more_files_resolves(alias: dict) -> None:
    resolved, missing = coverage(alias, MIN_FILES)
    assert missing == [], f"{len(missing)} of {len(resolved) + len(missing)} corpus entries do not resolve: {missing}"
    assert len(resolved) == 112  # the README quotes this figure


def test_readme_states_the_measured_coverage(alias: dict) -> None:
    resolved, missing = coverage(alias, 1)
    total = len(resolved) + len(missing)
    text = README.read_text()
    assert f"{len(resolved)} of the {total}" in text, f"README should state '{len(resolved)} of the {total}' (all entries)"
    assert f"all {len(coverage(alias, MIN_FILES)[0])} entries used in 3 or more files" in text


def test_star_import_resolves_to_the_alias_modules(alias: dict) -> None:
    import npu_bridge.estimator.npu.util
    import npu_bridge.estimator.npu_ops
    import npu_bridge.hccl.hccl_ops

    assert alias["npu_ops"] is npu_bridge.estimator.npu_ops
    assert alias["util"] is npu_bridge.estimator.npu.util
    assert alias["hccl_ops"] is npu_bridge.hccl.hccl_ops
    assert Path(npu_bridge.__file__).is_relative_to(COMPAT_ROOT)


def test_npu_tf_profiling_npu_init_gives_the_same_star_names(alias: dict) -> None:
    ours: dict = {}
    exec("from npu_tf_profiling.npu_init import *", ours)
    public = {name for name in ours if not name.startswith("__")}
    assert public == {name for name in alias if not name.startswith("__")}
    for name in public:
        if ours[name] is not alias[name]:  # the thin re-exporting modules are loaded under both names
            assert _public(ours[name]) == _public(alias[name]), name
    assert re.match(r"tensorflow\.compat\.v1$", ours["tf"].__name__)
