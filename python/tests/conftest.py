"""Shared fixtures: the repository, the CLI binary to compare with, the inputs."""

import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROFILES = ["seed", "gemini-cli", "extended", "qwen-code", "openhands", "roo-code", "cline", "roo-fork", "openhands-v0", "vllm", "openclaw", "opencode"]


def cli_binary():
    """The loopscope CLI built from the same tree (LOOPSCOPE_BIN, else target/)."""
    env = os.environ.get("LOOPSCOPE_BIN")
    if env:
        return pathlib.Path(env)
    for build in ("debug", "release"):
        p = ROOT / "target" / build / "loopscope"
        if p.exists():
            return p
    pytest.fail("no loopscope binary: run `cargo build` first or set LOOPSCOPE_BIN")


def inputs():
    """Every sample log and format fixture: native JSONL and every importer's shape."""
    files = sorted((ROOT / "sample-logs").glob("*.jsonl"))
    # A SQLite store is read by path, not as a byte stream (Detector.feed): left out.
    files += sorted(p for p in (ROOT / "sample-logs" / "formats").iterdir() if p.is_file() and p.suffix != ".db")
    files += sorted(
        p
        for p in (ROOT / "tests" / "fixtures" / "formats").iterdir()
        if p.is_file() and not p.name.endswith(".md")
    )
    return files


def engine(name):
    """Ray or PySpark: imported, or the test skipped — except under CI,
    where a missing engine is a failure (.ci/run installs both)."""
    if os.environ.get("CI"):
        return __import__(name)
    return pytest.importorskip(name)


def cli_scan_dir(folder, profile):
    """`loopscope scan --json DIR`: each file's detection records, by file name."""
    import json

    p = subprocess.run(
        [str(cli_binary()), "scan", "--json", "--profile", profile, str(folder)],
        capture_output=True,
        text=True,
    )
    assert p.returncode in (0, 1), p.stderr
    by_file = {}
    for line in p.stdout.splitlines():
        rec = json.loads(line)
        name = pathlib.Path(rec.pop("file")).name
        for k in ("type", "schema", "parent"):
            rec.pop(k, None)
        by_file.setdefault(name, []).append(rec)
    return by_file


def cli_scan(path, profile, *extra):
    """`loopscope scan --json` of a file: its detection records, without file/type/schema."""
    p = subprocess.run(
        [str(cli_binary()), "scan", "--json", "--profile", profile, *extra, str(path)],
        capture_output=True,
        text=True,
    )
    assert p.returncode in (0, 1), p.stderr
    import json

    out = []
    for line in p.stdout.splitlines():
        rec = json.loads(line)
        for k in ("type", "schema", "file", "parent"):
            rec.pop(k, None)
        out.append(rec)
    return out


def scanned_trajectories(n, folder):
    """`n` dataset rows (tests/dataset.py), and the CLI's detections of each
    trajectory written as a file in `folder` (profile extended), by id."""
    import json

    from dataset import rows

    data = rows(n)
    for r in data:
        (folder / f"{r['instance_id']}.json").write_text(json.dumps(r["messages"]), encoding="utf-8")
    found = cli_scan_dir(folder, "extended")
    return data, {r["instance_id"]: found.get(f"{r['instance_id']}.json", []) for r in data}
