"""docker-compose.yml and Dockerfile agree with each other and with the CLI (no Docker engine here,
so the stack cannot be started in tests: its configuration is checked instead).

- the four services (Kafka in KRaft mode, PostgreSQL 16, the one-shot topic creator, the worker),
  their ports, health checks and start order;
- Kafka and PostgreSQL are published on 127.0.0.1 unless ``QUOTALEDGER_BIND_ADDRESS`` says otherwise;
  the database password comes from the environment (``POSTGRES_PASSWORD``, required, no default)
  and reaches the worker as ``PGPASSWORD``, never inside its URL;
- the worker's database URL and bootstrap match the PostgreSQL user and database and Kafka's internal
  listener; the topic creator creates exactly the worker's three topics (``streams.topics``);
- the image's command runs ``quotaledger db upgrade`` then ``quotaledger ingest`` with options that
  exist in the Typer app, and every variable it uses is set;
- the observability services: the worker serves its metrics on every interface of its container, on
  the port it exposes and Prometheus scrapes; the live view likewise; Prometheus and Grafana get the
  files of deploy/ (every mounted file exists, the container paths are the ones the files name);
  Grafana's admin password and its read-only database role's password are required, without default;
  every ``depends_on`` names a service and every published port is bound to the bind-address variable.
"""

from __future__ import annotations

import importlib.util
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import typer
import yaml
from sqlalchemy.engine import make_url

from quotaledger.cli import app
from streams.topics import Topics
from tests.grafana import (
    ALERTS_PATH,
    DASHBOARD_PATH,
    DATASOURCES_PATH,
    PROMETHEUS_PATH,
    PROVIDERS_PATH,
    READER_SQL_PATH,
    load_yaml,
    scrape_jobs,
)
from tests.paths import ROOT

COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]
DOCKERFILE = (ROOT / "Dockerfile").read_text()
BIND = "${QUOTALEDGER_BIND_ADDRESS:-127.0.0.1}"
"""The host address Kafka and PostgreSQL are published on: loopback unless the operator says otherwise."""


def _env(service: str) -> dict[str, str]:
    return {k: str(v) for k, v in SERVICES[service].get("environment", {}).items()}


def _image_env() -> dict[str, str]:
    """``ENV`` of the Dockerfile's last stage."""
    last = DOCKERFILE.split("\nFROM ")[-1]
    env: dict[str, str] = {}
    for block in re.findall(r"^ENV (.*?)(?<!\\)$", last, flags=re.M | re.S):
        for item in shlex.split(block.replace("\\\n", " ")):
            key, _, value = item.partition("=")
            env[key] = value
    return env


def _image_commands() -> list[list[str]]:
    """The image's ``CMD``: a ``sh -c`` script, split into its ``&&``-joined commands."""
    import json

    (cmd,) = re.findall(r"^CMD (\[.*\])$", DOCKERFILE, flags=re.M)
    argv = json.loads(cmd)
    assert argv[:2] == ["sh", "-c"], argv
    commands = []
    for part in argv[2].split("&&"):
        words = shlex.split(part)
        commands.append(words[1:] if words[0] == "exec" else words)
    return commands


def _click_command(words: list[str]) -> tuple[Any, list[str]]:
    """The (Typer-built click) command that ``quotaledger WORDS…`` runs, and the remaining words."""
    assert words[0] == "quotaledger", words
    command = typer.main.get_command(app)
    rest = words[1:]
    while hasattr(command, "commands") and rest and not rest[0].startswith("-"):
        assert rest[0] in command.commands, f"quotaledger has no command {rest[0]!r}"
        command, rest = command.commands[rest[0]], rest[1:]
    return command, rest


def _check_options(words: list[str], variables: dict[str, str]) -> None:
    command, rest = _click_command(words)
    known = {opt for param in command.params for opt in param.opts}
    takes_value = {opt for param in command.params if param.param_type_name == "option" and not param.is_flag
                   for opt in param.opts}
    i = 0
    while i < len(rest):
        word = rest[i]
        assert word.startswith("--"), f"{' '.join(words)}: unexpected argument {word!r}"
        assert word in known, f"`{' '.join(words[:2])}` has no option {word} (it has {sorted(known)})"
        if word in takes_value:
            i += 1
            for var in re.findall(r"\$\{?(\w+)", rest[i]):
                assert var in variables, f"{word} uses ${var}, which the image and compose do not set"
        i += 1


def test_services_ports_and_health() -> None:
    assert set(SERVICES) == {"kafka", "postgres", "topics", "ingest", "live", "prometheus", "grafana"}
    kafka = _env("kafka")
    assert SERVICES["kafka"]["image"].startswith("apache/kafka:")
    assert set(kafka["KAFKA_PROCESS_ROLES"].split(",")) == {"broker", "controller"}
    assert SERVICES["kafka"]["ports"] == [f"{BIND}:9092:9092"]
    assert SERVICES["postgres"]["image"] == "postgres:16"
    assert SERVICES["postgres"]["ports"] == [f"{BIND}:5432:5432"]
    for name in ("kafka", "postgres"):
        assert SERVICES[name]["healthcheck"]["test"], name
    assert SERVICES["topics"]["depends_on"] == {"kafka": {"condition": "service_healthy"}}
    assert SERVICES["topics"]["restart"] == "no"
    assert SERVICES["ingest"]["build"] == "."
    assert SERVICES["ingest"]["depends_on"] == {
        "kafka": {"condition": "service_healthy"}, "postgres": {"condition": "service_healthy"},
        "topics": {"condition": "service_completed_successfully"}}


def test_worker_reaches_postgres_and_kafka_and_its_topics_are_created() -> None:
    worker = {**_image_env(), **_env("ingest")}
    url = make_url(worker["QUOTALEDGER_DB"])
    pg = _env("postgres")
    assert url.drivername == "postgresql+psycopg"
    assert (url.host, url.port or 5432) == ("postgres", 5432)
    assert (url.username, url.password, url.database) == (pg["POSTGRES_USER"], None, pg["POSTGRES_DB"])
    assert worker["PGPASSWORD"] == pg["POSTGRES_PASSWORD"]
    assert re.fullmatch(r"\$\{POSTGRES_PASSWORD:\?[^}]+\}", pg["POSTGRES_PASSWORD"])
    assert "quotaledger:quotaledger" not in (ROOT / "docker-compose.yml").read_text()
    listeners = dict(item.split("://") for item in _env("kafka")["KAFKA_ADVERTISED_LISTENERS"].split(","))
    assert listeners["INTERNAL"] == worker["QUOTALEDGER_BOOTSTRAP"] == "kafka:19092"
    script = SERVICES["topics"]["command"][0]
    (loop,) = re.findall(r"for topic in ([^;]+);", script)
    topics = Topics(worker["QUOTALEDGER_TOPIC_PREFIX"])
    assert loop.split() == [topics.events, topics.decisions, topics.dlq]
    assert "--if-not-exists" in script and "kafka:19092" in script


def test_image_is_python_311_slim_and_installs_the_project() -> None:
    stages = re.findall(r"^FROM (\S+)", DOCKERFILE, flags=re.M)
    assert stages and all(s == "python:3.11-slim" for s in stages)
    assert "pip wheel" in DOCKERFILE and "pip install" in DOCKERFILE
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert ".venv" in ignored and "**/*.so" in ignored  # a host build must not leak into the image


def test_image_command_upgrades_the_schema_with_real_options() -> None:
    commands = _image_commands()
    assert [c[:3] for c in commands][0] == ["quotaledger", "db", "upgrade"]
    _check_options(commands[0], {**_image_env(), **_env("ingest")})


def test_image_command_runs_the_ingest_worker_with_real_options() -> None:
    if importlib.util.find_spec("streams.ingest") is None:
        pytest.skip("streams.ingest (the kafka-ingest branch) is not merged yet")
    commands = _image_commands()
    assert len(commands) == 2 and commands[1][:2] == ["quotaledger", "ingest"]
    _check_options(commands[1], {**_image_env(), **_env("ingest")})


# --------------------------------------------------------------------------- observability services


def _bind_mounts(service: str) -> dict[str, Path]:
    """Container path → the repository file or folder mounted there (``./…`` volumes of ``service``)."""
    out = {}
    for volume in SERVICES[service].get("volumes", []):
        source, target, *_ = volume.split(":")
        if source.startswith("./"):
            out[target] = ROOT / source[2:]
    return out


def _required(value: str, name: str) -> None:
    """``value`` is ``${name:?message}``: compose refuses to start without it, and there is no default."""
    assert re.fullmatch(rf"\$\{{{name}:\?[^}}]+\}}", value), value


def test_every_dependency_is_a_service_and_every_port_is_bound_to_the_bind_address() -> None:
    for name, service in SERVICES.items():
        for dependency in service.get("depends_on", {}):
            assert dependency in SERVICES, f"{name} depends on {dependency!r}, which is no service"
        for port in service.get("ports", []):
            assert port.startswith(f"{BIND}:"), f"{name} publishes {port} beyond the bind address"


def test_every_mounted_file_exists() -> None:
    mounts = {name: _bind_mounts(name) for name in SERVICES}
    assert any(mounts.values())
    for name, found in mounts.items():
        for target, source in found.items():
            assert source.exists(), f"{name} mounts {source}, which does not exist"
    for name in ("postgres", "prometheus", "grafana"):
        assert mounts[name], name


def test_the_worker_serves_metrics_where_prometheus_scrapes_them() -> None:
    worker = {**_image_env(), **_env("ingest")}
    port = worker["QUOTALEDGER_METRICS_PORT"]
    ingest = _image_commands()[1]
    options = dict(zip(ingest[2::2], ingest[3::2]))
    assert options["--metrics-port"] == "$QUOTALEDGER_METRICS_PORT"
    assert options["--metrics-host"] == "0.0.0.0"  # inside the container; the port is not published
    assert [str(p) for p in SERVICES["ingest"]["expose"]] == [port]
    assert "ports" not in SERVICES["ingest"]
    assert f":{port}/healthz" in " ".join(SERVICES["ingest"]["healthcheck"]["test"])
    jobs = scrape_jobs()
    (target,) = jobs["quotaledger-ingest"]["static_configs"][0]["targets"]
    assert target == f"ingest:{port}"


def test_the_live_view_serves_metrics_where_prometheus_scrapes_them() -> None:
    live = SERVICES["live"]
    command = live["command"]
    _check_options(command, {**_image_env(), **_env("live")})
    options = dict(zip(command[2::2], command[3::2]))
    assert options["--web-host"] == "0.0.0.0"
    (target,) = scrape_jobs()["quotaledger-live"]["static_configs"][0]["targets"]
    assert target == f"live:{options['--web-port']}"
    assert live["image"] == SERVICES["ingest"]["image"] and live["build"] == "."
    assert _env("live")["QUOTALEDGER_BOOTSTRAP"] == _env("ingest")["QUOTALEDGER_BOOTSTRAP"]


def test_prometheus_and_grafana_get_the_deploy_files() -> None:
    prometheus = _bind_mounts("prometheus")
    config = next(a.split("=", 1)[1] for a in SERVICES["prometheus"]["command"] if a.startswith("--config.file="))
    assert prometheus[config] == PROMETHEUS_PATH
    for rule_file in load_yaml(PROMETHEUS_PATH)["rule_files"]:
        assert prometheus[rule_file] == ALERTS_PATH
    assert SERVICES["prometheus"]["ports"] == [f"{BIND}:9090:9090"]
    grafana = _bind_mounts("grafana")
    assert grafana["/etc/grafana/provisioning"] == DATASOURCES_PATH.parent.parent
    (provider,) = load_yaml(PROVIDERS_PATH)["providers"]
    assert grafana[provider["options"]["path"]] == DASHBOARD_PATH.parent
    env = _env("grafana")
    home = env["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert grafana[home.rsplit("/", 1)[0]] / home.rsplit("/", 1)[1] == DASHBOARD_PATH
    assert SERVICES["grafana"]["ports"] == [f"{BIND}:3000:3000"]


def test_grafana_reaches_prometheus_and_the_store_as_a_read_only_role() -> None:
    datasources = {d["uid"]: d for d in load_yaml(DATASOURCES_PATH)["datasources"]}
    url = datasources["quotaledger-prometheus"]["url"]
    host, port = url.removeprefix("http://").split(":")
    assert host == "prometheus" and f"{port}:{port}" in SERVICES["prometheus"]["ports"][0]
    store = datasources["quotaledger-store"]
    pg = _env("postgres")
    assert store["url"] == "postgres:5432" and store["jsonData"]["database"] == pg["POSTGRES_DB"]
    assert store["user"] != pg["POSTGRES_USER"]  # never the owner of the tables
    reader_sql = READER_SQL_PATH.read_text()
    assert f"\\set reader {store['user']}" in reader_sql
    assert _bind_mounts("postgres")["/docker-entrypoint-initdb.d/10-grafana-reader.sql"] == READER_SQL_PATH
    # the role's password: required in both services, the same variable, never in a file
    _required(pg["GRAFANA_DB_PASSWORD"], "GRAFANA_DB_PASSWORD")
    assert _env("grafana")["GRAFANA_DB_PASSWORD"] == pg["GRAFANA_DB_PASSWORD"]
    assert store["secureJsonData"]["password"] == "$GRAFANA_DB_PASSWORD"


def test_grafana_admin_password_is_required_and_sign_up_is_off() -> None:
    env = _env("grafana")
    _required(env["GF_SECURITY_ADMIN_PASSWORD"], "GRAFANA_ADMIN_PASSWORD")
    assert env["GF_USERS_ALLOW_SIGN_UP"] == "false" and env["GF_AUTH_ANONYMOUS_ENABLED"] == "false"
    text = (ROOT / "docker-compose.yml").read_text()
    assert "GRAFANA_ADMIN_PASSWORD:-" not in text and "GRAFANA_DB_PASSWORD:-" not in text
