//go:build linux && cgo

package verbs_test

// Registration paths on a real device: huge pages and on-demand paging
// through ibv_reg_mr, and a dma-buf exported by vgem (a real kernel's
// DRM driver, in the Soft-RoCE VM) through ibv_reg_dmabuf_mr. rxe in
// Debian 12's kernel (6.1) has neither ODP nor dma-buf support: what it
// cannot do is asserted as the named error, never skipped or faked.

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/rdmabench/rdmabench/internal/dmabuf"
	"github.com/rdmabench/rdmabench/internal/testutil"
	"github.com/rdmabench/rdmabench/pkg/verbs"
)

// openPD opens the test device and a PD on it, both closed when the test
// ends, which fails if any verbs object is left open.
func openPD(t *testing.T) (*verbs.Context, *verbs.PD) {
	t.Helper()
	dev := testutil.Device(t)
	testutil.NoLeaks(t)
	ctx, err := verbs.Open(dev)
	if err != nil {
		t.Fatalf("open %s: %v", dev, err)
	}
	t.Cleanup(func() { closeOK(t, ctx) })
	pd, err := ctx.AllocPD()
	if err != nil {
		t.Fatalf("alloc pd: %v", err)
	}
	t.Cleanup(func() { closeOK(t, pd) })
	return ctx, pd
}

// TestDmabufRefusedOnRxe: a dma-buf from vgem reaches ibv_reg_dmabuf_mr;
// rxe refuses it, and the error names the device, the errno and that the
// device cannot register dma-buf memory.
func TestDmabufRefusedOnRxe(t *testing.T) {
	ctx, pd := openPD(t)
	buf, err := dmabuf.Export("vgem", 1<<20)
	if err != nil {
		if os.Getenv("RDMABENCH_IN_VM") == "1" {
			t.Fatalf("the VM loads vgem: %v", err)
		}
		t.Skipf("no dma-buf exporter: %v", err)
	}
	defer buf.Close()
	if buf.Size < 1<<20 || buf.FD < 0 {
		t.Fatalf("exported %+v", buf)
	}
	mr, err := pd.RegDmabufMR(buf.FD, 0, 1<<20, 0, verbs.AccessAll)
	if err == nil {
		mr.Close()
		if strings.HasPrefix(ctx.Name(), "rxe") {
			t.Fatalf("%s registered a dma-buf: this kernel's rxe was thought to have no dma-buf support", ctx.Name())
		}
		return // a device that has it
	}
	var ve *verbs.Error
	if !errors.As(err, &ve) || ve.Errno == 0 {
		t.Fatalf("not a verbs error with an errno: %v", err)
	}
	msg := err.Error()
	for _, want := range []string{"reg dmabuf mr on " + ctx.Name(), ctx.Name() + " cannot register dma-buf memory"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if !errors.Is(err, verbs.ErrNotSupported) && !errors.Is(err, syscall.EPROTONOSUPPORT) {
		t.Errorf("errno %v is not a not-supported one", ve.Errno)
	}
	t.Logf("%s (%s, %s): %v", buf.Card, buf.Driver, ctx.Name(), err)
}

// TestODPCaps: the capabilities read; rxe in 6.1 has none, which Check
// names; rxe in 7.x has them for RC (write among them) and none for UC,
// which Check names per transport.
func TestODPCaps(t *testing.T) {
	ctx, _ := openPD(t)
	caps, err := ctx.ODPCaps()
	if err != nil {
		t.Fatal(err)
	}
	err = caps.Check(ctx.Name(), verbs.RC, verbs.ODPWrite)
	if !caps.Supported {
		if !errors.Is(err, verbs.ErrNotSupported) || !strings.Contains(err.Error(), ctx.Name()+" has no on-demand paging") ||
			!strings.Contains(err.Error(), "IBV_ODP_SUPPORT_WRITE") {
			t.Fatalf("check: %v", err)
		}
	} else if caps.RC&verbs.ODPWrite != 0 && err != nil {
		t.Fatalf("check of RC write, which the caps have: %v", err)
	}
	if caps.Supported && caps.UC == 0 {
		err := caps.Check(ctx.Name(), verbs.UC, verbs.ODPSend)
		if !errors.Is(err, verbs.ErrNotSupported) || !strings.Contains(err.Error(), "no on-demand paging for these operations over UC") ||
			!strings.Contains(err.Error(), "IBV_ODP_SUPPORT_SEND") {
			t.Fatalf("check of UC send: %v", err)
		}
	}
	t.Logf("%s odp caps %+v", ctx.Name(), caps)
}

// TestHugePageMR: a buffer of 2 MiB pages registers, on a huge page
// boundary, zeroed and writable; in the VM, with one page free, a buffer
// needing two is ENOMEM with a hint.
func TestHugePageMR(t *testing.T) {
	_, pd := openPD(t)
	const page = 2 << 20
	if os.Getenv("RDMABENCH_IN_VM") == "1" {
		old, _ := os.ReadFile("/proc/sys/vm/nr_hugepages")
		if err := os.WriteFile("/proc/sys/vm/nr_hugepages", []byte("1"), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.WriteFile("/proc/sys/vm/nr_hugepages", old, 0o644) })
		_, err := pd.RegMR(verbs.MRConfig{Length: page + 1, Access: verbs.AccessAll, HugePageSize: page})
		if !errors.Is(err, syscall.ENOMEM) || !strings.Contains(err.Error(), "not enough free 2048 KiB huge pages") {
			t.Fatalf("two pages with one free: %v", err)
		}
	}
	mr, err := pd.RegMR(verbs.MRConfig{Length: page, Access: verbs.AccessAll, HugePageSize: page})
	if errors.Is(err, syscall.ENOMEM) {
		t.Skipf("no free huge page: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer mr.Close()
	b := mr.Buf()
	if len(b) != page || mr.Addr()%page != 0 {
		t.Fatalf("buffer of %d bytes at 0x%x, not one huge page", len(b), mr.Addr())
	}
	for i := 0; i < len(b); i += 4096 {
		if b[i] != 0 {
			t.Fatalf("byte %d is %d", i, b[i])
		}
		b[i] = 1
	}
}
