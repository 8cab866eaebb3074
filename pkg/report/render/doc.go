// Package render writes rdmabench results documents ([report.Document]) and
// their comparisons for people and for tools: `rdmabench report`, the
// output of a run (-o, --format) and of `rdmabench compare`. It depends on
// the model (pkg/report) and, for comparisons, on pkg/report/compare,
// neither of which imports it; pkg/report/plot, its sibling, draws the
// charts. It is pure Go and builds with CGO_ENABLED=0.
//
// The formats of a document ([Write], [WriteSources]; listed in
// [Formats], chosen from a file name by [FormatForPath]):
//   - table: the perftest-like text tables, laid out to a terminal width
//     ([Options], [FitLines]), with footnotes for warnings and errors;
//   - json: the document itself ([report.WriteJSON]), an array of them for
//     several;
//   - csv: one row per result ([CSVHeader]);
//   - markdown: the tables as GitHub-flavoured Markdown;
//   - gobench: the Go benchmark format, one line per result, that
//     benchstat reads ([GobenchName]);
//   - github-action-benchmark-latency and -bandwidth: that action's custom
//     JSON ([BenchActionEntry]);
//   - openmetrics: the OpenMetrics text exposition, for Prometheus and
//     node_exporter's textfile collector ([OpenMetricsLatencyBoundsNs]).
//
// A mesh document renders as its matrices, or past
// [report.MeshAggregateRanks] ranks its aggregate, in [MeshFormats]. A
// comparison of two documents ([compare.Comparison]: [WriteComparison],
// [CompareFormats]) or of two meshes ([compare.MeshComparison]:
// [WriteMeshComparison], [MeshCompareFormats]) writes as a
// table, Markdown or JSON (and a mesh comparison as CSV), with the verdict
// of its gates.
//
// The files: render.go the formats and the writing of several documents;
// table.go, width.go, summary.go, fabric.go and scale.go the results
// table, its layout to a width, the summaries of repeated runs, the rows of
// multi-device and threaded tests and the cells' units; markdown.go,
// csv.go, gobench.go, benchaction.go and openmetrics.go the other formats;
// mesh.go and mesh_aggregate.go a mesh document's matrices and aggregate;
// compare.go and compare_mesh.go the comparisons.
package render
