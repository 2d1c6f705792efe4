# Talks to real MCP servers for scripts/realworld: installs them from npm, runs each over
# stdio, and records its tools/list response and a few real tools/call results, so
# plangate can be tried on catalogs and CallToolResults that nobody wrote for it.
"""MCP servers over stdio, with the standard library only.

A server is a node process speaking newline-delimited JSON-RPC 2.0 on stdin/stdout.
The client sends `initialize`, `notifications/initialized` and `tools/list`, then the
tools/call requests it is given, and stops the process it started.
"""
import json
import os
import queue
import shutil
import subprocess
import threading
import time

PROTOCOL_VERSION = "2025-06-18"
CLIENT_INFO = {"name": "plangate-realworld", "version": "1"}

# name -> (npm package, pinned version, extra argv). Pinned so a rerun captures the same
# tools; bump the version here and regenerate the fixture to follow upstream.
SERVERS = {
    "filesystem": ("@modelcontextprotocol/server-filesystem", "2026.8.31", ["{root}"]),
    "memory": ("@modelcontextprotocol/server-memory", "2026.8.31", []),
    "everything": ("@modelcontextprotocol/server-everything", "2026.8.31", ["stdio"]),
}

# Where tests/realworld/mcp/LICENSE was copied from (the npm tarballs ship none).
LICENSE_SOURCE = "github.com/modelcontextprotocol/servers, LICENSE at commit 76d64c822f5125032f89eb71dbdb94e42b434821"


class McpError(Exception):
    """Why a server could not be installed, started or asked."""


def install(name, cache, timeout=300):
    """Installs the server's package under `cache/name` with npm (once) and returns the
    path of its package directory."""
    package, version, _ = SERVERS[name]
    prefix = os.path.join(cache, name)
    pkg_dir = os.path.join(prefix, "node_modules", *package.split("/"))
    manifest = os.path.join(pkg_dir, "package.json")
    if os.path.exists(manifest):
        with open(manifest) as f:
            if json.load(f).get("version") == version:
                return pkg_dir
    if not shutil.which("npm"):
        raise McpError("npm is not on PATH")
    os.makedirs(prefix, exist_ok=True)
    try:
        p = subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--prefix", prefix, f"{package}@{version}"],
            capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise McpError(f"npm install {package}@{version} took more than {timeout} s")
    if p.returncode != 0 or not os.path.exists(manifest):
        tail = (p.stderr or p.stdout).strip().splitlines()[-3:]
        raise McpError(f"npm install {package}@{version} failed (exit {p.returncode}): {' | '.join(tail)}")
    return pkg_dir


def package_info(pkg_dir):
    """name, version, license and repository from the installed package.json, and the
    license sentence of its README (the npm tarball ships no LICENSE file)."""
    with open(os.path.join(pkg_dir, "package.json")) as f:
        p = json.load(f)
    readme_license = None
    readme = os.path.join(pkg_dir, "README.md")
    if os.path.exists(readme):
        with open(readme, encoding="utf-8") as f:
            lines = f.read().splitlines()
        for i, line in enumerate(lines):
            if line.strip().lower() == "## license":
                rest = [l for l in lines[i + 1:i + 6] if l.strip()]
                readme_license = rest[0].strip() if rest else None
                break
    repo = p.get("repository")
    return {
        "name": p.get("name"), "version": p.get("version"), "license": p.get("license"),
        "repository": repo.get("url") if isinstance(repo, dict) else repo,
        "author": p.get("author"), "readme_license": readme_license,
        "ships_license_file": any(n.upper().startswith("LICENSE") for n in os.listdir(pkg_dir)),
    }


def _entry_point(pkg_dir):
    with open(os.path.join(pkg_dir, "package.json")) as f:
        p = json.load(f)
    b = p.get("bin")
    rel = next(iter(b.values())) if isinstance(b, dict) else (b or p.get("main") or "index.js")
    return os.path.join(pkg_dir, rel)


class Server:
    """One running server; use as a context manager so the process always ends."""

    def __init__(self, name, pkg_dir, workdir, timeout=20.0):
        _, _, argv = SERVERS[name]
        self.timeout = timeout
        self.root = os.path.join(workdir, "root")
        os.makedirs(self.root, exist_ok=True)
        env = dict(os.environ, MEMORY_FILE_PATH=os.path.join(workdir, "memory.jsonl"))
        if not shutil.which("node"):
            raise McpError("node is not on PATH")
        cmd = ["node", _entry_point(pkg_dir)] + [a.format(root=self.root) for a in argv]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, encoding="utf-8", env=env)
        self.lines = queue.Queue()
        self.stderr = []
        self.notifications = []
        self.next_id = 1
        threading.Thread(target=self._pump, args=(self.proc.stdout, self.lines.put, True), daemon=True).start()
        threading.Thread(target=self._pump, args=(self.proc.stderr, self.stderr.append, False), daemon=True).start()

    @staticmethod
    def _pump(stream, put, mark_end):
        """Copies a stream's lines; None marks the end of stdout (the server exited)."""
        for line in stream:
            put(line)
        if mark_end:
            put(None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=3)
        except subprocess.TimeoutExpired:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def send(self, message):
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def request(self, method, params=None):
        """The whole JSON-RPC response envelope to one request."""
        i = self.next_id
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": i, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        deadline = time.monotonic() + self.timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise McpError(f"no answer to {method} within {self.timeout} s; stderr: {''.join(self.stderr)[-300:]}")
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                raise McpError(f"the server exited (code {self.proc.poll()}) before answering {method}; "
                               f"stderr: {''.join(self.stderr)[-300:]}")
            try:
                m = json.loads(line)
            except ValueError:
                continue  # a stray log line on stdout
            if m.get("id") == i and "method" not in m:
                return m
            if "method" in m:
                self.notifications.append(m.get("method"))

    def handshake(self):
        """initialize, then notifications/initialized; the initialize response."""
        r = self.request("initialize", {"protocolVersion": PROTOCOL_VERSION, "capabilities": {},
                                        "clientInfo": CLIENT_INFO})
        if "error" in r:
            raise McpError(f"initialize failed: {r['error']}")
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return r

    def tools_list(self):
        """The tools/list response envelope (asked again once if the server announced
        a changed list meanwhile)."""
        r = self.request("tools/list")
        time.sleep(0.3)
        while True:
            try:
                line = self.lines.get_nowait()
            except queue.Empty:
                break
            if line and '"notifications/tools/list_changed"' in line:
                r = self.request("tools/list")
                break
        if "error" in r:
            raise McpError(f"tools/list failed: {r['error']}")
        return r


# The real calls made on each server: (label, tool, arguments). `{root}` is the
# filesystem server's allowed directory, where hello.txt is written first.
CALLS = {
    "filesystem": [
        ("read-ok", "read_text_file", {"path": "{root}/hello.txt"}),
        ("read-missing", "read_text_file", {"path": "{root}/missing.txt"}),
    ],
    "memory": [
        ("read-graph", "read_graph", {}),
    ],
    "everything": [
        ("echo", "echo", {"message": "hello"}),
        ("sum", "get-sum", {"a": 2, "b": 3}),
    ] + [(f"echo-{i}", "echo", {"message": w}) for i, w in
         enumerate(["Taylor Swiftx7f3", "harbor lantern", "Ada Lovelace q2", "cobalt-19", "Jane Doe 44", "meadow"])],
}


def capture(name, cache, workdir, timeout=20.0):
    """Installs and runs one server: its package info, tools/list envelope and the
    results of CALLS (each the tools/call response envelope)."""
    pkg_dir = install(name, cache)
    info = package_info(pkg_dir)
    os.makedirs(workdir, exist_ok=True)
    with Server(name, pkg_dir, workdir, timeout) as s:
        with open(os.path.join(s.root, "hello.txt"), "w") as f:
            f.write("hello from plangate\n")
        init = s.handshake()
        listed = s.tools_list()
        names = {t.get("name") for t in listed.get("result", {}).get("tools", [])}
        calls = []
        for label, tool, args in CALLS.get(name, []):
            if tool not in names:
                calls.append({"label": label, "tool": tool, "skipped": "not in tools/list"})
                continue
            args = json.loads(json.dumps(args).replace("{root}", s.root))
            r = s.request("tools/call", {"name": tool, "arguments": args})
            calls.append({"label": label, "tool": tool, "arguments": args, "response": r})
    return {"package": info, "server_info": init.get("result", {}).get("serverInfo"),
            "tools_list": listed, "calls": calls}


def declared(tools_list):
    """A copy of a tools/list envelope with plangate's fields under x-plangate on every
    tool, as a user who vouches for them would write it."""
    env = json.loads(json.dumps(tools_list))
    for t in env["result"]["tools"]:
        t["x-plangate"] = {"deterministic": True, "verified": True}
    return env


def tasks(name, captured):
    """Tasks whose results are the server's real CallToolResults (what plangate decides
    is recorded, not asserted). Six samples each."""
    by_label = {c["label"]: c for c in captured["calls"] if "response" in c}
    out = []

    def result_of(c):
        r = c["response"]
        return r["result"] if "result" in r else {"isError": True, "content": [
            {"type": "text", "text": json.dumps(r.get("error"))}]}

    def same(task_id, label, c, n=6):
        call = {"tool": c["tool"], "arguments": c["arguments"], "result": result_of(c)}
        return {"task_id": task_id, "label": label, "samples": [{"calls": [call]} for _ in range(n)]}

    for c in by_label.values():
        if not c["label"].startswith("echo-"):
            out.append(same(f"mcp/{name}/{c['label']}", "correct", c))
    if "read-ok" in by_label and "read-missing" in by_label:
        ok, missing = by_label["read-ok"], by_label["read-missing"]
        # The same call answered by a result in three samples and by an isError result
        # in three: a flaky tool, as far as the samples show.
        samples = [{"calls": [{"tool": ok["tool"], "arguments": ok["arguments"],
                               "result": result_of(ok if k % 2 == 0 else missing)}]} for k in range(6)]
        out.append({"task_id": f"mcp/{name}/read-ok-or-iserror", "label": "correct", "samples": samples})
    echoes = [c for c in by_label.values() if c["label"].startswith("echo-")]
    if len(echoes) >= 6:
        # Six different messages, each with its real echo: a fabricated argument.
        samples = [{"calls": [{"tool": c["tool"], "arguments": c["arguments"], "result": result_of(c)}]}
                   for c in echoes[:6]]
        out.append({"task_id": f"mcp/{name}/echo-fabricated", "label": "hallucinated", "samples": samples})
    return out
