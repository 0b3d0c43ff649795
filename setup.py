"""Map the top-level folders hdl/, sim/ and firmware/ into the `macdma` namespace."""

from setuptools import find_packages, setup

ROOTS = ("hdl", "sim", "firmware")

package_dir = {f"macdma.{root}": root for root in ROOTS}
packages = [
    f"macdma.{root}" + (f".{sub}" if sub else "")
    for root in ROOTS
    for sub in ["", *find_packages(where=root)]
]

setup(package_dir=package_dir, packages=packages)
