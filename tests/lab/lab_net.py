#!/usr/bin/env python3
"""lab_net.py: the measuring tools of the network lab (tests/lab/lab.sh), standard library only.

  serve --host IP --port P       a TCP server: "S" connections are sinks (read to EOF, answer
                                 the byte count), "E" connections echo; prints
                                 "listening on IP:PORT" once ready
  send --to IP:PORT --seconds T  bulk TCP throughput to a server: prints "mbit_s X bytes N seconds S"
  rtt --to IP:PORT --count N     TCP round trips of 1 byte (TCP_NODELAY): prints
                                 "rtt_ms median X min Y max Z"
  reach --to IP:PORT --timeout S exit 0 when a round trip to the server works in time
  spin --iterations N            a CPU-bound loop: prints "seconds W cpu C" (wall and CPU time)
  calibrate --seconds S          prints "iterations N": a spin of about S seconds here

Every operation is bounded by a timeout (--timeout, default 30 s).
"""
import argparse
import socket
import statistics
import struct
import sys
import threading
import time

CHUNK = 1 << 16


def addr(text):
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"'{text}' is not IP:PORT")
    return host, int(port)


def recv_exact(sock, n):
    data = b""
    while len(data) < n:
        got = sock.recv(n - len(data))
        if not got:
            raise ConnectionError(f"connection closed after {len(data)} of {n} bytes")
        data += got
    return data


def handle(conn):
    with conn:
        mode = conn.recv(1)
        if mode == b"S":
            buf = bytearray(1 << 20)
            total = 0
            while True:
                n = conn.recv_into(buf)
                if n == 0:
                    break
                total += n
            conn.sendall(struct.pack("!Q", total))
        elif mode == b"E":
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            while True:
                data = conn.recv(CHUNK)
                if not data:
                    break
                conn.sendall(data)


def serve(args):
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((args.host, args.port))
    srv.listen(64)
    print(f"listening on {args.host}:{srv.getsockname()[1]}", flush=True)
    while True:
        conn, _ = srv.accept()
        conn.settimeout(args.timeout)
        threading.Thread(target=handle, args=(conn,), daemon=True).start()


def connect(args):
    sock = socket.create_connection(args.to, timeout=args.timeout)
    sock.settimeout(args.timeout)
    return sock


def send(args):
    sock = connect(args)
    payload = b"\0" * CHUNK
    sock.sendall(b"S")
    start = time.perf_counter()
    sent = 0
    while time.perf_counter() - start < args.seconds:
        sock.sendall(payload)
        sent += len(payload)
    sock.shutdown(socket.SHUT_WR)
    (received,) = struct.unpack("!Q", recv_exact(sock, 8))
    elapsed = time.perf_counter() - start
    sock.close()
    if received != sent:
        sys.exit(f"lab_net: sent {sent} bytes but the server counted {received}")
    print(f"mbit_s {received * 8 / elapsed / 1e6:.2f} bytes {received} seconds {elapsed:.3f}")


def round_trips(args, count):
    sock = connect(args)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.sendall(b"E")
    times = []
    for _ in range(count):
        t0 = time.perf_counter()
        sock.sendall(b"x")
        recv_exact(sock, 1)
        times.append((time.perf_counter() - t0) * 1000)
    sock.close()
    return times


def rtt(args):
    round_trips(args, 1)  # connection set up, caches warm
    times = round_trips(args, args.count)
    print(f"rtt_ms median {statistics.median(times):.3f} min {min(times):.3f} max {max(times):.3f}")


def reach(args):
    try:
        round_trips(args, 1)
    except OSError as e:
        sys.exit(f"lab_net: {args.to[0]}:{args.to[1]} unreachable: {e}")
    print("reachable")


def spin_loop(n):
    """Wall and CPU seconds of n iterations of a pure-Python loop."""
    t0, c0 = time.perf_counter(), time.process_time()
    x = 0
    for i in range(n):
        x += i * i
    return time.perf_counter() - t0, time.process_time() - c0


def spin(args):
    wall, cpu = spin_loop(args.iterations)
    print(f"seconds {wall:.4f} cpu {cpu:.4f}")


def calibrate(args):
    n = 100000
    while True:
        t = min(spin_loop(n)[0] for _ in range(3))
        if t >= 0.02:
            break
        n *= 4
    print(f"iterations {int(n * args.seconds / t)}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--host", required=True)
    s.add_argument("--port", type=int, default=0)
    for name in ("send", "rtt", "reach"):
        c = sub.add_parser(name)
        c.add_argument("--to", type=addr, required=True)
        if name == "send":
            c.add_argument("--seconds", type=float, default=2.0)
        if name == "rtt":
            c.add_argument("--count", type=int, default=20)
    sub.add_parser("spin").add_argument("--iterations", type=int, required=True)
    sub.add_parser("calibrate").add_argument("--seconds", type=float, default=0.2)
    for c in sub.choices.values():
        c.add_argument("--timeout", type=float, default=30.0)
    args = p.parse_args()
    {"serve": serve, "send": send, "rtt": rtt, "reach": reach, "spin": spin, "calibrate": calibrate}[args.cmd](
        args
    )


if __name__ == "__main__":
    main()
