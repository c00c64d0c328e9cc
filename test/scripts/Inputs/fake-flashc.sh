#!/bin/sh
# A stand-in for flashc, for fuzz.test: `run` fails its numerical check
# (exit 2), `compile` fails with two lines, `cost` with one proper line.
case "$1" in
  run) exit 2 ;;
  compile) printf 'flashc: error: stage failed:\nmore detail\n' >&2; exit 1 ;;
  cost) echo "flashc: error: a clean one-line error" >&2; exit 1 ;;
  *) exit 0 ;;
esac
