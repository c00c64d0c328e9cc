#!/bin/sh
# A stand-in for FlashcBundleLoadTarget (DIR [CALL...]) with known failures,
# for fuzz.test: the checksum of the manifest (when it is a regular file)
# and of the calls decides what happens.
dir=$1
shift
sum=$({ if [ -f "$dir/manifest.json" ]; then head -c 100000 "$dir/manifest.json"; fi
        echo "$*"; } | cksum | cut -d' ' -f1)
case $((sum % 9)) in
  0) kill -SEGV $$ ;;
  1) [ $((sum % 2)) -eq 0 ] && sleep 30 ;;
  2) echo "error: open: status 6: out of memory" >&2 ;;
  3) echo "error: open: status 5: " >&2
     echo "violation: open: status 5 with an empty message" >&2; exit 2 ;;
  4) echo "a stray line from the library" >&2 ;;
  5) echo "error: prefill: status 2: no kernel for the call" >&2 ;;
esac
exit 0
