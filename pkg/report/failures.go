package report

import (
	"regexp"
	"strings"
)

// A run's errors are of two kinds, kept apart: a test that failed records
// its error in its result ([Result.Error]) and the run goes on with the
// next test; a run that stopped before its end (interrupted, or its file
// could no longer be written) records why in [Document.Error]. A suite on
// a host without an RDMA device has eight failed results and no run-level
// error: its TCP tests went on and measured.

// Stopped says why the run stopped before its end ([Document.Error]), ""
// when it ran to its end. Documents written before the two were kept
// apart recorded the first failed test's error there too, though the run
// went on (and a mesh its count of failed links): such an Error is
// recognised, as that result's own, and is not taken for a stop.
func (doc *Document) Stopped() string {
	if doc == nil || doc.Error == "" {
		return ""
	}
	if doc.Mesh != nil && legacyMeshError.MatchString(doc.Error) {
		return ""
	}
	for i := range doc.Results {
		r := &doc.Results[i]
		if r.Error == "" {
			continue
		}
		// The first failed test's error, as the run returned it: with
		// the test's name before it.
		if doc.Error == r.Test+": "+r.Error || (doc.Error == r.Error && strings.HasPrefix(r.Error, r.Test+": ")) {
			return ""
		}
		break
	}
	return doc.Error
}

var legacyMeshError = regexp.MustCompile(`^[0-9]+ of [0-9]+ links failed$`)

// Cause is r's error without the name of its test, which a failure
// before the test's first size begins carries ("write-lat: no RDMA device
// found" is "no RDMA device found"): what results of several tests that
// failed for one reason have in common.
func (r *Result) Cause() string {
	return strings.TrimPrefix(r.Error, r.Test+": ")
}
