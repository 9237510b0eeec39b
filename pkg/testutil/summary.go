package testutil

import (
	"fmt"
	"os"
	"sync"
)

var summaryMu sync.Mutex

// Tally adds n to a category of the suite's closing summary (faults
// survived, bad inputs tried, requests refused correctly, rows lost). `make
// test` sets DATAIMPORT_TEST_SUMMARY to a file and prints the totals after
// the run; without it this does nothing.
func Tally(category string, n int) {
	path := os.Getenv("DATAIMPORT_TEST_SUMMARY")
	if path == "" || n == 0 {
		return
	}
	summaryMu.Lock()
	defer summaryMu.Unlock()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s\t%d\n", category, n)
}

// Summary categories.
const (
	FaultsSurvived   = "faults survived"
	BadInputsTried   = "bad inputs tried"
	RefusedCorrectly = "requests refused correctly"
	RowsLost         = "rows lost"
	RowsChecked      = "rows checked for loss"
)
