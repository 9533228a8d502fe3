"""The hosting stack of docs/hosting.md on loopback, for tests/e2e/test_proxy.py: app processes started by
``deploy/serve.sh`` with ``deploy/production.env``, behind Debian's nginx running ``deploy/nginx/tiebreak.conf``.

The site file is used as shipped; only what a test machine must change is replaced — the listen address, the
upstream ports and the access log path — and each replacement must match exactly once, so a reshaped site file
fails here instead of being silently tested in another form. nginx runs in the foreground (``daemon off``) as
a child of the test, with its own prefix folder (temp files, pid, logs) under the test's temp folder.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
SITE = DEPLOY / "nginx" / "tiebreak.conf"
SERVE = DEPLOY / "serve.sh"
PREFIX = "tiebreak"
SHIPPED_PORT = 8501


def nginx_binary() -> str | None:
    return shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if os.access(p, os.X_OK)), None)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _replace_once(text: str, old: str, new: str) -> str:
    count = text.count(old)
    if count != 1:
        raise AssertionError(f"{SITE.relative_to(ROOT)}: expected {old!r} exactly once, found it {count} times")
    return text.replace(old, new)


def site_config(listen_port: int, app_ports: list[int], access_log: Path, site: Path = SITE) -> str:
    """The shipped site file with the test's ports and log path."""
    text = site.read_text(encoding="utf-8")
    text = _replace_once(text, "listen 80;", f"listen 127.0.0.1:{listen_port};")
    text = _replace_once(text, f"server 127.0.0.1:{SHIPPED_PORT};",
                         " ".join(f"server 127.0.0.1:{port};" for port in app_ports))
    return _replace_once(text, "/var/log/nginx/tiebreak.access.log", str(access_log))


def nginx_main_config(prefix: Path, site_file: Path) -> str:
    """A minimal nginx.conf around the site file: foreground, one worker, everything under ``prefix``."""
    user = "user root;\n" if os.geteuid() == 0 else ""  # as root, workers would drop to nobody: tmp is 0700
    temp = "\n".join(f"    {name}_temp_path {prefix / 'temp' / name};"
                     for name in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    return (f"{user}daemon off;\nworker_processes 1;\npid {prefix / 'nginx.pid'};\nerror_log {prefix / 'error.log'} info;\n"
            "events { worker_connections 256; }\n"
            f"http {{\n{temp}\n    access_log off;\n    include {site_file};\n}}\n")


def wait_http(url: str, proc: subprocess.Popen, what: str, log: Path, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}; see {log}:\n{_tail(log)}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{what} did not answer {url} in {timeout:.0f} s; see {log}:\n{_tail(log)}")


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def stop(proc: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def tree_state(folder: Path) -> dict[str, tuple[int, int, str]]:
    """Every file and folder under ``folder``: relative path -> (size, mtime_ns, sha256 of files)."""
    state = {}
    for path in sorted(folder.rglob("*")):
        stat = path.lstat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
        state[str(path.relative_to(folder))] = (stat.st_size if path.is_file() else 0, stat.st_mtime_ns, digest)
    return state


@dataclass
class Stack:
    """A running stack: ``origin`` is nginx's ``http://127.0.0.1:PORT``; ``url(path)`` the app under the prefix."""

    port: int
    app_ports: list[int]
    tmp: Path
    data_dir: Path
    cache_dir: Path
    access_log: Path
    nginx_log: Path
    app_logs: list[Path]
    data_before: dict = field(default_factory=dict)  # tree_state(data_dir) before any server started
    procs: list[subprocess.Popen] = field(default_factory=list)

    def origin(self, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}"

    def url(self, path: str = "", host: str = "127.0.0.1") -> str:
        return f"{self.origin(host)}/{PREFIX}/{path}"

    def close(self) -> None:
        for proc in reversed(self.procs):  # nginx first (it was started last), then the app processes
            stop(proc, signal.SIGQUIT if proc.args[0].endswith("nginx") else signal.SIGTERM)
        self.procs.clear()


def start(tmp: Path, data_source: Path, processes: int = 2, site: Path = SITE, python: str = sys.executable,
          env_extra: dict | None = None) -> Stack:
    """Copy ``data_source`` to a folder nobody may write, start ``processes`` app processes and nginx.
    ``python``: the interpreter deploy/serve.sh runs (``$TIEBREAK_PYTHON``; a benchmark's probe wrapper);
    ``env_extra``: variables added to the app processes' environment."""
    nginx = nginx_binary()
    data_dir = tmp / "data"
    shutil.copytree(data_source, data_dir)
    for path in [data_dir, *data_dir.rglob("*")]:
        path.chmod(path.stat().st_mode & ~0o222)
    prefix = tmp / "nginx"
    for name in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (prefix / "temp" / name).mkdir(parents=True)
    stack = Stack(port=free_port(), app_ports=[free_port() for _ in range(processes)], tmp=tmp,
                  data_dir=data_dir, cache_dir=tmp / "cache", access_log=prefix / "access.log",
                  nginx_log=prefix / "error.log", app_logs=[tmp / f"app-{i}.log" for i in range(processes)],
                  data_before=tree_state(data_dir))
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMLIT_")}
        for name in ("TIEBREAK_PROFILE", "TIEBREAK_CACHE_SKIP"):  # the profile as shipped, every cache on
            env.pop(name, None)
        env.update(env_extra or {})
        env.update(TIEBREAK_DATA=str(data_dir), TIEBREAK_CACHE=str(stack.cache_dir), TIEBREAK_PYTHON=python)
        for app_port, log in zip(stack.app_ports, stack.app_logs):
            stack.procs.append(subprocess.Popen(["sh", str(SERVE), str(app_port)], cwd=tmp, env=env,
                                                stdout=open(log, "w"), stderr=subprocess.STDOUT))
        for proc, app_port, log in zip(stack.procs, stack.app_ports, stack.app_logs):
            wait_http(f"http://127.0.0.1:{app_port}/{PREFIX}/_stcore/health", proc, "deploy/serve.sh", log)
        site_file = prefix / "tiebreak.conf"
        site_file.write_text(site_config(stack.port, stack.app_ports, stack.access_log, site), encoding="utf-8")
        conf = prefix / "nginx.conf"
        conf.write_text(nginx_main_config(prefix, site_file), encoding="utf-8")
        nginx_out = prefix / "stderr.log"
        proc = subprocess.Popen([nginx, "-p", str(prefix), "-c", str(conf), "-e", str(stack.nginx_log)],
                                stdout=open(nginx_out, "w"), stderr=subprocess.STDOUT)
        stack.procs.append(proc)
        wait_http(stack.url("_stcore/health"), proc, "nginx", nginx_out, timeout=30)
    except BaseException:
        stack.close()
        raise
    return stack
