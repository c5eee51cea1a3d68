"""tests/integration/lib/ports - a loopback TCP port for a server a test
starts: bound to port 0, read back, closed.  Free a moment ago; nothing
listens there unless another process takes it since (a server that then
fails to bind says so, and the test fails with its message)."""
import socket


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p
