// Package compare compares two rdmabench results documents
// ([report.Document]), as `rdmabench compare BASE NEW` does, and checks
// the gates of that command on the comparison. It depends on the model
// (pkg/report), which does not import it; pkg/report/render writes its
// comparisons (as a table, Markdown, JSON or CSV) and imports it. It is
// pure Go and builds with CGO_ENABLED=0.
//
// Two runs ([Compare], a [Comparison]) compare in the manner of benchstat:
// per test, connection and size found in both ([report.Key]), each
// figure's median over each side's runs with its confidence interval, the
// change of the medians, and whether the Mann-Whitney U test finds the two
// sets of runs different ([FigureChange]: the change always, "~" beside
// it when it is noise). The differences of the two runs' environments,
// parameters (the `compare` tags of [report.Params], read here) and
// effective settings ([report.SettingsDiff], the clock, the pinning) are
// its warnings and row notes.
//
// Two meshes ([CompareMesh], a [MeshComparison]) compare link by link,
// per matrix, with ranks matched by number or by host ([MatchByRank],
// [MatchByHost]) and each matrix's most changed links listed; summaries
// without rank matrices compare per host pair.
//
// Gates ([Gate]: [MaxRegressionGate], [MinRatioGate]) fail on a change
// beyond a threshold that is significant, or that has too few runs for a
// test, judged alone unless [GateOptions.RequireSignificance]
// ([Comparison.CheckGatesWith], a [GateResult]), or, in a mesh, on a
// link's change beyond it ([MeshComparison.CheckGates]). They fail
// closed: a test failed or missing in NEW, or nothing to compare, fails
// them too ([Incomplete]). The absolute limits of a run ([report.Limits],
// --limit-*) apply to NEW too ([GateResult.AddLimits],
// [MeshComparison.AddLimits]).
//
// The files: compare.go two runs, gates.go their gates; compare_mesh.go
// two meshes, their gates and the rows of a mesh comparison as CSV.
package compare
