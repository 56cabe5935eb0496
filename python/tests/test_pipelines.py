"""What data pipelines need of the package: Detectors and Scanners that
pickle, one call that annotates an Arrow table or a pandas/polars
DataFrame, the same columns everywhere, and malformed events refused."""

import json
import os
import pickle

import pytest

import loopscope
from dataset import ROOT, rows

UNIT = "Wait, let me check the tests again. "


def engine(name):
    """pyarrow, pandas, polars: imported, or the test skipped (required under CI)."""
    if os.environ.get("CI"):
        return __import__(name)
    return pytest.importorskip(name)


def test_a_scanner_pickles_with_its_profile_and_params():
    s = loopscope.Scanner(profile="seed", params={"tool-repeat.threshold": 3}, detectors=["tool-repeat"])
    copy = pickle.loads(pickle.dumps(s))
    assert copy.profile == "seed" and repr(copy) == repr(s)
    calls = [{"role": "user", "content": "fix the test"}]
    for i in range(4):
        calls.append({"role": "assistant", "content": None, "tool_calls": [tc(i)]})
        calls.append({"role": "tool", "tool_call_id": f"c{i}", "content": "same"})
    want = [d.to_dict() for d in s.scan_messages(calls)]
    assert want and [d.to_dict() for d in copy.scan_messages(calls)] == want
    assert want[0]["detector"] == "tool-repeat" and want[0]["threshold"] == 3


def tc(i):
    return {"id": f"c{i}", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}}


def test_a_detector_pickles_as_its_setup_and_starts_fresh():
    params = {"text-loop.copies": 4}
    d = loopscope.Detector(profile="extended", params=params)
    params["text-loop.copies"] = 99  # the caller's dict changing later does not reach the pickle
    d.push_request()
    d.push_reasoning(UNIT)
    copy = pickle.loads(pickle.dumps(d))
    assert copy.profile == "extended" and copy.events == 0 and copy.detections == []
    assert pickle.dumps(loopscope.Detector(profile="extended", params={"text-loop.copies": 4})) == pickle.dumps(d)
    copy.push_request()
    found = []
    for _ in range(10):
        found += copy.push_reasoning(UNIT)
    # copies=4: fires at the fourth copy, not at the default's third.
    assert found and found[0].detector == "text-loop" and found[0].at_char == 4 * len(UNIT)


@pytest.mark.parametrize(
    "event",
    [
        {"type": "content"},
        {"type": "reasoning"},
        {"type": "content", "text": 5},
        {"type": "reasoning", "text": ["a"]},
        {"type": "tool_call"},
        {"type": "tool_call", "name": 3},
    ],
)
def test_a_malformed_event_is_a_value_error(event):
    d = loopscope.Detector()
    with pytest.raises(ValueError, match="not an event"):
        d.push(event)
    assert d.events == 0


def test_well_formed_events_still_push():
    d = loopscope.Detector()
    assert d.push({"type": "request"}) == [] and d.push({"type": "content", "text": "hello"}) == []
    assert d.push({"type": "some_future_type", "x": 1}) == []  # unknown types are kept, as in a log
    assert d.events == 3


def test_scanner_row_and_the_dataset_runners_have_the_same_columns():
    from loopscope._rows import COLUMNS

    row = loopscope.Scanner().row(rows(1)[0]["messages"])
    assert set(row) | {"error"} == {name for name, _ in COLUMNS}
    assert row["loop_events"] > 0


def frame_rows(n=30):
    data = rows(n)
    items = [{"id": r["instance_id"], "messages": json.dumps(r["messages"])} for r in data]
    items.append({"id": "broken", "messages": "{not json"})
    want = {r["instance_id"]: loopscope.Scanner().row(json.dumps(r["messages"])) for r in data}
    return items, want


def check_rows(got, want):
    assert len(got) == len(want) + 1
    looped = 0
    for r in got:
        if r["id"] == "broken":
            assert r["loop"] is None and r["error"].startswith("broken: ")
            continue
        expected = want[r["id"]]
        for name, value in expected.items():
            assert r[name] == value, (r["id"], name)
        assert r["error"] is None
        looped += bool(r["loop"])
    assert 0 < looped < len(want)


def test_annotate_an_arrow_table():
    pa = engine("pyarrow")
    items, want = frame_rows()
    table = pa.Table.from_pylist(items)
    out = loopscope.annotate(table, column="messages", id_column="id")
    assert isinstance(out, pa.Table) and out.num_rows == table.num_rows
    assert out.schema.field("loop").type == pa.bool_() and out.schema.field("loop_events").type == pa.int64()
    check_rows(out.to_pylist(), want)
    again = loopscope.annotate(out, column="messages", id_column="id")  # loop columns replaced, not doubled
    assert again.schema.names == out.schema.names
    batch = loopscope.annotate(table.to_batches()[0], column="messages", id_column="id")
    assert isinstance(batch, pa.RecordBatch)


def test_annotate_a_pandas_dataframe():
    pd = engine("pandas")
    items, want = frame_rows()
    df = pd.DataFrame(items)
    out = loopscope.annotate(df, column="messages", id_column="id")
    assert "loop" not in df.columns  # the input is left as it was
    assert list(out.columns[:2]) == ["id", "messages"] and str(out["loop_event"].dtype) == "Int64"
    records = [{k: (None if v is pd.NA else v) for k, v in r.items()} for r in out.to_dict("records")]
    check_rows(records, want)


def test_annotate_a_parquet_dataset_read_by_pandas():
    # pandas reads a list-of-structs column as NumPy arrays of dicts.
    pd = engine("pandas")
    engine("pyarrow")
    import pyarrow.parquet as pq
    path = ROOT / "sample-logs" / "datasets" / "rollouts.parquet"
    df = pd.read_parquet(path)
    out = loopscope.annotate(df, column="messages", id_column="instance_id")
    table = pq.read_table(path).to_pylist()
    want = [loopscope.Scanner().row(r["messages"]) for r in table]
    assert out["error"].isna().all(), list(out["error"])
    assert list(out["loop_detections"]) == [w["loop_detections"] for w in want]
    assert out["loop"].any()


def test_annotate_a_polars_dataframe_with_message_lists():
    pl = engine("polars")
    data = rows(30)
    df = pl.DataFrame({"id": [r["instance_id"] for r in data], "messages": [json.dumps(r["messages"]) for r in data]})
    out = loopscope.annotate(df, column="messages", id_column="id")
    assert isinstance(out, pl.DataFrame) and out.schema["loop"] == pl.Boolean
    want = {r["instance_id"]: loopscope.Scanner().row(json.dumps(r["messages"])) for r in data}
    got = out.to_dicts()
    assert all(r["loop_detections"] == want[r["id"]]["loop_detections"] for r in got)
    assert any(r["loop"] for r in got)


def test_annotate_refuses_what_it_cannot_read():
    with pytest.raises(TypeError, match="pyarrow Table"):
        loopscope.annotate([{"messages": []}])
    pa = engine("pyarrow")
    with pytest.raises(ValueError, match="no column 'messages'"):
        loopscope.annotate(pa.table({"x": [1]}))
    with pytest.raises(ValueError, match="unknown profile"):
        loopscope.annotate(pa.table({"messages": ["[]"]}), profile="nope")
