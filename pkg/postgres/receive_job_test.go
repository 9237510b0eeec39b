package postgres_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
)

// receivingJob makes a RECEIVING job of a new organisation for sup.
func (e *env) receivingJob(sup dataimport.Supplier, org string) dataimport.Job {
	o, err := e.db.CreateOrganisation(e.ctx, org)
	e.must(err)
	job, _, err := e.db.CreateJob(e.ctx, postgres.NewJob{OrganisationID: o.ID, SupplierID: sup.ID}, time.Minute)
	e.must(err)
	return job
}

// emitLines emits lines from..to (inclusive) of a stage-only upload.
func emitLines(emit func(postgres.JobLine) error, from, to int) error {
	for i := from; i <= to; i++ {
		if err := emit(postgres.JobLine{Line: i, External: fmt.Sprintf("R-%06d", i), Payload: []byte(`{}`)}); err != nil {
			return err
		}
	}
	return nil
}

func (e *env) jobRecords(jobID int64) int {
	n := 0
	e.must(e.db.EachJobRecord(e.ctx, jobID, nil, func(dataimport.JobRecord) error { n++; return nil }))
	return n
}

// An upload is received in short transactions: while a large body is still
// arriving, events other requests commit are numbered for the feed and the
// webhooks. One transaction for the whole body held back the relay (it
// numbers an event only once every older transaction has ended) for the
// minutes a 400,000-line body takes, and with it every partner's events.
func TestEventsFlowWhileAnUploadIsReceived(t *testing.T) {
	e := newEnv(t)
	sup := e.supplier("RECV", false)
	job := e.receivingJob(sup, "Receiving Partner")
	const lines = 5000 // two batches committed, the rest still arriving
	arrived, more := make(chan struct{}), make(chan struct{})
	var release sync.Once
	t.Cleanup(func() { release.Do(func() { close(more) }) }) // a failed test does not leave the upload blocked
	done := make(chan error, 1)
	go func() {
		_, err := e.db.ReceiveJob(e.ctx, job.ID, 0, func() int64 { return 1 }, func() []byte { return make([]byte, 32) },
			func(emit func(postgres.JobLine) error) error {
				if err := emitLines(emit, 1, lines); err != nil {
					return err
				}
				close(arrived)
				<-more // the rest of the body is slow to come
				return nil
			})
		done <- err
	}()
	select {
	case <-arrived:
	case err := <-done:
		t.Fatalf("upload ended early: %v", err)
	}
	e.stage(sup, "EXT-1", nil) // commits a staging event meanwhile
	numbered := 0
	for deadline := time.Now().Add(10 * time.Second); numbered == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		n, err := e.db.PositionEvents(e.ctx, 1000)
		e.must(err)
		numbered += n
	}
	if numbered == 0 {
		t.Fatal("an event committed while an upload was being received was not numbered before the upload ended")
	}
	if n := e.jobRecords(job.ID); n != 0 {
		t.Fatalf("results list %d lines of an upload still being received", n)
	}
	release.Do(func() { close(more) })
	e.must(<-done)
	if n := e.jobRecords(job.ID); n != lines {
		t.Fatalf("results list %d lines, want %d", n, lines)
	}
}

// A retry that takes over a dead upload deletes the lines it committed, and
// the dead request's receiving cannot add to the job after that; a cancel
// and a failure keep none either.
func TestReceiveEpochFencesADeadUpload(t *testing.T) {
	e := newEnv(t)
	sup := e.supplier("FENCE", false)
	stored := func(jobID int64) int {
		var n int
		e.scalar(&n, `SELECT count(*) FROM import_job_records WHERE job_id = ?`, jobID)
		return n
	}
	broken := errors.New("connection reset")
	receive := func(jobID int64, epoch int, to int, fail error) error {
		_, err := e.db.ReceiveJob(e.ctx, jobID, epoch, func() int64 { return 1 }, func() []byte { return make([]byte, 32) },
			func(emit func(postgres.JobLine) error) error {
				if err := emitLines(emit, 1, to); err != nil {
					return err
				}
				return fail
			})
		return err
	}

	job := e.receivingJob(sup, "Fence Partner")
	if err := receive(job.ID, 0, 4500, broken); !errors.Is(err, broken) {
		t.Fatalf("receive: %v", err)
	}
	if n := stored(job.ID); n != 4000 {
		t.Fatalf("%d lines stored before the failure, want the two committed batches (4000)", n)
	}
	epoch, ok, err := e.db.TakeOverJob(e.ctx, job.ID, 0)
	e.must(err)
	if !ok || epoch != 1 {
		t.Fatalf("take over: epoch %d, ok %v", epoch, ok)
	}
	if n := stored(job.ID); n != 0 {
		t.Fatalf("%d lines of the dead upload left after the take-over", n)
	}
	if err := receive(job.ID, 0, 10, nil); !errors.Is(err, postgres.ErrUploadTakenOver) {
		t.Fatalf("the dead upload's epoch received again: %v", err)
	}
	e.must(receive(job.ID, epoch, 3000, nil))
	v, err := e.db.Job(e.ctx, job.OrganisationID, job.ID)
	e.must(err)
	if v.Job.State != dataimport.JobProcessing || v.Job.Counters.Received != 3000 || stored(job.ID) != 3000 {
		t.Fatalf("after the retry: state %s, received %d, stored %d", v.Job.State, v.Job.Counters.Received, stored(job.ID))
	}

	cancelled := e.receivingJob(sup, "Cancel Partner")
	_ = receive(cancelled.ID, 0, 2500, broken)
	if n := stored(cancelled.ID); n != 2000 {
		t.Fatalf("%d lines stored before the cancel, want the committed batch (2000)", n)
	}
	_, err = e.db.CancelJob(e.ctx, cancelled.OrganisationID, cancelled.ID)
	e.must(err)
	if n := stored(cancelled.ID); n != 0 {
		t.Fatalf("%d lines kept by a job cancelled while receiving", n)
	}

	failed := e.receivingJob(sup, "Failed Partner")
	_ = receive(failed.ID, 0, 2500, broken)
	if n := stored(failed.ID); n != 2000 {
		t.Fatalf("%d lines stored before the failure, want the committed batch (2000)", n)
	}
	e.must(e.db.FailJob(e.ctx, failed.ID, 0, dataimport.Errorf(dataimport.CodeParseError, "bad gzip")))
	if n := stored(failed.ID); n != 0 {
		t.Fatalf("%d lines kept by a failed upload", n)
	}
}
