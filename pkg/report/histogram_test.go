package report_test

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/pkg/report"
)

// A header declaring a huge geometry is refused before anything is
// allocated for it.
func TestDecodeHistogramRefusesHugeGeometry(t *testing.T) {
	var hdr [40]byte
	binary.BigEndian.PutUint32(hdr[0:], 0x1c849303|0x10) // V2 encoding cookie
	binary.BigEndian.PutUint32(hdr[12:], 5)              // significant digits
	binary.BigEndian.PutUint64(hdr[16:], 1)              // lowest
	binary.BigEndian.PutUint64(hdr[24:], 1<<62)          // highest
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write(hdr[:])
	zw.Close()
	enc := binary.BigEndian.AppendUint32(nil, 0x1c849304|0x10) // V2 compressed cookie
	enc = binary.BigEndian.AppendUint32(enc, uint32(z.Len()))
	enc = append(enc, z.Bytes()...)
	_, err := (&report.Latency{Histogram: base64.StdEncoding.EncodeToString(enc)}).DecodeHistogram()
	if err == nil || !strings.Contains(err.Error(), "counters") {
		t.Errorf("huge geometry: error %v, want a refusal naming the counters needed", err)
	}
}
