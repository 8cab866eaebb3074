// Package reporttest holds the test documents and checks that the tests
// of pkg/report, pkg/report/compare, pkg/report/render and
// pkg/report/plot share: golden files, meshes, repeated runs, suite and
// sweep documents, and the check of the Go model against the published
// schema. Only tests import it.
//
// It imports pkg/report, so pkg/report's own tests are in package
// report_test and see that package's internals only through its
// export_test.go.
package reporttest
