package report

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/rdmabench/rdmabench/pkg/report/textfmt"
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

// Failure is one cause of a run's failed results: the cause, said once,
// and the results it failed.
type Failure struct {
	Cause   string
	Results []int // indexes of doc.Results, in order
}

// Failures are doc's failed results grouped by their [Result.Cause], in
// the order each cause first appears: a suite on a host without an RDMA
// device has one, that failed its eight RDMA tests.
func (doc *Document) Failures() []Failure {
	var out []Failure
	at := map[string]int{}
	for i := range doc.Results {
		r := &doc.Results[i]
		if r.Error == "" {
			continue
		}
		c := r.Cause()
		j, ok := at[c]
		if !ok {
			j = len(out)
			at[c] = j
			out = append(out, Failure{Cause: c})
		}
		out[j].Results = append(out[j].Results, i)
	}
	return out
}

// Where names the results f failed, for a footnote or a line on stderr:
// each test, with its size where doc has that test at several sizes
// ("write-lat, read-lat, write-bw 4096 B"); in a document of repeated
// runs, with its size and the runs ("write-lat 2 B (every run), read-bw
// 65536 B (runs 1-2)").
func (f *Failure) Where(doc *Document) string {
	sizes := map[string]map[int]bool{} // test -> sizes in doc
	for i := range doc.Results {
		r := &doc.Results[i]
		if sizes[r.Test] == nil {
			sizes[r.Test] = map[int]bool{}
		}
		sizes[r.Test][r.Size] = true
	}
	label := func(r *Result) string {
		s := textfmt.Clean(r.Test)
		if len(sizes[r.Test]) > 1 || doc.Repeated() {
			s += " " + strconv.Itoa(r.Size) + " B"
		}
		return s
	}
	var labels []string
	if !doc.Repeated() {
		seen := map[string]bool{}
		for _, i := range f.Results {
			if l := label(&doc.Results[i]); !seen[l] {
				seen[l] = true
				labels = append(labels, l)
			}
		}
		return strings.Join(labels, ", ")
	}
	runs := map[Key]int{} // results of each test, connection and size
	for i := range doc.Results {
		runs[doc.Results[i].Key()]++
	}
	var keys []Key
	hit := map[Key][]int{}
	first := map[Key]*Result{}
	for _, i := range f.Results {
		r := &doc.Results[i]
		k := r.Key()
		if _, ok := hit[k]; !ok {
			keys = append(keys, k)
			first[k] = r
		}
		hit[k] = append(hit[k], r.Run)
	}
	for _, k := range keys {
		which := "runs " + strings.Join(textfmt.IntRanges(hit[k]), ", ")
		switch {
		case len(hit[k]) == runs[k] && runs[k] > 1:
			which = "every run"
		case len(hit[k]) == 1:
			which = "run " + strconv.Itoa(hit[k][0])
		}
		labels = append(labels, label(first[k])+" ("+which+")")
	}
	return strings.Join(labels, ", ")
}
