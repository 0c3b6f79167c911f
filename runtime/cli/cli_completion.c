/* cli_completion.c: gridrpc completion bash|zsh: prints a shell completion script made
 * at run time from the tables the parser uses (cli_commands, cli_global_opts and each
 * command's own options), so a new command or option is completed without editing a
 * script. Installs nothing. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "cli.h"

/* Every option that takes a value (global and the commands' own), as "--a|--b": the
 * words after which the next word is a value, not the command. */
static void value_options(FILE *f) {
    int first = 1;
    for (const struct option *op = cli_global_opts; op->name; op++)
        if (op->has_arg == required_argument) {
            fprintf(f, "%s--%s", first ? "" : "|", op->name);
            first = 0;
        }
    for (size_t i = 0; i < cli_ncommands; i++)
        for (const struct option *op = cli_commands[i].opts; op && op->name; op++)
            if (op->has_arg == required_argument) {
                fprintf(f, "%s--%s", first ? "" : "|", op->name);
                first = 0;
            }
}

/* The options of TABLE as "--a --b". */
static void option_words(FILE *f, const struct option *table) {
    for (const struct option *op = table; op && op->name; op++)
        fprintf(f, "%s--%s", op == table ? "" : " ", op->name);
}

/* One case arm per command that has options of its own: BEFORE the command's name,
 * AFTER it, its options, then END (the two shells differ only in these words). */
static void command_options(FILE *f, const char *before, const char *after, const char *end) {
    for (size_t i = 0; i < cli_ncommands; i++)
        if (cli_commands[i].opts) {
            fprintf(f, "%s%s%s", before, cli_commands[i].name, after);
            option_words(f, cli_commands[i].opts);
            fputs(end, f);
        }
}

static void command_words(FILE *f) {
    for (size_t i = 0; i < cli_ncommands; i++)
        fprintf(f, "%s%s", i ? " " : "", cli_commands[i].name);
}

/* Calls EMIT(F, option, values) for each option whose value is completed. */
static void each_valued(FILE *f, void (*emit)(FILE *, const char *, const char *)) {
    for (const struct option *op = cli_global_opts; op->name; op++)
        if (op->has_arg == required_argument && cli_option_values(op->name))
            emit(f, op->name, cli_option_values(op->name));
    for (size_t i = 0; i < cli_ncommands; i++)
        for (const struct option *op = cli_commands[i].opts; op && op->name; op++)
            if (op->has_arg == required_argument && cli_option_values(op->name))
                emit(f, op->name, cli_option_values(op->name));
}

/* ---- bash */

/* The completion of WHAT ("@files", "@commands" or words) as bash. */
static void bash_reply(FILE *f, const char *what) {
    if (strcmp(what, "@files") == 0) {
        fputs("compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- \"$cur\"))", f);
        return;
    }
    fputs("COMPREPLY=($(compgen -W \"", f);
    if (strcmp(what, "@commands") == 0)
        command_words(f);
    else
        fputs(what, f);
    fputs("\" -- \"$cur\"))", f);
}

static void bash_valued(FILE *f, const char *name, const char *values) {
    fprintf(f, "    --%s)\n        ", name);
    bash_reply(f, values);
    fputs("\n        return 0 ;;\n", f);
}

static void bash(FILE *f) {
    fprintf(f,
            "# bash completion for gridrpc, printed by 'gridrpc completion bash' (GridRPC %s)\n"
            "# from the commands and options its parser knows. To use it, add to ~/.bashrc:\n"
            "#   source <(gridrpc completion bash)\n"
            "_gridrpc() {\n"
            "    local cur=${COMP_WORDS[COMP_CWORD]} prev= cmd= i w\n"
            "    [ \"$COMP_CWORD\" -gt 0 ] && prev=${COMP_WORDS[COMP_CWORD-1]}\n"
            "    COMPREPLY=()\n"
            "    # The command: the first word that is neither an option nor an option's value.\n"
            "    for ((i = 1; i < COMP_CWORD; i++)); do\n"
            "        w=${COMP_WORDS[i]}\n"
            "        case $w in\n"
            "        ",
            PACKAGE_VERSION);
    value_options(f);
    fputs(") ((i++)) ;;\n"
          "        -*) ;;\n"
          "        *) cmd=$w; break ;;\n"
          "        esac\n"
          "    done\n"
          "    # An option's value: completed where it has known values, else left alone.\n"
          "    case $prev in\n",
          f);
    each_valued(f, bash_valued);
    fputs("    ", f);
    value_options(f);
    fputs(") return 0 ;;\n"
          "    esac\n"
          "    case $cur in\n"
          "    -*)\n"
          "        local opts=\"",
          f);
    option_words(f, cli_global_opts);
    fputs("\"\n        case $cmd in\n", f);
    command_options(f, "        ", ") opts=\"$opts ", "\" ;;\n");
    fputs("        esac\n"
          "        COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
          "        return 0 ;;\n"
          "    esac\n"
          "    if [ -z \"$cmd\" ]; then\n"
          "        ",
          f);
    bash_reply(f, "@commands");
    fputs("\n        return 0\n"
          "    fi\n"
          "    case $cmd in\n",
          f);
    for (size_t i = 0; i < cli_ncommands; i++)
        if (cli_commands[i].operands) {
            fprintf(f, "    %s) ", cli_commands[i].name);
            bash_reply(f, cli_commands[i].operands);
            fputs(" ;;\n", f);
        }
    fputs("    esac\n"
          "    return 0\n"
          "}\n"
          "complete -F _gridrpc gridrpc\n",
          f);
}

/* ---- zsh */

static void zsh_reply(FILE *f, const char *what) {
    if (strcmp(what, "@files") == 0) {
        fputs("_files", f);
        return;
    }
    fputs("compadd -- ", f);
    if (strcmp(what, "@commands") == 0)
        command_words(f);
    else
        fputs(what, f);
}

static void zsh_valued(FILE *f, const char *name, const char *values) {
    fprintf(f, "    (--%s) ", name);
    zsh_reply(f, values);
    fputs("; return ;;\n", f);
}

static void zsh(FILE *f) {
    fprintf(f,
            "#compdef gridrpc\n"
            "# zsh completion for gridrpc, printed by 'gridrpc completion zsh' (GridRPC %s)\n"
            "# from the commands and options its parser knows. To use it, write it to a file\n"
            "# _gridrpc in a folder of $fpath before compinit runs, e.g.\n"
            "#   gridrpc completion zsh > ~/.zfunc/_gridrpc\n"
            "# with fpath=(~/.zfunc $fpath) before compinit in ~/.zshrc; or, after compinit:\n"
            "#   source <(gridrpc completion zsh)\n"
            "_gridrpc() {\n"
            "  local cmd= i\n"
            "  local -a opts\n"
            "  # The command: the first word that is neither an option nor an option's value.\n"
            "  for (( i = 2; i < CURRENT; i++ )); do\n"
            "    case ${words[i]} in\n"
            "      (",
            PACKAGE_VERSION);
    value_options(f);
    fputs(") (( i++ )) ;;\n"
          "      (-*) ;;\n"
          "      (*) cmd=${words[i]}; break ;;\n"
          "    esac\n"
          "  done\n"
          "  # An option's value: completed where it has known values, else left alone.\n"
          "  case ${words[CURRENT-1]} in\n",
          f);
    each_valued(f, zsh_valued);
    fputs("    (", f);
    value_options(f);
    fputs(") _message 'a value'; return ;;\n"
          "  esac\n"
          "  if [[ ${words[CURRENT]} == -* ]]; then\n"
          "    opts=(",
          f);
    option_words(f, cli_global_opts);
    fputs(")\n    case $cmd in\n", f);
    command_options(f, "      (", ") opts+=(", ") ;;\n");
    fputs("    esac\n"
          "    compadd -- $opts\n"
          "    return\n"
          "  fi\n"
          "  if [[ -z $cmd ]]; then\n"
          "    ",
          f);
    zsh_reply(f, "@commands");
    fputs("\n    return\n"
          "  fi\n"
          "  case $cmd in\n",
          f);
    for (size_t i = 0; i < cli_ncommands; i++)
        if (cli_commands[i].operands) {
            fprintf(f, "    (%s) ", cli_commands[i].name);
            zsh_reply(f, cli_commands[i].operands);
            fputs(" ;;\n", f);
        }
    fputs("  esac\n"
          "}\n"
          "# Autoloaded from $fpath the file is _gridrpc's body: define it and complete; sourced,\n"
          "# register it.\n"
          "if [[ ${funcstack[1]} == _gridrpc ]]; then\n"
          "  _gridrpc \"$@\"\n"
          "else\n"
          "  compdef _gridrpc gridrpc\n"
          "fi\n",
          f);
}

int cli_completion(int argc, char **argv, cli_opts *o) {
    (void)o;
    if (argc == 1 && strcmp(argv[0], "bash") == 0) {
        bash(stdout);
        return CLI_OK;
    }
    if (argc == 1 && strcmp(argv[0], "zsh") == 0) {
        zsh(stdout);
        return CLI_OK;
    }
    if (argc == 1)
        cli_error("completion: no completion for '%s': the shells are bash and zsh", argv[0]);
    else
        cli_error("completion takes one shell: bash or zsh (gridrpc completion bash)");
    return CLI_USAGE;
}
