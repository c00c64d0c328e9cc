#!/bin/sh
# A stand-in for flashc-ptxsim (FILE.ptx FLAGS...) with known failures, for
# fuzz.test: the checksum of the PTX file decides what happens.
sum=$(cksum < "$1" | cut -d' ' -f1)
case $((sum % 9)) in
  0) kill -SEGV $$ ;;
  1) [ $((sum % 2)) -eq 0 ] && sleep 30 ;;
  2) echo "terminate called after throwing an instance of 'std::bad_alloc'" >&2
     kill -ABRT $$ ;;
  3) echo "flashc-ptxsim: trap: one line" >&2
     echo "flashc-ptxsim: and another" >&2; exit 3 ;;
  4) echo "flashc-ptxsim: kernel 'k' takes 23 parameters, 22 given" >&2
     echo "usage: flashc-ptxsim FILE.ptx --kernel NAME ..." >&2
     echo "  exit status: 0 clean, 3 out-of-bounds/race/deadlock/trap, 1 other errors" >&2
     exit 1 ;;
  5) echo "flashc-ptxsim: out-of-bounds: a load" >&2; exit 3 ;;
  6) exit 2 ;;
esac
exit 0
