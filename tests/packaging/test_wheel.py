"""What users install: the wheel and sdist, in a clean virtualenv outside the tree.

``make`` installs kafka-net in editable mode, which imports straight from the
source tree; a package folder without ``__init__.py`` is then invisible to
every other test, and the built wheel ships without it (kafka_net/network/
once did, and ``kafka-net --version`` failed for every user).  Here the wheel
is built, installed into a new virtualenv in a temporary folder, and the
console script it installs runs a broker that a real client produces to and
consumes from.  The test process's own source tree is never on that
interpreter's path.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile
import threading
import zipfile
from pathlib import Path

import pytest

from tests.compiled import compiled_paths

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 60.0
STARTED = re.compile(r"kafka-net started in \d+ ms: .*listening on \w+://[^:]+:(?P<port>\d+)")
# The broker alone (no PySpark, no clients) must stay small: at most 15 MB over an
# empty virtualenv (one compression library, cramjam, for zstd, lz4 and snappy).
MAX_INSTALL_BYTES = 15 * 1024 * 1024

pytestmark = pytest.mark.slow


def _run(*cmd: str, cwd: Path, env: dict | None = None) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, f"{cmd} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def _clean_env() -> dict[str, str]:
    # Nothing of the source tree or of the test virtualenv may leak in.
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PYTHONNOUSERSITE"] = "1"
    return env


def _source_modules() -> set[str]:
    """Every module's path inside the wheel: kafka_net's as they are, and the Spark
    job's (spark_jobs/ in the checkout) under kafka_net/spark_jobs/."""
    inside = {"kafka_net": "kafka_net", "spark_jobs": "kafka_net/spark_jobs"}
    return {f"{inside[d]}/{p.relative_to(REPO / d)}" for d in inside
            for p in (REPO / d).rglob("*.py") if "__pycache__" not in p.parts}


def _du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """The sdist, and the wheel built from it (build's default, as pip builds a
    wheel from an sdist it downloads): what the sdist leaves out, the wheel lacks."""
    out = tmp_path_factory.mktemp("dist")
    _run(sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(REPO),
         cwd=out)
    return out


@pytest.fixture(scope="module")
def clean_venv(dist, tmp_path_factory) -> Path:
    venv = tmp_path_factory.mktemp("venv") / "v"
    env = _clean_env()
    _run(sys.executable, "-m", "venv", str(venv), cwd=venv.parent, env=env)
    before = _du(venv)
    wheel = next(dist.glob("kafka_net-*.whl"))
    _run(str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", str(wheel),
         cwd=venv.parent, env=env)
    venv.joinpath("installed-bytes").write_text(str(_du(venv) - before))
    return venv


def test_the_wheel_holds_every_module(dist):
    wheel = next(dist.glob("kafka_net-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = _source_modules() - names
    assert not missing, f"the wheel leaves out {sorted(missing)}"


def test_the_sdist_holds_every_module_and_the_project_files(dist):
    sdist = next(dist.glob("kafka[-_]net-*.tar.gz"))
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    checkout = {str(p.relative_to(REPO)) for d in ("kafka_net", "spark_jobs")
                for p in (REPO / d).rglob("*.py") if "__pycache__" not in p.parts}
    missing = (checkout | {"setup.cfg", "setup.py", "pyproject.toml", "README.md", "LICENSE"}
               ) - names
    assert not missing, f"the sdist leaves out {sorted(missing)}"


def test_only_kafka_net_and_its_command_are_installed(clean_venv):
    """Nothing but the kafka_net package (the Spark job inside it) and the kafka-net
    console script: no generic top-level package such as spark_jobs."""
    record = next(clean_venv.glob("lib/python*/site-packages/kafka_net-*.dist-info/RECORD"))
    tops = {line.split(",", 1)[0].split("/", 1)[0] for line in record.read_text().splitlines()}
    tops = {t for t in tops if not t.endswith(".dist-info")}
    assert tops == {"kafka_net", ".."}, tops   # "..": the script in bin/
    scripts = {line.split(",", 1)[0] for line in record.read_text().splitlines()
               if line.startswith("..")}
    assert [s.rsplit("/", 1)[-1] for s in scripts] == ["kafka-net"], scripts
    site = clean_venv.glob("lib/python*/site-packages")
    assert not [p for d in site for p in d.glob("spark_jobs*")]


def test_the_broker_alone_installs_small_and_without_pyspark(clean_venv):
    installed = int(clean_venv.joinpath("installed-bytes").read_text())
    assert installed < MAX_INSTALL_BYTES, f"pip install kafka-net took {installed} bytes"
    assert not list(clean_venv.glob("lib/python*/site-packages/pyspark"))


def test_the_installed_command_serves_a_real_client(clean_venv, tmp_path):
    exe = clean_venv / "bin" / "kafka-net"
    version = _run(str(exe), "--version", cwd=tmp_path, env=_clean_env())
    assert re.search(r"\d+\.\d+", version)
    proc = subprocess.Popen(
        [str(exe), "serve", "--override", "listeners=PLAINTEXT://127.0.0.1:0",
         "--override", "group.initial.rebalance.delay.ms=0",
         "--override", f"log.dirs={tmp_path / 'logs'}"],
        cwd=tmp_path, env=_clean_env(), stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        port = _wait_for_port(proc)
        _produce_and_consume(port)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0


def _wait_for_port(proc: subprocess.Popen) -> int:
    lines = []
    for line in proc.stderr:
        lines.append(line)
        m = STARTED.search(line)
        if m:
            # Keep reading, so that a full pipe never blocks the broker's logging.
            threading.Thread(target=proc.stderr.read, daemon=True).start()
            return int(m["port"])
    raise AssertionError("the installed broker did not start:\n" + "".join(lines))


def _produce_and_consume(port: int) -> None:
    from kafka import KafkaConsumer, KafkaProducer

    server = f"127.0.0.1:{port}"
    producer = KafkaProducer(bootstrap_servers=server, request_timeout_ms=10_000)
    for i in range(10):
        producer.send("wheel-test", f"m{i}".encode()).get(timeout=TIMEOUT)
    producer.close()
    consumer = KafkaConsumer("wheel-test", bootstrap_servers=server,
                             auto_offset_reset="earliest", consumer_timeout_ms=10_000)
    values = [record.value for record in consumer]
    consumer.close()
    assert values == [f"m{i}".encode() for i in range(10)]




def _extensions(names) -> set[str]:
    """The compiled fast paths among a wheel's (or install's) file names."""
    return {m for m in compiled_paths() for n in names
            if re.fullmatch(re.escape(m) + r"\.[^/]+\.so", n)}


def test_the_wheel_ships_every_compiled_fast_path(dist):
    wheel = next(dist.glob("kafka_net-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert _extensions(names) == set(compiled_paths())
    assert not [n for n in names if n.endswith((".pyx", ".c"))], "sources in the wheel"


def test_the_installed_package_imports_its_compiled_fast_paths(clean_venv, tmp_path):
    """From the wheel's install, in a folder of its own: no source tree on the path.
    (The broker alone installs no numpy: the two that need none are imported.)"""
    code = ("import kafka_net.protocol._walk as w, kafka_net.protocol.records._batches as b; "
            "print(w.__file__); print(b.__file__)")
    where = _run(str(clean_venv / "bin" / "python"), "-c", code, cwd=tmp_path,
                 env=_clean_env()).split()
    assert len(where) == 2 and all(str(clean_venv) in w and w.endswith(".so") for w in where)
    site = next(clean_venv.glob("lib/python*/site-packages"))
    installed = [str(p.relative_to(site)) for p in site.rglob("_*.so")]
    assert _extensions(installed) == set(compiled_paths())


def test_the_sdist_ships_the_sources_and_builds_the_compiled_fast_paths(dist):
    """The sdist holds the .pyx sources and no build outputs (no generated C, no
    .so); the wheel was built from it (the dist fixture) with every extension."""
    sdist = next(dist.glob("kafka[-_]net-*.tar.gz"))
    with tarfile.open(sdist) as tar:
        names = tar.getnames()
    assert not [n for n in names if n.endswith((".c", ".so"))], "build outputs in the sdist"
    assert {n.split("/", 1)[1] for n in names if n.endswith(".pyx")} == \
        {m + ".pyx" for m in compiled_paths()}
    wheel = next(dist.glob("kafka_net-*.whl"))
    assert _extensions(zipfile.ZipFile(wheel).namelist()) == set(compiled_paths())
