package report

import (
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// Event is one line of the event stream of a run (`--json-stream`):
// newline-delimited JSON objects written as the run goes, for long and
// duration-mode runs. In order:
//
//	start     once: Document holds what runs it and what was asked (no results)
//	test      a test begins: Run, Test, Size (its first size)
//	interval  a duration-mode interval ended: Run, Test, Size, Interval
//	result    a size finished (or failed): Run, Test, Size, Result
//	end       once: Document is the whole run, as -o json would print it
//
// The link stream of a mesh (`rdmabench mesh --out`) is such a stream too:
//
//	start     once the schedule starts: Document holds the run's facts and
//	          its mesh's ranks, schedule and tests (no links)
//	link      a link ended (measured or failed): Link, with its results
//	end       once: Document is the summary without its links,
//	          matrices and aggregate (the ranks as they ended, the error);
//	          absent when rank 0 was killed
//
// Every event has its kind and the wall-clock time it was written.
type Event struct {
	Event    string    `json:"event"`
	Time     time.Time `json:"time"`
	Run      int       `json:"run,omitempty"`
	Test     string    `json:"test,omitempty"`
	Size     int       `json:"size,omitempty"`
	Interval *Interval `json:"interval,omitempty"`
	Result   *Result   `json:"result,omitempty"`
	Link     *MeshLink `json:"link,omitempty"`
	Document *Document `json:"document,omitempty"`
}

// Event kinds.
const (
	EventStart    = "start"
	EventTest     = "test"
	EventInterval = "interval"
	EventResult   = "result"
	EventLink     = "link"
	EventEnd      = "end"
)

// WriteEvent writes e as one line of JSON, stamping its time if unset.
func WriteEvent(w io.Writer, e Event) error {
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("report: write event: %w", err)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("report: write event: %w", err)
	}
	return nil
}
