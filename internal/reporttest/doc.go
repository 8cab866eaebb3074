// Package reporttest holds the test documents and checks that the tests
// of pkg/report and of its packages compare, render and plot share: a
// package's _test.go files cannot be reached from another package's
// tests. Only tests import it.
package reporttest
