#!/bin/sh
# `cmake --install` into a temporary prefix gives a runnable ddlsim, its man page, its bash completion and (when
# the module was built) an importable Python module. Usage: check_install.sh BUILD_DIR SOURCE_DIR
set -eu
build=$1
src=$2
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
"$prefix/bin/ddlsim" --version
"$prefix/bin/ddlsim" check "$src/scenarios/examples/resnet50_ring_16xV100.json"
test -s "$prefix/share/man/man1/ddlsim.1"
grep -q "complete -F _ddlsim ddlsim" "$prefix/share/bash-completion/completions/ddlsim"
if [ -d "$build/python/ddlsim" ]; then
    site=$(find "$prefix/lib" -maxdepth 2 -name dist-packages -type d)
    PYTHONPATH=$site /usr/bin/python3 -c "import ddlsim, sys; assert ddlsim.__file__.startswith('$prefix'), ddlsim.__file__; print('import ddlsim from', ddlsim.__file__)"
fi
echo "install: 1 passed, 0 failed"
