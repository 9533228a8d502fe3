"""One simulated browser tab speaking Streamlit's websocket protocol (for ``bench/load_ws.py``).

What a browser tab does, and what :class:`Session` does the same way (Streamlit 1.67's frontend:
``frontend/connection/src/WebsocketConnection.tsx``, ``ForwardMessageCache.ts``, ``frontend/app/src/App.tsx``;
server: ``streamlit/web/server/starlette/starlette_websocket.py``, ``runtime/app_session.py``):

1. **Load the page**: ``GET <base>/`` (through nginx this sets the sticky ``tiebreak_route`` cookie; with XSRF
   protection on, Streamlit sets ``_streamlit_xsrf``). The tab's scripts and styles are not fetched: a returning
   browser has them cached.
2. **Connect** ``ws(s)://<base>/_stcore/stream`` with ``Sec-WebSocket-Protocol: streamlit, <xsrf cookie or
   PLACEHOLDER_AUTH_TOKEN>`` and the page's cookies; no ``Origin`` header (Streamlit accepts a missing Origin or
   one equal to ``http://<Host>``; a foreign one makes it look up the machine's external IP, see
   deploy/nginx/tiebreak.conf). Frames are binary protobufs: ``BackMsg`` up, ``ForwardMsg`` down.
3. **First run**: ``BackMsg.rerun_script`` = ``ClientState`` with the URL's query string, the page name from
   the URL path (empty for the app's root), empty widget states and ``context_info`` (timezone, locale, the
   page URL without its query, colour scheme).
4. The server answers each run with ``new_session`` (``metadata.run.script_run_id``; ``config.max_cached_message_age``),
   ``session_status_changed``, ``page_config_changed``, ``navigation`` (the pages: hash, title, URL path),
   ``delta`` messages (``metadata.delta_path`` = where in the page tree: first index 0 main, 1 sidebar;
   ``new_element`` or ``add_block``), ``page_info_changed`` (the query string the app wrote into the URL), and
   finally ``script_finished`` (``FINISHED_SUCCESSFULLY`` ...). **Latency** here = rerun sent → that
   ``script_finished`` received.
5. **Message cache**: a delta of >= 10 kB arrives with ``metadata.cacheable`` and a ``hash``; the tab keeps it
   and lists the hashes in ``ClientState.cached_message_hashes`` of every later rerun, and the server then
   sends only ``ref_hash`` references for identical messages. Entries expire after ``max_cached_message_age``
   successful runs without use (``ForwardMsgCache.incrementRunCount``).
6. **Widget state**: every widget element carries an ``id``; a mounted widget registers its value (``set_value``
   → the value the server forced, else the value it already had, else its ``default``). A rerun lists every
   registered widget's current value (``WidgetStates``; selectbox/radio values are the *displayed* option
   strings); after a successful run, states of widgets no longer on the page are dropped
   (``removeInactiveWidgetState``). Widgets inside a popover are not mounted until it is opened, so they send
   no state. A **control change** = a rerun with that widget's new value (a button click: ``trigger_value``).
7. **Page switch** (sidebar navigation): a rerun with the target ``page_script_hash``, empty widget states and
   no query string; the app writes the query string back (``page_info_changed``).

``bench/ws_validate.py`` checks points 3, 6 and 7 against a real Chromium on the same server: the rerun
messages it sends and the elements it receives must equal this client's.
"""
from __future__ import annotations

import asyncio
import http.cookies
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

FINISHED = ForwardMsg.ScriptFinishedStatus
APP_ERROR_TEXT = "could not be drawn"  # ui/navigation.py's error boundary: "this view could not be drawn"
ROOTS = {0: "main", 1: "sidebar", 2: "event", 3: "bottom"}

# Widget kinds and the WidgetState field their value travels in (streamlit/elements/widgets/*.py value_type=).
VALUE_FIELD = {
    "selectbox": "string_value", "radio": "string_value", "text_input": "string_value",
    "text_area": "string_value", "checkbox": "bool_value", "multiselect": "string_array_value",
    "button_group": "string_array_value", "number_input": "double_value", "slider": "double_array_value",
    "dataframe": "string_value",  # a table with row selection (it has an id): its selection as JSON
}
TRIGGER_KINDS = {"button"}  # a click is sent once as trigger_value=True


class ProtocolError(RuntimeError):
    """The server broke the protocol as this client understands it (a cache miss, a closed socket ...)."""


@dataclass
class Node:
    """One element or block of the page tree, tagged with the script run that last sent it."""

    path: tuple[int, ...]
    run_id: str
    kind: str  # element type ("selectbox", "dataframe" ...) or "block:<type>"
    proto: object  # streamlit.proto Element or Block


@dataclass
class RunResult:
    """One script run, from the rerun message sent to its ``script_finished``."""

    kind: str  # "open", "change", "page", "click"
    sent_at: float
    latency: float | None = None  # seconds to script_finished; None = no answer (timeout / closed)
    status: str = ""
    messages: int = 0
    bytes: int = 0
    errors: list[str] = field(default_factory=list)


def _field_value(proto, name):
    value = getattr(proto, name)
    return list(value) if hasattr(value, "extend") else value


class PageTree:
    """The page as the browser's ``AppRoot`` holds it: nodes by delta path, stale ones cleared after a run.

    Also the tab's widget manager (registered values, popovers opened) and forward-message cache; everything
    a rerun message needs is derived from here. Feed it every ForwardMsg with :meth:`apply`."""

    def __init__(self) -> None:
        self.nodes: dict[tuple[int, ...], Node] = {}
        self.run_id = ""
        self.page_hash = ""  # the page this session shows (new_session.page_script_hash)
        self.main_hash = ""
        self.query_string = ""
        self.pages: list[dict] = []  # navigation: page_script_hash, page_name, url_pathname, is_default
        self.widget_values: dict[str, tuple[str, object]] = {}  # id -> (WidgetState field, value)
        self.opened: set[tuple[int, ...]] = set()  # popover block paths whose content is mounted
        self.cache: dict[str, list] = {}  # hash -> [encoded ForwardMsg, script run count of last use]
        self.hash_paths: dict[str, tuple[int, ...]] = {}  # every cached hash -> its delta path (for reports)
        self.run_count = 0
        self.max_age = 2
        self.run_has_new_session = False
        self.last_status: int | None = None

    # ------------------------------------------------------------------ messages
    def decode(self, data: bytes) -> ForwardMsg:
        """Decode one frame; a ``ref_hash`` reference is resolved from the cache (its metadata kept)."""
        msg = ForwardMsg()
        msg.ParseFromString(data)
        kind = msg.WhichOneof("type")
        if kind == "ref_hash":
            entry = self.cache.get(msg.ref_hash)
            if entry is None:
                raise ProtocolError(f"cached ForwardMsg miss for hash {msg.ref_hash}")
            entry[1] = self.run_count
            full = ForwardMsg()
            full.ParseFromString(entry[0])
            full.metadata.CopyFrom(msg.metadata)
            return full
        if msg.metadata.cacheable and msg.hash:
            if msg.hash in self.cache:
                self.cache[msg.hash][1] = self.run_count
            else:
                self.cache[msg.hash] = [data, self.run_count]
                self.hash_paths[msg.hash] = tuple(msg.metadata.delta_path)
        return msg

    def apply(self, msg: ForwardMsg) -> None:
        kind = msg.WhichOneof("type")
        if kind == "new_session":
            ns = msg.new_session
            self.run_id = msg.metadata.run.script_run_id
            self.page_hash = ns.page_script_hash
            self.main_hash = ns.main_script_hash
            if ns.config.max_cached_message_age:
                self.max_age = ns.config.max_cached_message_age
            self.run_has_new_session = True
        elif kind == "navigation":
            nav = msg.navigation
            self.pages = [{"page_script_hash": p.page_script_hash, "page_name": p.page_name,
                           "url_pathname": p.url_pathname, "is_default": p.is_default} for p in nav.app_pages]
            if nav.page_script_hash:
                self.page_hash = nav.page_script_hash
        elif kind == "page_info_changed":
            self.query_string = msg.page_info_changed.query_string
        elif kind == "delta":
            self._apply_delta(msg)
        elif kind == "script_finished":
            self._finished(msg.script_finished)

    def _apply_delta(self, msg: ForwardMsg) -> None:
        path = tuple(msg.metadata.delta_path)
        delta = msg.delta
        which = delta.WhichOneof("type")
        if which == "new_element":
            element = delta.new_element
            kind = element.WhichOneof("type") or "empty"
            proto = getattr(element, kind) if kind != "empty" else element
            self.nodes[path] = Node(path, self.run_id, kind, proto)
            self._register_widget(path, kind, proto)
        elif which == "add_block":
            block = delta.add_block
            kind = "block:" + (block.WhichOneof("type") or "vertical")
            self.nodes[path] = Node(path, self.run_id, kind, block)

    def _register_widget(self, path, kind, proto) -> None:
        """The value a mounted widget registers (the browser does this when the element is drawn)."""
        widget_id = getattr(proto, "id", "")
        if not widget_id or kind not in VALUE_FIELD:
            return
        field_name = VALUE_FIELD[kind]
        if getattr(proto, "set_value", False):  # a table has no set_value: its default selection is its value
            value = self._set_value(kind, proto)
        elif widget_id in self.widget_values:
            return
        else:
            value = self._default_value(kind, proto)
        if value is not None:
            self.widget_values[widget_id] = (field_name, value)

    @staticmethod
    def _set_value(kind, proto):
        if kind in ("selectbox", "radio"):
            return proto.raw_value if proto.HasField("raw_value") else None
        if kind == "multiselect":
            return list(proto.raw_values)
        if kind in ("checkbox", "text_input", "text_area", "number_input"):
            return proto.value
        return _field_value(proto, "value")

    @staticmethod
    def _default_value(kind, proto):
        if kind in ("selectbox", "radio"):
            if proto.HasField("default") and 0 <= proto.default < len(proto.options):
                return proto.options[proto.default]
            return None
        if kind == "multiselect":
            return [proto.options[i] for i in proto.default]
        if kind in ("text_input", "text_area"):
            return proto.default if proto.HasField("default") else None
        if kind == "checkbox":
            return bool(proto.default)
        if kind == "dataframe":  # the browser sends the selection it was given back, as given
            return proto.selection_default or None
        return _field_value(proto, "default")

    def _finished(self, status: int) -> None:
        self.last_status = status
        if status in (FINISHED.FINISHED_SUCCESSFULLY, FINISHED.FINISHED_FRAGMENT_RUN_SUCCESSFULLY):
            # clearStaleNodes, then removeInactiveWidgetState
            self.nodes = {p: n for p, n in self.nodes.items() if n.run_id == self.run_id}
            active = {getattr(n.proto, "id", "") for n in self.nodes.values()}
            self.widget_values = {k: v for k, v in self.widget_values.items() if k in active}
            self.opened = {p for p in self.opened if self.nodes.get(p, Node(p, "", "", None)).kind == "block:popover"}
        if status != FINISHED.FINISHED_EARLY_FOR_RERUN and self.run_has_new_session:
            self.run_count += 1
            self.cache = {h: e for h, e in self.cache.items() if self.run_count - e[1] <= self.max_age}

    # ------------------------------------------------------------------ what the page shows
    def popover_of(self, path: tuple[int, ...]) -> tuple[int, ...] | None:
        """The innermost popover block that holds ``path`` (None = not inside a popover)."""
        for cut in range(len(path) - 1, 0, -1):
            node = self.nodes.get(path[:cut])
            if node is not None and node.kind == "block:popover":
                return path[:cut]
        return None

    def mounted(self, path: tuple[int, ...]) -> bool:
        """Drawn in the browser: not inside a popover that was never opened."""
        cut = self.popover_of(path)
        while cut is not None:
            if cut not in self.opened:
                return False
            cut = self.popover_of(cut)
        return True

    def widgets(self, mounted_only: bool = True) -> dict[str, Node]:
        """Widget nodes (elements with an id) by id, in page order."""
        out = {}
        for path in sorted(self.nodes):
            node = self.nodes[path]
            widget_id = getattr(node.proto, "id", "") if not node.kind.startswith("block:") else ""
            if widget_id and (node.kind in VALUE_FIELD or node.kind in TRIGGER_KINDS):
                if not mounted_only or self.mounted(path):
                    out[widget_id] = node
        return out

    def errors(self) -> list[str]:
        """What a visitor would see as a failure: exception boxes and the app's "could not be drawn" box."""
        found = []
        for node in self.nodes.values():
            if node.kind == "exception":
                found.append(f"exception box: {node.proto.type}: {node.proto.message[:120]}")
            elif node.kind == "alert" and APP_ERROR_TEXT in node.proto.body:
                found.append("app error box: " + node.proto.body[:160].replace("\n", " "))
        return found

    # ------------------------------------------------------------------ messages to send
    def widget_states(self, changed: dict[str, tuple[str, object]] | None = None):
        from streamlit.proto.WidgetStates_pb2 import WidgetStates

        states = WidgetStates()
        values = dict(self.widget_values)
        mounted = self.widgets()
        values = {k: v for k, v in values.items() if k in mounted or (changed and k in changed)}
        values.update(changed or {})
        for widget_id, (field_name, value) in values.items():
            state = states.widgets.add()
            state.id = widget_id
            if field_name == "string_array_value":
                state.string_array_value.data.extend(value)
            elif field_name == "double_array_value":
                state.double_array_value.data.extend(value)
            else:
                setattr(state, field_name, value)
        return states

    def url_path_of(self, page_hash: str) -> str:
        for page in self.pages:
            if page["page_script_hash"] == page_hash:
                return "" if page["is_default"] else page["url_pathname"]
        return ""


class Session:
    """One browser tab: :meth:`open`, then :meth:`change` / :meth:`click` / :meth:`switch_page`, :meth:`close`.

    ``base_url`` is the app's root as a browser opens it, e.g. ``http://127.0.0.1:8080/tiebreak/``.
    One action at a time; each returns a :class:`RunResult`."""

    def __init__(self, base_url: str, timeout: float = 120.0, timezone: str = "UTC", locale: str = "en-US"):
        self.base_url = base_url if base_url.endswith("/") else base_url + "/"
        parts = urllib.parse.urlsplit(self.base_url)
        self.origin = f"{parts.scheme}://{parts.netloc}"
        self.ws_url = ("wss" if parts.scheme == "https" else "ws") + f"://{parts.netloc}{parts.path}_stcore/stream"
        self.timeout = timeout
        self.timezone, self.locale = timezone, locale
        self.tree = PageTree()
        self.cookies: dict[str, str] = {}
        self.ws = None
        self.reader: asyncio.Task | None = None
        self.closed_reason: str | None = None
        self.current_path = ""  # URL path below the base, as the browser's address bar has it
        self.sent: list[BackMsg] = []  # every BackMsg sent (the validation compares them with Chromium's)
        self.keep_sent = False
        self._waiter: asyncio.Future | None = None
        self._run: RunResult | None = None
        self.new_session_id = ""

    # ------------------------------------------------------------------ connection
    def _load_page(self, path: str, query: str) -> None:
        url = self.base_url + path + (("?" + query) if query else "")
        request = urllib.request.Request(url, headers={"Accept": "text/html"})
        with urllib.request.urlopen(request, timeout=self.timeout) as response:
            response.read()
            for header in response.headers.get_all("Set-Cookie") or []:
                jar = http.cookies.SimpleCookie()
                jar.load(header)
                for name, morsel in jar.items():
                    self.cookies[name] = morsel.value

    async def _connect(self) -> None:
        from websockets.asyncio.client import connect

        token = self.cookies.get("_streamlit_xsrf") or "PLACEHOLDER_AUTH_TOKEN"
        headers = {}
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        self.ws = await connect(self.ws_url, subprotocols=["streamlit", token], additional_headers=headers,
                                origin=None, max_size=None, open_timeout=self.timeout, ping_interval=None,
                                proxy=None, user_agent_header=None)
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        try:
            async for data in self.ws:
                run = self._run
                try:
                    msg = self.tree.decode(data)
                    self.tree.apply(msg)
                except ProtocolError as exc:
                    if run is not None:
                        run.errors.append(str(exc))
                    continue
                if run is None:
                    continue
                run.messages += 1
                run.bytes += len(data)
                kind = msg.WhichOneof("type")
                if kind == "new_session":
                    self.new_session_id = msg.metadata.run.script_run_id
                elif kind == "page_not_found":
                    run.errors.append(f"page not found: {msg.page_not_found.page_name}")
                elif kind == "script_finished" and self.tree.run_has_new_session:
                    status = msg.script_finished
                    if status == FINISHED.FINISHED_EARLY_FOR_RERUN:
                        continue
                    run.latency = time.perf_counter() - run.sent_at
                    run.status = FINISHED.Name(status)
                    if status not in (FINISHED.FINISHED_SUCCESSFULLY, FINISHED.FINISHED_FRAGMENT_RUN_SUCCESSFULLY):
                        run.errors.append(f"script finished with {run.status}")
                    if self._waiter is not None and not self._waiter.done():
                        self._waiter.set_result(run)
            self.closed_reason = "server closed the websocket"
        except Exception as exc:  # connection reset, protocol error: the session is over
            self.closed_reason = f"websocket failed: {type(exc).__name__}: {exc}"
        finally:
            if self._waiter is not None and not self._waiter.done():
                self._waiter.set_result(self._run)

    async def close(self) -> None:
        if self.ws is not None:
            try:
                await asyncio.wait_for(self.ws.close(), 5)
            except Exception:
                pass
        if self.reader is not None:
            self.reader.cancel()
            try:
                await self.reader
            except BaseException:
                pass

    # ------------------------------------------------------------------ runs
    def _context_info(self, client_state) -> None:
        info = client_state.context_info
        info.timezone = self.timezone
        info.timezone_offset = 0
        info.locale = self.locale
        info.url = self.base_url + self.current_path
        info.is_embedded = False
        info.color_scheme = "light"

    async def _rerun(self, kind: str, *, query: str, page_hash: str = "", page_name: str = "",
                     changed: dict | None = None, empty_widgets: bool = False) -> RunResult:
        msg = BackMsg()
        state = msg.rerun_script
        if query:
            state.query_string = query
        state.widget_states.CopyFrom(self.tree.widget_states(changed) if not empty_widgets else
                                     type(state.widget_states)())
        if page_hash:
            state.page_script_hash = page_hash
        if page_name:
            state.page_name = page_name
        state.cached_message_hashes.extend(self.tree.cache)
        self._context_info(state)
        return await self.send_rerun(kind, msg)

    async def send_rerun(self, kind: str, msg: BackMsg) -> RunResult:
        """Send one rerun message and wait for its script_finished (or the timeout)."""
        run = RunResult(kind=kind, sent_at=time.perf_counter())
        if self.closed_reason is not None:
            run.errors.append(self.closed_reason)
            return run
        self._run = run
        self.tree.run_has_new_session = False
        loop = asyncio.get_running_loop()
        self._waiter = loop.create_future()
        if self.keep_sent:
            self.sent.append(msg)
        try:
            await self.ws.send(msg.SerializeToString())
            await asyncio.wait_for(asyncio.shield(self._waiter), self.timeout)
        except asyncio.TimeoutError:
            run.errors.append(f"no script_finished within {self.timeout:.0f} s")
        except Exception as exc:
            run.errors.append(f"send failed: {type(exc).__name__}: {exc}")
        if run.latency is None and not run.errors:
            run.errors.append(self.closed_reason or "no script_finished")
        if run.latency is not None:
            self.current_path = self.tree.url_path_of(self.tree.page_hash)
            run.errors.extend(self.tree.errors())
        self._run = None
        return run

    async def open(self, path: str = "", query: str = "") -> RunResult:
        """Load the page (cookies), connect and run the first script run, as a fresh tab does."""
        started = time.perf_counter()
        try:
            await asyncio.to_thread(self._load_page, path, query)
            await self._connect()
        except Exception as exc:
            run = RunResult(kind="open", sent_at=started)
            run.errors.append(f"connect failed: {type(exc).__name__}: {exc}")
            self.closed_reason = run.errors[0]
            return run
        self.current_path = path
        run = await self._rerun("open", query=query, page_name=path, empty_widgets=True)
        run.sent_at = started
        if run.latency is not None:
            run.latency = time.perf_counter() - started
        return run

    def change_message_value(self, widget_id: str, value) -> dict:
        node = self.tree.widgets(mounted_only=False)[widget_id]
        return {widget_id: (VALUE_FIELD[node.kind], value)}

    async def change(self, widget_id: str, value) -> RunResult:
        """Set one widget to ``value`` (a displayed option string, a bool, a list of option strings)."""
        changed = self.change_message_value(widget_id, value)
        self.tree.widget_values.update(changed)
        return await self._rerun("change", query=self.tree.query_string, page_hash=self.tree.page_hash,
                                 changed=changed)

    async def click(self, widget_id: str) -> RunResult:
        return await self._rerun("click", query=self.tree.query_string, page_hash=self.tree.page_hash,
                                 changed={widget_id: ("trigger_value", True)})

    def open_popover(self, path: tuple[int, ...]) -> None:
        """Open a popover: its widgets mount and register their values (no message is sent)."""
        self.tree.opened.add(path)

    async def switch_page(self, page_hash: str) -> RunResult:
        return await self._rerun("page", query="", page_hash=page_hash, empty_widgets=True)
