#!/usr/bin/env bash
# idlc-scale.sh: how long idlc takes on a large IDL file (default 1,000 functions of
# every kind: Calls, inline bodies, sub-ranges, cost expressions), against the C
# preprocessor it runs first and the C compiler that compiles its output, all in the
# same run. Usage: bench/idlc-scale.sh [FUNCTIONS] [REPS]   (after scripts/setup.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000}
reps=${2:-7}
idlc=${IDLC:-build/idlc/idlc}
[ -x "$idlc" ] || { echo "bench: $idlc not built: run scripts/setup.sh first" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

{
  echo "Module big;"
  echo "Globals { #include <math.h> }"
  for ((i = 0; i < n; i++)); do
    case $((i % 4)) in
    0) echo "Define mm$i(IN int n, IN double A[n][n], IN double B[n][n], OUT double C[n][n])"
       echo "\"matrix multiply $i\" Complexity 2*n^3 Calls \"C\" mm_impl$i(n, A, B, C);" ;;
    1) echo "Define win$i(IN int n, IN int lo, IN int hi, INOUT double x[n : lo, hi], OUT double *s)"
       echo "\"window $i\" CalcOrder (hi - lo) * 2"
       echo "{ int k; *s = 0; for (k = lo; k < hi; k++) *s += x[k]; }" ;;
    2) echo "Define ex$i(IN int a, IN long b, IN double x[max(a, b) + 1][a * b % 7 + 1], WORK double w[a])"
       echo "{ w[0] = x[0]; }" ;;
    3) echo "Define fo$i(IN int n, INOUT double a[n][n], OUT int ipiv[n], OUT int *info)"
       echo "Calls \"Fortran\" dgetrf_$i(n, n, a, n, ipiv, info);" ;;
    esac
  done
} >"$work/big.idl"

# Median, min and max of a list of seconds.
stats() { sort -g | awk '{v[NR]=$1} END {printf "%.4f %.4f %.4f\n", v[int((NR+1)/2)], v[1], v[NR]}'; }
timeit() { local s e; s=$(date +%s.%N); "$@" >/dev/null 2>&1; e=$(date +%s.%N); echo "$e - $s" | bc -l; }

idlc_t=() cpp_t=()
for ((r = 0; r < reps; r++)); do
  cpp_t+=("$(timeit cpp -x c -std=c11 "$work/big.idl")")
  idlc_t+=("$(timeit "$idlc" -o "$work" "$work/big.idl")")
  rm -f "$work"/big_stub.c "$work"/big.gdesc "$work"/big_client.h
done
"$idlc" -o "$work" "$work/big.idl"
cc_t=$(timeit cc -std=gnu11 -Iinclude -c "$work/big_stub.c" -o "$work/big.o")

read -r im imin imax < <(printf '%s\n' "${idlc_t[@]}" | stats)
read -r cm cmin cmax < <(printf '%s\n' "${cpp_t[@]}" | stats)
printf '\nidlc on %d functions (%d lines of IDL), %d runs\n\n' "$n" "$(wc -l <"$work/big.idl")" "$reps"
printf '| %-32s | %9s | %9s | %9s |\n' "step" "median s" "min s" "max s"
printf '|%s|%s|%s|%s|\n' "----------------------------------" "-----------" "-----------" "-----------"
printf '| %-32s | %9s | %9s | %9s |\n' "cpp alone (baseline)" "$cm" "$cmin" "$cmax"
printf '| %-32s | %9s | %9s | %9s |\n' "idlc (cpp, parse, check, emit)" "$im" "$imin" "$imax"
printf '| %-32s | %9.4f | %9s | %9s |\n' "cc -c of the generated stub" "$cc_t" "" ""
printf '\nidlc / cpp = %.1fx; outputs: stub %s bytes, descriptors %s bytes\n' \
  "$(echo "$im / $cm" | bc -l)" "$(stat -c %s "$work/big_stub.c")" "$(stat -c %s "$work/big.gdesc")"
