package report

// The test documents of this package, for the tests of package report_test
// that draw them with pkg/report/plot (which imports report, so that the
// tests inside report cannot).
var (
	HostileDocs       = hostileDocs
	SuiteDoc          = suiteDoc
	AggregateOnlyMesh = aggregateOnlyMesh
	OneHostMesh       = oneHostMesh
	CheckText         = checkText
)
