package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
)

// isEventStream says whether the input starts as an event stream (a line
// `{"event":...`) rather than a results document.
func isEventStream(br *bufio.Reader) bool {
	head, _ := br.Peek(64)
	return bytes.HasPrefix(bytes.TrimLeft(head, " \t\r\n"), []byte(`{"event":`))
}

// readEventStream reads an event stream: a mesh's link stream (`mesh
// --out`) becomes the mesh's summary, built link by link as rank 0 built
// it, so that its memory is that of the summary, not of the links' full
// results; any other run's stream (`--json-stream`) becomes its document.
// A stream without its end event (rank 0, or the run, killed) gives the
// document of what it holds, marked partial; a last line cut short is
// left out, saying so.
func readEventStream(br *bufio.Reader, what string) (*Document, error) {
	var (
		doc     *Document
		summary *MeshBuilder
		ended   bool
		line    int
		cut     string
	)
	for {
		data, err := readLine(br, MaxEventBytes)
		if len(bytes.TrimSpace(data)) == 0 && err == nil {
			continue
		}
		if err == io.EOF && len(bytes.TrimSpace(data)) == 0 {
			break
		}
		line++
		last := err == io.EOF
		if err != nil && !last {
			return nil, fmt.Errorf("%s: line %d: %w", what, line, err)
		}
		var e Event
		if derr := decodeEvent(data, &e); derr != nil {
			if last && doc != nil {
				cut = fmt.Sprintf("the last line (%d, %d bytes) is cut short, and left out: %v", line, len(data), derr)
				break
			}
			return nil, fmt.Errorf("%s: line %d: %w", what, line, derr)
		}
		if doc == nil && e.Event != EventStart {
			return nil, fmt.Errorf("%s: line %d: a %q event before the start event: not an rdmabench event stream", what, line, e.Event)
		}
		switch e.Event {
		case EventStart:
			if doc != nil || e.Document == nil {
				return nil, fmt.Errorf("%s: line %d: a second start event, or one without its document", what, line)
			}
			if e.Document.Schema != Schema {
				return nil, fmt.Errorf("%s: unsupported schema %q (this rdmabench reads %q)", what, e.Document.Schema, Schema)
			}
			doc = e.Document
			doc.Partial = true
			if doc.Mesh != nil {
				summary = NewMeshBuilder(doc.Mesh.Tests, Limits{}, 0)
				summary.SetRanks(max(doc.Mesh.Size, len(doc.Mesh.Ranks)))
			}
		case EventLink:
			if summary == nil || e.Link == nil {
				return nil, fmt.Errorf("%s: line %d: a link event without a link, or in the stream of a run that is not a mesh", what, line)
			}
			if err := checkValues(&Document{Mesh: &Mesh{Links: []MeshLink{*e.Link}}}); err != nil {
				return nil, fmt.Errorf("%s: line %d: %w", what, line, err)
			}
			if !e.Link.Retest && e.Link.Step == 0 { // a suspect's retest: in the verdicts; a pattern's flow: in the steps
				summary.Add(e.Link)
			}
		case EventResult:
			if e.Result != nil && summary == nil {
				doc.Results = append(doc.Results, *e.Result)
			}
		case EventEnd:
			if e.Document == nil {
				return nil, fmt.Errorf("%s: line %d: an end event without its document", what, line)
			}
			if summary == nil {
				doc = e.Document
			} else {
				m := doc.Mesh
				*doc = *e.Document
				if doc.Mesh == nil {
					doc.Mesh = m
				}
			}
			ended = true
		}
		if last {
			break
		}
	}
	if doc == nil {
		return nil, fmt.Errorf("%s: empty input, not a results document or event stream", what)
	}
	if summary != nil {
		gates, fails := doc.Mesh.Gates, doc.Mesh.Failures
		summary.Fill(doc.Mesh)
		if ended {
			// The end event holds the gates rank 0 applied.
			doc.Mesh.Gates, doc.Mesh.Failures = gates, fails
		}
	}
	if !ended {
		doc.Partial = true
		doc.Warnings = append(doc.Warnings, "the stream has no end event: the run was killed or is still going; this is what it holds")
	}
	if cut != "" {
		doc.Warnings = append(doc.Warnings, cut)
	}
	if err := checkValues(doc); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return doc, nil
}

// readLine reads one line (without its newline) of at most limit bytes;
// io.EOF comes with the last line when it has no newline, or alone.
func readLine(br *bufio.Reader, limit int) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(buf)+len(chunk) > limit+1 {
			return nil, fmt.Errorf("a line longer than %s: not one rdmabench wrote", byteCount(int64(limit)))
		}
		buf = append(buf, chunk...)
		switch {
		case err == nil:
			return buf[:len(buf)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF:
			return buf, io.EOF
		default:
			return nil, err
		}
	}
}

// decodeEvent decodes one line of a stream, with a results document's
// limits on its shape and decoded size.
func decodeEvent(data []byte, e *Event) error {
	if !json.Valid(data) {
		return jsonError("event", data, json.Unmarshal(data, e))
	}
	if err := checkShapeOf(data, reflect.TypeFor[Event](), MaxDocumentMemory); err != nil {
		return err
	}
	if err := json.Unmarshal(data, e); err != nil {
		return jsonError("event", data, err)
	}
	return nil
}
