/* gr_scheme.h: the two schemes of a server's name. "gridrpc://host:port" (or just
 * "host:port") is a plain connection; "gridrpcs://host:port" is TLS. A server's port
 * speaks one or the other (gridrpcd --tls-cert makes its listener TLS only), so whether
 * to use TLS is a property of the endpoint: a process that has once met an endpoint
 * named gridrpcs:// reaches it over TLS from then on, even where an address is later
 * rebuilt without the scheme (URLs made from handles, metaserver answers, data copies).
 * TLS is never dropped for an endpoint once marked, so no later plain name downgrades it. */
#ifndef GR_SCHEME_H
#define GR_SCHEME_H

#ifdef __cplusplus
extern "C" {
#endif

#define GR_SCHEME_PLAIN "gridrpc://"
#define GR_SCHEME_TLS "gridrpcs://"

/* The length of S's scheme ("gridrpc://": 10, "gridrpcs://": 11), 0 without one.
 * *TLS (when not NULL) is set to 1 for gridrpcs://, else 0. */
int gr_scheme_len(const char *s, int *tls);
/* Marks HOST:PORT as a TLS endpoint for this process. */
void gr_tls_endpoint_mark(const char *host, int port);
/* 1 when HOST:PORT was marked. */
int gr_tls_endpoint(const char *host, int port);

#ifdef __cplusplus
}
#endif

#endif /* GR_SCHEME_H */
