package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/postgres"
)

// Group commit: concurrent per-account creations share a transaction. These
// tests hold the one writer with a lock another session keeps, queue
// creations behind it, and then let it go. They read package-wide counters,
// so none of them runs in parallel.

// outcome is one caller's answer.
type outcome struct {
	res postgres.CreationResult
	err error
}

// launch runs CreateAccount in the background.
func (e *env) launch(ctx context.Context, in postgres.CreationInput) <-chan outcome {
	done := make(chan outcome, 1)
	go func() {
		res, err := e.db.CreateAccount(ctx, in)
		done <- outcome{res, err}
	}()
	return done
}

// lockProcess holds the process's row lock in a transaction of its own
// (the creation's guard waits for it) until the returned release is called.
func (e *env) lockProcess(processID int64) (release func()) {
	e.tb.Helper()
	tx := e.g.Begin()
	e.must(tx.Error)
	e.must(tx.Exec(`SELECT 1 FROM import_processes WHERE id = ? FOR UPDATE`, processID).Error)
	return func() { e.must(tx.Rollback().Error) }
}

// waitFor polls until ok or fails the test after 10 s.
func (e *env) waitFor(what string, ok func() bool) {
	e.tb.Helper()
	for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			e.tb.Fatalf("timed out waiting for %s", what)
		}
	}
}

// blockedCreations is how many sessions wait for a row lock.
func (e *env) blockedCreations() int {
	var n int
	e.scalar(&n, `SELECT count(*) FROM pg_locks WHERE NOT granted AND locktype = 'transactionid'
		AND pid IN (SELECT pid FROM pg_stat_activity WHERE datname = current_database())`)
	return n
}

// blockWriter creates first (alone: nothing else is queued yet) with its
// process locked, so the only writer is busy until the returned release.
func (e *env) blockWriter(first postgres.CreationInput) (release func(), done <-chan outcome) {
	e.tb.Helper()
	release = e.lockProcess(first.ProcessID)
	done = e.launch(e.ctx, first)
	e.waitFor("the first creation to block", func() bool { return e.blockedCreations() == 1 })
	return release, done
}

// wantCreated checks that o is a new account and that it is its process's
// account: each caller got its own result.
func (e *env) wantCreated(in postgres.CreationInput, o outcome) {
	e.tb.Helper()
	if o.err != nil {
		e.tb.Fatalf("process %d: %v", in.ProcessID, o.err)
	}
	p := e.proc(in.ProcessID)
	if o.res.AlreadyCreated || p.PlatformAccountNumber == nil || *p.PlatformAccountNumber != o.res.PlatformAccountNumber {
		e.tb.Fatalf("process %d: caller got %+v, the process has %v", in.ProcessID, o.res, p.PlatformAccountNumber)
	}
	var accountID int64
	e.scalar(&accountID, `SELECT id FROM accounts WHERE platform_account_number = ?`, o.res.PlatformAccountNumber)
	if accountID != o.res.AccountID {
		e.tb.Fatalf("process %d: caller got account %d, its number is account %d's", in.ProcessID, o.res.AccountID, accountID)
	}
}

func TestCreateAccountGroupCommitSharesTransactions(t *testing.T) {
	e := newEnv(t)
	e.db.SetCreationWriters(1)
	s := e.supplier("GROUP", false)
	const queued = 12
	first := e.prepare(s, "EXT-G00", false, nil)
	ins := make([]postgres.CreationInput, queued)
	for i := range ins {
		ins[i] = e.prepare(s, fmt.Sprintf("EXT-G%02d", i+1), false, nil)
	}
	before := postgres.CreationTransactions()
	release, firstDone := e.blockWriter(first)
	dones := make([]<-chan outcome, queued)
	for i, in := range ins {
		dones[i] = e.launch(e.ctx, in)
	}
	e.waitFor("every creation to queue", func() bool { return e.db.CreationsQueued() == queued })
	release()
	e.wantCreated(first, <-firstDone)
	for i, in := range ins {
		e.wantCreated(in, <-dones[i])
	}
	// The first alone, then the twelve queued behind it in one.
	if n := postgres.CreationTransactions() - before; n != 2 {
		t.Fatalf("%d creation transactions for %d accounts, want 2", n, queued+1)
	}
	e.wantCounts(sampleCounts(queued + 1))
}

func TestCreateAccountGroupCommitBadAccountFailsAlone(t *testing.T) {
	e := newEnv(t)
	e.db.SetCreationWriters(1)
	s := e.supplier("GROUPBAD", false)
	first := e.prepare(s, "EXT-B00", false, nil)
	ins := make([]postgres.CreationInput, 6)
	for i := range ins {
		ins[i] = e.prepare(s, fmt.Sprintf("EXT-B%02d", i+1), false, nil)
	}
	const bad = 3
	ins[bad].Account.Customers[1].GivenName = "Bob\x00" // text cannot hold NUL
	fallbacks := postgres.CreationGroupFallbacks()
	release, firstDone := e.blockWriter(first)
	dones := make([]<-chan outcome, len(ins))
	for i, in := range ins {
		dones[i] = e.launch(e.ctx, in)
	}
	e.waitFor("every creation to queue", func() bool { return e.db.CreationsQueued() == len(ins) })
	release()
	e.wantCreated(first, <-firstDone)
	for i, in := range ins {
		o := <-dones[i]
		if i != bad {
			e.wantCreated(in, o)
			continue
		}
		if o.err == nil || postgres.DataRefused(o.err) == nil {
			t.Fatalf("bad account: %+v, %v; want the database's refusal", o.res, o.err)
		}
		e.wantInProgress(in.ProcessID, in.Attempt)
	}
	if n := postgres.CreationGroupFallbacks() - fallbacks; n != 1 {
		t.Fatalf("%d shared transactions fell back to one by one, want 1", n)
	}
	e.wantCounts(sampleCounts(len(ins))) // the first and all but the bad one
}

// A caller that gives up while queued is withdrawn; one that gives up while
// its shared transaction runs does not undo the others' accounts (nor its
// own, which it is then told about); a shared transaction whose callers
// have all gone is cancelled.
func TestCreateAccountGroupCommitCancellation(t *testing.T) {
	e := newEnv(t)
	e.db.SetCreationWriters(1)
	s := e.supplier("GROUPCANCEL", false)
	first := e.prepare(s, "EXT-C00", false, nil)
	ins := make([]postgres.CreationInput, 5)
	for i := range ins {
		ins[i] = e.prepare(s, fmt.Sprintf("EXT-C%02d", i+1), false, nil)
	}

	// Queued, then cancelled: withdrawn at once, never written.
	release, firstDone := e.blockWriter(first)
	qctx, qcancel := context.WithCancel(e.ctx)
	queuedDone := e.launch(qctx, ins[0])
	e.waitFor("the creation to queue", func() bool { return e.db.CreationsQueued() == 1 })
	qcancel()
	select {
	case o := <-queuedDone:
		if !errors.Is(o.err, context.Canceled) {
			t.Fatalf("cancelled while queued: %+v, %v; want context.Canceled", o.res, o.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a cancelled queued creation did not return")
	}
	if n := e.db.CreationsQueued(); n != 0 {
		t.Fatalf("%d creations still queued", n)
	}

	// A shared transaction (ins[1], ins[2]) blocked on ins[1]'s row; one
	// caller leaves, the transaction goes on for both.
	hold := e.lockProcess(ins[1].ProcessID)
	ctx1, cancel1 := context.WithCancel(e.ctx)
	defer cancel1()
	d1, d2 := e.launch(ctx1, ins[1]), e.launch(e.ctx, ins[2])
	e.waitFor("the creations to queue", func() bool { return e.db.CreationsQueued() == 2 })
	release()
	e.wantCreated(first, <-firstDone)
	e.waitFor("the shared transaction to block", func() bool { return e.blockedCreations() == 1 })
	cancel1()
	time.Sleep(50 * time.Millisecond) // a cancelled transaction would end now
	hold()
	e.wantCreated(ins[1], <-d1)
	e.wantCreated(ins[2], <-d2)

	// Every caller leaves: the shared transaction (ins[3], ins[4]) is
	// abandoned and both return at once, as a lone caller would. (Like a
	// lone creation's, an abandoned transaction may still commit in
	// Postgres; the attempt guard makes the retry find that account.)
	release, firstDone = e.blockWriter(ins[0])
	hold = e.lockProcess(ins[3].ProcessID)
	ctx3, cancel3 := context.WithCancel(e.ctx)
	ctx4, cancel4 := context.WithCancel(e.ctx)
	d3, d4 := e.launch(ctx3, ins[3]), e.launch(ctx4, ins[4])
	e.waitFor("the creations to queue", func() bool { return e.db.CreationsQueued() == 2 })
	release()
	e.wantCreated(ins[0], <-firstDone)
	e.waitFor("the shared transaction to block", func() bool { return e.blockedCreations() == 1 })
	cancel3()
	cancel4()
	for _, d := range []<-chan outcome{d3, d4} {
		select {
		case o := <-d:
			if !errors.Is(o.err, context.Canceled) {
				t.Fatalf("abandoned shared transaction: %+v, %v; want context.Canceled", o.res, o.err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("callers of an abandoned shared transaction did not return")
		}
	}
	hold()
	for _, in := range ins[3:] {
		res, err := e.db.CreateAccount(e.ctx, in) // the retried jobs
		e.must(err)
		if p := e.proc(in.ProcessID); p.PlatformAccountNumber == nil || *p.PlatformAccountNumber != res.PlatformAccountNumber {
			t.Fatalf("retried process %d: %+v, the process has %v", in.ProcessID, res, p.PlatformAccountNumber)
		}
		t.Logf("retried process %d: already created %v", in.ProcessID, res.AlreadyCreated)
	}
	e.wantCounts(sampleCounts(6))
}
