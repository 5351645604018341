"""pyarrow without pandas, in a process of our own.

pyarrow imports pandas at its first conversion of Python values
(``pa.array``, ``pa.scalar``, a table's ``to_numpy``), only to ask whether a
value is a pandas object or a pandas null: 0.25 of the 3.9 CPU s that the
919,785-frame .kncap capture of bench/RESULTS.md costs in one process.  The
job never gives pyarrow a pandas object, and pyarrow without pandas converts
everything else the same (pandas is an optional dependency of pyarrow).

A module of its own, importing nothing but :mod:`sys`, because the Python
workers' daemon (worker_daemon.py) calls it before it forks them: every
module it imports there is on the path of each job's first task.
"""

from __future__ import annotations

import sys

# Set in the Python workers' environment of a session that runs the job alone
# (session.get_spark's job_only): the daemon refuses pandas before it forks them.
WITHOUT_PANDAS = "KAFKA_NET_WORKERS_WITHOUT_PANDAS"


def arrow_without_pandas() -> None:
    """From now on, this process does not import pandas.  Only for a process
    of our own (``kafka_net.entry.OWN_PROCESS``; bench/): ``kafka-net
    conformance`` in one process, and the Python workers of the session it
    starts when it runs Spark (``session.get_spark``'s ``job_only``: each
    worker paid the same quarter of a second).  A caller's process keeps
    pandas, and so do the workers of a session that may run other code: pyarrow
    remembers that pandas failed to import, and a pandas UDF there would fail
    with it.  Nothing happens once pandas is imported."""
    if "pandas" not in sys.modules and \
            not any(isinstance(f, Refused) for f in sys.meta_path):
        sys.meta_path.insert(0, Refused("pandas"))


class Refused:
    """An import finder (``sys.meta_path``) under which importing ``name``
    fails."""

    def __init__(self, name: str) -> None:
        self.name = name

    def find_spec(self, fullname, path=None, target=None):
        if fullname == self.name:
            raise ImportError(f"{self.name} is not imported here", name=fullname)
        return None
