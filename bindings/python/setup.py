"""Build of the zarrshard Python package: the Rust library (`cargo build --release --lib` in
the repository this directory belongs to, or a prebuilt one named by ZARRSHARD_LIB) is copied
into the package as libzarrshard.so.0, and the cffi module `zarrshard._native` is compiled
against it (zarrshard_build.py)."""

import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
LINK_DIR = os.path.join(HERE, "build", "lib-zarrshard")
os.environ.setdefault("ZARRSHARD_LINK_DIR", LINK_DIR)


def built_library():
    """The path of libzarrshard.so: ZARRSHARD_LIB, or a release build of the repository."""
    given = os.environ.get("ZARRSHARD_LIB")
    if given:
        if not os.path.isfile(given):
            raise SystemExit(f"ZARRSHARD_LIB={given}: no such file")
        return given
    if shutil.which("cargo") is None:
        raise SystemExit(
            "building zarrshard needs the Rust toolchain (cargo; https://rustup.rs), "
            "or ZARRSHARD_LIB=/path/to/libzarrshard.so of a build of the library"
        )
    # ZARRSHARD_CARGO_FEATURES: extra cargo features (the test script passes those its other
    # stages build with, so cargo reuses that build).
    features = os.environ.get("ZARRSHARD_CARGO_FEATURES")
    extra = ["--features", features] if features else []
    subprocess.run(["cargo", "build", "--release", "--lib", *extra], cwd=REPO, check=True)
    return os.path.join(REPO, "target", "release", "libzarrshard.so")


class BuildWithLibrary(build_ext):
    """Puts libzarrshard.so.0 where the cffi module links against it and into the package."""

    def run(self):
        lib = built_library()
        os.makedirs(LINK_DIR, exist_ok=True)
        shutil.copyfile(lib, os.path.join(LINK_DIR, "libzarrshard.so.0"))
        package_dir = os.path.join(self.build_lib, "zarrshard")
        os.makedirs(package_dir, exist_ok=True)
        shutil.copyfile(lib, os.path.join(package_dir, "libzarrshard.so.0"))
        if self.inplace:
            shutil.copyfile(lib, os.path.join(HERE, "src", "zarrshard", "libzarrshard.so.0"))
        super().run()


setup(
    cffi_modules=["zarrshard_build.py:ffibuilder"],
    cmdclass={"build_ext": BuildWithLibrary},
)
