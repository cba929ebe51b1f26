#!/bin/sh
# Fails when libgpreempt exports anything but the list, or misses one of it:
# a new public function must be added to gpreempt.h, libgpreempt.sym and the
# list together; anything else is a leaked internal.
# usage: check-symbols.sh NM LIBRARY EXPECTED-LIST
set -eu
nm=$1 lib=$2 expected=$3
actual=$("$nm" -D --defined-only "$lib" | awk '$2 == "T" || $2 == "D" || $2 == "B" { sub(/@.*/, "", $3); print $3 }' | sort)
if ! printf '%s\n' "$actual" | diff -u "$expected" -; then
        echo "exported symbols of $lib differ from $expected (- expected, + exported)" >&2
        exit 1
fi
# Every export carries the version node.
if "$nm" -D --defined-only "$lib" | awk '$2 == "T" && $3 !~ /@@LIBGPREEMPT_0\.1$/ { bad = 1 } END { exit !bad }'; then
        echo "a symbol of $lib lacks the LIBGPREEMPT_0.1 version" >&2
        exit 1
fi
