"""Packaging beyond what setup.cfg can say: the Spark job ships inside kafka_net,
and the compiled fast paths of the conformance job.

setup.cfg holds the metadata and dependencies.  The repository keeps the
conformance job in its own top-level folder, ``spark_jobs/``, but a wheel
installs it as ``kafka_net.spark_jobs`` (a ``package_dir`` mapping), so that
kafka-net puts nothing but ``kafka_net`` into site-packages.  setup.cfg's
``find:`` cannot list a package whose folder is mapped, hence this file.

Every ``kafka_net/**/_*.pyx`` is a compiled fast path of the conformance job
(issue 29): built from its source by Cython (pyproject.toml's build
requirements) and the system C compiler, for the editable install, the wheel
and the sdist alike.  Each sits beside a Python reference it must agree with,
which ``KAFKA_NET_READABLE=1`` runs instead (``make test-readable``).
A fast path keeps no module state, so it is declared free-threading compatible.
"""

from pathlib import Path

from Cython.Build import cythonize
from setuptools import Extension, find_packages, setup


def _extensions() -> list[Extension]:
    # -g0: no debug information (Python's own flags ask for it), which made each
    # module about 1.4 MB and the broker-only install 21 MB instead of under 15.
    here = Path(__file__).parent
    return [Extension(".".join(p.with_suffix("").parts), [str(p)], extra_compile_args=["-g0"])
            for p in sorted(pyx.relative_to(here)
                            for pyx in (here / "kafka_net").rglob("_*.pyx"))]


setup(
    packages=find_packages(include=["kafka_net", "kafka_net.*"]) + ["kafka_net.spark_jobs"],
    package_dir={"kafka_net.spark_jobs": "spark_jobs"},
    # freethreading_compatible: the fast paths are pure functions over the bytes
    # they are given (no module state), so on free-threaded CPython (make test-ft)
    # importing them must not turn the GIL back on.
    ext_modules=cythonize(_extensions(), compiler_directives={
        "language_level": 3, "freethreading_compatible": True}),
)
