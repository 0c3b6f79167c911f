#!/bin/sh
# cli-completion.sh: gridrpc completion bash|zsh. The bash script is sourced in a bash
# and its function run with COMP_WORDS/COMP_CWORD set as bash sets them: commands in
# the first position, global options anywhere, a command's own options after it only,
# option values left alone or completed as files, file names for keygen. Both scripts
# hold every option and command that gridrpc --help names (so an option the parser
# gained and the scripts lacked fails here), the zsh one passes zsh -n (skipped without
# zsh), and a shell it does not know is refused with the ones it does.
. "$top_srcdir/tests/lib.sh"
CLI=${GRIDRPC_CLI:-$top_builddir/gridrpc}
cd "$T_TMP" || exit 1

if "$CLI" completion bash >comp.bash 2>comp.err && grep -q '^complete -F _gridrpc gridrpc$' comp.bash; then
  ok "completion bash prints a complete -F script"
else
  fail "completion bash"; diag <comp.err
fi
# comp WORD...: what the script completes the last WORD to, one per line, sorted; the
# function is the one complete -p names for gridrpc.
comp() {
  bash -c '. ./comp.bash || exit 1
    fn=$(complete -p gridrpc | sed -n "s/.*-F \([^ ]*\) .*/\1/p")
    [ -n "$fn" ] || exit 1
    COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
    "$fn"
    [ ${#COMPREPLY[@]} -gt 0 ] && printf "%s\n" "${COMPREPLY[@]}" | sort' _ "$@"
}
# completes NAME WANT WORD...: the completions are WANT (lines joined by spaces).
completes() {
  _name=$1; _want=$2; shift 2
  _got=$(comp "$@" | tr '\n' ' ' | sed 's/ $//')
  if [ "$_got" = "$_want" ]; then ok "$_name"; else fail "$_name: got '$_got', want '$_want'"; fi
}
: >key1.pem
: >key2.pem
completes "gridrpc sta<TAB>: status" "status" gridrpc sta
completes "gridrpc --met<TAB>: --metaserver" "--metaserver" gridrpc --met
completes "gridrpc status --js<TAB>: global options after the command" "--json" gridrpc status --js
completes "gridrpc --server HOST to<TAB>: the value is not the command" "top" gridrpc --server 127.0.0.1:7000 to
completes "gridrpc --server <TAB>: the value is left alone" "" gridrpc --server ''
completes "gridrpc top --int<TAB>: top's own option" "--interval" gridrpc top --int
completes "gridrpc status --int<TAB>: not another command's option" "" gridrpc status --int
completes "gridrpc --key-file k<TAB>: file names" "key1.pem key2.pem" gridrpc --key-file key
completes "gridrpc keygen k<TAB>: file names" "key1.pem key2.pem" gridrpc keygen key
completes "gridrpc keygen --role a<TAB>: the roles" "admin" gridrpc keygen --role a
completes "gridrpc help to<TAB>: commands" "top" gridrpc help to
completes "gridrpc completion z<TAB>: the shells" "zsh" gridrpc completion z

# Every option and command gridrpc --help names is in the scripts, and the scripts
# offer no option the help does not explain.
"$CLI" --help >help.out
"$CLI" completion zsh >comp.zsh 2>comp.err
grep -o -- '--[a-z][a-z-]*' help.out | sort -u >help.opts
sed -n '/^Commands:/,/^$/s/^  \([a-z][a-z]*\) .*/\1/p' help.out | sort -u >help.cmds
for sh in bash zsh; do
  missing=
  for w in $(cat help.opts); do grep -q -- "$w\\b" comp.$sh || missing="$missing $w"; done
  for w in $(cat help.cmds); do grep -qw -- "$w" comp.$sh || missing="$missing $w"; done
  if [ -s help.opts ] && [ "$(wc -l <help.cmds)" -ge 10 ] && [ -z "$missing" ]; then
    ok "the $sh script has every option and command of --help"
  else
    fail "the $sh script lacks:$missing"
  fi
done
extra=
for w in $(grep -o -- '--[a-z][a-z-]*' comp.bash | sort -u); do grep -qx -- "$w" help.opts || extra="$extra $w"; done
if [ -z "$extra" ]; then ok "--help explains every option the scripts complete"; else fail "not in --help:$extra"; fi

if head -n 1 comp.zsh | grep -q '^#compdef gridrpc$' && grep -q 'compadd -- ' comp.zsh && grep -q '_files' comp.zsh; then
  ok "completion zsh prints a #compdef function"
else
  fail "completion zsh"; diag <comp.err
fi
if command -v zsh >/dev/null 2>&1; then
  if zsh -n comp.zsh 2>zsh.err; then ok "zsh -n accepts the zsh script"; else fail "zsh -n"; diag <zsh.err; fi
else
  ok "zsh -n # SKIP zsh is not installed"
fi

"$CLI" completion fish >out 2>err; rc=$?
if [ $rc -eq 2 ] && grep -qF "no completion for 'fish': the shells are bash and zsh" err; then
  ok "completion fish is refused, naming bash and zsh"
else
  fail "completion fish (rc $rc)"; diag <err
fi

finish
