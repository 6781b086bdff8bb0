"""ddlsim from Python: run, check, sweep and compare data-parallel training scenarios.

The same simulator as the ``ddlsim`` command line, in-process (the C++ core, with the GIL released while it
simulates). A scenario is a ``dict`` (the scenario JSON of docs/SCENARIOS.md), a JSON string, or the path of a
scenario file; relative file names inside a dict or a string resolve against the current directory, inside a file
against the file's folder. ``set`` overrides keys like ``ddlsim run --set``: ``{"network.bandwidth": "100Gbps"}``.

Bad input raises :class:`ScenarioError` naming the JSON path and what was expected.

Build it with the project (``cmake --build build``) and import it from the build tree::

    PYTHONPATH=build/python /usr/bin/python3 -c "import ddlsim; print(ddlsim.run('scenarios/examples/resnet50_ring_16xV100.json')['iteration_time_s'])"
"""
from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import _ddlsim

__all__ = ["ScenarioError", "run", "summary", "check", "sweep", "compare", "plan", "schema", "models"]

Scenario = Union[Mapping[str, Any], str, "os.PathLike[str]"]
Sets = Union[None, Mapping[str, Any], Sequence[str]]


class ScenarioError(ValueError):
    """Bad input: ``message`` what was expected, ``path`` the JSON path ("$.network.bandwidth"; for an override
    "set KEY=VALUE", for a varied key "vary KEY=VALUES"), ``file`` the scenario it came from ("<dict>",
    "<string>" or the path)."""

    def __init__(self, message: str, path: str = "", file: str = "") -> None:
        self.message = message
        self.path = path
        self.file = file
        where = ": ".join(p for p in (file, path) if p)
        super().__init__(f"{where}: {message}" if where else message)


_ddlsim._set_error_class(ScenarioError)


def _source(scenario: Scenario) -> Tuple[str, str, str]:
    """(JSON text or "" for a file, base directory, name for messages)."""
    if isinstance(scenario, Mapping):
        try:
            text = json.dumps(scenario, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise ScenarioError(f"expected a JSON-serialisable scenario ({e})", "$", "<dict>") from None
        return text, os.getcwd(), "<dict>"
    if isinstance(scenario, os.PathLike):
        scenario = os.fspath(scenario)
    if not isinstance(scenario, str):
        raise TypeError(f"scenario: expected a dict, a JSON string or a path, got {type(scenario).__name__}")
    if scenario.lstrip().startswith("{"):
        return scenario, os.getcwd(), "<string>"
    return "", os.path.dirname(scenario) or ".", scenario


def _value_text(v: Any) -> str:
    """A value as ``--set`` takes it: strings as they are ("100Gbps"), everything else as JSON."""
    return v if isinstance(v, str) else json.dumps(v, allow_nan=False)


def _sets(set: Sets) -> List[str]:
    if set is None:
        return []
    if isinstance(set, Mapping):
        return [f"{k}={_value_text(v)}" for k, v in set.items()]
    if isinstance(set, str):
        return [set]
    return list(set)


def _jobs(jobs: Optional[int]) -> int:
    if jobs is None:
        return max(1, os.cpu_count() or 1)
    if jobs < 1:
        raise ValueError("jobs: expected at least 1")
    return int(jobs)


def run(scenario: Scenario, set: Sets = None) -> Dict[str, Any]:
    """Simulates the scenario; returns the result JSON of ``ddlsim run --out`` (docs/CONTRACT.md §3) as a dict:
    ``iteration_time_s``, ``throughput_samples_per_s``, ``time_breakdown_s``, ``memory_per_gpu_bytes``, ... and,
    with a ``training`` block, ``time_to_train_s``, ``gpu_hours``, ``cost``."""
    text, base, file = _source(scenario)
    return json.loads(_ddlsim.run(text, base, file, _sets(set)))


def summary(scenario: Scenario, set: Sets = None) -> str:
    """Simulates the scenario; returns the text summary ``ddlsim run`` prints."""
    text, base, file = _source(scenario)
    return _ddlsim.summary(text, base, file, _sets(set))


def check(scenario: Scenario, set: Sets = None) -> Dict[str, Any]:
    """Validates the scenario without simulating; returns it resolved (every default applied), as
    ``ddlsim check --print`` does. Raises ScenarioError for bad input."""
    text, base, file = _source(scenario)
    return json.loads(_ddlsim.check(text, base, file, _sets(set)))


def _vary_text(key: str, values: Union[str, Sequence[Any]]) -> str:
    if isinstance(values, str):
        return f"{key}={values}"
    items = [_value_text(v) for v in values]
    if not items:
        raise ScenarioError("expected at least one value", f"vary {key}", "")
    return f"{key}=" + ",".join(items)


def _cell(v: Any) -> Any:
    """A varied value as given on the command line ("8", "100Gbps") as the Python value it stands for."""
    if isinstance(v, str):
        try:
            return json.loads(v)
        except ValueError:
            return v
    return v


def sweep(scenario: Scenario, vary: Optional[Mapping[str, Union[str, Sequence[Any]]]] = None, set: Sets = None,
          jobs: Optional[int] = None,
          variants: Optional[Mapping[str, Mapping[str, Any]]] = None) -> "pandas.DataFrame":
    """Runs the cartesian product of the varied keys (the first key outermost) on ``jobs`` threads and returns one
    row per point (one per job and point for a ``jobs`` list): ``point``, the varied keys as columns, the result's
    scalar keys flattened with dots (the columns of ``ddlsim sweep``), and ``error`` (empty when the point ran).

    ``vary`` maps a key to a list of values or to the command line's text: ``{"workers": "4..64:x2",
    "network.bandwidth": ["10Gbps", "100Gbps"]}``. ``variants`` (name to a JSON merge patch, as in
    :func:`compare`) adds a ``variant`` column, outermost. Every key, value and variant is checked before any point
    runs (ScenarioError)."""
    import pandas

    text, base, file = _source(scenario)
    vary = dict(vary or {})
    specs = [_vary_text(k, v) for k, v in vary.items()]
    patches = [f"{k}={json.dumps(v, allow_nan=False)}" for k, v in (variants or {}).items()]
    rows = json.loads(_ddlsim.sweep(text, base, file, _sets(set), specs, patches, _jobs(jobs)))
    frame = pandas.DataFrame(rows)
    # ddlsim sweep's column order: point, (job,) the variant and the varied keys, the result columns, error.
    first = ["point"] + (["job"] if "job" in frame else []) + (["variant"] if variants else []) + list(vary)
    known = first + [c for c in _ddlsim.result_columns() if c in frame and c not in first]
    frame = frame[known + sorted(c for c in frame if c not in known and c != "error") + ["error"]]
    for key in vary:
        if key in frame:
            frame[key] = frame[key].map(_cell)
    return frame


def compare(scenarios: Union[Scenario, Sequence[Scenario], Mapping[str, Scenario]],
            variants: Optional[Mapping[str, Mapping[str, Any]]] = None, set: Sets = None,
            jobs: Optional[int] = None) -> "pandas.DataFrame":
    """Runs scenarios side by side, as ``ddlsim compare``; returns one row per case (and job), indexed by name:
    ``scheme``, ``iteration_time_s``, ``throughput_samples_per_s``, ``speedup`` (over the first), ``tokens_per_s``,
    ``mfu``, ``compute_time_s``, ``exposed_communication_time_s``, ``exposed_fraction``, ``memory_per_gpu_bytes``,
    ``memory_fits``, ``time_to_train_s``, ``gpu_hours``, ``cost`` (None where a figure does not apply).

    ``scenarios``: one scenario, a list (named by file stem, or "case0", "case1", ... for dicts and strings) or a
    dict of name to scenario. ``variants``: name to a JSON merge patch (RFC 7386) applied to each scenario, e.g.
    ``{"ddp": {"sharding": None}, "fsdp": {"sharding": {"stage": 3}}}``. The text table ``ddlsim compare``
    prints is in ``frame.attrs["table"]``."""
    import pandas

    if isinstance(scenarios, Mapping) and not _looks_like_scenario(scenarios):
        named = list(scenarios.items())
    elif isinstance(scenarios, (Mapping, str, os.PathLike)):
        named = [(None, scenarios)]
    else:
        named = [(None, s) for s in scenarios]
    cases = []
    for i, (name, s) in enumerate(named):
        text, base, file = _source(s)
        if name is None:
            name = os.path.splitext(os.path.basename(file))[0] if not text else f"case{i}"
        cases.append((str(name), text, base, file))
    patches = [(str(k), json.dumps(v, allow_nan=False)) for k, v in (variants or {}).items()]
    rows_text, table = _ddlsim.compare(cases, _sets(set), patches, _jobs(jobs))
    frame = pandas.DataFrame(json.loads(rows_text))
    frame = frame[[c for c in ("name", "job", "scheme") if c in frame] + list(_ddlsim.compare_columns())]
    frame = frame.set_index(["name", "job"] if "job" in frame else "name")
    frame.attrs["table"] = table
    return frame


def plan(scenario: Scenario, set: Sets = None, objective: Optional[str] = None, top: Optional[int] = None,
         jobs: Optional[int] = None, max_tensor: Optional[int] = None,
         exhaustive: bool = False) -> "pandas.DataFrame":
    """Searches the parallel layouts of the scenario's job by simulation, as ``ddlsim plan``: the model, workers,
    device, network and global batch stay; tensor, pipeline, context, expert, virtual stages, micro-batch, sharding
    stage and recompute vary. Returns one row per candidate, the columns of ``ddlsim plan --out``: ``rank`` (1 =
    best, None when not ranked), ``candidate``, ``yours`` (the scenario's own layout), ``status`` ("simulated",
    "refused", "does-not-fit", "failed", "bounded"), ``reason_key``, ``reason``, the layout (``tensor``, ``pipeline``,
    ``context``, ``expert``, ``virtual_stages``, ``schedule``, ``micro_batch``, ``micro_batches``, ``data``,
    ``sharding``, ``recompute``, ``sequence_parallel``), ``objective`` and the result columns of :func:`sweep`;
    ranked rows first, best first. ``objective``: None or "throughput" (tokens/s, highest first),
    "time_to_train_s", "cost", "gpu_hours" (with a ``training`` block), or a result column ("max:COLUMN" highest
    first). ``top`` sets how many rows the printed report in ``frame.attrs["report"]`` ranks (default 10);
    ``max_tensor`` the largest tensor-parallel degree (default: the GPUs of one node); ``exhaustive`` simulates
    every candidate that fits (by default those whose step's lower bound, ``step_bound_s``, exceeds the ``top`` best
    steps are "bounded", not simulated: the same best rows, sooner)."""
    import pandas

    if top is not None and top < 1:
        raise ValueError("top: expected at least 1")
    if max_tensor is not None and max_tensor < 1:
        raise ValueError("max_tensor: expected at least 1")
    text, base, file = _source(scenario)
    rows, columns, report = _ddlsim.plan(text, base, file, _sets(set), objective or "", int(top or 10), _jobs(jobs),
                                         int(max_tensor or 0), bool(exhaustive))
    frame = pandas.DataFrame(json.loads(rows))
    frame = frame[[c for c in columns if c in frame]]
    frame.attrs["report"] = report
    return frame


def _looks_like_scenario(d: Mapping[str, Any]) -> bool:
    """A dict with scenario keys (workers, model, ...) rather than a dict of named scenarios."""
    return "workers" in d or "model" in d or "jobs" in d or "network" in d


def schema() -> Dict[str, Any]:
    """The JSON Schema of scenarios (``ddlsim schema``), generated from the loader's key tables."""
    return json.loads(_ddlsim.schema())


def models() -> Dict[str, Dict[str, Any]]:
    """The built-in workloads and devices (``ddlsim models``): ``{"models": {name: {...}}, "devices": {...}}``."""
    return json.loads(_ddlsim.catalog())
