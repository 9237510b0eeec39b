package main

import (
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gridshift/dataimport/pkg/config"
	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/webhook"
)

// webhookCmd manages partner webhook endpoints (CONTRACT §9). Deliveries
// are made by the workers; these commands change what Postgres says.
func (a *app) webhookCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "webhook", Short: "Manage partner webhook endpoints (signed, Standard Webhooks)"}
	cmd.AddCommand(a.webhookAddCmd(), a.webhookListCmd(), a.webhookEnableCmd(true), a.webhookEnableCmd(false),
		a.webhookRotateCmd(), a.webhookReplayCmd(), a.webhookLogCmd())
	return cmd
}

func (a *app) webhookAddCmd() *cobra.Command {
	var org, url string
	var events []string
	c := &cobra.Command{
		Use:   "add --org NAME --url https://… [--events TYPE,TYPE]",
		Short: "Register an endpoint; prints its id and signing secret (whsec_…). It receives events from now on",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.Load()
			if err != nil {
				return err
			}
			// The same guard the workers dial through.
			if _, err := (webhook.Guard{AllowPrivate: cfg.WebhookAllowPrivate}).CheckURL(cmd.Context(), url); err != nil {
				return err
			}
			db, err := a.open(cmd)
			if err != nil {
				return err
			}
			secret, err := webhook.NewSecret()
			if err != nil {
				return err
			}
			e, err := db.CreateWebhookEndpoint(cmd.Context(), postgres.NewWebhookEndpoint{Organisation: strings.TrimSpace(org),
				URL: url, Secret: secret, EventTypes: cleanTypes(events)})
			if err != nil {
				return err
			}
			return a.print(map[string]any{"id": e.ID, "secret": secret, "url": e.URL, "organisation": e.Organisation, "event_types": e.EventTypes},
				fmt.Sprintf("webhook endpoint %d registered for %q\nsecret: %s (shown once; verify deliveries with it)", e.ID, e.Organisation, secret))
		},
	}
	c.Flags().StringVar(&org, "org", "", "organisation (required)")
	c.Flags().StringVar(&url, "url", "", "https URL resolving to public addresses (required)")
	c.Flags().StringSliceVar(&events, "events", nil, "published event types to send (default: all)")
	_ = c.MarkFlagRequired("org")
	_ = c.MarkFlagRequired("url")
	return c
}

func cleanTypes(in []string) []string {
	out := []string{}
	for _, t := range in {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

func (a *app) webhookListCmd() *cobra.Command {
	var org string
	c := &cobra.Command{
		Use:   "list [--org NAME]",
		Short: "List endpoints (secrets are not shown)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			db, err := a.open(cmd)
			if err != nil {
				return err
			}
			es, err := db.WebhookEndpoints(cmd.Context(), org)
			if err != nil {
				return err
			}
			if a.asJSON {
				return a.print(es, "")
			}
			tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tORGANISATION\tURL\tEVENTS\tENABLED\tDISABLED REASON")
			for _, e := range es {
				types, reason := "all", ""
				if len(e.EventTypes) > 0 {
					types = strings.Join(e.EventTypes, ",")
				}
				if e.DisabledReason != nil {
					reason = *e.DisabledReason
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%t\t%s\n", e.ID, e.Organisation, e.URL, types, e.Enabled, reason)
			}
			return tw.Flush()
		},
	}
	c.Flags().StringVar(&org, "org", "", "only this organisation's endpoints")
	return c
}

func endpointID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("ID must be a webhook endpoint id from `importctl webhook list`, got %q", s)
	}
	return id, nil
}

func (a *app) webhookEnableCmd(enable bool) *cobra.Command {
	use, short, done := "disable ID", "Stop sending to an endpoint (deliveries wait until it is enabled)", "disabled"
	if enable {
		use, short, done = "enable ID", "Send to an endpoint again, starting with what waited", "enabled"
	}
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := endpointID(args[0])
			if err != nil {
				return err
			}
			db, err := a.open(cmd)
			if err != nil {
				return err
			}
			if err := db.SetWebhookEnabled(cmd.Context(), id, enable, "disabled by an operator"); err != nil {
				return err
			}
			return a.print(map[string]any{"id": id, "enabled": enable}, fmt.Sprintf("webhook endpoint %d %s", id, done))
		},
	}
}

func (a *app) webhookRotateCmd() *cobra.Command {
	var overlap time.Duration
	c := &cobra.Command{
		Use:   "rotate-secret ID [--overlap 24h]",
		Short: "Replace an endpoint's signing secret; prints the new one. Attempts are signed with both until the overlap ends (0: the old one stops now)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := endpointID(args[0])
			if err != nil {
				return err
			}
			db, err := a.open(cmd)
			if err != nil {
				return err
			}
			secret, err := webhook.NewSecret()
			if err != nil {
				return err
			}
			if err := db.RotateWebhookSecret(cmd.Context(), id, secret, overlap); err != nil {
				return err
			}
			return a.print(map[string]any{"id": id, "secret": secret}, fmt.Sprintf("webhook endpoint %d: new secret %s", id, secret))
		},
	}
	c.Flags().DurationVar(&overlap, "overlap", webhook.RotationOverlap, "how long the old secret still signs beside the new one")
	return c
}

func (a *app) webhookReplayCmd() *cobra.Command {
	var since string
	c := &cobra.Command{
		Use:   "replay ID --since RFC3339",
		Short: "Send an endpoint's events since a time again (same event ids; receivers de-duplicate on webhook-id)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := endpointID(args[0])
			if err != nil {
				return err
			}
			at, err := time.Parse(time.RFC3339, since)
			if err != nil {
				return fmt.Errorf("--since must be an RFC 3339 time such as 2026-01-02T15:04:05Z: %w", err)
			}
			db, err := a.open(cmd)
			if err != nil {
				return err
			}
			due, err := db.ReplayWebhook(cmd.Context(), id, at)
			if err != nil {
				return err
			}
			return a.print(map[string]any{"id": id, "scheduled": len(due)},
				fmt.Sprintf("webhook endpoint %d: %d events scheduled again; workers send them within RECONCILE_GRACE + RECONCILE_EVERY (20 s by default)", id, len(due)))
		},
	}
	c.Flags().StringVar(&since, "since", "", "replay events that occurred at or after this time (required)")
	_ = c.MarkFlagRequired("since")
	return c
}

func (a *app) webhookLogCmd() *cobra.Command {
	var limit int
	c := &cobra.Command{
		Use:   "log ID [--limit N]",
		Short: "An endpoint's last delivery attempts: time, event, status, latency, error",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := endpointID(args[0])
			if err != nil {
				return err
			}
			if limit <= 0 || limit > 10000 {
				return fmt.Errorf("--limit must be between 1 and 10000")
			}
			db, err := a.open(cmd)
			if err != nil {
				return err
			}
			if _, err := db.WebhookEndpoint(cmd.Context(), id); err != nil {
				return err
			}
			log, err := db.WebhookLog(cmd.Context(), id, limit)
			if err != nil {
				return err
			}
			if a.asJSON {
				return a.print(log, "")
			}
			tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "AT\tEVENT\tATTEMPT\tSTATUS\tLATENCY\tSTATE\tERROR")
			for _, l := range log {
				status, errText := "-", ""
				if l.Status != nil {
					status = strconv.Itoa(*l.Status)
				}
				if l.Error != nil {
					errText = *l.Error
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%dms\t%s\t%s\n", l.At.UTC().Format(time.RFC3339Nano), l.EventID, l.Attempt, status,
					l.LatencyMS, l.State, errText)
			}
			return tw.Flush()
		},
	}
	c.Flags().IntVar(&limit, "limit", 20, "how many attempts, newest first")
	return c
}
