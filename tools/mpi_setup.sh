#!/bin/sh
# tools/mpi_setup.sh — Open MPI for `make mpi`: Debian's libopenmpi-dev (and
# openmpi-bin, for mpirun), installed with apt-get when missing and root;
# otherwise the exact command, and exit status 1.
#   sh tools/mpi_setup.sh [--quiet-fail]   (--quiet-fail: exit 1 without the message)
command -v mpicc >/dev/null 2>&1 && command -v mpirun >/dev/null 2>&1 && exit 0
PKGS="libopenmpi-dev openmpi-bin"
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "mpi_setup: installing $PKGS with apt-get" >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $PKGS; } >&2 &&
        command -v mpicc >/dev/null 2>&1 && exit 0
    echo "mpi_setup: apt-get install $PKGS failed" >&2
    exit 1
fi
[ "${1:-}" = --quiet-fail ] ||
    echo "mpi_setup: Open MPI is missing; install it with: sudo apt-get install -y $PKGS" >&2
exit 1
