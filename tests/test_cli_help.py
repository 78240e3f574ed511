"""`npu-tf-prof --help` and a bare `npu-tf-prof`: the list of sub-commands a newcomer starts from (the README's
command table is read from it), every one named, exit code 0."""
from __future__ import annotations

import pytest

from npu_tf_profiling.cli import SUBCOMMAND_HELP, main


@pytest.mark.parametrize("argv", [["--help"], ["-h"], []])
def test_help_lists_every_sub_command_with_its_text(argv, capsys):
    assert main(argv) == 0
    out = " ".join(capsys.readouterr().out.split())  # argparse wraps the help texts
    for name, help_text in SUBCOMMAND_HELP.items():
        assert name in out and " ".join(help_text.split()) in out, name  # '95% CI' printed as written
