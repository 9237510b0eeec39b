package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/market"
	"github.com/gridshift/dataimport/pkg/postgres"
)

type supplierJSON struct {
	Code         string `json:"code"`
	Status       string `json:"status"`
	DocumentRoot string `json:"document_root"`
	WelcomeEmail bool   `json:"welcome_email"`
	PhoneRegion  string `json:"phone_region"`
	// Issue 18 settings.
	RequireProducts bool   `json:"require_products"`
	Market          string `json:"market"`
	// CONTRACT §14: the error-rate brake (null: off) and why it is Paused.
	Brake       *brakeJSON              `json:"brake"`
	PauseReason *dataimport.PauseReason `json:"pause_reason"`
}

type brakeJSON struct {
	FailureRate string `json:"failure_rate"`
	Window      int    `json:"window"`
}

func toSupplierJSON(s dataimport.Supplier) supplierJSON {
	out := supplierJSON{Code: s.Code, Status: string(s.Status), DocumentRoot: s.DocumentRoot,
		WelcomeEmail: s.WelcomeEmail, PhoneRegion: s.PhoneRegion, RequireProducts: s.RequireProducts, Market: s.Market,
		PauseReason: s.PauseReason}
	if s.Brake != nil {
		out.Brake = &brakeJSON{FailureRate: s.Brake.Rate(), Window: s.Brake.Window}
	}
	return out
}

func (a *app) supplierCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "supplier", Short: "Manage import suppliers"}

	var root, region, mkt string
	var welcome, requireProducts bool
	create := &cobra.Command{
		Use:   "create CODE",
		Short: "Create a supplier (status Ongoing)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			code := args[0]
			if !dataimport.ValidSupplierCode(code) {
				return fmt.Errorf("supplier code %q: use 1-64 letters, digits, '_', '.' or '-'", code)
			}
			region = strings.ToUpper(region)
			if !dataimport.ValidPhoneRegion(region) {
				return fmt.Errorf("--phone-region %q: use a two-letter region such as GB", region)
			}
			mkt = strings.ToUpper(mkt)
			if _, err := market.For(mkt); err != nil {
				return fmt.Errorf("--market: %w", err)
			}
			db, err := a.open(cmd)
			if err != nil {
				return err
			}
			s, err := db.CreateSupplier(cmd.Context(), dataimport.Supplier{Code: code, DocumentRoot: strings.Trim(root, "/"),
				WelcomeEmail: welcome, PhoneRegion: region, Status: dataimport.SupplierOngoing, RequireProducts: requireProducts, Market: mkt})
			if err != nil {
				return err
			}
			return a.print(toSupplierJSON(s), fmt.Sprintf("supplier %s created (status %s)", s.Code, s.Status))
		},
	}
	create.Flags().StringVar(&root, "root", "", "document root of the supplier in the object store")
	create.Flags().BoolVar(&welcome, "welcome-email", false, "send each migrated customer a welcome e-mail")
	create.Flags().StringVar(&region, "phone-region", "GB", "region for parsing phone numbers")
	create.Flags().BoolVar(&requireProducts, "require-products", false, "agreements and SUPPLY_CHARGE transactions must name catalogue products")
	create.Flags().StringVar(&mkt, "market", market.None, "market rule set: "+strings.Join(market.Names(), ", "))

	var updRequire bool
	var updMarket string
	update := &cobra.Command{
		Use:   "update CODE [--require-products=true|false] [--market GB|NONE]",
		Short: "Change a supplier's settings; every API replica sees them at once",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var set postgres.SupplierSettings
			if cmd.Flags().Changed("require-products") {
				set.RequireProducts = &updRequire
			}
			if cmd.Flags().Changed("market") {
				m := strings.ToUpper(updMarket)
				if _, err := market.For(m); err != nil {
					return fmt.Errorf("--market: %w", err)
				}
				set.Market = &m
			}
			if set.RequireProducts == nil && set.Market == nil {
				return fmt.Errorf("nothing to change: give --require-products or --market")
			}
			db, err := a.open(cmd)
			if err != nil {
				return err
			}
			s, err := db.UpdateSupplierSettings(cmd.Context(), args[0], set)
			if err != nil {
				return err
			}
			return a.print(toSupplierJSON(s), fmt.Sprintf("supplier %s: require-products %t, market %s", s.Code, s.RequireProducts, s.Market))
		},
	}
	update.Flags().BoolVar(&updRequire, "require-products", false, "agreements and SUPPLY_CHARGE transactions must name catalogue products")
	update.Flags().StringVar(&updMarket, "market", market.None, "market rule set: "+strings.Join(market.Names(), ", "))

	setStatus := &cobra.Command{
		Use:   "set-status CODE Ongoing|Paused|Complete",
		Short: "Change a supplier's status; every API replica sees it at once",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, ok := dataimport.ParseSupplierStatus(args[1])
			if !ok {
				return fmt.Errorf("status %q: use Ongoing, Paused or Complete", args[1])
			}
			db, err := a.open(cmd)
			if err != nil {
				return err
			}
			if err := db.SetSupplierStatus(cmd.Context(), args[0], st); err != nil {
				return err
			}
			return a.print(map[string]string{"code": args[0], "status": string(st)},
				fmt.Sprintf("supplier %s is now %s", args[0], st))
		},
	}

	list := &cobra.Command{
		Use:   "list",
		Short: "List suppliers",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			db, err := a.open(cmd)
			if err != nil {
				return err
			}
			ss, err := db.ListSuppliers(cmd.Context())
			if err != nil {
				return err
			}
			out := make([]supplierJSON, len(ss))
			for i, s := range ss {
				out[i] = toSupplierJSON(s)
			}
			if a.asJSON {
				return a.print(out, "")
			}
			tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "CODE\tSTATUS\tROOT\tWELCOME EMAIL\tPHONE REGION\tMARKET\tREQUIRE PRODUCTS")
			for _, s := range out {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%t\t%s\t%s\t%t\n", s.Code, s.Status, s.DocumentRoot, s.WelcomeEmail, s.PhoneRegion, s.Market, s.RequireProducts)
			}
			return tw.Flush()
		},
	}
	cmd.AddCommand(create, update, setStatus, list, a.supplierBrakeCmd())
	return cmd
}
