//go:build !linux

package watch

import (
	"context"
	"errors"
	"time"
)

func newTimerfdClock(context.Context, time.Duration) (slotClock, error) {
	return nil, errors.New("no timerfd")
}
