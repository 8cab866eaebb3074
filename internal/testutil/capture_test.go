package testutil

import (
	"reflect"
	"testing"
)

// What tcpdump -nn -v -t printed for RoCE v2 packets sent by Soft-RoCE.
const tcpdumpOut = `IP (tos 0x6a,ECT(0), ttl 64, id 17476, offset 0, flags [DF], proto UDP (17), length 100)
    10.0.0.1.57236 > 10.0.0.129.4791: UDP, length 72
IP6 (class 0x6a, flowlabel 0x00000, hlim 64, next-header UDP (17) payload length: 72) fe80::aff:fe00:1.53368 > fe80::aff:fe00:81.4791: [udp sum ok] UDP, length 64
lo    In  IP (tos 0x68, ttl 17, id 1, offset 0, flags [DF], proto TCP (6), length 60)
    127.0.0.1.40000 > 127.0.0.1.5000: Flags [S], length 0
tcpdump: 3 packets captured
`

func TestParsePackets(t *testing.T) {
	got := ParsePackets(tcpdumpOut)
	for i := range got {
		got[i].Line = ""
	}
	want := []Packet{
		{Src: "10.0.0.1", Dst: "10.0.0.129", SrcPort: 57236, DstPort: 4791, TOS: 0x6a, TTL: 64, Length: 100},
		{IPv6: true, Src: "fe80::aff:fe00:1", Dst: "fe80::aff:fe00:81", SrcPort: 53368, DstPort: 4791, TOS: 0x6a, TTL: 64, Length: 112},
		{Src: "127.0.0.1", Dst: "127.0.0.1", SrcPort: 40000, DstPort: 5000, TOS: 0x68, TTL: 17, Length: 60},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ParsePackets:\n got %+v\nwant %+v", got, want)
	}
}
