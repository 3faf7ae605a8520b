"""Where the tests reach the server under test over TCP when DATABASE_URL names
only its Unix socket: the client-side hosts for each form of the server's
``listen_addresses`` (wildcards become loopback; empty means no TCP listener)."""

from __future__ import annotations

import pytest

from tests.helpers.database import tcp_candidates


@pytest.mark.parametrize(
    ("listen_addresses", "hosts"),
    [
        ("", []),
        ("  ", []),
        ("localhost", ["localhost"]),
        ("127.0.0.1", ["127.0.0.1"]),
        ("*", ["127.0.0.1", "::1"]),
        ("0.0.0.0", ["127.0.0.1"]),
        ("::", ["::1"]),
        ("0.0.0.0, ::", ["127.0.0.1", "::1"]),
        ("10.0.0.5,127.0.0.1", ["10.0.0.5", "127.0.0.1"]),
        ("*,127.0.0.1", ["127.0.0.1", "::1"]),
    ],
)
def test_tcp_candidates__maps_listen_addresses_to_hosts_a_local_client_reaches(
    listen_addresses: str, hosts: list[str]
) -> None:
    assert tcp_candidates(listen_addresses) == hosts
