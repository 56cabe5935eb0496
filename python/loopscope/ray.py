"""loopscope on Ray Data: which rollouts looped, where, on any cluster.

    import ray, loopscope.ray
    ds = ray.data.read_parquet("s3://bucket/rollouts/")
    out = loopscope.ray.detect(ds, column="messages", profile="extended")
    out.filter(lambda r: r["loop"]).write_parquet("looped/")

Each row's trajectory (a message list, a `messages`/`trajectory` document,
an ATIF trajectory, or its JSON text) is scanned by loopscope's detectors
on the workers, in `map_batches` over Arrow batches with one Scanner per
worker. The rows come back with every input column plus `loop` (bool),
`loop_detector`, `loop_event`, `loop_onset`, `loop_reason`, `loop_count`,
`loop_detections` (the `loopscope scan --json` records, as JSON),
`loop_events` (events read) and `error`: a row that cannot be read gets `loop=None` and the message, never
a failed job. An unknown profile or parameter fails at once, on the driver.
"""

import ray.data

from ._rows import Annotator, check


class _Detect(Annotator):
    def __call__(self, batch):
        return self.add_to(batch)


def _cluster_cpus():
    return int(ray.cluster_resources().get("CPU", 1))


def _pool(workers):
    """The actor pool's size and each actor's CPU request.

    The actors always leave one CPU of the cluster to Ray Data's read tasks
    (reading Parquet, JSON…): were they to take every CPU, the reads could
    never run, the actors would wait for batches forever and the job would
    hang with no row. By default there is one actor per CPU but one; with
    `workers=` set, the actors share what is left (a fraction of a CPU
    each: they run all the same, the OS shares the cores)."""
    cpus = _cluster_cpus()
    free = max(0, cpus - 1)
    if workers is None:
        workers = max(1, free)
    elif not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
        raise ValueError(f"workers is a number of actors, 1 or more, not {workers!r}")
    # Ray takes CPU requests in steps of 1/10,000.
    per_actor = min(1.0, int(free / workers * 10_000) / 10_000)
    return workers, per_actor


def _map(ds, batch_size, workers, **kwargs):
    check(kwargs["column"], kwargs["profile"], kwargs["params"], kwargs["detectors"], kwargs.get("id_column"))
    size, per_actor = _pool(workers)
    return ds.map_batches(
        _Detect,
        fn_constructor_kwargs=kwargs,
        batch_format="pyarrow",
        batch_size=batch_size,
        compute=ray.data.ActorPoolStrategy(size=size),
        num_cpus=per_actor,
        udf_modifying_row_count=False,
    )


def detect(
    ds,
    column="messages",
    profile="extended",
    id_column=None,
    params=None,
    detectors=None,
    format="auto",
    workers=None,
    batch_size=256,
):
    """The Dataset `ds` with the loop columns added to every row.

    `column` holds each row's trajectory; `id_column` names rows in error
    messages; `params`/`detectors` as for `loopscope.Detector`; `format`
    forces an importer; `workers` is the number of actors (default: the
    cluster's CPUs less one, at least one). One CPU is always left to Ray
    Data's own read tasks, so that reading Parquet never waits on the
    actors: with `workers` of the cluster's CPUs or more, the actors share
    the rest, each asking for a fraction of a CPU.

    The profile defaults to ``extended`` (the Python package's default);
    ``loopscope scan`` defaults to ``seed``: pass ``profile="seed"`` for
    the CLI's answers.
    """
    return _map(
        ds,
        batch_size,
        workers,
        column=column,
        profile=profile,
        params=params,
        detectors=detectors,
        id_column=id_column,
        format=format,
    )


def detect_files(paths, profile="extended", params=None, detectors=None, format="auto", workers=None):
    """A Dataset of session files (any format the CLI reads), one row each:
    `path` plus the loop columns."""
    ds = ray.data.from_items([{"path": str(p)} for p in paths])
    return _map(
        ds, 16, workers, column="path", profile=profile, params=params, detectors=detectors, format=format, paths=True
    )
