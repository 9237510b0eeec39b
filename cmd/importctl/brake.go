package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// supplierBrakeCmd is `importctl supplier brake` (CONTRACT §14): when more
// than the rate of the supplier's last window of creations failed, the
// supplier is paused by `system`; resuming it is an operator's act.
func (a *app) supplierBrakeCmd() *cobra.Command {
	var rate string
	var window int
	var off bool
	cmd := &cobra.Command{
		Use:   "brake CODE --failure-rate P% --window N | --off",
		Short: "Pause a supplier automatically when too many of its recent creations fail",
		Long: "Sets the supplier's error-rate brake: when more than P% of its last N creation outcomes failed\n" +
			"(the window must be full), the supplier is paused (actor system), audited, and its partners get\n" +
			"a supplier.paused-v1 event. Set it Ongoing again with `importctl supplier set-status CODE Ongoing`.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var b *dataimport.Brake
			switch {
			case off && (cmd.Flags().Changed("failure-rate") || cmd.Flags().Changed("window")):
				return fmt.Errorf("--off takes no --failure-rate or --window")
			case !off:
				if !cmd.Flags().Changed("failure-rate") || !cmd.Flags().Changed("window") {
					return fmt.Errorf("give --failure-rate and --window, or --off")
				}
				bp, err := dataimport.ParseFailureRate(rate)
				if err != nil {
					return fmt.Errorf("--failure-rate: %w", err)
				}
				b = &dataimport.Brake{FailureBP: bp, Window: window}
				if err := b.Validate(); err != nil {
					return err
				}
			}
			db, err := a.open(cmd)
			if err != nil {
				return err
			}
			s, err := db.SetSupplierBrake(cmd.Context(), args[0], b)
			if err != nil {
				return err
			}
			msg := fmt.Sprintf("supplier %s: error-rate brake off", s.Code)
			if s.Brake != nil {
				msg = fmt.Sprintf("supplier %s: paused when more than %s of its last %d creations fail", s.Code, s.Brake.Rate(), s.Brake.Window)
			}
			return a.print(toSupplierJSON(s), msg)
		},
	}
	cmd.Flags().StringVar(&rate, "failure-rate", "", "failure rate that trips the brake, e.g. 5% or 2.5%")
	cmd.Flags().IntVar(&window, "window", 0, fmt.Sprintf("creation outcomes looked at (%d to %d)", dataimport.BrakeMinWindow, dataimport.BrakeMaxWindow))
	cmd.Flags().BoolVar(&off, "off", false, "remove the brake")
	return cmd
}
