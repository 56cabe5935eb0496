"""`loopscope.annotate`: the loop columns added to a table in memory — a
pyarrow Table or RecordBatch, a pandas DataFrame or a polars DataFrame —
the same columns `loopscope.ray.detect` and `loopscope.spark.detect` add."""

from ._rows import COLUMNS, Annotator, check


def _kind(data):
    """Which library's table `data` is, by its type's module (none is imported for this)."""
    module = type(data).__module__.split(".")[0]
    name = type(data).__name__
    if module == "pyarrow" and name in ("Table", "RecordBatch"):
        return "arrow"
    if module == "pandas" and name == "DataFrame":
        return "pandas"
    if module == "polars" and name == "DataFrame":
        return "polars"
    raise TypeError(
        f"annotate takes a pyarrow Table or RecordBatch, a pandas DataFrame or a polars DataFrame, not {module}.{name}"
    )


def _plain(value):
    """A cell as plain Python: pandas holds a Parquet list column as NumPy
    arrays (of dicts holding arrays); polars gives lists already."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if type(value).__module__ == "numpy":
        return _plain(value.tolist())
    return value


def annotate(
    data, column="messages", profile="extended", id_column=None, params=None, detectors=None, format="auto"
):
    """`data` with the loop columns added to every row, as a new table of
    the same library (the input is not changed).

    `column` holds each row's trajectory (a message list, a
    `messages`/`trajectory` document, or its JSON text); `id_column` names
    rows in error messages. The columns: `loop` (bool), `loop_detector`,
    `loop_event`, `loop_onset`, `loop_reason` (the first detection),
    `loop_count`, `loop_detections` (the `loopscope scan --json` records as
    JSON), `loop_events` (events read) and `error` (a row that cannot be
    read gets `loop` null and its message). Columns of those names already
    there are replaced.

    The profile defaults to ``extended``, as everywhere in the Python
    package; the CLI's ``loopscope scan`` defaults to ``seed`` (pass
    ``profile="seed"`` to get the CLI's answers).
    """
    kind = _kind(data)
    check(column, profile, params, detectors, id_column)
    names = list(data.schema.names) if kind == "arrow" else [str(c) for c in data.columns]
    for wanted in (column, id_column):
        if wanted is not None and wanted not in names:
            raise ValueError(f"no column {wanted!r} (columns: {', '.join(names)})")
    annotator = Annotator(
        column=column, profile=profile, params=params, detectors=detectors, id_column=id_column, format=format
    )
    new = [name for name, _ in COLUMNS]
    if kind == "arrow":
        kept = [n for n in names if n not in new]
        return annotator.add_to(data.select(kept) if len(kept) < len(names) else data)
    ids = data[id_column].to_list() if id_column else None
    if kind == "polars":
        cells = data[column].to_arrow().to_pylist()  # faster than polars' own to_list for nested columns
    else:
        cells = [_plain(v) for v in data[column].to_list()]
    values = annotator.values_of(cells, ids)
    if kind == "pandas":
        import pandas as pd

        dtypes = {"bool": "boolean", "int64": "Int64", "string": "object"}
        out = data.copy()
        for name, arrow_type in COLUMNS:
            out[name] = pd.Series(values[name], index=data.index, dtype=dtypes[arrow_type])
        return out
    import polars as pl

    dtypes = {"bool": pl.Boolean, "int64": pl.Int64, "string": pl.Utf8}
    return data.with_columns([pl.Series(name, values[name], dtype=dtypes[t]) for name, t in COLUMNS])
