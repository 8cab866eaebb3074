//go:build linux && cgo

package buildinfo

// verbs tells whether this build has libibverbs: the same condition as
// pkg/verbs' own, without importing it (that would link cgo into every
// package that asks for the version).
const verbs = true
