"""loopscope.ray on a local Ray cluster: a few thousand trajectories, each
row's detections equal to `loopscope scan` of the trajectory as a file."""

import json

import pytest

import loopscope
from conftest import engine, scanned_trajectories
from dataset import rows

ray = engine("ray")
import loopscope.ray  # noqa: E402  (needs ray)

N = 3000


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def trajectories(tmp_path_factory):
    return scanned_trajectories(N, tmp_path_factory.mktemp("trajectories"))


def test_every_row_equals_the_cli_on_the_same_trajectory(cluster, trajectories):
    data, want = trajectories
    ds = ray.data.from_items(data)
    out = loopscope.ray.detect(ds, column="messages", profile="extended", id_column="instance_id", workers=2)
    got = out.take_all()
    assert len(got) == N
    looped = 0
    for r in got:
        expected = want[r["instance_id"]]
        assert json.loads(r["loop_detections"]) == expected, r["instance_id"]
        assert r["loop"] == bool(expected) and r["loop_count"] == len(expected) and r["error"] is None
        if expected:
            looped += 1
            first = expected[0]
            assert (r["loop_detector"], r["loop_event"], r["loop_reason"]) == (
                first["detector"],
                first["event"],
                first["reason"],
            )
            assert r["loop_onset"] == first.get("onset")
        assert r["messages"] is not None  # the input columns stay
    assert 0 < looped < N


def run_with_deadline(fn, seconds=300):
    """`fn()` in a thread; a hang fails the test instead of CI (a guard, not a timing)."""
    import concurrent.futures

    pool = concurrent.futures.ThreadPoolExecutor(1)
    try:
        return pool.submit(fn).result(timeout=seconds)
    except concurrent.futures.TimeoutError:
        pytest.fail(f"no rows after {seconds} s: the read tasks never got a CPU")
    finally:
        pool.shutdown(wait=False)


@pytest.mark.parametrize("workers", [2, None, 3])
def test_reading_parquet_with_as_many_workers_as_cpus_does_not_hang(cluster, tmp_path, workers):
    # The actors once took every CPU of the cluster, and Ray Data's read
    # tasks (which need one) never ran: 0 rows, forever.
    pa = __import__("pyarrow")
    pq = __import__("pyarrow.parquet").parquet
    data = rows(300)
    table = pa.table({"instance_id": [r["instance_id"] for r in data], "t": [json.dumps(r["messages"]) for r in data]})
    for part in range(4):
        pq.write_table(table.slice(part * 75, 75), tmp_path / f"part-{part}.parquet")
    assert int(ray.cluster_resources()["CPU"]) == 2
    ds = ray.data.read_parquet(str(tmp_path))
    out = loopscope.ray.detect(ds, column="t", id_column="instance_id", workers=workers, batch_size=32)
    got = run_with_deadline(out.take_all)
    assert len(got) == 300
    want = {r["instance_id"]: loopscope.Scanner().row(json.dumps(r["messages"])) for r in data}
    for r in got:
        for name, value in want[r["instance_id"]].items():
            assert r[name] == value, (r["instance_id"], name)
    assert any(r["loop"] for r in got)


def test_the_pool_leaves_a_cpu_to_the_reads(cluster):
    assert loopscope.ray._pool(None) == (1, 1.0)
    assert loopscope.ray._pool(2) == (2, 0.5)
    assert loopscope.ray._pool(4) == (4, 0.25)
    with pytest.raises(ValueError, match="workers"):
        loopscope.ray._pool(0)


def test_json_text_rows_and_malformed_rows(cluster):
    data = rows(40)
    items = [{"id": r["instance_id"], "t": json.dumps(r["messages"])} for r in data]
    items += [{"id": "broken", "t": "{not json"}, {"id": "empty", "t": None}, {"id": "number", "t": "42"}]
    got = {r["id"]: r for r in loopscope.ray.detect(ray.data.from_items(items), column="t", id_column="id").take_all()}
    assert len(got) == 43
    for bad in ("broken", "empty", "number"):
        assert got[bad]["loop"] is None and got[bad]["error"].startswith(f"{bad}: ")
    assert all(got[r["instance_id"]]["error"] is None for r in data)


def test_session_files(cluster, tmp_path):
    root = __import__("pathlib").Path(__file__).resolve().parents[2]
    files = sorted((root / "sample-logs").glob("*.jsonl"))[:8] + [tmp_path / "missing.jsonl"]
    got = {r["path"]: r for r in loopscope.ray.detect_files(files, profile="seed").take_all()}
    for f in files[:-1]:
        want = [d.to_dict() for d in loopscope.scan(str(f), profile="seed")]
        assert json.loads(got[str(f)]["loop_detections"]) == want
    assert got[str(files[-1])]["loop"] is None and "no such file" in got[str(files[-1])]["error"]


def test_an_unknown_profile_or_parameter_fails_on_the_driver(cluster):
    ds = ray.data.from_items([{"messages": []}])
    with pytest.raises(ValueError, match="unknown profile"):
        loopscope.ray.detect(ds, profile="nope")
    with pytest.raises(ValueError, match="no parameter"):
        loopscope.ray.detect(ds, params={"text-loop.nope": 1})
