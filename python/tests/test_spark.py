"""loopscope.spark on a local Spark session (local[2]): the same rows as the
Ray test, as JSON text and as the nested column Spark infers from JSONL."""

import json
import os
import sys

import pytest

from conftest import engine, scanned_trajectories

pyspark = engine("pyspark")
import loopscope.spark  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402

N = 2000


@pytest.fixture(scope="module")
def spark():
    # Not set here: importing loopscope.spark sets PYSPARK_PYTHON to this
    # Python (a venv's python3 is not the one on PATH Spark would run).
    assert os.environ.get("PYSPARK_PYTHON")
    s = (
        SparkSession.builder.master("local[2]")
        .appName("loopscope-test")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    s.sparkContext.setLogLevel("ERROR")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def trajectories(tmp_path_factory):
    return scanned_trajectories(N, tmp_path_factory.mktemp("trajectories"))


def check(out, want, data):
    assert len(out) == N
    scanner = loopscope.Scanner()
    events = {r["instance_id"]: scanner.row(r["messages"])["loop_events"] for r in data}
    for r in out:
        expected = want[r.instance_id]
        assert json.loads(r.loop_detections) == expected, r.instance_id
        assert r.loop == bool(expected) and r.loop_count == len(expected) and r.error is None
        assert r.loop_events == events[r.instance_id]  # as Scanner.row and Ray give it
        if expected:
            assert (r.loop_detector, r.loop_event) == (expected[0]["detector"], expected[0]["event"])


def test_json_text_column(spark, trajectories):
    data, want = trajectories
    df = spark.createDataFrame([{"instance_id": r["instance_id"], "t": json.dumps(r["messages"])} for r in data])
    check(loopscope.spark.detect(df, column="t", id_column="instance_id").collect(), want, data)


def test_nested_column_read_from_jsonl(spark, trajectories, tmp_path):
    data, want = trajectories
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in data), encoding="utf-8")
    df = spark.read.json(str(path))
    out = loopscope.spark.detect(df, column="messages", id_column="instance_id")
    assert "loop_detector" in out.columns and "messages" in out.columns
    check(out.collect(), want, data)


def test_malformed_rows_and_fast_failures(spark):
    df = spark.createDataFrame([{"id": "ok", "t": "[]"}, {"id": "broken", "t": "{nope"}, {"id": "null", "t": None}])
    got = {r.id: r for r in loopscope.spark.detect(df, column="t", id_column="id").collect()}
    assert got["ok"].loop is False and got["ok"].error is None
    assert got["broken"].loop is None and got["broken"].error.startswith("broken: ")
    assert got["null"].loop is None and "null" in got["null"].error
    with pytest.raises(ValueError, match="unknown profile"):
        loopscope.spark.detect(df, column="t", profile="nope")
    with pytest.raises(ValueError, match="no column"):
        loopscope.spark.detect(df, column="messages")


def test_a_local_executor_python_without_loopscope_is_said_on_the_driver(spark):
    class Context:
        master = "local[2]"
        pythonExec = "/bin/false"  # stands for a python3 without the wheel

    class Frame:
        class sparkSession:
            sparkContext = Context

    with pytest.raises(ValueError, match="PYSPARK_PYTHON=.*before the SparkSession"):
        loopscope.spark._check_local_python(Frame)
    Context.pythonExec = sys.executable
    loopscope.spark._check_local_python(Frame)
