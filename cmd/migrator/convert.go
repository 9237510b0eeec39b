package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
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
"file:"), or given as ENTITY=PATH. Files must be sorted by their account key
(an unsorted file is refused with nothing written). "convert init" drafts a
mapping from the files' headers.
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

// accountCheck validates a batch of converted accounts: one error (nil
// when valid) per account, or the error that stops the run.
type accountCheck func(ctx context.Context, accs []csvconvert.Account) ([]error, error)

// The service takes at most 1000 accounts and MAX_BODY_BYTES (default
// 5 MiB) per validate-accounts request; stay well inside both.
const (
	remoteBatch      = 500
	remoteBatchBytes = 1 << 20
)

func (c *cli) accountCheck(o convertOptions) (accountCheck, error) {
	if o.remote {
		if err := c.requireAPI(); err != nil {
			return nil, err
		}
		api, err := c.newAPI(1, 2*time.Minute, nil)
		if err != nil {
			return nil, err
		}
		return remoteCheck(api), nil
	}
	rules, err := offlineRules(o)
	if err != nil {
		return nil, err
	}
	return func(_ context.Context, accs []csvconvert.Account) ([]error, error) {
		out := make([]error, len(accs))
		for i, a := range accs {
			// The server's own entry point, with the supplier's rules given.
			_, out[i] = dataimport.DecodeAccountFor(a.JSON, func(*dataimport.Account) (dataimport.AccountRules, error) { return rules, nil })
		}
		return out, nil
	}, nil
}

// remoteResult is one line of the validate-accounts answer.
type remoteResult struct {
	Line   int                     `json:"line"`
	Valid  bool                    `json:"valid"`
	Code   string                  `json:"code"`
	Detail string                  `json:"detail"`
	Errors []dataimport.FieldError `json:"errors"`
}

// remoteCheck asks the service to validate a batch in one request
// (POST validate-accounts/): the supplier's own rules, nothing staged.
func remoteCheck(api *api) accountCheck {
	return func(ctx context.Context, accs []csvconvert.Account) ([]error, error) {
		var body bytes.Buffer
		for _, a := range accs {
			body.Write(a.JSON)
			body.WriteByte('\n')
		}
		resp, err := api.ValidateAccountsWithBodyWithResponse(ctx, nil, "application/x-ndjson", &body)
		if err != nil {
			return nil, fmt.Errorf("validate-accounts: %w", err)
		}
		if e := failed(resp.HTTPResponse, resp.Body); e != nil {
			return nil, fmt.Errorf("validate-accounts: %w", e)
		}
		out := make([]error, len(accs))
		answered := 0
		for l := range bytes.SplitSeq(bytes.TrimSpace(resp.Body), []byte("\n")) {
			var r remoteResult
			if err := json.Unmarshal(l, &r); err != nil || r.Line < 1 || r.Line > len(accs) {
				return nil, fmt.Errorf("validate-accounts: unexpected answer line %q", l)
			}
			answered++
			if !r.Valid {
				out[r.Line-1] = dataimport.ValidationError(r.Code, r.Detail, r.Errors)
			}
		}
		if answered != len(accs) {
			return nil, fmt.Errorf("validate-accounts: %d results for %d accounts", answered, len(accs))
		}
		return out, nil
	}
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
	check, err := c.accountCheck(o)
	if err != nil {
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
	// Accounts are validated (and then written) in batches: one request
	// for many with --remote, one at a time offline.
	maxBatch, maxBatchBytes := 1, 0
	if o.remote {
		maxBatch, maxBatchBytes = remoteBatch, remoteBatchBytes
	}
	var pending []csvconvert.Account
	size, line, invalid := 0, 0, 0
	flush := func() error {
		var verrs []error
		if o.validate && len(pending) > 0 {
			var err error
			if verrs, err = check(ctx, pending); err != nil {
				return err
			}
		}
		for i, a := range pending {
			line++
			if verrs != nil && verrs[i] != nil {
				invalid++
				reportInvalid(errOut, line, a, verrs[i])
			}
			if _, err := out.Write(a.JSON); err != nil {
				return err
			}
			if err := out.WriteByte('\n'); err != nil {
				return err
			}
		}
		pending, size = pending[:0], 0
		return nil
	}
	st, err := m.Convert(ctx, inputs, func(a csvconvert.Account) error {
		pending = append(pending, a)
		if size += len(a.JSON) + 1; len(pending) >= maxBatch || size >= maxBatchBytes {
			return flush()
		}
		return nil
	}, func(e csvconvert.RowError) { fmt.Fprintln(errOut, e.String()) })
	if err == nil {
		err = flush()
	}
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
