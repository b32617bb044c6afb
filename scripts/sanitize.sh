#!/usr/bin/env bash
# `make sanitize`: the native scanner built with AddressSanitizer and UndefinedBehaviorSanitizer,
# then the parser tests (the per-format scanner tests, tests/test_scan_*.py, too) and a seeded fuzz
# corpus (scripts/fuzz_scan.py) run under it. The scanner reads untrusted uploads: any report aborts
# with its stack. The installed build is put back after.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
CC=${CC:-gcc}
SO=$($PY -c 'import sysconfig; print("ingest/parsers/_scan" + sysconfig.get_config_var("EXT_SUFFIX"))')
INC=$($PY -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
# Renamed, never written over: a process that has the installed build loaded keeps its pages.
[ -f "$SO" ] && cp -p "$SO" "$SO.installed"
restore() { rm -f "$SO.sanitized"; if [ -f "$SO.installed" ]; then mv -f "$SO.installed" "$SO"; else rm -f "$SO"; fi; }
trap restore EXIT
$CC -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -O1 -g -fno-omit-frame-pointer \
  -fsanitize=address,undefined -fno-sanitize-recover=all -fPIC -shared -I"$INC" \
  ingest/parsers/_scan.c -o "$SO.sanitized"
nm -D "$SO.sanitized" | grep __asan_init >/dev/null || { echo "sanitize: the build is not instrumented" >&2; exit 1; }
mv -f "$SO.sanitized" "$SO"
# Python itself is not instrumented: the runtimes are preloaded, and its arenas' leaks not counted.
export LD_PRELOAD="$($CC -print-file-name=libasan.so) $($CC -print-file-name=libubsan.so)"
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export PYTHONMALLOC=malloc  # every Python object through malloc: ASan sees the str buffers the scanner reads
$PY -c 'from ingest.parsers import native; assert native.available() is None, native.available()'
$PY -m pytest -q -p no:randomly -p no:cacheprovider tests/test_parsers_native.py tests/test_parsers_engine.py \
  tests/test_parsers_text.py tests/test_scan_*.py ${SANITIZE_PYTEST_ARGS:-}
$PY scripts/fuzz_scan.py --inputs "${FUZZ_INPUTS:-400}"
