package testutil

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Packet is the IP header of one captured packet, as `tcpdump -v` prints
// it.
type Packet struct {
	IPv6     bool
	Src, Dst string // addresses, without ports
	SrcPort  int
	DstPort  int
	// TOS is the IPv4 TOS byte or the IPv6 traffic class: the DS field,
	// DSCP in its upper 6 bits, ECN in the lower 2.
	TOS       int
	TTL       int // IPv4 TTL or IPv6 hop limit
	FlowLabel int // IPv6 only
	Length    int // the IP packet's, header included
	Line      string
}

// Capture is a running tcpdump.
type Capture struct {
	t    testing.TB
	cmd  *exec.Cmd
	out  *SyncBuffer
	err  *SyncBuffer
	once sync.Once
	pkts []Packet
}

// RoCEv2 is the tcpdump filter of RoCE v2 packets.
const RoCEv2 = "udp port 4791"

// RoCEv2QPs selects the RoCE v2 packets of the QPs a test made (IPv4):
// not the connection manager's MADs, which go to QP 1 (the BTH's
// destination QP, bytes 5-7 after the UDP header). The kernel's CM sends
// those, and its responses (a REP, an MRA under load, a DREP) need not
// carry the traffic class the QPs were given.
const RoCEv2QPs = RoCEv2 + " and not (udp[13:2] = 0 and udp[15] = 1)"

// StartCapture starts capturing the packets on the network interface
// netdev ("any" for every one) that match the tcpdump filter (such as
// RoCEv2), and returns once tcpdump listens.
// It needs tcpdump and the right to capture (root): without them the test
// is skipped, unless it runs where a device is required (RDMABENCH_TEST_DEVICE
// set), where it fails.
func StartCapture(t testing.TB, netdev, filter string) *Capture {
	t.Helper()
	path, err := exec.LookPath("tcpdump")
	if err != nil {
		if os.Getenv(EnvDevice) != "" {
			t.Fatalf("tcpdump is needed to check what goes on the wire (scripts/deps.sh installs it): %v", err)
		}
		t.Skipf("no tcpdump: %v", err)
	}
	c := &Capture{t: t, out: &SyncBuffer{}, err: &SyncBuffer{}}
	// -t: no timestamps, so each packet starts a line with "IP"; -l: line
	// buffered; -U: packets written as they come.
	c.cmd = exec.Command(path, "-i", netdev, "-nn", "-v", "-t", "-l", "-U", filter)
	c.cmd.Stdout, c.cmd.Stderr = c.out, c.err
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("start tcpdump: %v", err)
	}
	t.Cleanup(func() { c.Stop() })
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(c.err.String(), "listening on") {
		if time.Now().After(deadline) || c.cmd.ProcessState != nil {
			c.Stop()
			if os.Getenv(EnvDevice) == "" {
				t.Skipf("tcpdump did not start (not root?): %s", c.err.String())
			}
			t.Fatalf("tcpdump did not start: %s", c.err.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return c
}

// Stop ends the capture and returns the packets captured.
func (c *Capture) Stop() []Packet {
	c.once.Do(func() {
		// tcpdump writes what it has buffered on SIGINT; a moment first
		// lets the last packets through the kernel's capture buffer.
		time.Sleep(300 * time.Millisecond)
		_ = c.cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = c.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = c.cmd.Process.Kill()
			<-done
		}
		c.pkts = ParsePackets(c.out.String())
	})
	return c.pkts
}

// Output is what tcpdump printed (for a failure message).
func (c *Capture) Output() string { return c.out.String() + c.err.String() }

var (
	reTOS   = regexp.MustCompile(`\btos 0x([0-9a-f]+)`)
	reTTL   = regexp.MustCompile(`\bttl (\d+)`)
	reClass = regexp.MustCompile(`\bclass 0x([0-9a-f]+)`)
	reFlow  = regexp.MustCompile(`\bflowlabel 0x([0-9a-f]+)`)
	reHlim  = regexp.MustCompile(`\bhlim (\d+)`)
	reLen4  = regexp.MustCompile(`\blength (\d+)\)`)
	reLen6  = regexp.MustCompile(`\bpayload length: (\d+)\)`)
	// "10.0.0.1.49152 > 10.0.0.2.4791:" or "fe80::1.49152 > fe80::2.4791:"
	reAddrs = regexp.MustCompile(`([0-9a-fA-F.:]+)\.(\d+) > ([0-9a-fA-F.:]+)\.(\d+):`)
)

// rePacket starts a packet's line; on "any" interface tcpdump names the
// interface and the direction first ("eth0  Out IP (tos ...").
var rePacket = regexp.MustCompile(`^(?:\S+\s+(?:In|Out|B|M|P)\s+)?(IP6? .*)$`)

// ParsePackets reads the output of `tcpdump -nn -v -t`: each packet starts
// a line with "IP " or "IP6 " (after the interface and direction on "any");
// the lines that follow, indented, belong to it.
func ParsePackets(out string) []Packet {
	var texts []string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		m := rePacket.FindStringSubmatch(line)
		switch {
		case m != nil:
			texts = append(texts, m[1])
		case len(texts) > 0 && strings.HasPrefix(line, " "):
			texts[len(texts)-1] += " " + strings.TrimSpace(line)
		}
	}
	var pkts []Packet
	for _, s := range texts {
		p := Packet{IPv6: strings.HasPrefix(s, "IP6 "), Line: s}
		hex := func(re *regexp.Regexp) int {
			if m := re.FindStringSubmatch(s); m != nil {
				v, _ := strconv.ParseInt(m[1], 16, 64)
				return int(v)
			}
			return -1
		}
		dec := func(re *regexp.Regexp) int {
			if m := re.FindStringSubmatch(s); m != nil {
				v, _ := strconv.Atoi(m[1])
				return v
			}
			return -1
		}
		if p.IPv6 {
			p.TOS, p.TTL, p.FlowLabel = max(hex(reClass), 0), dec(reHlim), max(hex(reFlow), 0)
			p.Length = max(dec(reLen6), 0) + 40
		} else {
			p.TOS, p.TTL, p.Length = max(hex(reTOS), 0), dec(reTTL), max(dec(reLen4), 0)
		}
		if m := reAddrs.FindStringSubmatch(s); m != nil {
			p.Src, p.Dst = m[1], m[3]
			p.SrcPort, _ = strconv.Atoi(m[2])
			p.DstPort, _ = strconv.Atoi(m[4])
		}
		pkts = append(pkts, p)
	}
	return pkts
}

func (p Packet) String() string {
	if p.IPv6 {
		return fmt.Sprintf("%s.%d > %s.%d class 0x%02x flowlabel 0x%05x hlim %d, %d bytes", p.Src, p.SrcPort, p.Dst, p.DstPort, p.TOS, p.FlowLabel, p.TTL, p.Length)
	}
	return fmt.Sprintf("%s.%d > %s.%d tos 0x%02x ttl %d, %d bytes", p.Src, p.SrcPort, p.Dst, p.DstPort, p.TOS, p.TTL, p.Length)
}
