package report_test

import (
	"math"
	"testing"

	"github.com/rdmabench/rdmabench/internal/reporttest"
	"github.com/rdmabench/rdmabench/pkg/report"
)

// linkRateDoc is write-bw at 64 KiB on a 100 Gbit/s link, then tcp-bw.
func linkRateDoc(gbps, link float64) *report.Document {
	doc := report.NewDocument()
	doc.Results = []report.Result{
		{Test: "write-bw", Connection: "RC", Size: 65536, Bandwidth: reporttest.BwAt(65536, gbps), Effective: &report.Effective{LinkGbps: link}},
		{Test: "tcp-bw", Connection: "TCP", Size: 65536, Bandwidth: reporttest.BwAt(65536, 5)},
	}
	return doc
}

// TestCheckLimitsLink: a limit relative to the link measures each RDMA
// bandwidth against the link rate its result records; TCP results are
// not checked against it; a result without a link rate fails it.
func TestCheckLimitsLink(t *testing.T) {
	l := report.Limits{MinLinkFraction: 0.9}
	if fs := linkRateDoc(95, 100).CheckLimits(l); len(fs) != 0 {
		t.Errorf("95 of 100 Gbit/s: %q", messages2(fs))
	}
	reporttest.Equal(t, "below", messages2(linkRateDoc(85, 100).CheckLimits(l)), []string{
		"write-bw RC 65536 B: bandwidth 85.00 Gbit/s < limit 90% of the link (90 of 100 Gbit/s)",
	})
	if fs := linkRateDoc(85, 100).CheckLimits(l); math.Abs(fs[0].Limit-90) > 1e-6 || math.Abs(fs[0].Value-85) > 1e-3 {
		t.Errorf("failure fields %+v", fs[0])
	}
	reporttest.Equal(t, "no link rate", messages2(linkRateDoc(85, 0).CheckLimits(l)), []string{
		"write-bw RC 65536 B: bandwidth 90% of the link: the result records no link rate to measure it against",
	})
	tcp := linkRateDoc(1, 100)
	tcp.Results = tcp.Results[1:]
	reporttest.Equal(t, "TCP only", messages2(tcp.CheckLimits(l)), []string{
		"limit bandwidth 90% of the link: no result has an RDMA bandwidth to check it against",
	})
	// With an absolute limit too, each is checked.
	reporttest.Equal(t, "both", messages2(linkRateDoc(85, 100).CheckLimits(report.Limits{MinLinkFraction: 0.8, MinGbps: 88})), []string{
		"write-bw RC 65536 B: bandwidth 85.00 Gbit/s < limit 88 Gbit/s",
		"tcp-bw TCP 65536 B: bandwidth 5.000 Gbit/s < limit 88 Gbit/s",
	})
}

// TestCheckLimitsLinkRepeated: over repeated runs the median is measured
// against the link rate of its test and size.
func TestCheckLimitsLinkRepeated(t *testing.T) {
	doc := reporttest.BaseRuns() // bandwidth median 98.5
	for i := range doc.Results {
		doc.Results[i].Effective = &report.Effective{LinkGbps: 100}
	}
	if fs := doc.CheckLimits(report.Limits{MinLinkFraction: 0.98}); len(fs) != 0 {
		t.Errorf("98.5 of 100: %q", messages2(fs))
	}
	reporttest.Equal(t, "median", messages2(doc.CheckLimits(report.Limits{MinLinkFraction: 0.99})), []string{
		"write-bw RC 65536 B: bandwidth 98.50 Gbit/s (median of 5 runs) < limit 99% of the link (99 of 100 Gbit/s)",
	})
}
