package verbs

import "fmt"

// mtuFromEnum converts enum ibv_mtu (1..5) to bytes.
func mtuFromEnum(e int) MTU {
	if e >= 1 && e <= 5 {
		return MTU(128 << e)
	}
	return 0
}

// mtuToEnum converts bytes to enum ibv_mtu; 0 for an invalid MTU.
func mtuToEnum(m MTU) int {
	for e := 1; e <= 5; e++ {
		if MTU(128<<e) == m {
			return e
		}
	}
	return 0
}

// speedName renders ibv_port_attr.active_speed as a per-lane rate.
func speedName(s int) string {
	switch s {
	case 1:
		return "2.5 Gbps (SDR)"
	case 2:
		return "5.0 Gbps (DDR)"
	case 4, 8:
		return "10.0 Gbps (QDR/FDR10)"
	case 16:
		return "14.0 Gbps (FDR)"
	case 32:
		return "25.0 Gbps (EDR)"
	case 64:
		return "50.0 Gbps (HDR)"
	case 128:
		return "100.0 Gbps (NDR)"
	case 0:
		return "unknown"
	}
	return fmt.Sprintf("speed code %d", s)
}

// laneGbps is the nominal rate of one lane at ibv_port_attr.active_speed,
// Gbit/s, as the speed is named (speedName); 0 when unknown.
func laneGbps(s int) float64 {
	switch s {
	case 1:
		return 2.5
	case 2:
		return 5
	case 4, 8:
		return 10
	case 16:
		return 14
	case 32:
		return 25
	case 64:
		return 50
	case 128:
		return 100
	}
	return 0
}

// lanes is the number of lanes at ibv_port_attr.active_width; 0 when
// unknown.
func lanes(w int) int {
	switch w {
	case 1:
		return 1
	case 2:
		return 4
	case 4:
		return 8
	case 8:
		return 12
	case 16:
		return 2
	}
	return 0
}

// LinkGbps is the nominal rate of a port whose ibv_port_attr has
// active_speed s and active_width w: the lane rate times the lanes, as
// links are named (a 4X EDR port is 100 Gbit/s). On RoCE the kernel
// derives both from the network interface's speed (1 Gbit/s and unknown
// speeds show as 1X SDR, 2.5 Gbit/s). 0 when either is unknown.
func LinkGbps(s, w int) float64 { return laneGbps(s) * float64(lanes(w)) }

// widthName renders ibv_port_attr.active_width as a lane count.
func widthName(w int) string {
	switch w {
	case 1:
		return "1X"
	case 2:
		return "4X"
	case 4:
		return "8X"
	case 8:
		return "12X"
	case 16:
		return "2X"
	case 0:
		return "unknown"
	}
	return fmt.Sprintf("width code %d", w)
}
