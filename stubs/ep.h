/* ep.h: the NAS Parallel Benchmarks' verification of the EP kernel (stubs/ep.idl),
 * header-only so that clients, examples and benchmarks can check the sums a server
 * returned without linking the kernel itself. The reference sums are those of NPB's
 * ep.f / ep.c; epsilon is NPB's too. */
#ifndef GRIDRPC_EP_H
#define GRIDRPC_EP_H

#include <math.h>

#define GRIDRPC_EP_EPSILON 1.0e-8

/* The NPB class of a run of 2^m pairs: 'S', 'W', 'A', or '?' (no reference). */
static inline char gridrpc_ep_class(int m) {
    switch (m) {
    case 24: return 'S';
    case 25: return 'W';
    case 28: return 'A';
    default: return '?';
    }
}

/* Checks the sums of a whole run of 2^m pairs against NPB's: 1 verified, 0 failed,
 * -1 when NPB has no reference for this m. */
static inline int gridrpc_ep_verify(int m, double sx, double sy) {
    double rsx, rsy;
    switch (m) {
    case 24: rsx = -3.247834652034740e+03, rsy = -6.958407078382297e+03; break;
    case 25: rsx = -2.863319731645753e+03, rsy = -6.320053679109499e+03; break;
    case 28: rsx = -4.295875165629892e+03, rsy = -1.580732573678431e+04; break;
    default: return -1;
    }
    /* Written so that a NaN sum fails instead of slipping through a comparison. */
    return fabs((sx - rsx) / rsx) <= GRIDRPC_EP_EPSILON && fabs((sy - rsy) / rsy) <= GRIDRPC_EP_EPSILON;
}

#endif /* GRIDRPC_EP_H */
