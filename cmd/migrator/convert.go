package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gridshift/dataimport/pkg/csvconvert"
	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/market"
)

// offline marks commands that never talk to the API (no --api, no key).
const offline = "offline"

type convertOptions struct {
	mapping     string
	validate    bool
	phoneRegion string
	market      string
	catalogue   string
	remote      bool
}

func (c *cli) convertCmd() *cobra.Command {
	var o convertOptions
	cmd := &cobra.Command{
		Use:   "convert --mapping mapping.yaml accounts.csv [customers.csv …] > accounts.ndjson",
		Short: "Turn CSV exports of a legacy system into accounts, one JSON line each (see cmd/migrator/CONVERT.md)",
		Long: `Each file is matched to an entity of the mapping by its base name (the entity's
"file:"), or given as ENTITY=PATH. Files must be sorted by their account key.
Rows that cannot be mapped are reported on stderr as FILE:LINE:COLUMN; their
accounts are left out, the others written. Exit 0 all converted, 2 some rows
failed (or, with --validate, some accounts are invalid), 1 the run could not be done.`,
		Annotations: map[string]string{offline: "true"},
		Args:        cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (o.market != "" || o.catalogue != "" || o.remote) && !o.validate {
				return errors.New("--market, --catalogue and --remote choose how --validate validates: add --validate")
			}
			if o.remote && (o.market != "" || o.catalogue != "") {
				return errors.New("--remote applies the supplier's own market and catalogue: drop --market and --catalogue")
			}
			return c.convert(cmd.Context(), o, args)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.mapping, "mapping", "", "YAML mapping of columns to account fields (required)")
	f.BoolVar(&o.validate, "validate", false, "also run each account through the API's validation and report failures")
	f.StringVar(&o.phoneRegion, "phone-region", "GB", "with --validate: the supplier's phone region")
	f.StringVar(&o.market, "market", "", "with --validate: the supplier's market rules ("+strings.Join(market.Names(), ", ")+"; default NONE)")
	f.StringVar(&o.catalogue, "catalogue", "", "with --validate: products file ({\"products\": [...]}) of a supplier that requires products")
	f.BoolVar(&o.remote, "remote", false, "with --validate: ask the service (--api, --api-key) to validate, in bulk; nothing is staged")
	_ = cmd.MarkFlagRequired("mapping")
	cmd.AddCommand(c.convertInitCmd())
	return cmd
}

// offlineRules are the rules --validate applies without the service: the
// same ones the server takes from the supplier's settings.
func offlineRules(o convertOptions) (dataimport.AccountRules, error) {
	// The payment vendors are the service's configuration, unknown here:
	// the API checks them when the converted accounts are staged.
	rules := dataimport.AccountRules{PhoneRegion: strings.ToUpper(o.phoneRegion), Today: dataimport.DateOf(time.Now().UTC()), SkipPaymentVendors: true}
	var err error
	if rules.Market, err = market.For(strings.ToUpper(o.market)); err != nil {
		return rules, fmt.Errorf("--market: %w", err)
	}
	if o.catalogue != "" {
		raw, err := os.ReadFile(o.catalogue)
		if err != nil {
			return rules, fmt.Errorf("--catalogue: %w", err)
		}
		req, err := dataimport.DecodeProducts(raw)
		if err != nil {
			return rules, fmt.Errorf("--catalogue %s: %w", o.catalogue, describe(err))
		}
		rules.Catalogue = dataimport.StaticCatalogue(req.Products)
	}
	return rules, nil
}

// describe spells out a validation error's field errors.
func describe(err error) error {
	var de *dataimport.Error
	if !errors.As(err, &de) || len(de.Errors) == 0 {
		return err
	}
	var b strings.Builder
	b.WriteString(de.Detail)
	for _, fe := range de.Errors {
		fmt.Fprintf(&b, "\n  %s %s: %s", fe.Attr, fe.Code, fe.Detail)
	}
	return errors.New(b.String())
}

func (c *cli) convert(ctx context.Context, o convertOptions, args []string) error {
	src, err := os.ReadFile(o.mapping)
	if err != nil {
		return fmt.Errorf("mapping: %w", err)
	}
	m, err := csvconvert.Load(src)
	if err != nil {
		return err
	}
	rules, err := offlineRules(o)
	if err != nil {
		return err
	}
	check := func(js []byte) error {
		_, err := dataimport.DecodeAccountFor(js, func(*dataimport.Account) (dataimport.AccountRules, error) { return rules, nil })
		return err
	}
	paths, err := matchFiles(m.Entities(), args)
	if err != nil {
		return err
	}
	var inputs []csvconvert.Input
	for _, p := range paths {
		f, err := os.Open(p.path)
		if err != nil {
			return err
		}
		defer f.Close()
		inputs = append(inputs, csvconvert.Input{Entity: p.entity, Name: p.path, R: f})
	}
	out := bufio.NewWriterSize(c.stdout, 256<<10)
	errOut := bufio.NewWriter(c.stderr)
	defer errOut.Flush()
	line, invalid := 0, 0
	st, err := m.Convert(ctx, inputs, func(a csvconvert.Account) error {
		line++
		if o.validate {
			if verr := check(a.JSON); verr != nil {
				invalid++
				reportInvalid(errOut, line, a, verr)
			}
		}
		if _, err := out.Write(a.JSON); err != nil {
			return err
		}
		return out.WriteByte('\n')
	}, func(e csvconvert.RowError) { fmt.Fprintln(errOut, e.String()) })
	if ferr := out.Flush(); err == nil {
		err = ferr
	}
	if ctx.Err() != nil {
		// Ctrl-C: the accounts written so far are whole lines.
		return fmt.Errorf("%w after %d accounts", errInterrupted, st.Converted)
	}
	if ue := (*csvconvert.UnsortedError)(nil); errors.As(err, &ue) {
		// Reported like row errors, and "fix and re-run" like them.
		fmt.Fprintln(errOut, ue.Error())
		return fmt.Errorf("%w: files not sorted by the account key, %d accounts written", errSomeFailed, st.Converted)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(errOut, "migrator: %d rows read, %d accounts written, %d left out, %d row errors", st.Rows, st.Converted, st.Failed, st.Errors)
	if o.validate {
		fmt.Fprintf(errOut, ", %d written accounts invalid", invalid)
	}
	fmt.Fprintln(errOut)
	if st.Errors > 0 || invalid > 0 {
		return errSomeFailed
	}
	return nil
}

// reportInvalid prints one line per field error of an account that does not
// pass validation: the output line, the account's root row, the field.
func reportInvalid(w *bufio.Writer, line int, a csvconvert.Account, err error) {
	where := fmt.Sprintf("output line %d (account %s, %s:%d)", line, a.Key, a.File, a.Line)
	var de *dataimport.Error
	if !errors.As(err, &de) || len(de.Errors) == 0 {
		fmt.Fprintf(w, "%s: invalid: %v\n", where, err)
		return
	}
	for _, fe := range de.Errors {
		fmt.Fprintf(w, "%s: invalid: %s: %s (%s)\n", where, fe.Attr, fe.Detail, fe.Code)
	}
}

type entityFile struct{ entity, path string }

// matchFiles pairs each argument with an entity: ENTITY=PATH, or a path
// whose base name is an entity's file. Every entity needs exactly one file.
func matchFiles(ents []csvconvert.FileMapping, args []string) ([]entityFile, error) {
	got := map[string]string{}
	for _, a := range args {
		name, path, explicit := strings.Cut(a, "=")
		if !explicit {
			path, name = a, ""
			for _, e := range ents {
				if e.File != "" && e.File == filepath.Base(a) {
					name = e.Entity
				}
			}
			if name == "" {
				return nil, fmt.Errorf("%s: no entity of the mapping has file %q (or pass ENTITY=%s)", a, filepath.Base(a), a)
			}
		}
		if prev, dup := got[name]; dup {
			return nil, fmt.Errorf("entity %s given twice (%s and %s)", name, prev, path)
		}
		got[name] = path
	}
	var out []entityFile
	var missing []string
	for _, e := range ents {
		p, ok := got[e.Entity]
		if !ok {
			missing = append(missing, e.Entity)
			continue
		}
		delete(got, e.Entity)
		out = append(out, entityFile{e.Entity, p})
	}
	for name := range got {
		return nil, fmt.Errorf("no entity %q in the mapping", name)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("no file for entities %s (pass ENTITY=PATH when the file name differs)", strings.Join(missing, ", "))
	}
	return out, nil
}
