package main

import (
	"fmt"
	"os"
	"os/user"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gridshift/dataimport/pkg/postgres"
)

// commandActor is the audit log's "who" for this run: --actor as given
// (prefixed importctl: unless it names its kind), else importctl:<OS user>.
func commandActor(flag string) (postgres.Actor, error) {
	flag = strings.TrimSpace(flag)
	if flag != "" {
		if strings.ContainsAny(flag, "\r\n\t") || len(flag) > 150 {
			return "", fmt.Errorf("--actor %q: one line, at most 150 characters", flag)
		}
		if !strings.Contains(flag, ":") {
			flag = "importctl:" + flag
		}
		return postgres.Actor(flag), nil
	}
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	if name == "" {
		name = "unknown"
	}
	return postgres.Actor("importctl:" + name), nil
}

func (a *app) auditCmd() *cobra.Command {
	var since string
	var limit int
	cmd := &cobra.Command{
		Use:   "audit [--since 24h|2025-06-01T00:00:00Z] [--limit N]",
		Short: "Show the audit log (console and importctl actions), newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			from, err := parseSince(since, time.Now())
			if err != nil {
				return err
			}
			if limit < 1 || limit > 100000 {
				return fmt.Errorf("--limit %d: give 1 to 100000", limit)
			}
			db, err := a.open(cmd)
			if err != nil {
				return err
			}
			rows, err := db.AuditLog(cmd.Context(), from, limit)
			if err != nil {
				return err
			}
			if a.asJSON {
				if rows == nil {
					rows = []postgres.AuditEntry{}
				}
				return a.print(rows, "")
			}
			tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "AT\tACTOR\tACTION\tTARGET\tBEFORE\tAFTER")
			for _, r := range rows {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.At.UTC().Format(time.RFC3339), r.Actor, r.Action, r.Target,
					orDash(string(r.Before)), orDash(string(r.After)))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&since, "since", "24h", "a duration back from now (90m, 7d) or an RFC 3339 time")
	cmd.Flags().IntVar(&limit, "limit", 1000, "at most this many rows")
	return cmd
}

// parseSince reads --since: a Go duration, a number of days ("7d"), or an
// RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if d, ok := strings.CutSuffix(s, "d"); ok {
		var n int
		if _, err := fmt.Sscanf(d, "%d", &n); err == nil && n >= 0 && fmt.Sprint(n) == d {
			return now.AddDate(0, 0, -n), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("--since %q: give a duration (90m, 24h, 7d) or an RFC 3339 time", s)
}

func orDash(s string) string {
	if s == "" || s == "null" {
		return "-"
	}
	return s
}
