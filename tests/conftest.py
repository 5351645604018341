import pytest

from tests.support import running_server, make_config


@pytest.fixture
def server():
    """A running kafka-net broker on an ephemeral loopback port."""
    with running_server(make_config()) as s:
        yield s
