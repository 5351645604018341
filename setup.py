"""Packaging beyond what setup.cfg can say: the Spark job ships inside kafka_net,
and one compiled module.

setup.cfg holds the metadata and dependencies.  The repository keeps the
conformance job in its own top-level folder, ``spark_jobs/``, but a wheel
installs it as ``kafka_net.spark_jobs`` (a ``package_dir`` mapping), so that
kafka-net puts nothing but ``kafka_net`` into site-packages.  setup.cfg's
``find:`` cannot list a package whose folder is mapped, hence this file.

``kafka_net.capture._pcap_loop`` is the pcap record loop in Cython (issue 29):
built from its ``.pyx`` by Cython (pyproject.toml's build requirements) and
the system C compiler, for the editable install, the wheel and the sdist alike.
"""

from Cython.Build import cythonize
from setuptools import Extension, find_packages, setup

setup(
    packages=find_packages(include=["kafka_net", "kafka_net.*"]) + ["kafka_net.spark_jobs"],
    package_dir={"kafka_net.spark_jobs": "spark_jobs"},
    ext_modules=cythonize(
        [Extension("kafka_net.capture._pcap_loop", ["kafka_net/capture/_pcap_loop.pyx"])],
        compiler_directives={"language_level": 3}),
)
