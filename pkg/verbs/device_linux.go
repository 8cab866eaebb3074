//go:build linux && cgo

package verbs

/*
#cgo LDFLAGS: -libverbs
#include <stdlib.h>
#include "rb.h"
*/
import "C"

import (
	"encoding/binary"
	"fmt"
	"net"
	"strings"
	"syscall"
	"unsafe"
)

// Supported reports whether this build has libibverbs.
const Supported = true

// Context is an open device. Equivalent to what `ibv_devinfo -d DEV` opens.
type Context struct {
	ctx  *C.struct_ibv_context
	info DeviceInfo
	id   int
}

// DeviceNames lists the RDMA devices present. Equivalent to `ibv_devices`.
func DeviceNames() ([]string, error) {
	var n C.int
	list, err := C.ibv_get_device_list(&n)
	if list == nil {
		return nil, deviceListError(err)
	}
	defer C.ibv_free_device_list(list)
	devs := unsafe.Slice(list, int(n))
	names := make([]string, 0, len(devs))
	for _, d := range devs {
		names = append(names, C.GoString(C.ibv_get_device_name(d)))
	}
	return names, nil
}

func deviceListError(err error) error {
	if errno, ok := err.(syscall.Errno); ok && errno == syscall.ENOSYS {
		return fmt.Errorf("%w: the kernel has no RDMA support loaded (no /sys/class/infiniband)", ErrNoDevices)
	}
	return fmt.Errorf("list devices: %w", err)
}

// NoDeviceHelp says how to get an RDMA device with nothing but the
// binary and the distribution's tools: Soft-RoCE (the kernel's rdma_rxe)
// on an Ethernet interface, made with iproute2's rdma. The errors
// wrapping ErrNoDevices do not carry it, so that a program printing
// several of them can say it once.
const NoDeviceHelp = `use a host with an RDMA NIC, or make a Soft-RoCE device on an Ethernet
interface of this host (eth0 here; ip -br link lists them), as root:
    modprobe rdma_rxe
    rdma link add rxe0 type rxe netdev eth0
(rdma is in iproute2; rdma link delete rxe0 removes it). In a clone of
rdmabench, scripts/softroce.sh up does the same, and scripts/vm.sh runs
rdmabench in a Soft-RoCE VM.`

// Devices describes every device with its ports and GID tables, as
// `ibv_devinfo -v` does. It returns an error wrapping ErrNoDevice when
// there are none.
func Devices() ([]DeviceInfo, error) {
	names, err := DeviceNames()
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, ErrNoDevices
	}
	var out []DeviceInfo
	for _, name := range names {
		c, err := Open(name)
		if err != nil {
			return nil, err
		}
		info := c.Info()
		for p := 1; p <= info.PhysPorts; p++ {
			pi, err := c.QueryPort(p)
			if err != nil {
				c.Close()
				return nil, err
			}
			pi.GIDs, err = c.GIDTable(p)
			if err != nil {
				c.Close()
				return nil, err
			}
			if ch, err := SelectGID(pi.GIDs, pi.LinkLayer, -1); err == nil {
				pi.GIDSelection = &ch
			}
			info.Ports = append(info.Ports, pi)
		}
		c.Close()
		out = append(out, info)
	}
	return out, nil
}

// Open opens the named device, or the first one when name is empty.
// Equivalent to `ibv_devinfo -d NAME`.
func Open(name string) (*Context, error) {
	var n C.int
	list, err := C.ibv_get_device_list(&n)
	if list == nil {
		return nil, deviceListError(err)
	}
	defer C.ibv_free_device_list(list)
	devs := unsafe.Slice(list, int(n))
	if len(devs) == 0 {
		return nil, ErrNoDevices
	}
	var dev *C.struct_ibv_device
	var have []string
	for _, d := range devs {
		dn := C.GoString(C.ibv_get_device_name(d))
		have = append(have, dn)
		if name == "" || dn == name {
			dev = d
			break
		}
	}
	if dev == nil {
		return nil, fmt.Errorf("%w named %q; this host has %s", ErrNoDevice, name, strings.Join(have, ", "))
	}
	ctx, err := C.ibv_open_device(dev)
	if ctx == nil {
		return nil, newError("open device "+C.GoString(C.ibv_get_device_name(dev)), errnoOf(err))
	}
	c := &Context{ctx: ctx}
	var attr C.struct_ibv_device_attr
	if rc := C.ibv_query_device(ctx, &attr); rc != 0 {
		C.ibv_close_device(ctx)
		return nil, newError("query device", syscall.Errno(rc))
	}
	c.info = DeviceInfo{
		Name:         C.GoString(C.ibv_get_device_name(dev)),
		NodeGUID:     formatGUID(uint64(attr.node_guid)),
		FirmwareVer:  C.GoString(&attr.fw_ver[0]),
		Transport:    transportName(dev.transport_type),
		VendorID:     uint32(attr.vendor_id),
		VendorPartID: uint32(attr.vendor_part_id),
		PhysPorts:    int(attr.phys_port_cnt),
		MaxQP:        int(attr.max_qp),
		MaxQPWR:      int(attr.max_qp_wr),
		MaxCQE:       int(attr.max_cqe),
		MaxMRSize:    uint64(attr.max_mr_size),
		MaxQPRdAtom:  int(attr.max_qp_rd_atom),
		MaxSGE:       int(attr.max_sge),
		AtomicCap:    atomicCapName(attr.atomic_cap),
	}
	c.id = track("context " + c.info.Name)
	return c, nil
}

// Info returns the device's attributes (without ports).
func (c *Context) Info() DeviceInfo { return c.info }

// Name returns the device name.
func (c *Context) Name() string { return c.info.Name }

// Close closes the device. Every PD, CQ and QP made from it must be closed
// first.
func (c *Context) Close() error {
	if c == nil || c.ctx == nil {
		return nil
	}
	rc := C.ibv_close_device(c.ctx)
	c.ctx = nil
	untrack(c.id)
	if rc != 0 {
		return newError("close device", syscall.Errno(-rc))
	}
	return nil
}

// QueryPort returns a port's attributes. Equivalent to
// `ibv_devinfo -v -d DEV -i PORT`.
func (c *Context) QueryPort(port int) (PortInfo, error) {
	if c.ctx == nil {
		return PortInfo{}, ErrClosed
	}
	if port < 1 || port > c.info.PhysPorts {
		return PortInfo{}, fmt.Errorf("query port: %s has no port %d (ports 1..%d)", c.info.Name, port, c.info.PhysPorts)
	}
	var a C.struct_ibv_port_attr
	if rc := C.rb_query_port(c.ctx, C.uint8_t(port), &a); rc != 0 {
		return PortInfo{}, newError("query port", syscall.Errno(rc))
	}
	return PortInfo{
		Port:        port,
		State:       PortState(a.state),
		MaxMTU:      mtuFromEnum(int(a.max_mtu)),
		ActiveMTU:   mtuFromEnum(int(a.active_mtu)),
		LinkLayer:   linkLayerName(int(a.link_layer)),
		LID:         uint16(a.lid),
		ActiveSpeed: speedName(int(a.active_speed)),
		ActiveWidth: widthName(int(a.active_width)),
		LinkGbps:    LinkGbps(int(a.active_speed), int(a.active_width)),
		GIDTableLen: int(a.gid_tbl_len),
	}, nil
}

// GIDTable returns the valid entries of a port's GID table with their types.
// Equivalent to `rdma link show` plus `show_gids`.
func (c *Context) GIDTable(port int) ([]GIDEntry, error) {
	if c.ctx == nil {
		return nil, ErrClosed
	}
	pi, err := c.QueryPort(port)
	if err != nil {
		return nil, err
	}
	max := pi.GIDTableLen * c.info.PhysPorts
	if max == 0 {
		return nil, nil
	}
	entries := make([]C.struct_ibv_gid_entry, max)
	n, err := C.ibv_query_gid_table(c.ctx, &entries[0], C.size_t(max), 0)
	if n < 0 {
		return nil, newError("query gid table", errnoOf(err))
	}
	var out []GIDEntry
	for _, e := range entries[:n] {
		if int(e.port_num) != port {
			continue
		}
		var g GID
		copy(g[:], C.GoBytes(unsafe.Pointer(&e.gid), 16))
		ge := GIDEntry{Index: int(e.gid_index), GID: g, Type: GIDType(e.gid_type), IfIndex: int(e.ndev_ifindex)}
		if ge.IfIndex > 0 {
			if ifc, err := net.InterfaceByIndex(ge.IfIndex); err == nil {
				ge.Netdev = ifc.Name
			}
		}
		out = append(out, ge)
	}
	return out, nil
}

func errnoOf(err error) syscall.Errno {
	if e, ok := err.(syscall.Errno); ok {
		return e
	}
	return 0
}

func formatGUID(be uint64) string {
	var b [8]byte
	// node_guid is stored big-endian in a host integer.
	binary.LittleEndian.PutUint64(b[:], be)
	return fmt.Sprintf("%02x%02x:%02x%02x:%02x%02x:%02x%02x", b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7])
}

func transportName(t C.enum_ibv_transport_type) string {
	switch t {
	case C.IBV_TRANSPORT_IB:
		return "InfiniBand"
	case C.IBV_TRANSPORT_IWARP:
		return "iWARP"
	case C.IBV_TRANSPORT_USNIC, C.IBV_TRANSPORT_USNIC_UDP:
		return "usNIC"
	case C.IBV_TRANSPORT_UNSPECIFIED:
		return "unspecified"
	}
	return "unknown"
}

func atomicCapName(a C.enum_ibv_atomic_cap) string {
	switch a {
	case C.IBV_ATOMIC_NONE:
		return "none"
	case C.IBV_ATOMIC_HCA:
		return "hca"
	case C.IBV_ATOMIC_GLOB:
		return "global"
	}
	return "unknown"
}

func linkLayerName(l int) LinkLayer {
	switch l {
	case C.IBV_LINK_LAYER_INFINIBAND:
		return LinkInfiniBand
	case C.IBV_LINK_LAYER_ETHERNET:
		return LinkEthernet
	}
	return LinkUnspecified
}

// CompletionTimestamps tells whether the device stamps work completions
// with its own clock (ibv_query_device_ex's completion_timestamp_mask is
// not 0), and that clock's rate in kHz (hca_core_clock). Equivalent to the
// "completion_timestamp_mask" and "hca_core_clock" lines of `ibv_devinfo
// -v`.
func (c *Context) CompletionTimestamps() (ok bool, clockKHz uint64, err error) {
	mask, khz, err := c.completionClock()
	return mask != 0, khz, err
}

// completionClock is the device's completion timestamps' mask (0: it
// stamps none) and clock rate in kHz.
func (c *Context) completionClock() (mask, khz uint64, err error) {
	if c.ctx == nil {
		return 0, 0, ErrClosed
	}
	var attr C.struct_ibv_device_attr_ex
	if rc := C.rb_query_device_ex(c.ctx, &attr); rc != 0 {
		return 0, 0, newError("query device ex", syscall.Errno(rc))
	}
	return uint64(attr.completion_timestamp_mask), uint64(attr.hca_core_clock), nil
}
