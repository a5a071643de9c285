"""Reading listening sockets from /proc: addresses, ports, owners."""

from __future__ import annotations

import os
import socket

from tests.security.listeners import exposed, listeners_of, parse_address, parse_table

TCP_TABLE = """\
  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 111 1
   1: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 222 1
   2: 0100007F:D2F0 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 333 1
"""


def test_ipv4_and_ipv6_addresses_decode_from_the_kernels_word_order() -> None:
    assert parse_address("0100007F:1F90") == ("127.0.0.1", 8080)
    assert parse_address("00000000000000000000000001000000:1F91") == ("::1", 8081)
    assert parse_address("0000000000000000FFFF00000100007F:0050") == ("127.0.0.1", 80)
    assert parse_address("00000000000000000000000000000000:0016") == ("::", 22)


def test_only_listening_rows_count_and_a_wildcard_is_exposed() -> None:
    rows = parse_table(TCP_TABLE)
    assert [(r.address, r.port, r.inode) for r in rows] == [
        ("127.0.0.1", 8080, 111),
        ("0.0.0.0", 22, 222),
    ]
    assert exposed({7: rows}) == [(7, rows[1])]


def test_this_process_sockets_are_found_with_their_bound_address() -> None:
    with socket.socket() as loop, socket.socket() as wide:
        loop.bind(("127.0.0.1", 0))
        wide.bind(("0.0.0.0", 0))
        loop.listen()
        wide.listen()
        mine = listeners_of([os.getpid()])[os.getpid()]
        ports = {item.port: item.loopback for item in mine}
        assert ports[loop.getsockname()[1]] is True
        assert ports[wide.getsockname()[1]] is False
