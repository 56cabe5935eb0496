"""Type stubs for loopscope (the extension module loopscope._loopscope)."""

import os
from typing import Any, Dict, List, Literal, Mapping, Optional, Sequence, Tuple, Union

__version__: str

# The known names, for completions; any str is accepted (a name held in a
# variable type-checks; an unknown one raises ValueError at run time).
KnownProfile = Literal["seed", "gemini-cli", "extended", "qwen-code", "openhands", "roo-code", "cline", "roo-fork", "openhands-v0", "vllm", "openclaw", "opencode"]
Profile = Union[KnownProfile, str]
ParamValue = Union[int, float, bool, str, Sequence[int]]

# Errors, each a ValueError (what they replace), chosen by the kind of
# the core's error, never by its message; unreadable files raise
# FileNotFoundError, PermissionError, IsADirectoryError or OSError.
class UnknownProfileError(ValueError): ...
class UnknownDetectorError(ValueError): ...
class UnknownParameterError(ValueError): ...
class InvalidValueError(ValueError): ...
class UnsupportedFormatError(ValueError): ...

class MalformedInputError(ValueError):
    # The 1-based line of the input the problem is on, when known.
    line: Optional[int]

class Detection:
    """One detection: the fields ``loopscope scan --json`` prints."""

    detector: str
    """The detector's id (``text-loop``)."""
    event: int
    """The index of the event at which it fired (0-based)."""
    channel: Literal["reasoning", "content", "tools", "turns"]
    at_char: Optional[int]
    """The channel buffer's length in chars when it fired (None for tools and turns)."""
    onset: Optional[int]
    """Where the repetition begins: a char offset (text) or an event index (tools)."""
    period: Optional[int]
    spans: List[Tuple[int, int]]
    """Half-open (start, end) char ranges of the repeated text in the request's buffer."""
    events: List[int]
    """The events involved (tool and turn detectors)."""
    reason: str
    """One human sentence: what repeated, how often, where."""
    evidence: Literal["count", "copies", "grouped_copies", "occurrences", "calls"]
    def to_dict(self) -> Dict[str, Any]:
        """Every field as ``loopscope scan --json`` prints it (without ``file``)."""
    def get(self, field: str) -> Any:
        """Any field of the JSON record (``checkpoint``, ``matches``, ``threshold``…), None when absent."""

class Detector:
    """One profile's loop detectors over one stream, fed as it arrives.

    The profile defaults to ``extended``; the CLI's ``loopscope scan``
    defaults to ``seed``. A Detector pickles as its setup: the copy starts
    fresh (no events, no detections)."""

    def __init__(
        self,
        profile: Profile = "extended",
        params: Optional[Mapping[str, ParamValue]] = None,
        detectors: Optional[Sequence[str]] = None,
    ) -> None: ...
    def __reduce__(self) -> Tuple[Any, ...]: ...
    @property
    def profile(self) -> str: ...
    @property
    def detections(self) -> List[Detection]:
        """Every detection so far, in stream order."""
    @property
    def events(self) -> int:
        """Events pushed so far (the index the next event gets)."""
    @property
    def problems(self) -> List[Tuple[int, str]]:
        """Bad lines met by ``feed``: (line, reason); line 0 where the input has
        no lines (a whole JSON document: the reason names the record)."""
    def push_prompt(self, text: Optional[str] = None) -> List[Detection]: ...
    def push_request(self, id: Optional[str] = None) -> List[Detection]: ...
    def push_reasoning(self, text: str, token_ids: Optional[List[int]] = None) -> List[Detection]: ...
    def push_content(self, text: str, token_ids: Optional[List[int]] = None) -> List[Detection]: ...
    def push_tokens(self, ids: Sequence[int], text: Optional[str] = None, reasoning: bool = False) -> List[Detection]: ...
    def push_tool_call(self, name: str, args: Any = None, id: Optional[str] = None) -> List[Detection]: ...
    def push_tool_result(self, id: Optional[str], output: Any = None, ok: bool = True) -> List[Detection]: ...
    def push(self, event: Mapping[str, Any]) -> List[Detection]:
        """An event as a native-format dict: {"type": "reasoning", "text": "…"}."""
    def feed(self, data: Union[bytes, str], format: str = "auto") -> List[Detection]:
        """The next bytes of a log in any format loopscope reads."""
    def finish(self) -> List[Detection]: ...
    def states(self) -> List[Dict[str, Any]]: ...

class Scanner:
    """Scans many trajectories or files with one setup, resolved once (a dataset's rows).

    The profile defaults to ``extended``; the CLI's ``loopscope scan``
    defaults to ``seed``. A Scanner pickles (as its setup)."""

    def __init__(
        self,
        profile: Profile = "extended",
        params: Optional[Mapping[str, ParamValue]] = None,
        detectors: Optional[Sequence[str]] = None,
    ) -> None: ...
    def __reduce__(self) -> Tuple[Any, ...]: ...
    @property
    def profile(self) -> str: ...
    def scan(self, source: Union[str, "os.PathLike[str]", bytes], format: str = "auto") -> List[Detection]: ...
    def scan_messages(self, messages: Sequence[Mapping[str, Any]]) -> List[Detection]: ...
    def scan_value(self, value: Any, format: str = "auto") -> List[Detection]:
        """One trajectory in any shape a dataset row holds (a message list, a document, or its JSON text)."""
    def row(self, value: Any, format: str = "auto") -> Dict[str, Any]:
        """The loop_* columns of one trajectory (``loop_events``: events read), as every dataset runner adds them."""
    def file_row(self, path: Union[str, "os.PathLike[str]"], format: str = "auto") -> Dict[str, Any]:
        """The loop_* columns of one session file."""

def scan(
    source: Union[str, "os.PathLike[str]", bytes],
    profile: Profile = "extended",
    format: str = "auto",
    params: Optional[Mapping[str, ParamValue]] = None,
    detectors: Optional[Sequence[str]] = None,
) -> List[Detection]:
    """Scan a whole log (a path, or its bytes): the detections ``loopscope scan --json`` prints."""

def scan_messages(
    messages: Sequence[Mapping[str, Any]],
    profile: Profile = "extended",
    params: Optional[Mapping[str, ParamValue]] = None,
    detectors: Optional[Sequence[str]] = None,
) -> List[Detection]:
    """Scan one trajectory held as OpenAI-style chat messages."""

def profiles() -> List[str]: ...
def detectors(profile: Profile = "extended") -> List[Dict[str, Any]]: ...

def annotate(
    data: Any,
    column: str = "messages",
    profile: Profile = "extended",
    id_column: Optional[str] = None,
    params: Optional[Mapping[str, ParamValue]] = None,
    detectors: Optional[Sequence[str]] = None,
    format: str = "auto",
) -> Any:
    """A pyarrow Table/RecordBatch, pandas or polars DataFrame with the loop columns added (a new one, same library)."""
