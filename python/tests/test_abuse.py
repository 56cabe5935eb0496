"""The package under abuse (issue 43, item 9): damaged datasets, Ctrl-C
during a long scan, wrong types, big and many inputs. Nothing crashes the
interpreter, hangs or leaks; every failure is an ordinary exception."""

import os
import signal
import threading

import pytest

import loopscope
from conftest import ROOT

DATASET = ROOT / "tests" / "fixtures" / "rows" / "dataset.parquet"

# Four bytes of the fixture that made the parquet crate panic (an index out
# of bounds in a page header): offset and the bytes written there. Found by
# tests/fuzz_stable.rs's seeded mutations; tests/datasets.rs uses the same.
PANIC_AT = 894
PANIC_BYTES = bytes.fromhex("5ffad038")


def damaged(tmp_path, name="damaged.parquet"):
    data = bytearray(DATASET.read_bytes())
    data[PANIC_AT : PANIC_AT + len(PANIC_BYTES)] = PANIC_BYTES
    p = tmp_path / name
    p.write_bytes(bytes(data))
    return p


def test_a_damaged_parquet_dataset_is_a_value_error_not_a_crash(tmp_path):
    # The parquet crate panicked on it: that was a RuntimeError ("internal
    # error") and a panic message on stderr. It is a bad input now.
    with pytest.raises(ValueError, match="Parquet|not readable"):
        loopscope.scan(damaged(tmp_path))
    cut = tmp_path / "cut.parquet"
    cut.write_bytes(DATASET.read_bytes()[:3000])
    with pytest.raises(ValueError, match="not a readable Parquet file"):
        loopscope.scan(cut)
    scanner = loopscope.Scanner()
    for path in (damaged(tmp_path), cut):
        with pytest.raises(ValueError):
            scanner.file_row(path)
    # The package goes on working.
    assert loopscope.scan(DATASET) is not None


def test_damaged_jsonl_datasets_are_problems_not_exceptions(tmp_path):
    lines = (ROOT / "tests" / "fixtures" / "rows" / "dataset.jsonl").read_bytes().splitlines()
    broken = tmp_path / "rows.jsonl"
    broken.write_bytes(b"\n".join([lines[0][: len(lines[0]) // 2], b"\xff\xfe{", *lines[1:]]) + b"\n")
    found = loopscope.scan(broken)
    assert isinstance(found, list)


def test_ctrl_c_interrupts_a_long_scan(tmp_path):
    # A scan of a stream that goes on (a FIFO its writer keeps feeding, for
    # up to a minute): Ctrl-C raises KeyboardInterrupt while it runs, not
    # once the stream has ended.
    fifo = tmp_path / "stream.jsonl"
    os.mkfifo(fifo)
    finished = threading.Event()
    interrupted = threading.Event()

    def writer():
        try:
            with open(fifo, "w") as f:
                f.write('{"type":"request"}\n')
                for _ in range(6000):
                    if interrupted.is_set():
                        break
                    f.write('{"type":"content","text":"token, "}\n' * 50)
                    f.flush()
                    interrupted.wait(0.01)
                finished.set()
        except (BrokenPipeError, OSError):
            pass

    feeder = threading.Thread(target=writer, daemon=True)
    feeder.start()
    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            loopscope.scan(fifo, detectors=["text-loop"])
        assert not finished.is_set(), "the scan ran until its stream ended: Ctrl-C did not stop it"
    finally:
        interrupted.set()
        timer.cancel()
        feeder.join(timeout=60)
    # Scans work after it.
    assert loopscope.scan(b'{"type":"request"}\n') == []


BAD_VALUES = [None, 5, 3.5, b"bytes", ["l"], {"d": 1}, object(), float("nan"), "\x00", 10**100]


def test_wrong_types_everywhere_are_ordinary_exceptions():
    # Each wrong value is accepted (text, bytes, a dict that is an event) or
    # refused with TypeError / ValueError / OverflowError: never an internal
    # error, a crash or a hang.
    ordinary = (TypeError, ValueError, OverflowError)
    methods = ["push_prompt", "push_request", "push_reasoning", "push_content",
               "push_tool_call", "push_tool_result", "push", "feed"]
    for method in methods:
        for value in BAD_VALUES:
            try:
                getattr(loopscope.Detector(), method)(value)
            except ordinary:
                pass
    for kwargs in [dict(profile=5), dict(profile="nope"), dict(detectors=5), dict(params={"x": object()})]:
        with pytest.raises(ordinary):
            loopscope.Detector(**kwargs)
    for value in [{"type": None}, {"type": "content", "text": 5}, {"type": "x" * 10**6}, {}]:
        try:
            loopscope.Detector().push(value)
        except ordinary:
            pass
    for data in [b"\xff\xfe" * 1000, b"{" * 100000, b"[" * 100000 + b"]" * 100000, "\x1b[31m\n" * 1000]:
        try:
            loopscope.Detector().feed(data)
        except ordinary:
            pass
    for source in [5, None, ["a"], object()]:
        with pytest.raises(ordinary):
            loopscope.scan(source)


def rss_kb():
    with open("/proc/self/status") as f:
        return int(f.read().split("VmRSS:")[1].split()[0])


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs /proc")
def test_memory_stays_flat_over_pushes_and_detectors():
    d = loopscope.Detector()
    for i in range(5000):
        d.push_content("token %d " % (i % 97))
    before = rss_kb()
    for i in range(50000):
        d.push_content("token %d " % (i % 97))
    grown = rss_kb() - before
    assert grown < 16 * 1024, f"50,000 pushes grew RSS by {grown} kB"
    before = rss_kb()
    for _ in range(10000):
        x = loopscope.Detector()
        x.push_content("a b c a b c a b c a b c")
        del x
    grown = rss_kb() - before
    assert grown < 16 * 1024, f"10,000 detectors made and dropped grew RSS by {grown} kB"


def test_threads_sharing_one_detector_lose_no_event():
    d = loopscope.Detector()
    errors = []

    def worker(k):
        try:
            for i in range(2000):
                d.push_content("thread %d says %d. " % (k, i % 13))
        except Exception as e:  # noqa: BLE001 - any error fails the test below
            errors.append(repr(e))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and d.events == 16000
