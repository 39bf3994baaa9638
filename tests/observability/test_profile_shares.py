"""benchmarks/profiles.py: where a py-spy profile's samples go, as the benchmarks print it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def profiles():
    spec = importlib.util.spec_from_file_location("profiles", BENCHMARKS / "profiles.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


LOOP = "<module> (cli/main.py:5);run_forever (asyncio/base_events.py:608)"


def test_a_sample_goes_to_its_innermost_patchbay_frame_with_the_libraries_under_it(profiles):
    stack = f"{LOOP};handler (core/proxy/routes.py:90);send (core/proxy/engine.py:161);request (aiohttp/client.py:700)"
    assert profiles.place(stack) == "core.proxy.engine"
    assert profiles.place(stack, by="function") == "core.proxy.engine:send"
    installed = "run (patchbay/core/jobs/queue.py:10);execute (sqlalchemy/engine/base.py:1)"
    assert profiles.place(installed) == "core.jobs.queue"  # a non-editable install's paths


def test_a_sample_without_a_patchbay_frame_goes_to_its_innermost_library_not_to_the_entry_point(profiles):
    assert profiles.place(f"{LOOP};_read_ready (asyncio/selector_events.py:1)") == "asyncio (no patchbay frame)"
    assert profiles.place("greenlet_spawn (sqlalchemy/util/_concurrency_py3k.py:1)") == "sqlalchemy (no patchbay frame)"
    assert profiles.place("") == "no Python frame"


def test_counts_add_up_the_samples_of_each_place(profiles, tmp_path):
    collapsed = tmp_path / "profile.txt"
    collapsed.write_text(
        f"{LOOP};log (core/http/middleware.py:103) 3\n{LOOP};_read_ready (asyncio/selector_events.py:1) 2\n{LOOP};log (core/http/middleware.py:110) 4\n"
    )
    assert profiles.counts(collapsed) == {"core.http.middleware": 7, "asyncio (no patchbay frame)": 2}


def test_sampling_into_a_folder_not_made_yet_makes_it(profiles, tmp_path, monkeypatch):
    started = []
    monkeypatch.setattr(profiles.subprocess, "Popen", lambda command, **options: started.append(command))
    destination = tmp_path / "new" / "proxy.txt"
    profiles.start_py_spy(1234, destination)
    assert destination.parent.is_dir()
    assert started and started[0][started[0].index("--output") + 1] == str(destination)
