package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// WriteJSON writes doc as indented JSON (fields in declaration order) with a
// trailing newline. An empty Schema is written as [Schema].
func WriteJSON(w io.Writer, doc *Document) error {
	if doc == nil {
		return errors.New("report: write json: nil document")
	}
	d := *doc
	if d.Schema == "" {
		d.Schema = Schema
	}
	if d.Command == nil {
		d.Command = []string{}
	}
	if d.Results == nil {
		d.Results = []Result{}
	}
	if d.Mesh != nil && max(d.Mesh.Size, len(d.Mesh.Ranks)) > MeshRankMatrixRanks {
		// A summary past the rank matrices: its host matrices, indented,
		// would take a line a cell.
		return writeCompactJSON(w, &d)
	}
	if d.Mesh != nil && len(d.Mesh.Links) > 0 {
		return writeMeshJSON(w, &d)
	}
	b, err := json.MarshalIndent(&d, "", "  ")
	if err != nil {
		return fmt.Errorf("report: write json: %w", err)
	}
	b = append(b, '\n')
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("report: write json: %w", err)
	}
	return nil
}

// writeCompactJSON writes d as JSON on one line, with a trailing newline.
func writeCompactJSON(w io.Writer, d *Document) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	if err := enc.Encode(d); err != nil {
		return fmt.Errorf("report: write json: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("report: write json: %w", err)
	}
	return nil
}

// meshLinksKey is how the mesh's links start in the indented document.
var meshLinksKey = []byte("\n    \"links\": []")

// writeMeshJSON writes a mesh document as WriteJSON does, byte for byte,
// but its links one at a time: the document's other parts are encoded
// with no links, and each link is encoded in its place as it is written,
// so that the memory it takes is that of one link, not of the whole text.
func writeMeshJSON(w io.Writer, d *Document) error {
	m := *d.Mesh
	links := m.Links
	m.Links = []MeshLink{}
	d.Mesh = &m
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return fmt.Errorf("report: write json: %w", err)
	}
	at := bytes.Index(b, meshLinksKey)
	if at < 0 || bytes.Contains(b[at+len(meshLinksKey):], meshLinksKey) {
		return errors.New("report: write json: the mesh's links are not where they belong")
	}
	cut := at + len(meshLinksKey) - 1 // before the "]"
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.Write(b[:cut])
	for i := range links {
		item, err := json.MarshalIndent(&links[i], "      ", "  ")
		if err != nil {
			return fmt.Errorf("report: write json: link %d: %w", i+1, err)
		}
		bw.WriteString("\n      ")
		bw.Write(item)
		if i < len(links)-1 {
			bw.WriteByte(',')
		}
	}
	bw.WriteString("\n    ")
	bw.Write(b[cut:])
	bw.WriteByte('\n')
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("report: write json: %w", err)
	}
	return nil
}

// ReadJSON reads one results document. It refuses a document of another
// schema (naming the one it found) and says where malformed or truncated
// JSON breaks. Unknown fields are ignored, so documents from later v1
// writers stay readable. It reads at most [MaxDocumentBytes] and refuses a
// document nested deeper than [MaxDocumentDepth] or that would take more
// than [MaxDocumentMemory] once decoded, before decoding it; and one with
// a negative size, count, duration or figure, which no run produces. An
// event stream (a mesh's link stream, a run's --json-stream) reads as the
// document it makes (see readEventStream).
func ReadJSON(r io.Reader) (*Document, error) { return readDocument(r, "report: read results", -1) }

// readJSON is ReadJSON with its errors prefixed by what; size is the
// input's size when known (a regular file's), else -1.
func readJSON(r io.Reader, what string, size int64) (*Document, error) {
	data, err := readLimited(r, MaxDocumentBytes, size)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%s: empty input, not a results document", what)
	}
	var probe struct {
		Schema *string `json:"schema"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, jsonError(what, data, err)
	}
	switch {
	case probe.Schema == nil:
		return nil, fmt.Errorf("%s: no \"schema\" field; not an rdmabench results document (want schema %q)", what, Schema)
	case *probe.Schema != Schema:
		return nil, fmt.Errorf("%s: unsupported schema %q (this rdmabench reads %q)", what, *probe.Schema, Schema)
	}
	if err := checkShape(data, MaxDocumentMemory); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	doc := new(Document)
	if err := json.Unmarshal(data, doc); err != nil {
		return nil, jsonError(what, data, err)
	}
	if err := checkValues(doc); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return doc, nil
}

// jsonError makes a decoding error say where and what went wrong.
func jsonError(what string, data []byte, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "unexpected end of JSON input"):
		return fmt.Errorf("%s: truncated JSON: the input ends after %d bytes, in the middle of the document", what, len(data))
	case errors.As(err, &syn):
		line, col := lineCol(data, syn.Offset)
		return fmt.Errorf("%s: malformed JSON at line %d, column %d (byte %d): %w", what, line, col, syn.Offset, err)
	case errors.As(err, &typ) && typ.Field == "":
		return fmt.Errorf("%s: the input is a JSON %s, not a results document (an object)", what, typ.Value)
	case errors.As(err, &typ):
		return fmt.Errorf("%s: field %q: cannot store JSON %s in %s (byte %d)", what, typ.Field, typ.Value, typ.Type, typ.Offset)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// lineCol turns a byte offset (the one after the offending byte, as
// json.SyntaxError has it) into 1-based line and column.
func lineCol(data []byte, off int64) (line, col int) {
	off = min(max(off, 1), int64(len(data)))
	before := data[:off-1]
	line = bytes.Count(before, []byte{'\n'}) + 1
	col = len(before) - bytes.LastIndexByte(before, '\n')
	return line, col
}
