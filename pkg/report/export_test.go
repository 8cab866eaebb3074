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

// The inputs and checks of the tests of package report_test that render
// this package's test documents with pkg/report/render.
var (
	HostileHead = hostileHead
	StreamStart = streamStart
	TryRender   = tryRender
)
