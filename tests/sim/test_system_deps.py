"""sim/system-deps.sh, the set-up step `make test`, `make regress` and `.ci/run` share, on a
simulated machine without Icarus Verilog.

The machine is simulated with a PATH made of links to every tool of this one except
``iverilog`` and ``vvp`` (and, for the user without root, ``sudo``), a stub ``id`` that
says who runs, and a stub installer (MACDMA_APT_GET) that records its arguments and
"installs" a package by putting a stub tool of that name on the PATH. Nothing is installed
on the real machine.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from macdma.sim.cosim.verilog import ROOT

SCRIPT = ROOT / "sim" / "system-deps.sh"
RISCV_CC = "riscv64-unknown-elf-gcc"
HIDDEN = {"iverilog", "vvp", "sudo", "id", "chromium", RISCV_CC}
# The tools each Debian package provides, as far as the script looks for them. picolibc
# provides no tool: the script asks the cross compiler whether it finds picolibc, and the
# stub compiler answers yes once the package's marker file is there.
PROVIDES = {
    "iverilog": ("iverilog", "vvp"),
    "chromium": ("chromium",),
    "gcc-riscv64-unknown-elf": (RISCV_CC,),
    "picolibc-riscv64-unknown-elf": (".picolibc",),
}


def _executable(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


class Machine:
    """A PATH without Icarus, a stub installer and a chosen user (root or not)."""

    def __init__(self, root_dir: Path, *, uid: int, sudo: str | None = None):
        self.bin = root_dir / "bin"
        self.bin.mkdir()
        self.log = root_dir / "apt-get.log"
        for directory in os.environ["PATH"].split(os.pathsep):
            if not directory or not Path(directory).is_dir():
                continue
            for tool in Path(directory).iterdir():
                link = self.bin / tool.name
                if tool.name in HIDDEN or link.exists() or not os.access(tool, os.X_OK):
                    continue
                link.symlink_to(tool)
        _executable(self.bin / "id", f'#!/bin/sh\n[ "$1" = -u ] && echo {uid}\n')
        if sudo == "works":  # runs the command, ignoring -n
            _executable(self.bin / "sudo", '#!/bin/sh\n[ "$1" = -n ] && shift\nexec "$@"\n')
        elif sudo == "needs-password":
            _executable(self.bin / "sudo", "#!/bin/sh\necho 'sudo: a password is required' >&2\n")
        self.installer = root_dir / "apt-get"
        stubs = "\n".join(
            f"    {package}) for t in {' '.join(tools)}; do "
            f"printf '#!/bin/sh\\n' > {self.bin}/$t; chmod +x {self.bin}/$t; done ;;"
            for package, tools in PROVIDES.items()
            if package != "gcc-riscv64-unknown-elf"
        )
        stubs += (
            f"\n    gcc-riscv64-unknown-elf) printf '#!/bin/sh\\n"
            f"test -e {self.bin}/.picolibc\\n' > {self.bin}/{RISCV_CC}; "
            f"chmod +x {self.bin}/{RISCV_CC} ;;"
        )
        _executable(
            self.installer,
            f'#!/bin/sh\necho "$@" >> {self.log}\n'
            f'[ "$1" = install ] || exit 0\nfor package in "$@"; do\n  case "$package" in\n'
            f"{stubs}\n  esac\ndone\n",
        )

    def env(self) -> dict[str, str]:
        env = {key: value for key, value in os.environ.items() if not key.startswith("MAKE")}
        return {**env, "PATH": str(self.bin), "MACDMA_APT_GET": str(self.installer)}

    def run(self, *command: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            command,
            cwd=ROOT,
            env=self.env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )

    def installer_calls(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []


@pytest.mark.parametrize("sudo", [None, "works"])
def test_missing_icarus_is_installed_as_root_or_through_sudo(tmp_path, sudo):
    machine = Machine(tmp_path, uid=0 if sudo is None else 1000, sudo=sudo)
    assert machine.run("sh", "-c", "command -v iverilog").returncode != 0, "iverilog not hidden"

    first = machine.run(str(SCRIPT), "venv", "sim")
    assert first.returncode == 0, first.stderr
    assert machine.installer_calls() == [
        "update -qq",
        "install -y -qq --no-install-recommends iverilog",
    ]
    assert "installing system packages: iverilog" in first.stderr
    assert (machine.bin / "iverilog").is_file() and (machine.bin / "vvp").is_file()

    again = machine.run(str(SCRIPT), "venv", "sim")
    assert (again.returncode, again.stdout, again.stderr) == (0, "", "")
    assert len(machine.installer_calls()) == 2, "nothing missing must install nothing"


@pytest.mark.parametrize("sudo", [None, "needs-password"])
def test_without_root_it_stops_with_one_message_naming_the_command(tmp_path, sudo):
    machine = Machine(tmp_path, uid=1000, sudo=sudo)
    result = machine.run(str(SCRIPT), "venv", "sim")
    assert result.returncode == 1
    message = result.stderr.strip().splitlines()
    assert message[-1] == (
        "macdma: missing system packages: iverilog. Run: sudo apt-get install -y iverilog"
    )
    # No sudo: the installer is never tried, and that one line is all that is printed.
    if sudo is None:
        assert machine.installer_calls() == [] and len(message) == 1
    assert not (machine.bin / "iverilog").exists()


def test_make_test_stops_before_running_anything(tmp_path):
    machine = Machine(tmp_path, uid=1000)
    result = machine.run("make", "--no-print-directory", "test")
    assert result.returncode != 0
    # make deps asks for the report check's browser and the firmware's cross compiler too.
    packages = "chromium gcc-riscv64-unknown-elf iverilog picolibc-riscv64-unknown-elf"
    assert f"Run: sudo apt-get install -y {packages}" in result.stderr
    assert "pytest" not in result.stdout + result.stderr, "the suite started anyway"


def test_chromium_is_installed_only_when_asked_for(tmp_path):
    machine = Machine(tmp_path, uid=0)
    (machine.bin / "iverilog").symlink_to("/bin/true")
    (machine.bin / "vvp").symlink_to("/bin/true")
    assert machine.run(str(SCRIPT)).returncode == 0
    assert machine.installer_calls() == [], "the default groups must not install chromium"
    result = machine.run(str(SCRIPT), "chromium")
    assert result.returncode == 0, result.stderr
    assert machine.installer_calls()[-1] == "install -y -qq --no-install-recommends chromium"
    assert (machine.bin / "chromium").is_file()


def test_the_riscv_group_installs_the_cross_compiler_and_picolibc(tmp_path):
    machine = Machine(tmp_path, uid=0)
    (machine.bin / "iverilog").symlink_to("/bin/true")
    (machine.bin / "vvp").symlink_to("/bin/true")
    assert machine.run(str(SCRIPT)).returncode == 0
    assert machine.installer_calls() == [], "the default groups must not install the compiler"
    result = machine.run(str(SCRIPT), "riscv")
    assert result.returncode == 0, result.stderr
    assert machine.installer_calls()[-1] == (
        "install -y -qq --no-install-recommends "
        "gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf"
    )
    again = machine.run(str(SCRIPT), "riscv")
    assert (again.returncode, again.stderr) == (0, "")


def test_a_compiler_without_picolibc_asks_for_picolibc_alone(tmp_path):
    machine = Machine(tmp_path, uid=1000)
    # A cross compiler that finds no picolibc: the marker file is missing.
    compiler = machine.bin / RISCV_CC
    compiler.write_text(f"#!/bin/sh\ntest -e {machine.bin}/.picolibc\n")
    compiler.chmod(0o755)
    result = machine.run(str(SCRIPT), "riscv")
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "macdma: missing system packages: picolibc-riscv64-unknown-elf. "
        "Run: sudo apt-get install -y picolibc-riscv64-unknown-elf"
    )


def test_an_unknown_group_is_named(tmp_path):
    machine = Machine(tmp_path, uid=0)
    result = machine.run(str(SCRIPT), "browser")
    assert result.returncode == 2
    assert "unknown group 'browser'; choose from: venv sim chromium riscv" in result.stderr
