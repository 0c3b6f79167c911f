/* grpc.h: the header Ninf-G programs include ("grpc.h" or <grpc.h>). It gives the OGF
 * GridRPC API and the Ninf-style one (gridrpc.h), and the libc headers Ninf-G's own
 * grpc.h pulled in: programs written for it use optind, assert, exit, malloc and
 * strcpy without including them (COMPAT.md), so they must come from here. */
#ifndef GRIDRPC_GRPC_H
#define GRIDRPC_GRPC_H

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gridrpc.h"
#include "grpc_api.h"

#endif /* GRIDRPC_GRPC_H */
