//go:build !linux || !cgo

package buildinfo

const verbs = false
