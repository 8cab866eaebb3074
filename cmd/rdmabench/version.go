package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/rdmabench/rdmabench/internal/buildinfo"
	"github.com/spf13/cobra"
)

func newVersionCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit, Go version and whether verbs are in",
		Example: `  rdmabench version
  rdmabench version -o json | jq -r .commit`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			i := buildinfo.Get()
			w := cmd.OutOrStdout()
			switch format {
			case "json":
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				return enc.Encode(i)
			case "table", "": // plainFormats
				_, err := io.WriteString(w, versionText(i))
				return err
			}
			return usageError{fmt.Errorf("unknown output format %q (want table or json)", format)}
		},
	}
	cmd.Flags().StringVarP(&format, "output", "o", "table", "output format: table or json")
	return cmd
}

// plainFormats are the output formats of devices and version: a table or
// their JSON.
var plainFormats = []string{"table", "json"}

// versionText is what `rdmabench version` and `rdmabench --version` print.
func versionText(i buildinfo.Info) string {
	commit := i.Commit
	if commit == "" {
		commit = "unknown"
	} else if i.Modified {
		commit += " (modified)"
	}
	verbs := "yes (libibverbs)"
	if !i.Verbs {
		verbs = "no (built without libibverbs: RDMA tests unavailable)"
	}
	return fmt.Sprintf("rdmabench %s\ncommit:   %s\ngo:       %s\nverbs:    %s\nprotocol: %d\n",
		i.Version, commit, i.GoVersion, verbs, buildinfo.ProtocolVersion)
}
