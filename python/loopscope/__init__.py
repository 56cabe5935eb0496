"""loopscope: catch LLM loops while they stream.

Run loopscope's loop detectors (every profile: ``extended``, ``seed``,
``gemini-cli``, ``qwen-code``, ``openhands``, ``roo-code``, ``cline``,
``roo-fork``, ``openclaw``, ``opencode``) inside a generation loop, over recorded logs, or over
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
columns to every row; a :class:`Scanner` does the same row by row.

A :class:`Detection` carries the fields ``loopscope scan --json`` prints
(``to_dict()`` gives them all). Bad profile names, parameters and events
raise ``ValueError``; unreadable files ``OSError``.
"""

from ._loopscope import Detection, Detector, Scanner, __version__, detectors, profiles, scan, scan_messages

__all__ = ["Detection", "Detector", "Scanner", "detectors", "profiles", "scan", "scan_messages", "__version__"]
