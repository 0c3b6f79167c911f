#!/bin/sh
# matmul-study.sh: the smoke run of bench/matmul-study.sh as a test: two real gridrpcd on
# loopback, the distributed multiply stateless and stateful (C against a local dgemm,
# the bytes counted against the calls), the Linpack chain three ways (residuals) and the
# EP sweep as async calls and as a transaction (NPB sums); no time is judged. Judged by
# its exit status.
exec bash "$top_srcdir/bench/matmul-study.sh" --smoke
