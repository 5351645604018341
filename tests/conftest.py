from tests.support import server_fixture

server = server_fixture()  # a running broker, one per test; modules may define their own
