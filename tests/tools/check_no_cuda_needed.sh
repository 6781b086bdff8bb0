#!/bin/sh
# usage: tests/tools/check_no_cuda_needed.sh EXECUTABLE
# Fails when EXECUTABLE has a NEEDED entry for libcudart or libcublas: the CUDA backend is
# libddlsim_cuda.so, opened with dlopen only for --backend cuda. Exit 77 (skipped) without readelf / objdump.
exe=$1
if command -v readelf > /dev/null 2>&1; then
    dynamic=$(readelf -d "$exe") || exit 1
elif command -v objdump > /dev/null 2>&1; then
    dynamic=$(objdump -p "$exe") || exit 1
else
    echo "skipped: neither readelf nor objdump found"
    exit 77
fi
echo "$dynamic" | grep -q NEEDED || { echo "$exe: no dynamic section read"; exit 1; }
if echo "$dynamic" | grep NEEDED | grep -E "lib(cudart|cublas)"; then
    echo "$exe loads the CUDA libraries at start-up"
    exit 1
fi
echo "$exe: no NEEDED entry for libcudart or libcublas"
