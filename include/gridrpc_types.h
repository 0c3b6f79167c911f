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

/* One scalar of any IDL type: what an IN scalar's argument-vector entry points at when
 * the value arrived by value (grid_call_argv_np). The client core, the OGF layer and
 * the language bindings all keep such values in this one union, so a new IDL type is
 * added here once. char, short and float are stored as themselves (not promoted). */
typedef union grid_scalar_np {
    char c;
    short s;
    int i;
    long l;
    long long ll;
    float f;
    double d;
    scomplex sc;
    dcomplex dc;
    char *str; /* string, filename (a path) */
} grid_scalar_np;

#ifdef __cplusplus
}
#endif

#endif /* GRIDRPC_TYPES_H */
