"""A Spark standalone cluster on loopback: one master and N workers, each its
own JVM (``spark-class org.apache.spark.deploy.master.Master`` / ``Worker``,
from the PySpark install), bound to 127.0.0.1 on ports the OS picks.

For the tests and benchmarks that run the conformance job as a cluster runs it
(``--master spark://...``: executors in JVMs of their own, the job's code
shipped to them as a zip), and to try the executor settings of
:mod:`kafka_net.spark_jobs.session` where they matter.  Every process it starts
is stopped by :meth:`LoopbackCluster.stop` (also on ``with`` exit); every wait
is bounded.
"""

from __future__ import annotations

import glob
import os
import re
import signal
import subprocess
import sys
import time

_MASTER_URL = re.compile(r"Starting Spark master at (spark://\S+)")
_REGISTERED = "Successfully registered with master"


def spark_home() -> str:
    from pyspark.find_spark_home import _find_spark_home
    return _find_spark_home()


class ClusterError(RuntimeError):
    """The cluster did not start; the message holds the last lines of its logs."""


class LoopbackCluster:
    """``with LoopbackCluster(tmp, workers=2) as c: ... --master c.url``."""

    def __init__(self, base_dir: str, workers: int = 2, cores: int = 1,
                 memory: str = "3g", timeout_s: float = 120.0) -> None:
        self.base_dir = base_dir
        self.workers, self.cores, self.memory = workers, cores, memory
        self.timeout_s = timeout_s
        self.url: str | None = None
        self._procs: list[tuple[subprocess.Popen, str]] = []   # process, its log

    def __enter__(self) -> "LoopbackCluster":
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def _env(self) -> dict:
        env = dict(os.environ)
        env.update(SPARK_HOME=spark_home(), SPARK_LOCAL_IP="127.0.0.1",
                   SPARK_NO_DAEMONIZE="1", PYSPARK_PYTHON=sys.executable,
                   # the daemons' own heaps: small, they only schedule
                   SPARK_DAEMON_MEMORY="512m")
        return env

    def _spawn(self, name: str, argv: list[str]) -> str:
        log = os.path.join(self.base_dir, f"{name}.log")
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [os.path.join(spark_home(), "bin", "spark-class"), *argv],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env=self._env(), cwd=self.base_dir, start_new_session=True)
        self._procs.append((proc, log))
        return log

    def start(self) -> None:
        os.makedirs(self.base_dir, exist_ok=True)
        log = self._spawn("master", ["org.apache.spark.deploy.master.Master",
                                     "--host", "127.0.0.1", "--port", "0",
                                     "--webui-port", "0"])
        self.url = self._wait(log, lambda text: (m := _MASTER_URL.search(text)) and m.group(1))
        for i in range(self.workers):
            work = os.path.join(self.base_dir, f"worker{i}")
            os.makedirs(work, exist_ok=True)
            wlog = self._spawn(f"worker{i}", [
                "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                "--port", "0", "--webui-port", "0", "--cores", str(self.cores),
                "--memory", self.memory, "--work-dir", work, self.url])
            self._wait(wlog, lambda text: _REGISTERED in text)

    def _wait(self, log: str, found):
        deadline = time.monotonic() + self.timeout_s
        while time.monotonic() < deadline:
            with open(log, encoding="utf-8", errors="replace") as fh:
                result = found(fh.read())
            if result:
                return result
            if any(p.poll() is not None for p, _ in self._procs):
                break
            time.sleep(0.2)
        raise ClusterError(f"{os.path.basename(log)} did not come up in {self.timeout_s} s:\n"
                           + self.log_tail(log))

    @staticmethod
    def log_tail(log: str, lines: int = 30) -> str:
        with open(log, encoding="utf-8", errors="replace") as fh:
            return "".join(fh.readlines()[-lines:])

    def executor_dirs(self) -> list[str]:
        """One folder per executor a worker launched (``workerN/app-ID/EXECUTOR``):
        an executor lost and replaced leaves one more."""
        return sorted(glob.glob(os.path.join(self.base_dir, "worker*", "app-*", "*")))

    def executor_failures(self) -> list[str]:
        """Lines of the workers' logs and executors' stderr that say an executor
        died (its JVM exited on its own, ran out of memory, or was lost)."""
        bad = re.compile(r"finished with state (FAILED|EXITED|LOST)|OutOfMemoryError|"
                         r"ExecutorLostFailure")
        out = []
        files = [log for _, log in self._procs] + [
            os.path.join(d, "stderr") for d in self.executor_dirs()]
        for path in files:
            if os.path.exists(path):
                with open(path, encoding="utf-8", errors="replace") as fh:
                    out += [f"{os.path.relpath(path, self.base_dir)}: {line.strip()}"
                            for line in fh if bad.search(line)]
        return out

    def stop(self) -> None:
        """Workers first, then the master: SIGTERM, then SIGKILL after 20 s."""
        for proc, _ in reversed(self._procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc, _ in reversed(self._procs):
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        self._procs_stopped = True


__all__ = ["ClusterError", "LoopbackCluster", "spark_home"]
