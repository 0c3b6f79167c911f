/* gr_opts.h: command-line pieces the daemons share (gridrpcd, gridmetad): a usage error
 * said one way, the name of the option a getopt value stands for, what getopt_long
 * refused said as the user typed it, and counts. Messages go to the caller, which
 * prints them with its program's name. */
#ifndef GR_OPTS_H
#define GR_OPTS_H

#include <getopt.h>
#include <stdarg.h>
#include <stddef.h>

/* Prints "PROG: MSG (see PROG --help)" on stderr; returns the exit status 2. */
int gr_usage_verror(const char *prog, const char *fmt, va_list ap);

/* "--name" of the option of OPTS whose value is VAL ("-c" for a short one), into BUF. */
const char *gr_opt_name(const struct option *opts, int val, char *buf, size_t n);

/* What getopt_long refused (OPT: its optopt; ARG: the word it stopped at) into MSG: an
 * unknown short option, a value given to a flag, an unknown long name (with the option
 * of OPTS it is a typo of, if one is close: gr_suggest.h) or an ambiguous one. */
void gr_opt_refused(const struct option *opts, const char *arg, int opt, char *msg, size_t n);

/* A count from 1 to MAX (no unit, so not a gr_settings value) for the option named OPT;
 * 0, or -1 with the reason in MSG. */
int gr_opt_count(const char *opt, const char *v, unsigned long max, unsigned *out, char *msg, size_t n);

#endif
