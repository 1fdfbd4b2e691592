# codebridge resume relay, run as `python3 -I -u -c <this file>` in a
# detachable sandbox by a bridge that adopts it (pyruntime/PROTOCOL.md,
# "Resuming the channel"). Its stdin and stdout are the bridge's new stream
# (an exec); it reads the first line, {"t":"resume","key":K}, connects to
# the runtime's abstract socket that the key's SHA-256 names, sends the line
# and then copies bytes both ways until either side ends. Stdlib only.
import hashlib, json, os, socket, sys, threading

line = sys.stdin.buffer.readline(4096)
try:
    key = json.loads(line)["key"]
    name = hashlib.sha256(key.encode()).hexdigest()[:32]
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(b"\0codebridge-resume-" + name.encode())
except Exception as exc:
    os.write(2, f"codebridge relay: no detachable runtime to resume: {type(exc).__name__}\n".encode())
    os._exit(1)
sock.sendall(line)


def up():
    while True:
        data = os.read(0, 1 << 16)
        if not data:
            break
        sock.sendall(data)
    sock.shutdown(socket.SHUT_WR)


threading.Thread(target=up, daemon=True).start()
while True:
    data = sock.recv(1 << 16)
    if not data:
        os._exit(0)
    view = memoryview(data)
    while view:
        view = view[os.write(1, view):]
