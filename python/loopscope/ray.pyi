from typing import Any, Iterable, Mapping, Optional, Sequence

def detect(
    ds: Any,
    column: str = "messages",
    profile: str = "extended",
    id_column: Optional[str] = None,
    params: Optional[Mapping[str, Any]] = None,
    detectors: Optional[Sequence[str]] = None,
    format: str = "auto",
    workers: Optional[int] = None,
    batch_size: int = 256,
) -> Any:
    """The ray.data.Dataset with loop, loop_detector, loop_event, loop_onset, loop_reason, loop_count, loop_detections, loop_events and error columns (profile extended by default; the CLI's is seed)."""

def detect_files(
    paths: Iterable[Any],
    profile: str = "extended",
    params: Optional[Mapping[str, Any]] = None,
    detectors: Optional[Sequence[str]] = None,
    format: str = "auto",
    workers: Optional[int] = None,
) -> Any: ...
