#!/bin/sh
# symbols.sh: libgridrpc.so exports our public names only (grid_, grpc_, gridrpc_): the
# grpc_ prefix is also Google gRPC's, so internals (gox_, grc_, grm_, grw_, grd_, gr_)
# must stay hidden, and every OGF GridRPC function must be there.
. "$top_srcdir/tests/lib.sh"
lib=$top_builddir/.libs/libgridrpc.so
if [ ! -f "$lib" ]; then echo "1..0 # SKIP no shared libgridrpc (built with --disable-shared)"; rm -rf "$T_TMP"; exit 0; fi
nm -D --defined-only "$lib" | awk 'NF >= 3 { print $3 }' | sed 's/@.*//' | sort -u >"$T_TMP/names"
if [ -s "$T_TMP/names" ]; then ok "nm -D lists the exported names"; else fail "nm -D $lib gave nothing"; fi
grep -Ev '^(grid_|grpc_|gridrpc_)' "$T_TMP/names" | grep -Ev '^(_init|_fini|_edata|_end|__bss_start)$' >"$T_TMP/extra"
if [ ! -s "$T_TMP/extra" ]; then ok "only grid_, grpc_ and gridrpc_ names are exported"; else fail "names exported that are not ours to export"; diag <"$T_TMP/extra"; fi
missing=
for s in grpc_initialize grpc_finalize grpc_function_handle_default grpc_function_handle_init \
  grpc_function_handle_destruct grpc_get_handle grpc_call grpc_call_async grpc_call_arg_stack \
  grpc_call_arg_stack_async grpc_call_argstack grpc_call_argstack_async grpc_arg_stack_new \
  grpc_arg_stack_push_arg grpc_arg_stack_pop_arg grpc_arg_stack_destruct grpc_stack_create grpc_stack_push \
  grpc_stack_pop grpc_stack_destruct grpc_probe grpc_probe_or grpc_cancel grpc_cancel_all grpc_wait \
  grpc_wait_and grpc_wait_or grpc_wait_all grpc_wait_any grpc_get_error grpc_get_failed_sessionid \
  grpc_error_string grid_call_counted_np grid_wait gridrpc_version; do
  grep -qx "$s" "$T_TMP/names" || missing="$missing $s"
done
if [ -z "$missing" ]; then ok "every OGF GridRPC function is exported"; else fail "not exported:$missing"; fi
finish
