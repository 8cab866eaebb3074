package workloads

// How the RDMA loops pace their posts (--rate-limit with the software
// limiter).

import "time"

// paceCatchUp is how much of its schedule a paced QP that fell behind (its
// window was full, its thread was descheduled) may catch up at once; it
// loses what it is late beyond that. Its schedule starts with its first
// measured message, and no message goes before its time in it, so the
// rate from the first message to the last never exceeds the limit (by
// more than one message); over a shorter span, such as an interval of
// -D, the catching up may exceed it by this much of the schedule.
const paceCatchUp = 100 * time.Millisecond

// paceBurst is the messages a QP paced one per perQPNs may catch up at
// once: paceCatchUp of its schedule, and at least a post list.
func paceBurst(perQPNs float64, postList int) int {
	return max(postList, int(float64(paceCatchUp)/perQPNs))
}
