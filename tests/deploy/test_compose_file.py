"""compose.yaml, the Dockerfile and .dockerignore read without Docker: the services and their health
checks, every environment variable a real setting that loads, every command a real CLI command,
every probe a real route. (tests/deploy/test_container.py brings the deployment up where Docker is.)"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest
import yaml

from patchbay.cli.main import cli
from patchbay.core.http.root import routes as probe_routes
from patchbay.core.settings import ENV_PREFIX, FREE_TABLES, PLUGIN_FIELDS, SECTIONS, Settings, load_settings
from tests.deploy.scenario import interpolate

ROOT = Path(__file__).resolve().parents[2]
PATCHBAY_SERVICES = ("migrate", "serve-1", "serve-2", "worker")
PROBES = {route.path for route in probe_routes}


def known_variables() -> set[str]:
    """Every ``PATCHBAY_*`` variable a core setting reads (core/settings.py)."""
    names = {f"{ENV_PREFIX}CONFIG"}
    for name in Settings.model_fields:
        if name in SECTIONS:
            names |= {f"{ENV_PREFIX}{name.upper()}_{field.upper()}" for field in SECTIONS[name].model_fields}
        elif name not in FREE_TABLES and name not in PLUGIN_FIELDS:
            names.add(f"{ENV_PREFIX}{name.upper()}")
    return names


def resolve_command(args: list[str]) -> click.Command:
    """The CLI command ``args`` (after ``patchbay``) runs, its options parsed as click parses them
    (an unknown command or option raises ``click.UsageError``); nothing is invoked."""
    command: click.Command = cli
    context = click.Context(cli, info_name="patchbay")
    while isinstance(command, click.Group):
        name, args = args[0], args[1:]
        sub = command.get_command(context, name)
        if sub is None:
            raise click.UsageError(f"no command {name!r}")
        command, context = sub, click.Context(sub, info_name=name, parent=context)
    command.make_context(command.name, list(args), parent=context.parent)
    return command


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((ROOT / "compose.yaml").read_text())


@pytest.fixture(scope="module")
def dockerfile() -> list[tuple[str, str]]:
    """The Dockerfile's instructions as (INSTRUCTION, arguments), continuation lines joined."""
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1] if " " in line else "") for line in lines]


def _environment(service: dict) -> dict[str, str]:
    environment = service.get("environment", {})
    assert isinstance(environment, dict), "environment as a mapping"
    return {key: str(value) for key, value in environment.items()}


def test_the_services(compose):
    services = compose["services"]
    assert set(services) == {"postgres", "redis", *PATCHBAY_SERVICES}
    commands = {name: services[name]["command"] for name in PATCHBAY_SERVICES}
    assert commands == {"migrate": ["db", "upgrade"], "serve-1": ["serve"], "serve-2": ["serve"], "worker": ["worker", "--scheduler"]}
    assert services["postgres"]["image"].startswith("postgres:") and services["redis"]["image"].startswith("redis:")
    for name in PATCHBAY_SERVICES:
        assert services[name]["build"] == "." and services[name]["image"] == services["serve-1"]["image"]
    # the two web processes publish the container's port on different host ports
    ports = [services[name]["ports"][0] for name in ("serve-1", "serve-2")]
    assert all(port.endswith(":8080") for port in ports) and len(set(ports)) == 2


def test_migrations_run_once_before_the_others_start(compose):
    services = compose["services"]
    assert services["migrate"]["restart"] == "no"
    assert services["migrate"]["depends_on"] == {"postgres": {"condition": "service_healthy"}}
    for name in ("serve-1", "serve-2", "worker"):
        assert services[name]["depends_on"] == {
            "postgres": {"condition": "service_healthy"},
            "redis": {"condition": "service_healthy"},
            "migrate": {"condition": "service_completed_successfully"},
        }


def test_health_checks(compose, dockerfile):
    services = compose["services"]
    assert "pg_isready" in " ".join(services["postgres"]["healthcheck"]["test"])
    assert services["redis"]["healthcheck"]["test"] == ["CMD", "redis-cli", "ping"]
    for name in ("serve-1", "serve-2"):
        check = " ".join(services[name]["healthcheck"]["test"])
        assert "http://127.0.0.1:8080/health/ready" in check and "/health/ready" in PROBES
    # the worker has no listener: it replaces the image's HTTP check; the one-off migration has none
    assert "/proc/1/cmdline" in " ".join(services["worker"]["healthcheck"]["test"])
    assert services["migrate"]["healthcheck"] == {"disable": True}
    [healthcheck] = [arguments for instruction, arguments in dockerfile if instruction == "HEALTHCHECK"]
    probe = re.search(r"http://127\.0\.0\.1:%s(/[\w/]+)", healthcheck)
    assert probe and probe[1] == "/health" and "/health" in PROBES


def test_volumes(compose):
    assert set(compose["volumes"]) == {"postgres-data", "patchbay-data"}
    assert compose["services"]["postgres"]["volumes"] == ["postgres-data:/var/lib/postgresql/data"]
    for name in PATCHBAY_SERVICES:
        assert compose["services"][name]["volumes"] == ["patchbay-data:/data"]


def test_every_variable_is_a_setting_that_loads(compose):
    known = known_variables()
    host = {"PATCHBAY_SECRET_KEY": "s3cret-one,s3cret-old"}
    for name in PATCHBAY_SERVICES:
        environment = {key: interpolate(value, host) for key, value in _environment(compose["services"][name]).items()}
        unknown = set(environment) - known
        assert not unknown, f"{name}: not settings: {unknown}"
        settings = load_settings(environ=environment)
        assert settings.database_url == "postgresql+asyncpg://patchbay:patchbay@postgres:5432/patchbay"
        assert settings.redis_url == "redis://redis:6379/0" and str(settings.data_dir) == "/data"
        assert settings.secret_key == ["s3cret-one", "s3cret-old"]
        assert settings.base_url == "http://127.0.0.1:8080"
    web = load_settings(environ={key: interpolate(value, host) for key, value in _environment(compose["services"]["serve-1"]).items()})
    assert (web.workers, web.scheduler) == (0, False)
    worker = load_settings(environ={key: interpolate(value, host) for key, value in _environment(compose["services"]["worker"]).items()})
    assert worker.workers == 16


def test_the_secret_key_is_shared_and_required(compose):
    values = {_environment(compose["services"][name])["PATCHBAY_SECRET_KEY"] for name in PATCHBAY_SERVICES}
    assert len(values) == 1
    with pytest.raises(KeyError, match="PATCHBAY_SECRET_KEY"):
        interpolate(values.pop(), {})


def test_the_dockerfile_runs_real_commands(dockerfile):
    instructions = dict(dockerfile)
    entrypoint, default = yaml.safe_load(instructions["ENTRYPOINT"]), yaml.safe_load(instructions["CMD"])
    assert entrypoint == ["patchbay"] and resolve_command(default).name == "serve"
    runs = [shlex.split(arguments) for instruction, arguments in dockerfile if instruction == "RUN"]
    patchbay_runs = [words[1 : words.index(">")] if ">" in words else words[1:] for words in runs if words[0] == "patchbay"]
    assert patchbay_runs == [["packs", "list"]]
    for words in patchbay_runs:
        resolve_command(words)
    with pytest.raises(click.UsageError):
        resolve_command(["serve", "--no-such-flag"])
    with pytest.raises(click.UsageError):
        resolve_command(["db", "migrate"])


def test_compose_commands_are_real(compose):
    for name in PATCHBAY_SERVICES:
        resolve_command(compose["services"][name]["command"])


def test_the_image(dockerfile):
    froms = [arguments for instruction, arguments in dockerfile if instruction == "FROM"]
    assert len(froms) == 2 and froms[0].endswith(" AS build")  # a build stage, then the runtime
    [image] = [arguments for instruction, arguments in dockerfile if instruction == "ARG" and arguments.startswith("PYTHON_IMAGE=")]
    assert image.startswith("PYTHON_IMAGE=python:3.11-slim")
    users = [arguments for instruction, arguments in dockerfile if instruction == "USER"]
    assert users == ["patchbay"]  # not root
    environment = dict(re.findall(r"(\w+)=(\S+)", " ".join(arguments for instruction, arguments in dockerfile if instruction == "ENV")))
    settings = {key: value for key, value in environment.items() if key.startswith(ENV_PREFIX)}
    assert set(settings) <= known_variables()
    loaded = load_settings(environ=settings)
    assert (loaded.host, loaded.port, str(loaded.data_dir)) == ("0.0.0.0", 8080, "/data")
    assert instructions_of(dockerfile, "EXPOSE") == ["8080"]


def instructions_of(dockerfile, name: str) -> list[str]:
    return [arguments for instruction, arguments in dockerfile if instruction == name]


def test_dockerignore_keeps_what_the_build_needs():
    ignored = {line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines() if line.strip() and not line.startswith("#")}
    assert {".git", ".venv", "**/node_modules", "tests", "*.egg-info"} <= ignored
    needed = {"pyproject.toml", "setup.py", "README.md", "core", "cli", "plugins", "providers", "patchbay"}
    assert not needed & ignored
    assert all((ROOT / path).exists() for path in needed)
