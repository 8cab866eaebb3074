package render

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rdmabench/rdmabench/pkg/report"
	"github.com/rdmabench/rdmabench/pkg/report/textfmt"
)

// Output formats of a results document.
const (
	FormatTable    = "table"
	FormatJSON     = "json"
	FormatCSV      = "csv"
	FormatMarkdown = "markdown"
	FormatGobench  = "gobench"
)

// Formats lists every output format, in the order help texts give them.
var Formats = []string{FormatTable, FormatJSON, FormatCSV, FormatMarkdown, FormatGobench,
	FormatBenchActionLatency, FormatBenchActionBandwidth, FormatOpenMetrics}

// ErrFormat is wrapped by the errors of a format asked for that does not
// exist, or that the documents given have no rendering in (a mesh's
// openmetrics): what was asked is wrong, not the documents (a usage
// error).
var ErrFormat = errors.New("no such output format for these documents")

// formatError is an error wrapping ErrFormat that says msg alone.
type formatError struct{ msg string }

func (e formatError) Error() string        { return e.msg }
func (e formatError) Is(target error) bool { return target == ErrFormat }

// CheckFormat returns nil if format is one of [Formats], else an error
// naming the known ones (for a usage error), wrapping ErrFormat.
func CheckFormat(format string) error {
	for _, f := range Formats {
		if f == format {
			return nil
		}
	}
	return formatError{fmt.Sprintf("unknown output format %q (want %s)", format, strings.Join(Formats, ", "))}
}

// FormatForPath returns the format a results file should be written in,
// from its extension: ".txt" table, ".csv" csv, ".md" markdown, ".bench"
// gobench, ".prom" openmetrics (the extension node_exporter's textfile
// collector reads), anything else JSON (the form `rdmabench report` and
// `compare` read back).
func FormatForPath(path string) string {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".txt":
		return FormatTable
	case ".csv":
		return FormatCSV
	case ".md":
		return FormatMarkdown
	case ".bench":
		return FormatGobench
	case ".prom":
		return FormatOpenMetrics
	}
	return FormatJSON
}

// Write writes doc in format, one of [Formats].
//
// A mesh document ([report.Document.Mesh]) renders as its matrices in table,
// markdown and csv (long form), and as itself in json; the other formats
// are refused.
func Write(w io.Writer, format string, doc *report.Document) error {
	return WriteWith(w, format, doc, Options{})
}

// WriteWith is [Write] with the table laid out as opts say.
func WriteWith(w io.Writer, format string, doc *report.Document, opts Options) error {
	if doc != nil && doc.Mesh != nil {
		return writeMeshWith(w, format, doc, opts)
	}
	switch format {
	case FormatTable:
		return WriteTableWith(w, doc, opts)
	case FormatJSON:
		return report.WriteJSON(w, doc)
	case FormatCSV:
		return WriteCSV(w, doc)
	case FormatMarkdown:
		return WriteMarkdown(w, doc)
	case FormatGobench:
		return WriteGobench(w, doc)
	case FormatBenchActionLatency, FormatBenchActionBandwidth:
		return WriteBenchAction(w, doc, format == FormatBenchActionBandwidth)
	case FormatOpenMetrics:
		return WriteOpenMetrics(w, doc)
	}
	return fmt.Errorf("report: %w", CheckFormat(format))
}

// WriteSources writes several documents together in format, as `rdmabench
// report FILE...` prints them. One source is written exactly as [Write]
// would. Several:
//   - table and markdown: one section per source, each headed by its name
//     ("==> base.json <==" in a table, a "### base.json" heading in
//     Markdown), each with its own header block, since hosts, devices and
//     parameters may differ;
//   - csv: one table, with a first column "source" holding each row's
//     source name (mesh documents' links, or load pattern meshes' steps,
//     each apart from the others);
//   - json: a JSON array of the documents, each unchanged (not merged:
//     their hosts and parameters may differ); each element is a document
//     ReadJSON reads;
//   - gobench: the documents one after another, each starting with a
//     comment line naming its source, so that benchstat pools the results
//     of the same benchmark across sources as repeated runs;
//   - github-action-benchmark-*: one JSON array, each entry's name
//     starting with its source's name;
//   - openmetrics: one exposition, each sample with a label source naming
//     its source.
func WriteSources(w io.Writer, format string, srcs []report.Source) error {
	return WriteSourcesWith(w, format, srcs, Options{})
}

// WriteSourcesWith is [WriteSources] with tables laid out as opts say.
func WriteSourcesWith(w io.Writer, format string, srcs []report.Source, opts Options) error {
	if err := CheckFormat(format); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	for _, s := range srcs {
		if s.Doc == nil {
			return fmt.Errorf("report: %s: nil document", s.Name)
		}
		if s.Doc.Mesh != nil && !slices.Contains(MeshFormats, format) {
			return fmt.Errorf("%s: %w", s.Name, errMeshFormat(format))
		}
	}
	switch {
	case len(srcs) == 0:
		return errors.New("report: no documents to write")
	case len(srcs) == 1:
		return WriteWith(w, format, srcs[0].Doc, opts)
	case format == FormatCSV:
		meshes, patterns := 0, 0
		for _, s := range srcs {
			if s.Doc.Mesh != nil {
				meshes++
				if s.Doc.Mesh.Pattern != nil {
					patterns++
				}
			}
		}
		switch {
		case meshes == 0:
			return writeCSV(w, srcs, true)
		case patterns == len(srcs):
			return writeMeshStepsCSV(w, srcs, true)
		case patterns > 0:
			return formatError{"report: csv: load pattern meshes (their steps) and other documents have different columns: render them apart"}
		case meshes == len(srcs):
			return writeMeshCSV(w, srcs, true)
		}
		return formatError{"report: csv: mesh documents and others have different columns: render them apart"}
	case format == FormatJSON:
		return writeJSONArray(w, srcs)
	case format == FormatBenchActionLatency || format == FormatBenchActionBandwidth:
		return writeBenchAction(w, srcs, format == FormatBenchActionBandwidth)
	case format == FormatOpenMetrics:
		return writeOpenMetrics(w, srcs)
	}
	var out bytes.Buffer
	for i, s := range srcs {
		switch format {
		case FormatTable:
			if i > 0 {
				out.WriteByte('\n')
			}
			fmt.Fprintf(&out, "%s\n", FitLines([]byte("==> "+textfmt.Clean(s.Name)+" <=="), opts.Width))
		case FormatMarkdown:
			if i > 0 {
				out.WriteByte('\n')
			}
			fmt.Fprintf(&out, "### %s\n\n", mdEscape(s.Name))
		case FormatGobench:
			if i > 0 {
				out.WriteByte('\n')
			}
			fmt.Fprintf(&out, "# source: %s\n", textfmt.Clean(s.Name))
		}
		if err := WriteWith(&out, format, s.Doc, opts); err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
	}
	if _, err := w.Write(out.Bytes()); err != nil {
		return fmt.Errorf("report: write %s: %w", format, err)
	}
	return nil
}

// writeJSONArray writes the documents as one indented JSON array.
func writeJSONArray(w io.Writer, srcs []report.Source) error {
	var out bytes.Buffer
	out.WriteString("[\n")
	for i, s := range srcs {
		var one bytes.Buffer
		if err := report.WriteJSON(&one, s.Doc); err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		// Indent the document one level inside the array.
		lines := strings.Split(strings.TrimSuffix(one.String(), "\n"), "\n")
		for j, l := range lines {
			out.WriteString("  " + l)
			if j < len(lines)-1 {
				out.WriteByte('\n')
			}
		}
		if i < len(srcs)-1 {
			out.WriteByte(',')
		}
		out.WriteByte('\n')
	}
	out.WriteString("]\n")
	if _, err := w.Write(out.Bytes()); err != nil {
		return fmt.Errorf("report: write json: %w", err)
	}
	return nil
}
