package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/gridshift/dataimport/pkg/csvconvert"
)

// convertInitCmd is `migrator convert init`: a draft mapping from the
// files' headers, to edit rather than write from nothing.
func (c *cli) convertInitCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "init accounts.csv [customers.csv …] > mapping.yaml",
		Short: "Write a draft mapping from the CSV files' headers (the first file is the accounts file)",
		Long: `Reads each file's header line (delimiter guessed) and writes a mapping with
one entity per file: its array guessed from the file name (customers,
premises, meters, agreements, notes…), columns whose name matches an
account field mapped, the others commented out. Check every line, then
run convert with it.`,
		Annotations: map[string]string{offline: "true"},
		Args:        cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var files []csvconvert.HeaderFile
			for _, p := range args {
				f, err := os.Open(p)
				if err != nil {
					return err
				}
				h, err := csvconvert.ReadHeader(p, f)
				f.Close()
				if err != nil {
					return err
				}
				files = append(files, h)
			}
			out := csvconvert.Scaffold(files)
			if _, err := c.stdout.Write(out); err != nil {
				return fmt.Errorf("write mapping: %w", err)
			}
			return nil
		},
	}
}
