"""TLS of the gRPC client binding (issue 19): ``verify=<CA bundle>`` and ``cert=`` (mutual
TLS) as for the HTTP bindings, against a2a_sync's own GRPCServer with a self-signed CA
made here with ``cryptography`` for 127.0.0.1."""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from tests.support.grpc import import_grpc

grpc = import_grpc()

from cryptography import x509  # noqa: E402
from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID  # noqa: E402

from a2a_sync.client import A2AClient  # noqa: E402
from a2a_sync.errors import ConfigurationError, ConnectError, TaskNotFound  # noqa: E402
from a2a_sync.policies import RetryPolicy  # noqa: E402
from a2a_sync.server.app import A2AApplication  # noqa: E402
from a2a_sync.server.bindings.grpc import GRPCServer  # noqa: E402
from a2a_sync.types import Task  # noqa: E402
from tests.server.agents import WAIT, EchoAgent, card  # noqa: E402

NO_RETRY = RetryPolicy.none()


@attrs.frozen
class Issued:
    cert: bytes
    key: bytes


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


class CA:
    """A throwaway certificate authority issuing loopback server and client certificates."""

    def __init__(self, name: str = "a2a-sync test CA") -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        self.cert = (
            x509.CertificateBuilder()
            .subject_name(_name(name))
            .issuer_name(_name(name))
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(self.key, hashes.SHA256())
        )
        self.pem = self.cert.public_bytes(serialization.Encoding.PEM)

    def issue(self, common: str, *, server: bool) -> Issued:
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(common))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(
                x509.ExtendedKeyUsage(
                    [ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH]
                ),
                critical=False,
            )
        )
        if server:
            builder = builder.add_extension(
                x509.SubjectAlternativeName(
                    [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
                ),
                critical=False,
            )
        cert = builder.sign(self.key, hashes.SHA256())
        return Issued(cert.public_bytes(serialization.Encoding.PEM), _pem_key(key))


@attrs.frozen
class TLSFiles:
    ca: str
    other_ca: str
    client_cert: str
    client_key: str
    client_combined: str
    server: Issued
    ca_pem: bytes


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> TLSFiles:
    folder: Path = tmp_path_factory.mktemp("grpc-tls")
    ca, other = CA(), CA("another CA")
    client = ca.issue("a2a-sync test client", server=False)
    files = {
        "ca.pem": ca.pem,
        "other.pem": other.pem,
        "client.pem": client.cert,
        "client.key": client.key,
        "client-combined.pem": client.cert + client.key,
    }
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return TLSFiles(
        ca=str(folder / "ca.pem"),
        other_ca=str(folder / "other.pem"),
        client_cert=str(folder / "client.pem"),
        client_key=str(folder / "client.key"),
        client_combined=str(folder / "client-combined.pem"),
        server=ca.issue("127.0.0.1", server=True),
        ca_pem=ca.pem,
    )


@pytest.fixture
def app() -> Iterator[A2AApplication]:
    app = A2AApplication(attrs.evolve(card(), supported_interfaces=[]), EchoAgent())
    yield app
    app.close(WAIT)


def serve(app: A2AApplication, tls: TLSFiles, *, mutual: bool) -> GRPCServer:
    credentials = grpc.ssl_server_credentials(
        [(tls.server.key, tls.server.cert)],
        root_certificates=tls.ca_pem if mutual else None,
        require_client_auth=mutual,
    )
    return GRPCServer(app, credentials=credentials)


def test_the_agent_is_trusted_through_the_ca_bundle_given_as_verify(
    app: A2AApplication, tls: TLSFiles
) -> None:
    with (
        serve(app, tls, mutual=False) as server,
        A2AClient(
            f"grpcs://{server.address}", binding="GRPC", verify=tls.ca, timeout=WAIT
        ) as client,
    ):
        task = client.send_message("echo over tls")
        assert isinstance(task, Task)
        assert task.text == "echo: echo over tls"
        with pytest.raises(TaskNotFound):
            client.get_task("missing")


@pytest.mark.parametrize("verify", [True, "other"])
def test_a_certificate_from_another_ca_is_refused(
    app: A2AApplication, tls: TLSFiles, verify: bool | str
) -> None:
    """The system roots (``verify=True``) and an unrelated CA do not trust the agent."""
    roots = tls.other_ca if verify == "other" else verify
    with (
        serve(app, tls, mutual=False) as server,
        A2AClient(
            f"grpcs://{server.address}", binding="GRPC", verify=roots, retry=NO_RETRY, timeout=WAIT
        ) as client,
        pytest.raises(ConnectError),
    ):
        client.get_task("t")


@pytest.mark.parametrize("form", ["pair", "combined"])
def test_mutual_tls_with_a_client_certificate(
    app: A2AApplication, tls: TLSFiles, form: str
) -> None:
    cert = (tls.client_cert, tls.client_key) if form == "pair" else tls.client_combined
    with (
        serve(app, tls, mutual=True) as server,
        A2AClient(
            f"grpcs://{server.address}", binding="GRPC", verify=tls.ca, cert=cert, timeout=WAIT
        ) as client,
    ):
        assert client.send_message("echo mutual").text == "echo: echo mutual"


def test_mutual_tls_without_a_client_certificate_is_refused(
    app: A2AApplication, tls: TLSFiles
) -> None:
    with (
        serve(app, tls, mutual=True) as server,
        A2AClient(
            f"grpcs://{server.address}", binding="GRPC", verify=tls.ca, retry=NO_RETRY, timeout=WAIT
        ) as client,
        pytest.raises(ConnectError),
    ):
        client.get_task("t")


def test_verify_false_and_unreadable_files_are_refused_with_a_hint(
    tls: TLSFiles, tmp_path: Path
) -> None:
    cases = [
        ({"verify": False}, "cannot skip certificate verification"),
        ({"verify": str(tmp_path / "missing.pem")}, "cannot read the CA bundle"),
        ({"verify": tls.ca, "cert": tls.client_cert}, "no PEM private key"),
    ]
    for options, message in cases:
        with (
            A2AClient("grpcs://127.0.0.1:1", binding="GRPC", **options) as client,
            pytest.raises(ConfigurationError, match=message),
        ):
            client.get_task("t")
