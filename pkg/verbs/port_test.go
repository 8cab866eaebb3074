package verbs

import "testing"

func TestLinkGbps(t *testing.T) {
	for _, c := range []struct {
		speed, width int
		want         float64
	}{
		{1, 1, 2.5},     // SDR 1X: what Soft-RoCE shows for 1 Gbit/s or an unknown speed
		{32, 2, 100},    // EDR 4X
		{64, 2, 200},    // HDR 4X
		{128, 2, 400},   // NDR 4X
		{4, 2, 40},      // QDR 4X
		{16, 2, 56},     // FDR 4X
		{64, 16, 100},   // HDR 2X
		{128, 4, 800},   // NDR 8X
		{0, 2, 0},       // unknown speed
		{32, 0, 0},      // unknown width
		{512, 2, 0},     // a speed this build does not know
		{2, 8, 5 * 12.}, // DDR 12X
	} {
		if got := LinkGbps(c.speed, c.width); got != c.want {
			t.Errorf("LinkGbps(%d, %d) = %g, want %g", c.speed, c.width, got, c.want)
		}
	}
}
