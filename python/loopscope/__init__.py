"""loopscope: catch LLM loops while they stream.

Run loopscope's loop detectors (every profile: ``extended``, ``seed``,
``gemini-cli``, ``qwen-code``, ``openhands`` (the OpenHands SDK's),
``openhands-v0``, ``roo-code``, ``cline``, ``roo-fork``, ``vllm``, ``openclaw``,
``opencode``) inside a generation loop, over recorded logs, or over
trajectories held as chat message lists::

    import loopscope

    d = loopscope.Detector(profile="extended")
    d.push_request()
    for delta in stream:
        if d.push_reasoning(delta):
            break  # a loop: stop generating

    loopscope.scan("session.jsonl", profile="seed")      # any format the CLI reads
    loopscope.scan_messages(messages)                    # an OpenAI-style message list

Datasets: ``loopscope.ray.detect(ds, column="messages")`` (Ray Data) and
``loopscope.spark.detect(df, column="messages")`` (PySpark) add loop
columns to every row; ``loopscope.annotate(table)`` does it for a pyarrow
Table, a pandas or a polars DataFrame in memory, and a :class:`Scanner`
row by row. Detectors and Scanners pickle (as their setup).

Generation: ``loopscope.transformers`` stops Hugging Face ``generate()``
at a loop (a StoppingCriteria, a streamer, a LogitsProcessor).

The profile defaults to ``extended`` everywhere in this package, while the
CLI's ``loopscope scan`` defaults to ``seed`` (the published detectors
only; ``extended`` adds more and finds more loops): pass
``profile="seed"`` to get the CLI's default answers, or ``--profile
extended`` to the CLI.

A :class:`Detection` carries the fields ``loopscope scan --json`` prints
(``to_dict()`` gives them all). Bad profile names, parameters and events
raise ``ValueError`` subclasses, one per kind of mistake
(:class:`UnknownProfileError`, :class:`UnknownDetectorError`,
:class:`UnknownParameterError`, :class:`InvalidValueError`,
:class:`MalformedInputError` with its ``line``,
:class:`UnsupportedFormatError`); unreadable files ``OSError``
(``FileNotFoundError``, ``PermissionError``, ``IsADirectoryError``).
"""

from ._loopscope import (
    Detection,
    Detector,
    InvalidValueError,
    MalformedInputError,
    Scanner,
    UnknownDetectorError,
    UnknownParameterError,
    UnknownProfileError,
    UnsupportedFormatError,
    __version__,
    detectors,
    profiles,
    scan,
    scan_messages,
)
from .frames import annotate

__all__ = [
    "Detection",
    "Detector",
    "InvalidValueError",
    "MalformedInputError",
    "Scanner",
    "UnknownDetectorError",
    "UnknownParameterError",
    "UnknownProfileError",
    "UnsupportedFormatError",
    "annotate",
    "detectors",
    "profiles",
    "scan",
    "scan_messages",
    "__version__",
]
