/* grw_internal.h: helpers shared by the wire reader and writer (private). */
#ifndef GRW_INTERNAL_H
#define GRW_INTERNAL_H

#include <stdint.h>
#include <string.h>

static inline void grw_put32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static inline uint32_t grw_get32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* Milliseconds left until DEADLINE_NS for poll(): -1 without a deadline, 0 if past. */
int grw_poll_ms(long long deadline_ns);

#endif /* GRW_INTERNAL_H */
