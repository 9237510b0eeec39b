package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// rssKB reads a process's resident set size from /proc.
func rssKB(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("no VmRSS for pid %d", pid)
}

// peakRSS samples a process's RSS every 10 ms until stop is closed.
func peakRSS(pid int, stop <-chan struct{}) *atomic.Int64 {
	var peak atomic.Int64
	if pid <= 0 {
		return &peak
	}
	go func() {
		for {
			if kb, err := rssKB(pid); err == nil && kb > peak.Load() {
				peak.Store(kb)
			}
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	return &peak
}

// listMemory stages rows processes for supplier straight in the database,
// then lists them all with one call while sampling the API's RSS. It returns
// the body size and the RSS growth in kB.
func listMemory(ctx context.Context, c *client, dbURL, supplier string, rows, apiPID int) (bodyBytes, growthKB int64, err error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return 0, 0, fmt.Errorf("list setup: %w", err)
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `
		WITH p AS (
			INSERT INTO import_processes (supplier_id, external_account_number, staged_version)
			SELECT s.id, 'LIST-' || lpad(g::text, 7, '0'), 1
			  FROM import_suppliers s, generate_series(1, $2) g WHERE s.code = $1
			ON CONFLICT DO NOTHING RETURNING id)
		INSERT INTO import_process_versions (process_id, version, payload) SELECT id, 1, '{}'::jsonb FROM p`, supplier, rows)
	if err != nil {
		return 0, 0, fmt.Errorf("list setup: %w", err)
	}
	before, err := rssKB(apiPID)
	if err != nil {
		return 0, 0, err
	}
	stop := make(chan struct{})
	peak := peakRSS(apiPID, stop)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/v1/data-import/all-account-import-processes/"+supplier+"/", nil)
	req.Header.Set("Authorization", "Token "+c.bearer())
	resp, err := c.http.Do(req)
	if err != nil {
		close(stop)
		return 0, 0, err
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	close(stop)
	if err != nil || resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("list: %d %w", resp.StatusCode, err)
	}
	return n, max(peak.Load()-before, 0), nil
}
