"""The loop columns a dataset row gets, computed over an Arrow batch: shared
by the Ray and Spark runners (each worker keeps one Scanner)."""

from ._loopscope import Scanner

#: The columns added to every row, with their Arrow types' names.
COLUMNS = (
    ("loop", "bool"),
    ("loop_detector", "string"),
    ("loop_event", "int64"),
    ("loop_onset", "int64"),
    ("loop_reason", "string"),
    ("loop_count", "int64"),
    ("loop_detections", "string"),
    ("loop_events", "int64"),
    ("error", "string"),
)


def arrow_fields():
    import pyarrow as pa

    types = {"bool": pa.bool_(), "string": pa.string(), "int64": pa.int64()}
    return [pa.field(name, types[kind]) for name, kind in COLUMNS]


class Annotator:
    """Adds the loop columns to Arrow batches. Made once per worker: the
    setup (profile, parameters) is resolved once, not per row."""

    def __init__(
        self, column, profile="extended", params=None, detectors=None, id_column=None, format="auto", paths=False
    ):
        self.scanner = Scanner(profile=profile, params=params, detectors=detectors)
        self.column = column
        self.id_column = id_column
        self.format = format
        # The column holds trajectories, or (paths=True) session files' paths.
        self.scan_row = self.scanner.file_row if paths else self.scanner.row

    def values(self, batch):
        """The new columns' values for every row of `batch` (a pyarrow Table or RecordBatch)."""
        names = batch.schema.names
        if self.column not in names:
            raise KeyError(f"no column {self.column!r} (columns: {', '.join(names)})")
        values = batch.column(self.column).to_pylist()
        ids = batch.column(self.id_column).to_pylist() if self.id_column else None
        return self.values_of(values, ids)

    def values_of(self, values, ids=None):
        """The new columns' values for trajectories given as Python values."""
        if ids is None:
            ids = [None] * len(values)
        out = {name: [] for name, _ in COLUMNS}
        for value, row_id in zip(values, ids):
            try:
                if value is None:
                    raise ValueError("no trajectory in this row (null)")
                row = self.scan_row(value, self.format)
                row["error"] = None
            except (ValueError, TypeError, OSError, RuntimeError) as e:
                where = f"{row_id}: " if row_id is not None else ""
                row = {name: None for name, _ in COLUMNS}
                row["error"] = f"{where}{e}"
            for name, _ in COLUMNS:
                out[name].append(row.get(name))
        return out

    def add_to(self, batch):
        """`batch` with the loop columns appended (a Table stays a Table)."""
        import pyarrow as pa

        values = self.values(batch)
        arrays = [pa.array(values[f.name], type=f.type) for f in arrow_fields()]
        columns = list(batch.columns) + arrays
        names = list(batch.schema.names) + [f.name for f in arrow_fields()]
        if isinstance(batch, pa.RecordBatch):
            return pa.RecordBatch.from_arrays(columns, names=names)
        return pa.Table.from_arrays(columns, names=names)


def check(column, profile, params, detectors, id_column):
    """Fails fast, on the driver, for what would fail on every worker."""
    if not isinstance(column, str) or not column:
        raise ValueError("column names the trajectory column, e.g. column='messages'")
    if id_column is not None and not isinstance(id_column, str):
        raise ValueError("id_column is a column name or None")
    Scanner(profile=profile, params=params, detectors=detectors)
