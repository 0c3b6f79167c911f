#!/bin/sh
# matmul-study.sh: the smoke run of bench/matmul-study.sh as a test: two real gridrpcd on
# loopback, the distributed multiply stateless and stateful (C against a local dgemm,
# the library's wire bytes against the calls: B must not travel with stateful blocks),
# the Linpack chain three ways (residuals; kept and in a transaction the factors must not
# cross the client's connections again) and the EP sweep as async calls and as a
# transaction (NPB sums); no time is judged. Judged by its exit status.
exec bash "$top_srcdir/bench/matmul-study.sh" --smoke
