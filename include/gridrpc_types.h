/* gridrpc_types.h: the value types shared by GridRPC clients, servers and generated
 * stubs. scomplex and dcomplex are structs with members r and i, as Ninf-G programs
 * expect, passed by value. */
#ifndef GRIDRPC_TYPES_H
#define GRIDRPC_TYPES_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct scomplex {
    float r, i;
} scomplex;

typedef struct dcomplex {
    double r, i;
} dcomplex;

#ifdef __cplusplus
}
#endif

#endif /* GRIDRPC_TYPES_H */
