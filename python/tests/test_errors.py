"""Errors raise the exception class of their kind (chosen by the core's
error kind, never by the message's words), each a ValueError or OSError
as before, with the CLI's message."""

import os

import pytest

import loopscope


@pytest.mark.parametrize(
    ("make", "cls", "words"),
    [
        (lambda: loopscope.Detector(profile="nope"), loopscope.UnknownProfileError, "unknown profile"),
        (lambda: loopscope.Detector(profile="seed", detectors=["nope"]), loopscope.UnknownDetectorError, "unknown detector"),
        (lambda: loopscope.Detector(profile="seed", detectors=["text-loop"]), loopscope.UnknownDetectorError, "not in profile seed"),
        (lambda: loopscope.Detector(profile="extended", params={"text-loop.nope": 1}), loopscope.UnknownParameterError, "no parameter"),
        (lambda: loopscope.Detector(profile="extended", params={"text-loop.copies": "many"}), loopscope.InvalidValueError, "whole number"),
        (lambda: loopscope.Detector(profile="extended", params={"text-loop.copies": 1}), loopscope.InvalidValueError, "at least"),
        (lambda: loopscope.scan(b"{}", format="no-such-format"), loopscope.UnsupportedFormatError, "no-such-format"),
        (lambda: loopscope.scan(b"\x00\x01 not a log"), loopscope.UnsupportedFormatError, ""),
        (lambda: loopscope.Detector().push({"text": "no type"}), loopscope.MalformedInputError, "not an event"),
        (lambda: loopscope.Detector().push([1, 2, 3]), loopscope.MalformedInputError, "not an event"),
    ],
)
def test_each_kind_of_mistake_has_its_class(make, cls, words):
    with pytest.raises(cls) as e:
        make()
    assert isinstance(e.value, ValueError)
    assert type(e.value) is cls
    assert words in str(e.value)


def test_classes_are_value_errors_exported_from_the_package():
    for name in [
        "UnknownProfileError",
        "UnknownDetectorError",
        "UnknownParameterError",
        "InvalidValueError",
        "MalformedInputError",
        "UnsupportedFormatError",
    ]:
        cls = getattr(loopscope, name)
        assert issubclass(cls, ValueError) and name in loopscope.__all__
        assert cls.__module__ == "loopscope"
    # Distinct classes: catching one does not catch another.
    assert not issubclass(loopscope.UnknownProfileError, loopscope.UnknownDetectorError)


def test_a_malformed_event_has_a_line_attribute():
    with pytest.raises(loopscope.MalformedInputError) as e:
        loopscope.Detector().push({"text": "no type"})
    assert e.value.line is None
    with pytest.raises(loopscope.MalformedInputError) as e:
        loopscope.Detector().push({"type": "reasoning", "text": 5})
    assert e.value.line is None


def test_files_raise_the_os_error_of_their_kind(tmp_path):
    with pytest.raises(FileNotFoundError) as e:
        loopscope.scan(tmp_path / "missing.jsonl")
    assert str(e.value).endswith("no such file or directory")
    with pytest.raises(FileNotFoundError):
        loopscope.Scanner().scan(str(tmp_path / "missing.jsonl"))
    # A folder that is not a Cline task: no importer reads it.
    with pytest.raises(loopscope.UnsupportedFormatError):
        loopscope.scan(tmp_path)


def test_a_stream_that_is_not_in_its_file_is_not_found_and_plain_text_unsupported(tmp_path):
    one = tmp_path / "one.jsonl"
    one.write_text('{"type":"request"}\n')
    # `FILE#ID` names a sub-agent the file does not hold.
    with pytest.raises(FileNotFoundError) as e:
        loopscope.scan(f"{one}#agent-7")
    assert "names none in it" in str(e.value)
    text = tmp_path / "notes.txt"
    text.write_text("思考 just words, not a log 🧪\n")
    with pytest.raises(loopscope.UnsupportedFormatError):
        loopscope.scan(text)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file (the CLI's tests cover it with setpriv)")
def test_an_unreadable_file_is_a_permission_error(tmp_path):
    f = tmp_path / "secret.jsonl"
    f.write_text('{"type":"request"}\n')
    f.chmod(0)
    with pytest.raises(PermissionError) as e:
        loopscope.scan(f)
    assert "permission denied" in str(e.value)
