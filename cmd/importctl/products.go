package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

func (a *app) productsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "products", Short: "Manage the instance-wide product catalogue"}
	cmd.AddCommand(&cobra.Command{
		Use:   "load FILE.json",
		Short: `Create or update the products of FILE ({"products": [...]}, as the API takes them), all or nothing`,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			body, err := os.ReadFile(args[0])
			if err != nil {
				return fmt.Errorf("read products: %w", err)
			}
			req, err := dataimport.DecodeProducts(body) // the API's validation
			if err != nil {
				return describe(err)
			}
			db, err := a.open(cmd)
			if err != nil {
				return err
			}
			res, err := db.UpsertProducts(cmd.Context(), req.Products)
			if err != nil {
				return describe(err)
			}
			created := 0
			for _, r := range res {
				if r.Created {
					created++
				}
			}
			return a.print(map[string]any{"products": res},
				fmt.Sprintf("%d products loaded (%d created, %d updated)", len(res), created, len(res)-created))
		},
	})
	return cmd
}

// describe spells out a validation error's field errors for an operator.
func describe(err error) error {
	e, ok := dataimport.AsError(err)
	if !ok || len(e.Errors) == 0 {
		return err
	}
	msg := e.Code + ": " + e.Detail
	for _, fe := range e.Errors {
		msg += fmt.Sprintf("\n  %s %s: %s", fe.Attr, fe.Code, fe.Detail)
	}
	return fmt.Errorf("%s", msg)
}
