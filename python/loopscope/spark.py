"""loopscope on Spark: which rollouts looped, where, on any cluster.

    from pyspark.sql import SparkSession
    import loopscope.spark
    spark = SparkSession.builder.getOrCreate()
    df = spark.read.parquet("hdfs:///rollouts/")
    out = loopscope.spark.detect(df, column="messages", profile="extended")
    out.where("loop").select("instance_id", "loop_detector", "loop_reason").show()

The DataFrame comes back with every input column plus the loop columns
(`loop`, `loop_detector`, `loop_event`, `loop_onset`, `loop_reason`,
`loop_count`, `loop_detections`, `loop_events`, `error`), computed on the
executors with `mapInArrow` (one Scanner per partition's Python worker).

The `loopscope` wheel must be installed where the executors run, in the
Python that Spark starts there: Spark runs `PYSPARK_PYTHON` (default
`python3` from PATH, which in a virtual environment is often another
Python without loopscope). Importing `loopscope.spark` sets
`PYSPARK_PYTHON` to this interpreter when it is unset — in effect for a
SparkSession made after the import; on a cluster, set it (or
`spark.pyspark.python`) to a Python that has the wheel. `detect` checks a
local session's executor Python and says so when it lacks loopscope.

The profile defaults to ``extended`` (the Python package's default);
``loopscope scan`` defaults to ``seed``: pass ``profile="seed"`` for the
CLI's answers. A malformed row gets
`loop=NULL` and its `error`; an unknown profile or parameter fails at once,
on the driver.
"""

import os
import subprocess
import sys

from ._rows import Annotator, check

# Executors of a session made after this import run this Python, which has
# loopscope, unless the user chose another (see the module's doc).
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


def _check_local_python(df):
    """On a local master, fail on the driver with the fix when the executors'
    Python cannot import loopscope (else every task fails with an import
    error deep in a Java stack trace)."""
    sc = df.sparkSession.sparkContext
    if not sc.master.startswith("local"):
        return
    python = getattr(sc, "pythonExec", None) or "python3"
    if os.path.realpath(python) == os.path.realpath(sys.executable):
        return
    try:
        ok = subprocess.run([python, "-c", "import loopscope"], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    if not ok:
        raise ValueError(
            f"Spark's executors run {python} (PYSPARK_PYTHON), which cannot import loopscope: "
            f"set PYSPARK_PYTHON={sys.executable} before the SparkSession starts, or install the wheel there"
        )


def _schema(df):
    from pyspark.sql.types import BooleanType, LongType, StringType, StructField, StructType

    types = {"bool": BooleanType(), "string": StringType(), "int64": LongType()}
    from ._rows import COLUMNS

    return StructType(list(df.schema.fields) + [StructField(name, types[kind], True) for name, kind in COLUMNS])


def detect(df, column="messages", profile="extended", id_column=None, params=None, detectors=None, format="auto"):
    """`df` with the loop columns added to every row (see the module's doc)."""
    check(column, profile, params, detectors, id_column)
    if column not in df.columns:
        raise ValueError(f"no column {column!r} (columns: {', '.join(df.columns)})")
    if id_column is not None and id_column not in df.columns:
        raise ValueError(f"no column {id_column!r} (columns: {', '.join(df.columns)})")
    _check_local_python(df)
    kwargs = dict(column=column, profile=profile, params=params, detectors=detectors, id_column=id_column, format=format)

    def run(batches):
        annotator = Annotator(**kwargs)
        for batch in batches:
            yield annotator.add_to(batch)

    return df.mapInArrow(run, _schema(df))


__all__ = ["detect"]
