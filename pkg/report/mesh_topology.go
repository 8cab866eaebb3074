package report

// MeshTopology is the fabric as the operator described it (mesh
// --topology: Slurm's topology.conf): its switches, each with the nodes
// attached to it and the switches under it. Each link's Switches are the
// switches it crossed.
type MeshTopology struct {
	// File is the file as it was given.
	File     string       `json:"file"`
	Switches []MeshSwitch `json:"switches"`
}

// MeshSwitch is one switch of the topology.
type MeshSwitch struct {
	Name string `json:"name"`
	// Parent is the switch above it; empty for a top switch.
	Parent string `json:"parent,omitempty"`
	// Nodes are the hosts attached to it, Switches the switches under it.
	Nodes     []string `json:"nodes,omitempty"`
	Switches  []string `json:"switches,omitempty"`
	LinkSpeed string   `json:"link_speed,omitempty"`
}

// SwitchEvidence is what a switch verdict was judged on: the links
// through its uplinks (one end under it) and those inside it (both).
type SwitchEvidence struct {
	Switch string `json:"switch"`
	// Or are the switches the links measured cannot tell from it: every
	// link through one went through the others.
	Or []string `json:"or,omitempty"`
	// CrossLinks were judged, BadCrossLinks of them bad; likewise its
	// inner links.
	CrossLinks    int `json:"cross_links"`
	BadCrossLinks int `json:"bad_cross_links"`
	InnerLinks    int `json:"inner_links"`
	BadInnerLinks int `json:"bad_inner_links"`
	// Hosts under it had a cross-switch link; BadHosts of them had most
	// of theirs bad.
	Hosts    int `json:"hosts"`
	BadHosts int `json:"bad_hosts"`
	// InnerValue is the median figure of its inner links, in the
	// figure's unit; InnerRatio that to the fleet median.
	InnerValue float64 `json:"inner_value"`
	InnerRatio float64 `json:"inner_ratio"`
}
