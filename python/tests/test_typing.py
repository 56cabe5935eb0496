"""The stubs under mypy: a typed program using the API (tests/typed/)
type-checks with `mypy --strict`, a profile held in a `str` variable
included, and a wrong argument type is still caught."""

import importlib.util
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def mypy(*args):
    if importlib.util.find_spec("mypy") is None:
        if os.environ.get("CI"):
            pytest.fail("CI must have mypy (see .ci/run)")
        pytest.skip("skipped: no mypy here (pip install mypy)")
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", *args], capture_output=True, text=True
    )


def test_a_typed_program_type_checks():
    p = mypy(os.path.join(HERE, "typed", "uses_the_api.py"))
    assert p.returncode == 0, p.stdout + p.stderr


def test_a_wrong_type_is_still_an_error(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import loopscope\nloopscope.Detector(profile=3)\nloopscope.Detector().push_reasoning(b'x')\n")
    p = mypy(str(bad))
    assert p.returncode == 1 and p.stdout.count("error:") == 2, p.stdout
