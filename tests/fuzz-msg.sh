#!/bin/sh
# fuzz-msg.sh: a short run of the message decoder fuzz target (msg_fuzz.c) over its
# seed corpus, in every build (the sanitizer tier catches what it finds). TAP output.
out=$("$top_builddir/fuzz-msg" "$top_srcdir/tests/fuzz/corpus/msg" 2>&1)
rc=$?
echo "$out" | sed 's/^/# /'
echo "1..1"
if [ $rc -eq 0 ]; then echo "ok 1 message decoders survive the fuzz run"; else echo "not ok 1 message decoders (exit status $rc)"; fi
