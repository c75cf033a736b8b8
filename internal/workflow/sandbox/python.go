package sandbox

// pythonRunner is the program python3 runs in the sandbox (with -c). It reads the request
// ({"code", "inputs"}) from stdin, lowers its own resource limits (argv: address space, CPU
// seconds, file size, open files; they cannot be raised again), runs the code, calls
// main(**inputs) and writes one JSON document on fd 3: {"result": {...}} or
// {"error": text, "kind": kind}. Whatever the code prints goes to stdout and stderr, which the
// parent drains and ignores, so prints cannot corrupt the result.
//
// Tracebacks keep only the frames of the user's code, with its source lines.
//
// With the network off (argv[5] is "off") an audit hook notes whether the code tried to reach
// the network; a run that then fails with the error a refused network call raises is reported
// with kind "network" rather than "runtime" (see KindNetwork).
const pythonRunner = `
import _socket, errno, json, linecache, os, resource, sys, traceback

def _emit(doc):
    data = json.dumps(doc, ensure_ascii=False, allow_nan=False).encode("utf-8", "surrogatepass")
    fd = 3
    while data:
        n = os.write(fd, data)
        data = data[n:]
    os.close(fd)

def _fail(kind, text):
    _emit({"error": text, "kind": kind})
    os._exit(0)

def _describe(exc):
    te = traceback.TracebackException.from_exception(exc)
    te.stack = traceback.StackSummary.from_list([f for f in te.stack if f.filename == "<code>"])
    return "".join(te.format()).rstrip("\n")

def _limit(res, soft, hard):
    # Never above the limits the process already has: raising a hard limit is not allowed.
    if soft > 0:
        _, cur = resource.getrlimit(res)
        if cur != resource.RLIM_INFINITY:
            hard = min(hard, cur)
        resource.setrlimit(res, (min(soft, hard), hard))

# The calls that reach out, by address or by name.
_NET_EVENTS = frozenset(("socket.connect", "socket.sendto", "socket.sendmsg", "socket.getaddrinfo",
    "socket.gethostbyname", "socket.gethostbyaddr", "socket.getnameinfo"))
_INET = (_socket.AF_INET, _socket.AF_INET6)
# What the sandbox's own network namespace answers: no route out, nothing listening on its
# loopback; name lookups fail as socket.gaierror, there being no DNS.
_REFUSED = frozenset((errno.ENETUNREACH, errno.ENETDOWN, errno.EHOSTUNREACH, errno.ECONNREFUSED, errno.EADDRNOTAVAIL))
_net_tried = False

def _net_audit(event, args):
    # An audit hook runs before the call and cannot be removed: the code can neither dodge
    # nor undo the note.
    global _net_tried
    if _net_tried or event not in _NET_EVENTS:
        return
    if event in ("socket.connect", "socket.sendto", "socket.sendmsg") and getattr(args[0], "family", None) not in _INET:
        return  # a Unix socket is not the network
    _net_tried = True

def _net_failure(exc):
    # Libraries wrap the socket's error (requests' ConnectionError, urllib's URLError, httpx's
    # ConnectError): look for it among the causes and contexts of what the code raised.
    if not _net_tried:
        return False
    todo, seen = [exc], set()
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, (_socket.gaierror, _socket.herror)) or (isinstance(e, OSError) and e.errno in _REFUSED):
            return True
        todo += [e.__cause__, e.__context__]
    return False

_req = json.loads(sys.stdin.buffer.read())
_mem, _cpu, _fsize, _nofile = (int(a) for a in sys.argv[1:5])
_net_off = sys.argv[5] == "off"
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
_limit(resource.RLIMIT_AS, _mem, _mem)
_limit(resource.RLIMIT_CPU, _cpu, _cpu + 1)
_limit(resource.RLIMIT_FSIZE, _fsize, _fsize)
_limit(resource.RLIMIT_NOFILE, _nofile, _nofile)
_code, _inputs = _req["code"], _req["inputs"]
del _req
linecache.cache["<code>"] = (len(_code), None, _code.splitlines(True), "<code>")
_scope = {"__name__": "__main__", "__builtins__": __builtins__}
_out_of_memory = False
_result = None
if _net_off:
    sys.addaudithook(_net_audit)
try:
    exec(compile(_code, "<code>", "exec"), _scope)
    _main = _scope.get("main")
    if _main is None:
        _fail("result", "NameError: name 'main' is not defined")
    if not callable(_main):
        _fail("result", "TypeError: main is not callable, got " + type(_main).__name__)
    _result = _main(**_inputs)
except MemoryError:
    _out_of_memory = True
except BaseException as exc:
    _fail("network" if _net_failure(exc) else "runtime", _describe(exc))
if _out_of_memory:
    _scope.clear()
    _fail("memory", "MemoryError")
if not isinstance(_result, dict):
    _fail("result", "Result must be a dict, got " + type(_result).__name__)
try:
    _emit({"result": _result})
except MemoryError:
    _fail("memory", "MemoryError")
except BaseException as exc:
    _fail("runtime", _describe(exc))
os._exit(0)
`
