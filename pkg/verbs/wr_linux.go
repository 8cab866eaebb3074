//go:build linux && cgo

package verbs

// SGE is one local scatter/gather element: a byte range of a registered MR.
type SGE struct {
	MR     *MR
	Offset uint64
	Length uint32
}

// SendWR is one send work request for PostSend.
type SendWR struct {
	ID       uint64
	Opcode   Opcode
	SGEs     []SGE
	Signaled bool
	Inline   bool
	Imm      uint32       // immediate data, for OpSendImm and OpWriteImm
	Remote   RemoteBuffer // target of WRITE, READ and atomics (Addr is absolute)
	Compare  uint64       // OpCompSwap: expected value
	SwapAdd  uint64       // OpCompSwap: new value; OpFetchAdd: addend
}

// RecvWR is one receive work request for PostRecv.
type RecvWR struct {
	ID   uint64
	SGEs []SGE
}
