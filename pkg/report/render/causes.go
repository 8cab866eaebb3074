package render

import (
	"strconv"
	"strings"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/textfmt"
)

// A run's failed results are said once per cause: a suite on a host
// without an RDMA device has one cause, that failed its eight RDMA tests,
// said once with the tests it failed (in a table's footnote, on stderr).

// Failure is one cause of a run's failed results: the cause, said once,
// and the results it failed.
type Failure struct {
	Cause   string
	Results []int // indexes of doc.Results, in order
}

// Failures are doc's failed results grouped by their [report.Result.Cause], in
// the order each cause first appears: a suite on a host without an RDMA
// device has one, that failed its eight RDMA tests.
func Failures(doc *report.Document) []Failure {
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
func (f *Failure) Where(doc *report.Document) string {
	sizes := map[string]map[int]bool{} // test -> sizes in doc
	for i := range doc.Results {
		r := &doc.Results[i]
		if sizes[r.Test] == nil {
			sizes[r.Test] = map[int]bool{}
		}
		sizes[r.Test][r.Size] = true
	}
	label := func(r *report.Result) string {
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
	runs := map[report.Key]int{} // results of each test, connection and size
	for i := range doc.Results {
		runs[doc.Results[i].Key()]++
	}
	var keys []report.Key
	hit := map[report.Key][]int{}
	first := map[report.Key]*report.Result{}
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
