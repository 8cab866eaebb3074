//go:build !unix

package main

import (
	"context"
	"io"
)

// logStatsOnSignal does nothing where there is no SIGUSR1.
func logStatsOnSignal(context.Context, io.Writer) {}
