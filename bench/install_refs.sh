#!/bin/sh
# bench/install_refs.sh — the references the benches run, installed from
# Debian when missing and root: the GEMM libraries bench/gemm.c loads with
# dlopen (OpenBLAS, oneDNN, BLIS), and PyTorch and onnx, which
# tools/bench_torch.py, tools/export_onnx.py and tools/quantize_onnx_int8.py
# import (bench/compare.sh's PyTorch columns and its ONNX Runtime models).
# Never fails: a reference that stays missing is reported and skipped by the
# bench. Called by `make bench-refs` and by bench/compare.sh.
PKGS="libopenblas-dev libdnnl-dev libblis-dev python3-torch python3-onnx"
have() { ldconfig -p 2>/dev/null | grep -q "$1"; }
missing=""
have libopenblas.so.0 || missing="$missing libopenblas-dev"
{ have libdnnl.so.3 || have libdnnl.so.2; } && have 'libdnnl.so ' || missing="$missing libdnnl-dev"
have libblis.so.4 || missing="$missing libblis-dev"
/usr/bin/python3 -c 'import torch' 2>/dev/null || missing="$missing python3-torch"
/usr/bin/python3 -c 'import onnx' 2>/dev/null || missing="$missing python3-onnx"
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "install_refs: installing$missing with apt-get" >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing; } >&2 \
        || echo "install_refs: apt-get install$missing failed; the bench skips what is missing" >&2
else
    echo "install_refs: missing$missing; install with: sudo apt-get install -y $PKGS" >&2
fi
exit 0
