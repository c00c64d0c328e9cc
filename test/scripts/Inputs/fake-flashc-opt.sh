#!/bin/sh
# A stand-in for flashc-opt with known failures, for fuzz.test: `--help`
# comes from the real tool (in $REAL_FLASHC_OPT); otherwise the pass named
# on the command line decides what happens.
case "$*" in
  *--help*) exec "$REAL_FLASHC_OPT" "$@" ;;
  *--flash-tile*) kill -SEGV $$ ;;
  *--flash-split-kv*) sleep 30 ;;
  *--flash-causal-skip*) echo "terminate called after throwing an instance of 'std::bad_alloc'" >&2; kill -ABRT $$ ;;
  *--flash-online-softmax*) echo "error: a clean diagnostic" >&2; exit 1 ;;
  *) exit 0 ;;
esac
