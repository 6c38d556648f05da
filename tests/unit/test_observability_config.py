"""deploy/: the Grafana dashboard, Grafana's provisioning, the Prometheus configuration and alert rules
agree with each other, with docker-compose.yml and with what the ingest worker exports (no Grafana or
Prometheus here: their files are checked instead; tests/integration/sql/test_dashboard_sql.py runs the
dashboard's SQL on a real store).

- every PromQL expression (panels, variables, alert rules) uses only metric names and labels that
  ``streams.ingest_metrics.IngestMetrics`` registers (or Prometheus' own ``up`` with a real job);
- the dashboard has what Grafana needs: unique panel ids, grid positions inside the 24 columns and not
  overlapping, targets whose data source uids and types are the provisioned ones, variables defined
  for every ``$name`` used;
- prometheus.yml and alerts.yml have the fields Prometheus requires, its scrape targets are compose
  services on the ports they listen on.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.exposition import generate_latest

from streams.ingest_metrics import IngestMetrics
from tests.grafana import (
    ALERTS_PATH,
    DASHBOARD_PATH,
    DATASOURCES_PATH,
    GRAFANA_GLOBALS,
    PROMETHEUS_PATH,
    PROVIDERS_PATH,
    dashboard,
    exported_series,
    load_yaml,
    panels,
    parse_promql,
    promql_problems,
    scrape_jobs,
    variables_used,
)

SERIES = exported_series()
BOARD = dashboard()
DATASOURCES = {d["uid"]: d for d in load_yaml(DATASOURCES_PATH)["datasources"]}
DURATION = re.compile(r"^\d+(ms|s|m|h|d|w|y)$")
"""A Prometheus duration as the configuration files take it (one unit is enough here)."""


def _prometheus_targets() -> list[tuple[str, str]]:
    """``(where, expr)`` of every PromQL expression of the dashboard (panels and variables)."""
    out = []
    for panel in panels(BOARD):
        for target in panel.get("targets", []):
            if "expr" in target:
                out.append((f"panel {panel['title']!r} {target['refId']}", target["expr"]))
    for var in BOARD["templating"]["list"]:
        if var["datasource"]["type"] == "prometheus":
            out.append((f"variable {var['name']}", var["query"]))
    return out


def _alert_rules() -> list[dict]:
    return [rule for group in load_yaml(ALERTS_PATH)["groups"] for rule in group["rules"]]


# --------------------------------------------------------------------------- the exporter's series


def test_the_series_table_matches_what_the_exporter_writes() -> None:
    """``exported_series`` (from the metric objects) agrees with a real exposition of the registry."""
    metrics = IngestMetrics()
    metrics.partitions_assigned([0])
    metrics.pending.labels("c", "q", "active").set(1)
    metrics.wait.labels("c", "q", "").observe(2.0)
    metrics.preempted.labels("c", "q", "InClusterQueue").inc()
    written = {}
    for family in text_string_to_metric_families(generate_latest(metrics.registry).decode()):
        for sample in family.samples:
            written[sample.name] = set(sample.labels)
    assert written, "nothing written"
    for name, labels in written.items():
        assert name in SERIES, name
        assert labels <= SERIES[name], (name, labels, SERIES[name])
    assert SERIES["kueue_admission_wait_time_seconds_bucket"] == {"cluster", "cluster_queue", "priority_class", "le"}
    assert "quotaledger_ingest_events_total" in SERIES and "quotaledger_ingest_events" not in SERIES


def test_the_checker_finds_unknown_metrics_labels_and_jobs() -> None:
    jobs = {"quotaledger-ingest"}
    assert promql_problems('sum by (cluster_queue) (rate(kueue_admitted_workloads_total[5m]))', SERIES, jobs) == []
    assert promql_problems("rate(kueue_admited_workloads_total[5m])", SERIES, jobs) == [
        "rate(kueue_admited_workloads_total[5m]): no metric 'kueue_admited_workloads_total'"]
    assert promql_problems('kueue_pending_workloads{queue="a"}', SERIES, jobs) == [
        "kueue_pending_workloads{queue=\"a\"}: no label 'queue' on ['kueue_pending_workloads']"]
    assert promql_problems('sum by (reason) (kueue_pending_workloads)', SERIES, jobs) != []
    assert promql_problems('up{job="ingest"} == 0', SERIES, jobs) == ['up{job="ingest"} == 0: no scrape job \'ingest\'']
    assert promql_problems("kueue_pending_workloads_total", SERIES, jobs) != []  # a gauge has no _total
    with pytest.raises(ValueError):
        parse_promql("rate(kueue_admitted_workloads_total[5m]) > $threshold")
    used = parse_promql('histogram_quantile(0.9, sum by (le) (rate(x_bucket{a=~"$v", b!="w"}[$__rate_interval])))'
                        ' and on (a) y')
    assert (used.metrics, used.labels, used.matchers) == ({"x_bucket", "y"}, {"le", "a", "b"}, {"a": ["$v"], "b": ["w"]})


def test_every_dashboard_expression_uses_exported_metrics_and_labels() -> None:
    exprs = _prometheus_targets()
    assert len(exprs) >= 15
    jobs = set(scrape_jobs())
    problems = [f"{where}: {p}" for where, expr in exprs for p in promql_problems(expr, SERIES, jobs)]
    assert problems == []
    used = set().union(*(parse_promql(e).metrics for _, e in exprs))
    # the panels the dashboard promises
    for name in ("kueue_pending_workloads", "kueue_admitted_active_workloads", "kueue_admission_wait_time_seconds_bucket",
                 "kueue_cluster_queue_resource_usage", "kueue_cluster_queue_nominal_quota",
                 "quotaledger_ingest_dead_letters_total", "quotaledger_ingest_consumer_lag",
                 "quotaledger_ingest_events_total", "quotaledger_ingest_batch_commit_seconds_bucket"):
        assert name in used, name


def test_every_legend_names_a_label_of_its_expression() -> None:
    for panel in panels(BOARD):
        for target in panel.get("targets", []):
            if "expr" not in target:
                continue
            legend = set(re.findall(r"\{\{\s*(\w+)\s*\}\}", target.get("legendFormat", "")))
            used = parse_promql(target["expr"])
            grouped = used.labels - {"le"}
            assert legend <= grouped, (panel["title"], legend, grouped)


def test_every_alert_rule_uses_exported_metrics_and_has_what_prometheus_needs() -> None:
    rules = load_yaml(ALERTS_PATH)
    assert set(rules) == {"groups"}
    names = [g["name"] for g in rules["groups"]]
    assert len(names) == len(set(names))
    jobs = set(scrape_jobs())
    alerts = _alert_rules()
    assert len(alerts) >= 8
    for rule in alerts:
        assert set(rule) <= {"alert", "expr", "for", "keep_firing_for", "labels", "annotations"}, rule
        assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", rule["alert"]), rule["alert"]
        assert isinstance(rule["expr"], str) and rule["expr"].strip()
        assert promql_problems(rule["expr"], SERIES, jobs) == []
        if "for" in rule:
            assert DURATION.match(rule["for"]), rule["for"]
        assert rule["labels"]["severity"] in {"critical", "warning", "info"}
        assert rule["annotations"]["summary"] and rule["annotations"]["description"]
    names = [r["alert"] for r in alerts]
    assert len(names) == len(set(names))
    used = set().union(*(parse_promql(r["expr"]).metrics for r in alerts))
    for name in ("up", "quotaledger_ingest_consumer_lag", "quotaledger_ingest_dead_letters_total",
                 "quotaledger_ingest_committed_event_time_seconds", "quotaledger_ingest_batch_commit_seconds_bucket",
                 "quotaledger_ingest_ready"):
        assert name in used, name


# --------------------------------------------------------------------------- the dashboard model


def test_dashboard_has_the_fields_grafana_needs() -> None:
    assert BOARD["uid"] == "quotaledger" and BOARD["title"]
    assert isinstance(BOARD["schemaVersion"], int) and BOARD["schemaVersion"] >= 36
    assert set(BOARD["time"]) == {"from", "to"}
    ids = [p["id"] for p in panels(BOARD)]
    assert all(isinstance(i, int) for i in ids) and len(ids) == len(set(ids))
    cells: dict[tuple[int, int], str] = {}
    for panel in panels(BOARD):
        grid = panel["gridPos"]
        assert set(grid) == {"h", "w", "x", "y"} and all(isinstance(v, int) and v >= 0 for v in grid.values())
        assert grid["w"] >= 1 and grid["h"] >= 1 and grid["x"] + grid["w"] <= 24, panel["title"]
        for x in range(grid["x"], grid["x"] + grid["w"]):
            for y in range(grid["y"], grid["y"] + grid["h"]):
                assert (x, y) not in cells, f"{panel['title']!r} overlaps {cells[(x, y)]!r}"
                cells[(x, y)] = panel["title"]
        assert panel["type"] in {"row", "timeseries", "table", "stat", "bargauge", "gauge"}, panel["type"]
        if panel["type"] == "row":
            continue
        targets = panel["targets"]
        assert targets, panel["title"]
        refs = [t["refId"] for t in targets]
        assert len(refs) == len(set(refs)), panel["title"]


def test_every_target_and_variable_uses_a_provisioned_datasource() -> None:
    def check(where: str, ds: dict) -> dict:
        assert ds["uid"] in DATASOURCES, f"{where}: no provisioned data source {ds['uid']!r}"
        assert ds["type"] == DATASOURCES[ds["uid"]]["type"], where
        return DATASOURCES[ds["uid"]]

    kinds = set()
    for panel in panels(BOARD):
        if panel["type"] == "row":
            continue
        check(panel["title"], panel["datasource"])
        for target in panel["targets"]:
            source = check(f"{panel['title']} {target['refId']}", target["datasource"])
            kinds.add(source["type"])
            if source["type"] == "prometheus":
                assert target["expr"], panel["title"]
            else:
                assert target["rawSql"] and target["format"] in {"table", "time_series"} and target["rawQuery"]
    assert kinds == {"prometheus", "grafana-postgresql-datasource"}
    for var in BOARD["templating"]["list"]:
        check(f"variable {var['name']}", var["datasource"])
        assert var["type"] == "query" and var["query"]


def test_every_variable_used_is_defined() -> None:
    defined = {v["name"] for v in BOARD["templating"]["list"]}
    texts = [t.get("expr") or t.get("rawSql") for p in panels(BOARD) for t in p.get("targets", [])]
    texts += [v["query"] for v in BOARD["templating"]["list"]]
    used = set().union(*(variables_used(t) for t in texts))
    assert used - defined - GRAFANA_GLOBALS == set()
    assert {"cluster", "cluster_queue"} <= used  # every variable is used somewhere
    assert defined <= used


# --------------------------------------------------------------------------- provisioning and Prometheus


def test_provisioning_files_have_what_grafana_reads() -> None:
    ds = load_yaml(DATASOURCES_PATH)
    assert ds["apiVersion"] == 1
    prometheus = DATASOURCES["quotaledger-prometheus"]
    assert prometheus["type"] == "prometheus" and prometheus["access"] == "proxy"
    assert prometheus["jsonData"]["timeInterval"] == load_yaml(PROMETHEUS_PATH)["global"]["scrape_interval"]
    store = DATASOURCES["quotaledger-store"]
    assert store["type"] == "grafana-postgresql-datasource"
    assert store["secureJsonData"]["password"] == "$GRAFANA_DB_PASSWORD"  # from the environment, not the file
    assert store["user"] == "grafana_reader" and store["jsonData"]["database"]
    providers = load_yaml(PROVIDERS_PATH)
    assert providers["apiVersion"] == 1
    (provider,) = providers["providers"]
    assert provider["type"] == "file" and provider["options"]["path"].startswith("/")
    assert DASHBOARD_PATH.exists()


def test_prometheus_config_has_the_required_fields() -> None:
    config = load_yaml(PROMETHEUS_PATH)
    assert set(config) <= {"global", "rule_files", "scrape_configs", "alerting"}
    for key in ("scrape_interval", "evaluation_interval"):
        assert DURATION.match(config["global"][key]), key
    jobs = scrape_jobs()
    assert set(jobs) == {"quotaledger-ingest", "quotaledger-live"}
    for name, job in jobs.items():
        assert job["metrics_path"] == "/metrics"
        (static,) = job["static_configs"]
        for target in static["targets"]:
            host, _, port = target.rpartition(":")
            assert host and port.isdigit(), (name, target)
    assert config["rule_files"] == ["/etc/prometheus/alerts.yml"]


@pytest.mark.skipif(shutil.which("promtool") is None,
                    reason="promtool (Prometheus' own checker) is not installed; the field checks above still ran")
def test_promtool_accepts_the_config_the_rules_and_every_dashboard_expression(tmp_path: Path) -> None:
    def promtool(*args: str) -> None:
        done = subprocess.run(["promtool", *args], capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr

    promtool("check", "config", "--syntax-only", str(PROMETHEUS_PATH))
    promtool("check", "rules", str(ALERTS_PATH))
    # the dashboard's expressions as recording rules, Grafana's variables replaced by values of their kind
    # (they stand only inside strings and ranges: parse_promql refuses them elsewhere)
    values = {"__rate_interval": "5m", "__range": "1h", "cluster": "lab", "cluster_queue": "prod"}
    rules = [{"record": f"dashboard:expr{i}",
              "expr": re.sub(r"\$(\w+)", lambda m: values[m.group(1)], expr)}
             for i, (_, expr) in enumerate(_prometheus_targets())]
    path = tmp_path / "dashboard-rules.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    promtool("check", "rules", str(path))
