package verbs

import (
	"errors"
	"fmt"
	"syscall"
)

// ErrNotSupported is wrapped by every call that this build, platform or
// device cannot perform. Tests skip only on it.
var ErrNotSupported = errors.New("not supported")

// ErrNotConnected is returned when a send is posted on a QP that has not
// been connected to a remote endpoint.
var ErrNotConnected = errors.New("queue pair is not connected (call Connect with the remote endpoint first)")

// ErrClosed is returned by methods of an object that was closed.
var ErrClosed = errors.New("object already closed")

// ErrNoDevice means no RDMA device is present, or the one named is not.
var ErrNoDevice = errors.New("no RDMA device")

// ErrNoDevices means this host has no RDMA device at all (not merely not
// the one named); it wraps ErrNoDevice. NoDeviceHelp says what to do.
var ErrNoDevices = fmt.Errorf("%w found", ErrNoDevice)

// ErrTimeout is returned by a timed loop whose peer made no progress within
// the idle timeout.
var ErrTimeout = errors.New("timed out waiting for the peer")

// ErrAborted is returned by a latency or bandwidth loop stopped by
// (*Loop).Stop.
var ErrAborted = errors.New("aborted")

// Error is a failed verbs call: the operation, the errno, and a hint about
// what usually causes it.
type Error struct {
	Op    string        // "reg mr", "modify qp to RTR", ...
	Errno syscall.Errno // 0 when the library gave none
	Hint  string
}

func (e *Error) Error() string {
	s := e.Op
	if e.Errno != 0 {
		s += ": " + e.Errno.Error() + " (" + errnoName(e.Errno) + ")"
	} else {
		s += ": failed"
	}
	if e.Hint != "" {
		s += "; " + e.Hint
	}
	return s
}

// Unwrap exposes the errno, so errors.Is(err, syscall.ENOMEM) works.
func (e *Error) Unwrap() error {
	if e.Errno == 0 {
		return nil
	}
	return e.Errno
}

// Is makes EOPNOTSUPP and ENOSYS match ErrNotSupported.
func (e *Error) Is(target error) bool {
	return target == ErrNotSupported && (e.Errno == syscall.EOPNOTSUPP || e.Errno == syscall.ENOSYS)
}

// newError builds an *Error with the hint that fits op and errno.
func newError(op string, errno syscall.Errno) *Error {
	return &Error{Op: op, Errno: errno, Hint: hintFor(op, errno)}
}

// hintFor maps an operation and errno to what the user should check.
func hintFor(op string, errno syscall.Errno) string {
	switch {
	case errno == syscall.ENOMEM && (op == "reg mr" || op == "alloc buffer"):
		return "check the locked-memory limit (`ulimit -l`; unlimited is usual for RDMA) and free memory"
	case errno == syscall.ENOMEM:
		return "the device or kernel is out of resources; lower queue depths or QP count, and check `ulimit -l`"
	case errno == syscall.EINVAL && op == "modify qp to RTR":
		return "check the GID index (-x), the path MTU (-m) and the RoCE mode; RoCE needs a valid GID in the address vector"
	case errno == syscall.EINVAL && op == "modify qp to RTS":
		return "check timeout, retry counts and outstanding read/atomic limits against the device maximums"
	case errno == syscall.EINVAL && op == "create qp":
		return "a queue depth, SGE count or inline size exceeds the device maximum (see `rdmabench devices`)"
	case errno == syscall.EINVAL && op == "create cq":
		return "the CQ depth exceeds the device maximum (see `rdmabench devices`)"
	case errno == syscall.EINVAL && (op == "query gid" || op == "query gid table"):
		return "the GID index does not exist on this port (see `rdmabench devices`)"
	case errno == syscall.EPERM || errno == syscall.EACCES:
		return "permission denied on /dev/infiniband/uverbs*; run as root or add the user to the rdma group"
	case errno == syscall.ENODEV || errno == syscall.ENXIO:
		return "the device went away; check `rdma link` and the port state"
	case errno == syscall.ENOSPC || errno == syscall.EAGAIN:
		return "a queue is full: too many outstanding work requests for the queue depth"
	case errno == syscall.EOPNOTSUPP || errno == syscall.ENOSYS:
		return "the device or its driver does not support this"
	}
	return ""
}

func errnoName(e syscall.Errno) string {
	switch e {
	case syscall.EPERM:
		return "EPERM"
	case syscall.ENOENT:
		return "ENOENT"
	case syscall.EIO:
		return "EIO"
	case syscall.ENXIO:
		return "ENXIO"
	case syscall.EAGAIN:
		return "EAGAIN"
	case syscall.ENOMEM:
		return "ENOMEM"
	case syscall.EACCES:
		return "EACCES"
	case syscall.EFAULT:
		return "EFAULT"
	case syscall.EBUSY:
		return "EBUSY"
	case syscall.EEXIST:
		return "EEXIST"
	case syscall.ENODEV:
		return "ENODEV"
	case syscall.EINVAL:
		return "EINVAL"
	case syscall.ENOSPC:
		return "ENOSPC"
	case syscall.ENOSYS:
		return "ENOSYS"
	case syscall.EOPNOTSUPP:
		return "EOPNOTSUPP"
	case syscall.ETIMEDOUT:
		return "ETIMEDOUT"
	}
	return fmt.Sprintf("errno %d", int(e))
}

// WCStatus is the status of a work completion, as in enum ibv_wc_status.
type WCStatus int

// Work completion statuses.
const (
	WCSuccess WCStatus = iota
	WCLocLenErr
	WCLocQPOpErr
	WCLocEECOpErr
	WCLocProtErr
	WCWRFlushErr
	WCMWBindErr
	WCBadRespErr
	WCLocAccessErr
	WCRemInvReqErr
	WCRemAccessErr
	WCRemOpErr
	WCRetryExcErr
	WCRNRRetryExcErr
	WCLocRDDViolErr
	WCRemInvRDReqErr
	WCRemAbortErr
	WCInvEECNErr
	WCInvEECStateErr
	WCFatalErr
	WCRespTimeoutErr
	WCGeneralErr
	WCTMErr
	WCTMRndvIncomplete
)

var wcStatusInfo = [...]struct{ name, meaning string }{
	WCSuccess:          {"IBV_WC_SUCCESS", ""},
	WCLocLenErr:        {"IBV_WC_LOC_LEN_ERR", "a message was longer than the receive buffer posted for it"},
	WCLocQPOpErr:       {"IBV_WC_LOC_QP_OP_ERR", "the work request was invalid for the QP (size over the path MTU on UD, too many SGEs, inline too large), or on Soft-RoCE the netdev under the device is down"},
	WCLocEECOpErr:      {"IBV_WC_LOC_EEC_OP_ERR", "local EE context error"},
	WCLocProtErr:       {"IBV_WC_LOC_PROT_ERR", "a local buffer is outside its MR or the lkey is wrong"},
	WCWRFlushErr:       {"IBV_WC_WR_FLUSH_ERR", "the QP went to the error state after an earlier failure; this request was flushed"},
	WCMWBindErr:        {"IBV_WC_MW_BIND_ERR", "memory window bind failed"},
	WCBadRespErr:       {"IBV_WC_BAD_RESP_ERR", "the responder sent an unexpected transport response"},
	WCLocAccessErr:     {"IBV_WC_LOC_ACCESS_ERR", "the local MR lacks the access the operation needs (e.g. local write for a READ target)"},
	WCRemInvReqErr:     {"IBV_WC_REM_INV_REQ_ERR", "the responder found the request invalid (message too long for its buffer, or an opcode its QP does not allow)"},
	WCRemAccessErr:     {"IBV_WC_REM_ACCESS_ERR", "the remote address, length or rkey is wrong, or the remote MR lacks the access flag"},
	WCRemOpErr:         {"IBV_WC_REM_OP_ERR", "the responder could not complete the operation"},
	WCRetryExcErr:      {"IBV_WC_RETRY_EXC_ERR", "no acknowledgement after all retries: the peer is gone, unreachable, or the GID/MTU/route is wrong"},
	WCRNRRetryExcErr:   {"IBV_WC_RNR_RETRY_EXC_ERR", "the receiver had no receive posted in time (raise rx-depth, or the peer stopped)"},
	WCLocRDDViolErr:    {"IBV_WC_LOC_RDD_VIOL_ERR", "local RDD violation"},
	WCRemInvRDReqErr:   {"IBV_WC_REM_INV_RD_REQ_ERR", "remote invalid RD request"},
	WCRemAbortErr:      {"IBV_WC_REM_ABORT_ERR", "the responder aborted the operation"},
	WCInvEECNErr:       {"IBV_WC_INV_EECN_ERR", "invalid EE context number"},
	WCInvEECStateErr:   {"IBV_WC_INV_EEC_STATE_ERR", "invalid EE context state"},
	WCFatalErr:         {"IBV_WC_FATAL_ERR", "fatal device error"},
	WCRespTimeoutErr:   {"IBV_WC_RESP_TIMEOUT_ERR", "the response timed out"},
	WCGeneralErr:       {"IBV_WC_GENERAL_ERR", "general device error"},
	WCTMErr:            {"IBV_WC_TM_ERR", "tag matching error"},
	WCTMRndvIncomplete: {"IBV_WC_TM_RNDV_INCOMPLETE", "tag matching rendezvous incomplete"},
}

// String returns the rdma-core name of the status (IBV_WC_REM_ACCESS_ERR).
func (s WCStatus) String() string {
	if s >= 0 && int(s) < len(wcStatusInfo) {
		return wcStatusInfo[s].name
	}
	return fmt.Sprintf("IBV_WC_STATUS_%d", int(s))
}

// Meaning says what the status usually means in practice.
func (s WCStatus) Meaning() string {
	if s >= 0 && int(s) < len(wcStatusInfo) {
		return wcStatusInfo[s].meaning
	}
	return "unknown status"
}

// WCError is a work completion that failed.
type WCError struct {
	Status    WCStatus
	Opcode    WCOpcode
	VendorErr uint32
	QPN       uint32
}

func (e *WCError) Error() string {
	return fmt.Sprintf("work completion failed: %s (vendor error 0x%x, qpn 0x%x): %s",
		e.Status, e.VendorErr, e.QPN, e.Status.Meaning())
}
