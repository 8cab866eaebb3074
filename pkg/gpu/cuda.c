//go:build linux && cgo

#include "cuda.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef unsigned long long CUdeviceptr;

#define CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED 124
#define CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD 1
#define CUDA_ERROR_NOT_FOUND 500

static CUresult (*p_cuInit)(unsigned);
static CUresult (*p_cuDriverGetVersion)(int *);
static CUresult (*p_cuDeviceGetCount)(int *);
static CUresult (*p_cuDeviceGet)(CUdevice *, int);
static CUresult (*p_cuDeviceGetByPCIBusId)(CUdevice *, const char *);
static CUresult (*p_cuDeviceGetPCIBusId)(char *, int, CUdevice);
static CUresult (*p_cuDeviceGetName)(char *, int, CUdevice);
static CUresult (*p_cuDeviceGetAttribute)(int *, int, CUdevice);
static CUresult (*p_cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
static CUresult (*p_cuDevicePrimaryCtxRelease)(CUdevice);
static CUresult (*p_cuCtxSetCurrent)(CUcontext);
static CUresult (*p_cuMemAlloc)(CUdeviceptr *, size_t);
static CUresult (*p_cuMemFree)(CUdeviceptr);
static CUresult (*p_cuMemGetHandleForAddressRange)(void *, CUdeviceptr, size_t, int, unsigned long long);
static CUresult (*p_cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
static CUresult (*p_cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
static CUresult (*p_cuMemsetD8)(CUdeviceptr, unsigned char, size_t);
static CUresult (*p_cuGetErrorName)(CUresult, const char **);

#define NEED(sym, name)                                                                  \
	do {                                                                             \
		*(void **)(&sym) = dlsym(h, name);                                       \
		if (!sym) {                                                              \
			snprintf(err, errlen, "%s has no %s", path, name);               \
			return -1;                                                       \
		}                                                                        \
	} while (0)

int rbcu_load(const char *path, char *err, size_t errlen)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();
		snprintf(err, errlen, "%s", e ? e : "dlopen failed");
		return -1;
	}
	NEED(p_cuInit, "cuInit");
	NEED(p_cuDriverGetVersion, "cuDriverGetVersion");
	NEED(p_cuDeviceGetCount, "cuDeviceGetCount");
	NEED(p_cuDeviceGet, "cuDeviceGet");
	NEED(p_cuDeviceGetByPCIBusId, "cuDeviceGetByPCIBusId");
	NEED(p_cuDeviceGetPCIBusId, "cuDeviceGetPCIBusId");
	NEED(p_cuDeviceGetName, "cuDeviceGetName");
	NEED(p_cuDeviceGetAttribute, "cuDeviceGetAttribute");
	NEED(p_cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
	NEED(p_cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
	NEED(p_cuCtxSetCurrent, "cuCtxSetCurrent");
	NEED(p_cuMemAlloc, "cuMemAlloc_v2");
	NEED(p_cuMemFree, "cuMemFree_v2");
	NEED(p_cuMemcpyHtoD, "cuMemcpyHtoD_v2");
	NEED(p_cuMemcpyDtoH, "cuMemcpyDtoH_v2");
	NEED(p_cuMemsetD8, "cuMemsetD8_v2");
	NEED(p_cuGetErrorName, "cuGetErrorName");
	/* CUDA 11.7 and later; without it, no dma-buf. */
	*(void **)(&p_cuMemGetHandleForAddressRange) = dlsym(h, "cuMemGetHandleForAddressRange");
	return p_cuInit(0);
}

const char *rbcu_error_name(int res)
{
	const char *s = NULL;
	if (p_cuGetErrorName && p_cuGetErrorName(res, &s) == 0 && s)
		return s;
	return "CUDA_ERROR_UNKNOWN";
}

int rbcu_driver_version(int *v) { return p_cuDriverGetVersion(v); }
int rbcu_device_count(int *n) { return p_cuDeviceGetCount(n); }
int rbcu_device_get(int ordinal, int *dev) { return p_cuDeviceGet(dev, ordinal); }
int rbcu_device_by_bus_id(const char *bus, int *dev) { return p_cuDeviceGetByPCIBusId(dev, bus); }
int rbcu_device_bus_id(int dev, char *out, int len) { return p_cuDeviceGetPCIBusId(out, len, dev); }
int rbcu_device_name(int dev, char *out, int len) { return p_cuDeviceGetName(out, len, dev); }

int rbcu_dmabuf_supported(int dev, int *yes)
{
	*yes = 0;
	return p_cuDeviceGetAttribute(yes, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, dev);
}

int rbcu_ctx_retain(int dev, void **ctx) { return p_cuDevicePrimaryCtxRetain((CUcontext *)ctx, dev); }
int rbcu_ctx_release(int dev) { return p_cuDevicePrimaryCtxRelease(dev); }

#define CURRENT(ctx)                                                                     \
	do {                                                                             \
		CUresult r_ = p_cuCtxSetCurrent(ctx);                                    \
		if (r_ != 0)                                                             \
			return r_;                                                       \
	} while (0)

int rbcu_mem_alloc(void *ctx, size_t len, uint64_t *ptr)
{
	CURRENT(ctx);
	CUdeviceptr p = 0;
	CUresult r = p_cuMemAlloc(&p, len);
	*ptr = p;
	return r;
}

int rbcu_mem_free(void *ctx, uint64_t ptr)
{
	CURRENT(ctx);
	return p_cuMemFree(ptr);
}

int rbcu_export_dmabuf(void *ctx, uint64_t ptr, size_t len, int *fd)
{
	if (!p_cuMemGetHandleForAddressRange)
		return CUDA_ERROR_NOT_FOUND;
	CURRENT(ctx);
	int h = -1;
	CUresult r = p_cuMemGetHandleForAddressRange(&h, ptr, len, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
	*fd = h;
	return r;
}

int rbcu_htod(void *ctx, uint64_t dst, const void *src, size_t len)
{
	CURRENT(ctx);
	return p_cuMemcpyHtoD(dst, src, len);
}

int rbcu_dtoh(void *ctx, void *dst, uint64_t src, size_t len)
{
	CURRENT(ctx);
	return p_cuMemcpyDtoH(dst, src, len);
}

int rbcu_memset(void *ctx, uint64_t dst, size_t len)
{
	CURRENT(ctx);
	return p_cuMemsetD8(dst, 0, len);
}
