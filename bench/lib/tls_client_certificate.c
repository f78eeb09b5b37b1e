/* Makes an OpenSSL client that has no option for it (wrk) present a client certificate: loaded with
 * LD_PRELOAD, it wraps SSL_CTX_new and gives every new context the certificate chain and key named by
 * BENCH_TLS_CERT and BENCH_TLS_KEY (PEM). OpenSSL's configuration file cannot do this: its system-wide
 * section refuses certificate commands. No OpenSSL headers are needed: the types stay opaque. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_method_st SSL_METHOD;
int SSL_CTX_use_certificate_chain_file(SSL_CTX *ctx, const char *file);
int SSL_CTX_use_PrivateKey_file(SSL_CTX *ctx, const char *file, int type);
#define FILETYPE_PEM 1

SSL_CTX *SSL_CTX_new(const SSL_METHOD *method) {
    static SSL_CTX *(*real)(const SSL_METHOD *);
    if (!real) real = (SSL_CTX * (*)(const SSL_METHOD *)) dlsym(RTLD_NEXT, "SSL_CTX_new");
    SSL_CTX *ctx = real(method);
    const char *cert = getenv("BENCH_TLS_CERT"), *key = getenv("BENCH_TLS_KEY");
    if (ctx && cert && key) {
        if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1 || SSL_CTX_use_PrivateKey_file(ctx, key, FILETYPE_PEM) != 1) {
            fprintf(stderr, "tls_client_certificate: cannot load %s / %s\n", cert, key);
            abort();
        }
    }
    return ctx;
}
