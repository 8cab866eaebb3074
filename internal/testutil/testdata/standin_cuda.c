/* A stand-in for libcuda.so.1 that the tests build (gcc -shared) and load
 * through RDMABENCH_CUDA_LIBRARY: it drives rdmabench's loader, its choice
 * of registration and its fallback, never a GPU. "GPU memory" is host
 * memory, so that a NIC (Soft-RoCE) can register it as a device pointer.
 *
 * RDMABENCH_STANDIN_GPUS  how many GPUs it reports (default 1)
 * RDMABENCH_STANDIN_EXPORT "ok": cuMemGetHandleForAddressRange returns a
 *                         file descriptor (a memfd, not a real dma-buf);
 *                         else it fails with CUDA_ERROR_NOT_SUPPORTED */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_NOT_INITIALIZED 3
#define CUDA_ERROR_INVALID_DEVICE 101
#define CUDA_ERROR_NOT_SUPPORTED 801

static int inited;
static int gpus(void)
{
	const char *s = getenv("RDMABENCH_STANDIN_GPUS");
	return s ? atoi(s) : 1;
}

CUresult cuInit(unsigned flags) { (void)flags; inited = 1; return CUDA_SUCCESS; }
CUresult cuDriverGetVersion(int *v) { *v = 12040; return CUDA_SUCCESS; }
CUresult cuDeviceGetCount(int *n) { *n = inited ? gpus() : 0; return inited ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED; }
CUresult cuDeviceGet(int *dev, int ordinal)
{
	if (ordinal < 0 || ordinal >= gpus())
		return CUDA_ERROR_INVALID_DEVICE;
	*dev = ordinal;
	return CUDA_SUCCESS;
}
CUresult cuDeviceGetPCIBusId(char *out, int len, int dev)
{
	snprintf(out, len, "00000000:%02X:00.0", 0x10 + dev);
	return CUDA_SUCCESS;
}
CUresult cuDeviceGetByPCIBusId(int *dev, const char *bus)
{
	unsigned d, b, s, f;
	if (sscanf(bus, "%x:%x:%x.%x", &d, &b, &s, &f) != 4 || b < 0x10 || (int)(b - 0x10) >= gpus())
		return CUDA_ERROR_INVALID_DEVICE;
	*dev = (int)(b - 0x10);
	return CUDA_SUCCESS;
}
CUresult cuDeviceGetName(char *out, int len, int dev) { snprintf(out, len, "rdmabench stand-in GPU %d (host memory)", dev); return CUDA_SUCCESS; }
CUresult cuDeviceGetAttribute(int *v, int attr, int dev) { (void)attr; (void)dev; *v = 1; return CUDA_SUCCESS; }
static int ctxs;
CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev) { (void)dev; ctxs++; *ctx = &ctxs; return CUDA_SUCCESS; }
CUresult cuDevicePrimaryCtxRelease_v2(int dev) { (void)dev; ctxs--; return CUDA_SUCCESS; }
CUresult cuCtxSetCurrent(void *ctx) { return ctx == &ctxs ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; }
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
	void *m = NULL;
	if (posix_memalign(&m, 65536, n) != 0)
		return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
	*p = (CUdeviceptr)m;
	return CUDA_SUCCESS;
}
CUresult cuMemFree_v2(CUdeviceptr p) { free((void *)p); return CUDA_SUCCESS; }
CUresult cuMemsetD8_v2(CUdeviceptr p, unsigned char v, size_t n) { memset((void *)p, v, n); return CUDA_SUCCESS; }
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n) { memcpy((void *)d, s, n); return CUDA_SUCCESS; }
CUresult cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n) { memcpy(d, (void *)s, n); return CUDA_SUCCESS; }
CUresult cuMemGetHandleForAddressRange(void *handle, CUdeviceptr p, size_t n, int type, unsigned long long flags)
{
	(void)p; (void)flags;
	const char *e = getenv("RDMABENCH_STANDIN_EXPORT");
	if (type != 1 || !e || strcmp(e, "ok") != 0)
		return CUDA_ERROR_NOT_SUPPORTED;
	int fd = memfd_create("standin-dmabuf", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, (off_t)n) != 0)
		return CUDA_ERROR_INVALID_VALUE;
	*(int *)handle = fd;
	return CUDA_SUCCESS;
}
CUresult cuGetErrorName(CUresult r, const char **s)
{
	switch (r) {
	case 0: *s = "CUDA_SUCCESS"; break;
	case 1: *s = "CUDA_ERROR_INVALID_VALUE"; break;
	case 2: *s = "CUDA_ERROR_OUT_OF_MEMORY"; break;
	case 3: *s = "CUDA_ERROR_NOT_INITIALIZED"; break;
	case 101: *s = "CUDA_ERROR_INVALID_DEVICE"; break;
	case 801: *s = "CUDA_ERROR_NOT_SUPPORTED"; break;
	default: *s = "CUDA_ERROR_UNKNOWN"; return 1;
	}
	return CUDA_SUCCESS;
}
