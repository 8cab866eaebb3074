package verbs

import (
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestQPConfigValidate(t *testing.T) {
	cq := &CQ{}
	ok := QPConfig{Type: RC, SendCQ: cq, RecvCQ: cq, MaxSendWR: 16, MaxRecvWR: 16}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid config refused: %v", err)
	}
	cases := map[string]func(*QPConfig){
		"unknown QP type":                func(c *QPConfig) { c.Type = 9 },
		"CQs are required":               func(c *QPConfig) { c.SendCQ = nil },
		"depths must be":                 func(c *QPConfig) { c.MaxRecvWR = 0 },
		"inline size -1":                 func(c *QPConfig) { c.MaxInlineData = -1 },
		"MTU 1500":                       func(c *QPConfig) { c.MTU = 1500 },
		"qp-timeout 40 is outside 1..31": func(c *QPConfig) { c.QPTimeout = 40 },
		"traffic class 256 is outside 0..255; hop limit 300": func(c *QPConfig) { c.TClass, c.HopLimit = 256, 300 },
		"retry counts":          func(c *QPConfig) { c.RNRRetry = 8 },
		"PSN 0x1000000 exceeds": func(c *QPConfig) { c.PSN = 1 << 24 },
	}
	for want, mutate := range cases {
		c := ok
		mutate(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v", want, err)
		}
	}
}

func TestLoopConfigValidate(t *testing.T) {
	ok := LoopConfig{Kind: BWSend, Opcode: OpWrite, Size: 65536, TxDepth: 128, CQMod: 64, PostList: 1}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid config refused: %v", err)
	}
	cases := map[string]LoopConfig{
		"atomics use 8-byte":              {Kind: LatPost, Opcode: OpFetchAdd, Size: 16, Total: 1},
		"write ping-pong uses RDMA_WRITE": {Kind: LatWrite, Opcode: OpSend, Size: 2, Total: 1},
		"total iteration count":           {Kind: LatSend, Opcode: OpSend, Size: 2, RxDepth: 1},
		"completion moderation 200":       {Kind: BWSend, Opcode: OpWrite, Size: 2, TxDepth: 128, CQMod: 200, PostList: 1},
		"post list 0":                     {Kind: BWSend, Opcode: OpWrite, Size: 2, TxDepth: 128, CQMod: 1},
		"receive depth":                   {Kind: BWRecv, Opcode: OpSend, Size: 2},
		"at least 1 byte":                 {Kind: LatPost, Opcode: OpRead, Total: 1},
		"unknown loop kind":               {Kind: 42, Size: 1},
		"naps are under a second":         {Kind: BWSend, Opcode: OpWrite, Size: 2, TxDepth: 1, CQMod: 1, PostList: 1, Nap: time.Microsecond},
		"a nap of 1s after 0s":            {Kind: LatWrite, Opcode: OpWrite, Size: 2, Total: 1, Nap: time.Second},
	}
	for want, c := range cases {
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v", want, err)
		}
	}
}

func TestMRAndCQConfig(t *testing.T) {
	if err := (MRConfig{}).Validate(); err == nil {
		t.Error("zero-length MR accepted")
	}
	if err := (CQConfig{Depth: 0}).Validate(); err == nil {
		t.Error("zero-depth CQ accepted")
	}
}

func TestErrorHints(t *testing.T) {
	cases := []struct {
		op    string
		errno syscall.Errno
		want  string
	}{
		{"reg mr", syscall.ENOMEM, "ulimit -l"},
		{"modify qp to RTR", syscall.EINVAL, "GID index"},
		{"create qp", syscall.EINVAL, "device maximum"},
		{"open device rxe0", syscall.EACCES, "permission"},
	}
	for _, c := range cases {
		err := newError(c.op, c.errno)
		if !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), c.op+": ") {
			t.Errorf("%s/%v: %q lacks %q", c.op, c.errno, err, c.want)
		}
		if !errors.Is(err, c.errno) {
			t.Errorf("%s: errors.Is(err, %v) is false", c.op, c.errno)
		}
	}
	if !errors.Is(newError("create qp", syscall.EOPNOTSUPP), ErrNotSupported) {
		t.Error("EOPNOTSUPP must match ErrNotSupported")
	}
	if !strings.Contains(newError("x", syscall.ENOMEM).Error(), "(ENOMEM)") {
		t.Error("errno name missing")
	}
}

func TestWCStatusNames(t *testing.T) {
	if WCRemAccessErr.String() != "IBV_WC_REM_ACCESS_ERR" || WCRetryExcErr.String() != "IBV_WC_RETRY_EXC_ERR" ||
		WCRNRRetryExcErr.String() != "IBV_WC_RNR_RETRY_EXC_ERR" || WCTMRndvIncomplete.String() != "IBV_WC_TM_RNDV_INCOMPLETE" {
		t.Fatal("status names do not match rdma-core's")
	}
	e := (&WC{Status: WCRetryExcErr, QPN: 0x11}).Err()
	if e == nil || !strings.Contains(e.Error(), "IBV_WC_RETRY_EXC_ERR") || !strings.Contains(e.Error(), "peer") {
		t.Fatalf("WC error %v", e)
	}
	if (&WC{}).Err() != nil {
		t.Fatal("a successful WC has an error")
	}
	if WCStatus(99).String() != "IBV_WC_STATUS_99" {
		t.Fatal("unknown status")
	}
}

func TestMTU(t *testing.T) {
	for e := 1; e <= 5; e++ {
		if m := mtuFromEnum(e); !m.Valid() || mtuToEnum(m) != e {
			t.Errorf("enum %d -> %d -> %d", e, m, mtuToEnum(m))
		}
	}
	if MinMTU(0, 4096, 1024) != 1024 || MinMTU(0, 0) != 0 {
		t.Error("MinMTU")
	}
}

// TestCycle: small bandwidth messages move through a page a cache line at a
// time, as perftest's do; larger ones, or too little room, do not cycle.
func TestCycle(t *testing.T) {
	for _, c := range []struct {
		size, room    uint64
		stride, slots uint32
	}{
		{8, 4096, 64, 64},     // atomics: 64 words of a page
		{2, 8192, 64, 64},     // one cache line each
		{100, 4096, 128, 32},  // rounded up to a cache line
		{2048, 4096, 2048, 2}, // half a page
		{2049, 8192, 0, 0},    // more than half a page: no cycle
		{64, 2048, 0, 0},      // less than a page of room
		{0, 4096, 0, 0},
	} {
		if st, n := cycle(c.size, c.room); st != c.stride || n != c.slots {
			t.Errorf("cycle(%d, %d) = %d, %d; want %d, %d", c.size, c.room, st, n, c.stride, c.slots)
		}
	}
}
