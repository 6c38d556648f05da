"""Which Kubernetes configuration ``quotaledger watch`` loads (``streams.kube.watcher.load_client``):
the pod's service account inside a cluster, else the kubeconfig file.

The in-cluster case cannot reach a real API server here (it speaks TLS on the service address),
so these tests check what the official client was configured with: the service's host and port,
the service account's bearer token and CA file — the files the kubelet mounts into every pod,
redirected to temporary ones.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from kubernetes.config import incluster_config

from streams.kube.watcher import load_client


def _service_account(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    token, ca = tmp_path / "token", tmp_path / "ca.crt"
    token.write_text("sa-token-123")  # as the kubelet mounts it: no newline
    ca.write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(token))
    monkeypatch.setattr(incluster_config, "SERVICE_CERT_FILENAME", str(ca))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")


def test_inside_a_pod_the_service_account_is_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _service_account(tmp_path, monkeypatch)
    client = load_client()
    try:
        cfg = client.configuration
        assert cfg.host == "https://10.96.0.1:443"
        assert cfg.auth_settings()["BearerToken"]["value"] == "bearer sa-token-123"
        assert cfg.ssl_ca_cert == str(tmp_path / "ca.crt")
    finally:
        client.close()


def test_an_explicit_kubeconfig_wins_over_the_service_account(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _service_account(tmp_path, monkeypatch)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: lab\n"
        "clusters: [{name: lab, cluster: {server: 'http://127.0.0.1:6443'}}]\n"
        "users: [{name: me, user: {token: user-token}}]\n"
        "contexts: [{name: lab, context: {cluster: lab, user: me}}]\n")
    client = load_client(str(kubeconfig))
    try:
        assert client.configuration.host == "http://127.0.0.1:6443"
        assert client.configuration.auth_settings()["BearerToken"]["value"] == "Bearer user-token"
    finally:
        client.close()
