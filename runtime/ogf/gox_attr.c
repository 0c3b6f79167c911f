/* gox_attr.c: Ninf-G's handle attributes (grpc_handle_attr_*_np) and the handle calls
 * that take or give them (grpc_function_handle_init_with_attr_np, _get_attr_np). An
 * attribute set holds copies of what it was given; get hands out malloc'd copies that
 * grpc_handle_attr_release_np frees, as in Ninf-G. */
#include <stdlib.h>
#include <string.h>

#include "gox.h"

#define ATTR_MAGIC 0x61545452u /* "aTTR": an initialized attribute set */

static grpc_error_t check_attr(const grpc_handle_attr_t_np *a) {
    grpc_error_t rc = gox_check_initialized();
    if (rc) return rc;
    if (!a) return gox_result(GRPC_OTHER_ERROR_CODE, "the handle attribute is NULL");
    if (a->magic_np != ATTR_MAGIC)
        return gox_result(GRPC_OTHER_ERROR_CODE,
                          "the handle attribute is not initialized (grpc_handle_attr_initialize_np) or was "
                          "destructed");
    return GRPC_NO_ERROR;
}

static int valid_transfer(int t) {
    return t == GRPC_ARGUMENT_TRANSFER_WAIT || t == GRPC_ARGUMENT_TRANSFER_NOWAIT ||
           t == GRPC_ARGUMENT_TRANSFER_COPY;
}

grpc_error_t grpc_handle_attr_initialize_np(grpc_handle_attr_t_np *a) {
    grpc_error_t rc = gox_check_initialized();
    if (!rc && !a) rc = gox_result(GRPC_OTHER_ERROR_CODE, "the handle attribute is NULL");
    if (rc) return rc;
    memset(a, 0, sizeof *a);
    a->magic_np = ATTR_MAGIC;
    a->mpi_ncpus_np = 1;
    a->transfer_np = GRPC_ARGUMENT_TRANSFER_WAIT;
    return gox_result(GRPC_NO_ERROR, NULL);
}

grpc_error_t grpc_handle_attr_destruct_np(grpc_handle_attr_t_np *a) {
    grpc_error_t rc = check_attr(a);
    if (rc) return rc;
    free(a->hostname_np);
    free(a->funcname_np);
    free(a->jobmanager_np);
    free(a->subject_np);
    free(a->queuename_np);
    memset(a, 0, sizeof *a);
    return gox_result(GRPC_NO_ERROR, NULL);
}

/* The string member NAME names, or NULL for a number. */
static char **string_member(grpc_handle_attr_t_np *a, grpc_handle_attr_name_t_np name) {
    switch (name) {
    case GRPC_HANDLE_ATTR_HOSTNAME: return &a->hostname_np;
    case GRPC_HANDLE_ATTR_FUNCNAME: return &a->funcname_np;
    case GRPC_HANDLE_ATTR_JOBMANAGER: return &a->jobmanager_np;
    case GRPC_HANDLE_ATTR_SUBJECT: return &a->subject_np;
    case GRPC_HANDLE_ATTR_QUEUENAME: return &a->queuename_np;
    default: return NULL;
    }
}

/* The int member NAME names, with the least value it takes, or NULL. */
static int *int_member(grpc_handle_attr_t_np *a, grpc_handle_attr_name_t_np name, int *least) {
    switch (name) {
    case GRPC_HANDLE_ATTR_PORT: *least = 0; return &a->port_np;
    case GRPC_HANDLE_ATTR_JOBSTARTTIMEOUT: *least = 0; return &a->job_start_timeout_np;
    case GRPC_HANDLE_ATTR_JOBSTOPTIMEOUT: *least = -1; return &a->job_stop_timeout_np; /* -1: forever */
    case GRPC_HANDLE_ATTR_MPI_NCPUS: *least = 1; return &a->mpi_ncpus_np;
    default: return NULL;
    }
}

grpc_error_t grpc_handle_attr_set_np(grpc_handle_attr_t_np *a, grpc_handle_attr_name_t_np name, void *value) {
    grpc_error_t rc = check_attr(a);
    if (rc) return rc;
    if (!value)
        return gox_result(GRPC_OTHER_ERROR_CODE, "grpc_handle_attr_set_np: the value pointer is NULL");
    char **str = string_member(a, name);
    int least, *num = int_member(a, name, &least);
    if (str) {
        char *copy = strdup(value);
        if (!copy) return gox_result(GRPC_OTHER_ERROR_CODE, "out of memory");
        free(*str);
        *str = copy;
    } else if (num) {
        int v = *(const int *)value;
        if (v < least)
            return gox_result(GRPC_OTHER_ERROR_CODE, "grpc_handle_attr_set_np: attribute %d: %d is below %d",
                              name, v, least);
        if (name == GRPC_HANDLE_ATTR_PORT && v > 65535)
            return gox_result(GRPC_OTHER_ERROR_CODE, "grpc_handle_attr_set_np: port %d is above 65535", v);
        *num = v;
    } else if (name == GRPC_HANDLE_ATTR_WAIT_ARG_TRANSFER) {
        int t = (int)*(const grpc_argument_transfer_t_np *)value;
        if (!valid_transfer(t))
            return gox_result(GRPC_OTHER_ERROR_CODE,
                              "grpc_handle_attr_set_np: %d is not an argument transfer mode "
                              "(GRPC_ARGUMENT_TRANSFER_WAIT, _NOWAIT or _COPY)",
                              t);
        a->transfer_np = (grpc_argument_transfer_t_np)t;
    } else {
        return gox_result(GRPC_OTHER_ERROR_CODE, "grpc_handle_attr_set_np: %d is not a handle attribute name",
                          (int)name);
    }
    return gox_result(GRPC_NO_ERROR, NULL);
}

grpc_error_t grpc_handle_attr_get_np(grpc_handle_attr_t_np *a, grpc_handle_attr_name_t_np name,
                                     void **value) {
    grpc_error_t rc = check_attr(a);
    if (!rc && !value)
        rc = gox_result(GRPC_OTHER_ERROR_CODE, "grpc_handle_attr_get_np: the value pointer is NULL");
    if (rc) return rc;
    *value = NULL;
    char **str = string_member(a, name);
    int least, *num = int_member(a, name, &least);
    if (str) {
        if (*str && !(*value = strdup(*str))) return gox_result(GRPC_OTHER_ERROR_CODE, "out of memory");
    } else if (num || name == GRPC_HANDLE_ATTR_WAIT_ARG_TRANSFER) {
        /* One allocation fits both: the transfer mode is an enum of int size. */
        int *v =
            malloc(sizeof(int) > sizeof(grpc_argument_transfer_t_np) ? sizeof(int)
                                                                     : sizeof(grpc_argument_transfer_t_np));
        if (!v) return gox_result(GRPC_OTHER_ERROR_CODE, "out of memory");
        if (num)
            *v = *num;
        else
            *(grpc_argument_transfer_t_np *)(void *)v = a->transfer_np;
        *value = v;
    } else {
        return gox_result(GRPC_OTHER_ERROR_CODE, "grpc_handle_attr_get_np: %d is not a handle attribute name",
                          (int)name);
    }
    return gox_result(GRPC_NO_ERROR, NULL);
}

grpc_error_t grpc_handle_attr_release_np(void *value) {
    grpc_error_t rc = gox_check_initialized();
    if (!rc && !value)
        rc = gox_result(GRPC_OTHER_ERROR_CODE, "grpc_handle_attr_release_np: the value is NULL");
    if (rc) return rc;
    free(value);
    return gox_result(GRPC_NO_ERROR, NULL);
}

grpc_error_t grpc_function_handle_init_with_attr_np(grpc_function_handle_t *h, grpc_handle_attr_t_np *a) {
    grpc_error_t rc = check_attr(a);
    if (rc) return rc;
    if (!a->funcname_np || !*a->funcname_np)
        return gox_result(GRPC_FUNCTION_NOT_FOUND,
                          "the handle attribute names no function: set GRPC_HANDLE_ATTR_FUNCNAME");
    return gox_handle_init(h, a->hostname_np, a->port_np, a->funcname_np, a->transfer_np);
}

grpc_error_t grpc_function_handle_get_attr_np(grpc_function_handle_t *h, grpc_handle_attr_t_np *a) {
    grpc_error_t rc = gox_check_initialized();
    if (!rc) rc = gox_check_handle(h);
    if (!rc) rc = grpc_handle_attr_initialize_np(a);
    if (rc) return rc;
    a->port_np = h->port_np;
    a->transfer_np = (grpc_argument_transfer_t_np)h->transfer_np;
    a->hostname_np = h->host_np[0] ? strdup(h->host_np) : NULL;
    a->funcname_np = strdup(h->function_np);
    if ((h->host_np[0] && !a->hostname_np) || !a->funcname_np) {
        grpc_handle_attr_destruct_np(a);
        return gox_result(GRPC_OTHER_ERROR_CODE, "out of memory");
    }
    return gox_result(GRPC_NO_ERROR, NULL);
}
