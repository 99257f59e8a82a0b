#!/usr/bin/env python3
"""Measures how long syncd takes from exec to READY=1, the way systemd sees it.

    scripts/time-to-ready.py [SYNCD] [DATABASE] [RUNS]

Defaults: .build/release/syncd, a fresh database in a temporary directory, 5 runs. Pass an existing
database to measure start-up with real data (syncd loads every entry before it is ready).
"""
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

syncd = sys.argv[1] if len(sys.argv) > 1 else ".build/release/syncd"
runs = int(sys.argv[3]) if len(sys.argv) > 3 else 5
times = []
for _ in range(runs):
    directory = tempfile.mkdtemp(prefix="syncd-ready-")
    database = sys.argv[2] if len(sys.argv) > 2 else os.path.join(directory, "state.sqlite")
    notify_path = os.path.join(directory, "notify.sock")
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(notify_path)
    notify.settimeout(30)
    environment = dict(os.environ, NOTIFY_SOCKET=notify_path)
    started = time.monotonic()
    process = subprocess.Popen(
        [syncd, "--socket", os.path.join(directory, "syncd.sock"), "--database", database],
        env=environment,
        stderr=subprocess.DEVNULL,
    )
    while "READY=1" not in notify.recv(4096).decode():
        pass
    times.append((time.monotonic() - started) * 1000)
    process.terminate()
    process.wait()
    notify.close()
print(f"READY=1 after {statistics.median(times):.1f} ms (median of {runs}; min {min(times):.1f}, max {max(times):.1f})")
