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
