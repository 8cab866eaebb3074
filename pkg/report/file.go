package report

import (
	"bufio"
	"fmt"
	"io"
	"os"
)

// ReadFile reads the results document in the file at path (see ReadJSON).
// Every error names the file and says what is wrong with it: "read
// base.json: truncated JSON: ...", "read new.json: unsupported schema
// \"rdmabench/result/v2\" ...", "read results: open x.json: no such file
// or directory". A regular file larger than [MaxDocumentBytes] is refused
// by its size, unread; another kind of file (a pipe, a device) is read up
// to the limit.
func ReadFile(path string) (*Document, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read results: %w", err)
	}
	defer f.Close()
	size := int64(-1)
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		size = fi.Size()
	}
	return readDocument(f, "read "+path, size)
}

// ReadNamed is ReadJSON for an input known by name (a file name, "standard
// input"): its errors start "read NAME: ".
func ReadNamed(r io.Reader, name string) (*Document, error) {
	return readDocument(r, "read "+name, -1)
}

// readDocument reads a results document, or an event stream (a mesh's
// link stream, a run's --json-stream) as the document it makes. A stream
// is read line by line, with a limit per line rather than on the whole.
func readDocument(r io.Reader, what string, size int64) (*Document, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	if isEventStream(br) {
		return readEventStream(br, what)
	}
	return readJSON(br, what, size)
}

// Source is a document with the name it is known by (its file name).
type Source struct {
	Name string
	Doc  *Document
}
