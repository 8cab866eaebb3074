package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/rdmabench/rdmabench/pkg/verbs"
	"github.com/spf13/cobra"
)

func newDevicesCmd() *cobra.Command {
	var dev, format string
	cmd := &cobra.Command{
		Use:   "devices",
		Short: "List RDMA devices, ports, MTUs and GIDs, and the GID index picked",
		Long: `List RDMA devices with their ports (state, MTU, link layer, speed) and GID
tables. The GID index that automatic selection picks (the one tests use unless
-x is given) is marked with '*' and explained. Equivalent to ibv_devinfo -v
plus show_gids.`,
		Example: `  rdmabench devices
  rdmabench devices -d mlx5_0 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !slices.Contains(plainFormats, format) {
				return usageError{fmt.Errorf("unknown output format %q (want table or json)", format)}
			}
			devs, err := verbs.Devices()
			if err != nil {
				return err
			}
			if dev != "" {
				var names []string
				var keep []verbs.DeviceInfo
				for _, d := range devs {
					names = append(names, d.Name)
					if d.Name == dev {
						keep = append(keep, d)
					}
				}
				if len(keep) == 0 {
					return fmt.Errorf("%w named %q; this host has %s", verbs.ErrNoDevice, dev, strings.Join(names, ", "))
				}
				devs = keep
			}
			if format == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(devs)
			}
			return writeDevices(cmd.OutOrStdout(), devs)
		},
	}
	cmd.Flags().StringVarP(&dev, "ib-dev", "d", "", "show only this device")
	cmd.Flags().StringVarP(&format, "output", "o", "table", "output format: table or json")
	return cmd
}

func writeDevices(w io.Writer, devs []verbs.DeviceInfo) error {
	for i, d := range devs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s: transport %s, firmware %s, node GUID %s, %d port(s)\n",
			d.Name, d.Transport, d.FirmwareVer, d.NodeGUID, d.PhysPorts)
		fmt.Fprintf(w, "  limits: max_qp_wr %d, max_cqe %d, max_sge %d, max_qp_rd_atom %d, atomics %s\n",
			d.MaxQPWR, d.MaxCQE, d.MaxSGE, d.MaxQPRdAtom, d.AtomicCap)
		for _, p := range d.Ports {
			link := ""
			if p.LinkGbps > 0 {
				link = fmt.Sprintf(" (link %g Gbit/s)", p.LinkGbps)
			}
			fmt.Fprintf(w, "  port %d: %s, link layer %s, active MTU %d (max %d), LID %d, speed %s, width %s%s\n",
				p.Port, p.State, p.LinkLayer, p.ActiveMTU, p.MaxMTU, p.LID, p.ActiveSpeed, p.ActiveWidth, link)
			if len(p.GIDs) == 0 {
				fmt.Fprintln(w, "    GID table empty (is the port's network interface up and addressed?)")
				continue
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "    \tINDEX\tTYPE\tGID\tNETDEV")
			for _, g := range p.GIDs {
				mark := ""
				if p.GIDSelection != nil && p.GIDSelection.Index == g.Index {
					mark = "*"
				}
				netdev := g.Netdev
				if netdev == "" {
					netdev = "-"
				}
				fmt.Fprintf(tw, "    %s\t%d\t%s\t%s\t%s\n", mark, g.Index, g.Type, g.GID, netdev)
			}
			tw.Flush()
			if p.GIDSelection != nil {
				fmt.Fprintf(w, "    * GID index %d is used unless -x is given: %s\n", p.GIDSelection.Index, p.GIDSelection.Reason)
			}
		}
	}
	return nil
}
