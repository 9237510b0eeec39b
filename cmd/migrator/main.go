// Command migrator is the partner-side CLI of the data-import service: it
// pushes accounts from an NDJSON file through validate → stage → create (and
// optional post-import data), and reports import progress; convert turns CSV
// exports into that NDJSON file, offline. It talks to the
// service only through the public HTTP API (data-import-api.md).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

// Exit codes beyond 0 (success) and 1 (the run could not be done).
const (
	exitSomeFailed  = 2   // the run finished but some accounts failed
	exitInterrupted = 130 // stopped by a signal before the end of the file
)

func main() {
	// First Ctrl-C / SIGTERM: stop reading new accounts, finish the ones in
	// flight, write the report. Second: abort the in-flight requests too.
	soft, stopSoft := context.WithCancel(context.Background())
	hard, stopHard := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		fmt.Fprintln(os.Stderr, "\nmigrator: stopping — finishing accounts in flight (press Ctrl-C again to abort them)")
		stopSoft()
		<-sigs
		fmt.Fprintln(os.Stderr, "\nmigrator: aborting accounts in flight")
		stopHard()
	}()

	c := &cli{abort: hard, stdout: os.Stdout, stderr: os.Stderr, stderrTTY: isTerminal(os.Stderr)}
	err := newRoot(c).ExecuteContext(soft)
	stopSoft()
	stopHard()
	if err != nil {
		fmt.Fprintln(os.Stderr, "migrator:", err)
		switch {
		case errors.Is(err, errInterrupted):
			os.Exit(exitInterrupted)
		case errors.Is(err, errSomeFailed), errors.Is(err, errDiffers):
			os.Exit(exitSomeFailed)
		}
		os.Exit(1)
	}
}

// cli is what every subcommand shares. abort is cancelled to abort work in
// flight; the command's own context (cmd.Context()) asks for a graceful stop.
type cli struct {
	abort     context.Context
	stdout    io.Writer
	stderr    io.Writer
	stderrTTY bool

	apiURL   string
	apiKey   string
	logLevel string
	quiet    bool
	log      *slog.Logger
}

func newRoot(c *cli) *cobra.Command {
	if c.abort == nil {
		c.abort = context.Background()
	}
	root := &cobra.Command{
		Use:           "migrator",
		Short:         "Migrate accounts into the platform through the data-import API",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			var lvl slog.Level
			if err := lvl.UnmarshalText([]byte(c.logLevel)); err != nil {
				return fmt.Errorf("--log-level: %w", err)
			}
			c.log = slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: lvl}))
			if cmd.Annotations[offline] != "" {
				return nil
			}
			return c.requireAPI()
		},
	}
	root.SetOut(c.stdout)
	root.SetErr(c.stderr)
	f := root.PersistentFlags()
	f.StringVar(&c.apiURL, "api", "", "base URL of the data-import API, e.g. https://import.example.com (env DATAIMPORT_API_URL)")
	f.StringVar(&c.apiKey, "api-key", "", "organisation API key (env DATAIMPORT_API_KEY; prefer it: flags show in ps)")
	f.StringVar(&c.logLevel, "log-level", "warn", "diagnostics on stderr: debug, info, warn or error")
	f.BoolVarP(&c.quiet, "quiet", "q", false, "no progress bar")
	root.AddCommand(c.pushCmd(), c.statusCmd(), c.convertCmd(), c.reconcileCmd())
	return root
}

// requireAPI completes --api and --api-key from the environment, for the
// commands (and convert --remote) that talk to the service.
func (c *cli) requireAPI() error {
	if c.apiURL == "" {
		c.apiURL = os.Getenv("DATAIMPORT_API_URL")
	}
	if c.apiKey == "" {
		c.apiKey = os.Getenv("DATAIMPORT_API_KEY")
	}
	if c.apiURL == "" {
		return errors.New("--api (or DATAIMPORT_API_URL) is required")
	}
	if c.apiKey == "" {
		return errors.New("--api-key (or DATAIMPORT_API_KEY) is required")
	}
	c.apiURL = strings.TrimRight(c.apiURL, "/")
	return nil
}

// isTerminal reports whether f is a character device (a terminal), without
// reaching for a terminal library.
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
