//go:build linux && cgo

/* The CUDA driver API calls rdmabench makes, through function pointers
 * dlopen'ed from libcuda.so.1 at run time: no build-time dependency. */
#ifndef RDMABENCH_CUDA_H
#define RDMABENCH_CUDA_H

#include <stddef.h>
#include <stdint.h>

/* Loads the library (path) and cuInit(0)s it; 0, or -1 with why in err, or
 * a CUresult. */
int rbcu_load(const char *path, char *err, size_t errlen);
const char *rbcu_error_name(int res);
int rbcu_driver_version(int *v);
int rbcu_device_count(int *n);
int rbcu_device_get(int ordinal, int *dev);
int rbcu_device_by_bus_id(const char *bus, int *dev);
int rbcu_device_bus_id(int dev, char *out, int len);
int rbcu_device_name(int dev, char *out, int len);
int rbcu_dmabuf_supported(int dev, int *yes);
/* The device's primary context, retained. */
int rbcu_ctx_retain(int dev, void **ctx);
int rbcu_ctx_release(int dev);
/* Each of these makes ctx current on the calling thread first. */
int rbcu_mem_alloc(void *ctx, size_t len, uint64_t *ptr);
int rbcu_mem_free(void *ctx, uint64_t ptr);
/* 0 and a dma-buf fd, or a CUresult (1: the library lacks the call). */
int rbcu_export_dmabuf(void *ctx, uint64_t ptr, size_t len, int *fd);
int rbcu_htod(void *ctx, uint64_t dst, const void *src, size_t len);
int rbcu_dtoh(void *ctx, void *dst, uint64_t src, size_t len);
int rbcu_memset(void *ctx, uint64_t dst, size_t len);

#endif
