"""The Python module against the command line and hand-derived relations (run by CTest: python_module).

Oracles: the module's results are the command line's for the same scenario (one core, two front ends); a sweep's
rows are the runs of its points; compare's speed-up and exposed fraction are quotients of its columns; bad input
raises ScenarioError naming the JSON path, as the command line's one-line errors do.
"""
import json
import os
import subprocess
import tempfile
import threading
import time

import pytest

import ddlsim

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESNET = os.path.join(ROOT, "scenarios/examples/resnet50_ring_16xV100.json")
LLAMA = os.path.join(ROOT, "scenarios/examples/llama2_7b_fsdp_4x8xH100.json")
TTT = os.path.join(ROOT, "scenarios/examples/resnet50_time_to_train_8x8xH100.json")
BINARY = os.environ.get("DDLSIM_BINARY", os.path.join(ROOT, "build/ddlsim"))


def cli_run(path, *sets):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.json")
        args = [BINARY, "run", path, "--out", out]
        for s in sets:
            args += ["--set", s]
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
        with open(out) as f:
            return json.load(f)


def strip(r):
    r = dict(r)
    r.pop("wall_time_s", None)
    return r


def small(**over):
    """4 ResNet-50 workers on a 10 Gbit/s star, ring all-reduce, 2 iterations."""
    s = {"workers": 4, "model": "resnet50", "batch_size": 32, "device": "V100", "iterations": 2,
         "network": {"topology": "star", "bandwidth": "10Gbps", "latency": "5us"},
         "architecture": {"kind": "allreduce", "algorithm": "ring"}}
    s.update(over)
    return s


def test_run_equals_the_command_line():
    assert strip(ddlsim.run(RESNET, set={"iterations": 2})) == strip(cli_run(RESNET, "iterations=2"))


def test_a_dict_a_json_string_and_a_path_are_the_same_scenario():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "s.json")
        with open(path, "w") as f:
            json.dump(small(), f)
        a = strip(ddlsim.run(small()))
        assert a == strip(ddlsim.run(json.dumps(small())))
        assert a == strip(ddlsim.run(path))
        # pathlib paths too
        import pathlib
        assert a == strip(ddlsim.run(pathlib.Path(path)))


def test_set_overrides_like_the_command_line():
    r = ddlsim.run(small(), set={"network.bandwidth": "100Gbps"})
    assert r["iteration_time_s"] == ddlsim.run(small(network={"topology": "star", "bandwidth": "100Gbps",
                                                             "latency": "5us"}))["iteration_time_s"]
    assert r["iteration_time_s"] < ddlsim.run(small())["iteration_time_s"]


def test_scenario_error_names_the_json_path_and_file():
    with pytest.raises(ddlsim.ScenarioError) as e:
        ddlsim.run(small(workers=0))
    assert e.value.path == "$.workers"
    assert e.value.file == "<dict>"
    assert "expected an integer" in e.value.message
    with pytest.raises(ddlsim.ScenarioError) as e:
        ddlsim.check(small(network={"topology": "star", "bandwith": "1Gbps", "latency": "5us"}))
    assert e.value.path == "$.network.bandwith"
    assert 'did you mean "bandwidth"' in e.value.message
    with pytest.raises(ddlsim.ScenarioError) as e:
        ddlsim.run("/nonexistent/s.json")
    assert e.value.path == "$" and e.value.file == "/nonexistent/s.json"
    with pytest.raises(ddlsim.ScenarioError) as e:
        ddlsim.run('{"workers": 4,,}')
    assert e.value.path == "$" and e.value.file == "<string>"
    assert isinstance(e.value, ValueError)


def test_check_returns_the_resolved_scenario_which_reruns_to_the_same_result():
    resolved = ddlsim.check(small())
    assert resolved["workers"] == 4
    a, b = strip(ddlsim.run(resolved)), strip(ddlsim.run(small()))
    # Only where each assumption came from may differ: the resolved scenario states every default itself.
    for r in (a, b):
        r["scenario"].pop("transport_source")
        r["scenario"]["compute_model"].pop("precision_source")
        r["scenario"]["compute_model"].pop("optimizer_source")
    assert a == b


def test_sweep_rows_are_the_runs_of_their_points():
    frame = ddlsim.sweep(small(), vary={"workers": "2..8:x2", "network.bandwidth": ["10Gbps", "40Gbps"]}, jobs=2)
    assert len(frame) == 6
    assert list(frame.columns[:3]) == ["point", "workers", "network.bandwidth"]
    assert frame.columns[-1] == "error"
    assert list(frame["workers"]) == [2, 2, 4, 4, 8, 8]  # the first key outermost, values as numbers
    assert (frame["error"] == "").all()
    row = frame[(frame["workers"] == 4) & (frame["network.bandwidth"] == "40Gbps")].iloc[0]
    direct = ddlsim.run(small(), set={"workers": 4, "network.bandwidth": "40Gbps"})
    assert row["iteration_time_s"] == direct["iteration_time_s"]
    assert row["time_breakdown_s.compute"] == direct["time_breakdown_s"]["compute"]


def test_sweep_checks_keys_and_values_before_any_point_runs():
    with pytest.raises(ddlsim.ScenarioError) as e:
        ddlsim.sweep(small(), vary={"net.bandwidth": ["1Gbps"]})
    assert 'did you mean "network"' in e.value.message
    with pytest.raises(ddlsim.ScenarioError) as e:
        ddlsim.sweep(small(), vary={"workers": "8..64x2"})
    assert "is not a range" in e.value.message
    with pytest.raises(ddlsim.ScenarioError) as e:
        ddlsim.sweep(small(), vary={"workers": [2, "many"]})
    assert "$.workers" in e.value.message


def test_compare_answers_ddp_zero2_fsdp_hsdp_in_one_call():
    frame = ddlsim.compare(LLAMA, set={"iterations": 1}, variants={
        "ddp": {"sharding": None},
        "zero2": {"sharding": {"stage": 2, "prefetch": None}},
        "fsdp": {},
        "hsdp": {"sharding": {"group": "node"}},
    })
    assert list(frame.index) == ["ddp", "zero2", "fsdp", "hsdp"]
    assert frame.loc["ddp", "speedup"] == pytest.approx(1.0)
    for name in frame.index:
        r = frame.loc[name]
        assert r["speedup"] == pytest.approx(frame.loc["ddp", "iteration_time_s"] / r["iteration_time_s"])
        assert r["exposed_fraction"] == pytest.approx(r["exposed_communication_time_s"] / r["iteration_time_s"])
    # Memory: the replicated model does not fit an 80 GB H100 (16 bytes per parameter of Adam and weights alone
    # is 108 GB for 6.7 B parameters); full sharding divides it by 32.
    assert not frame.loc["ddp", "memory_fits"]
    assert frame.loc["ddp", "memory_per_gpu_bytes"] > 16 * 6.7e9
    assert frame.loc["fsdp", "memory_fits"]
    assert frame.loc["fsdp", "memory_per_gpu_bytes"] < frame.loc["zero2", "memory_per_gpu_bytes"]
    assert frame.loc["fsdp", "iteration_time_s"] == ddlsim.run(LLAMA, set={"iterations": 1})["iteration_time_s"]
    assert "time per step" in frame.attrs["table"]


def test_compare_reports_time_to_train_and_cost_with_a_training_block():
    frame = ddlsim.compare([TTT], set={"iterations": 1})
    direct = ddlsim.run(TTT, set={"iterations": 1})
    row = frame.iloc[0]
    assert row["time_to_train_s"] == direct["time_to_train_s"]
    assert row["gpu_hours"] == pytest.approx(direct["time_to_train_s"] * 64 / 3600, rel=1e-9)


def test_compare_refuses_a_bad_variant_naming_it():
    with pytest.raises(ddlsim.ScenarioError) as e:
        ddlsim.compare(small(), variants={"bad": {"network": {"bandwidth": "fast"}}})
    assert e.value.path == "$.network.bandwidth"
    assert e.value.file == "<dict> (variant bad)"


def test_the_gil_is_released_while_simulating():
    """A Python thread keeps running while another simulates (it would stall for the whole run otherwise)."""
    ticks = []
    done = threading.Event()

    def ticker():
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.005)

    t = threading.Thread(target=ticker)
    t.start()
    start = time.perf_counter()
    ddlsim.run(LLAMA, set={"iterations": 2})
    end = time.perf_counter()
    done.set()
    t.join()
    during = [x for x in ticks if start < x < end]
    assert end - start > 0.1
    assert len(during) >= 5


def test_schema_and_models():
    schema = ddlsim.schema()
    assert "workers" in schema["properties"]
    cat = ddlsim.models()
    assert cat["models"]["resnet50"]["parameters"] == 25557032  # torchvision's ResNet-50
    assert cat["devices"]["H100"]["memory_bandwidth_bytes_per_s"] == pytest.approx(3.35e12)


def test_sweep_with_named_variants_is_their_runs():
    frame = ddlsim.sweep(small(), vary={"workers": [2, 4]}, variants={
        "ring": {}, "ps": {"architecture": {"kind": "ps", "algorithm": None}}})
    assert list(frame["variant"]) == ["ring", "ring", "ps", "ps"]  # the variants outermost
    row = frame[(frame["variant"] == "ps") & (frame["workers"] == 4)].iloc[0]
    ps = small(architecture={"kind": "ps"})
    assert row["iteration_time_s"] == ddlsim.run(ps, set={"workers": 4})["iteration_time_s"]
    with pytest.raises(ddlsim.ScenarioError) as e:
        ddlsim.sweep(small(), variants={"bad": {"architecture": {"kind": "nope"}}})
    assert "$.architecture.kind" in e.value.message


# Llama 3 8B on 16 H100s, tensor 2 x pipeline 2 x data 4, a global batch of 16 sequences (shared with test_plan.cpp).
SMALL_LLAMA = os.path.join(ROOT, "tests/tools/plan_llama3_8b_16xH100.json")


def test_plan_ranks_every_layout_and_includes_the_scenarios_own():
    frame = ddlsim.plan(SMALL_LLAMA, max_tensor=2, top=3)
    # Every candidate has a status; the counts add up to the rows.
    assert set(frame["status"]) <= {"simulated", "refused", "does-not-fit", "failed", "bounded"}
    simulated = frame[frame["status"] == "simulated"]
    assert len(simulated) > 1
    # The global batch (1 x 4 x 4 = 16 sequences) is kept by every simulated layout.
    assert ((simulated["micro_batch"] * simulated["micro_batches"] * simulated["data"]) == 16).all()
    # Ranked best first by tokens/s; the scenario's own layout is one of them and no better than the best.
    assert frame.iloc[0]["rank"] == 1
    assert frame.iloc[0]["tokens_per_s"] == simulated["tokens_per_s"].max()
    mine = frame[frame["yours"]]
    assert len(mine) == 1
    assert mine.iloc[0]["tensor"] == 2 and mine.iloc[0]["pipeline"] == 2
    assert mine.iloc[0]["tokens_per_s"] <= frame.iloc[0]["tokens_per_s"]
    # Its row is the run of that layout (one iteration).
    direct = ddlsim.run(SMALL_LLAMA, set={"iterations": 1})
    assert mine.iloc[0]["iteration_time_s"] == pytest.approx(direct["iteration_time_s"], rel=1e-12)
    assert "your configuration" in frame.attrs["report"]
    with pytest.raises(ddlsim.ScenarioError):
        ddlsim.plan(SMALL_LLAMA, set={"parallelism.tensorr": 2})
