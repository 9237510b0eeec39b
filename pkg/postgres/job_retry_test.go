package postgres_test

import (
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
)

// A job whose upload was lost is taken over by a retry with the same key
// (back to RECEIVING in the next epoch); the lost upload's late FailJob, in
// its old epoch, cannot fail the retry's upload; a failure of the body
// itself (parse_error) is not taken over; and a key older than its TTL is
// free for a new job while the old job stays.
func TestJobRetryTakesOverALostUploadFencedByEpoch(t *testing.T) {
	e := newEnv(t)
	sup := e.supplier("RETRY", false)
	o, err := e.db.CreateOrganisation(e.ctx, "Retry Partner")
	e.must(err)
	in := postgres.NewJob{OrganisationID: o.ID, SupplierID: sup.ID, IdempotencyKey: "k1", KeyTTL: time.Hour}
	job, existing, err := e.db.CreateJob(e.ctx, in, time.Minute)
	e.must(err)
	if existing != nil {
		t.Fatal("a new key named a job")
	}
	state := func(id int64) (dataimport.JobState, string) {
		v, err := e.db.Job(e.ctx, o.ID, id)
		e.must(err)
		code := ""
		if v.Job.Error != nil {
			code = v.Job.Error.Code
		}
		return v.Job.State, code
	}
	lost := dataimport.Errorf(dataimport.CodeUploadLost, "cut")
	e.must(e.db.FailJob(e.ctx, job.ID, 0, lost))
	if s, code := state(job.ID); s != dataimport.JobFailed || code != dataimport.CodeUploadLost {
		t.Fatalf("after the cut: %s %s", s, code)
	}
	_, existing, err = e.db.CreateJob(e.ctx, in, time.Minute)
	e.must(err)
	if existing == nil || existing.Job.ID != job.ID || existing.Job.State != dataimport.JobFailed {
		t.Fatalf("the retry's key lookup: %+v", existing)
	}
	epoch, ok, err := e.db.TakeOverJob(e.ctx, job.ID, time.Minute) // heartbeat fresh: only the failure lets it
	e.must(err)
	if !ok || epoch != 1 {
		t.Fatalf("take over a lost upload: epoch %d, ok %v", epoch, ok)
	}
	if s, code := state(job.ID); s != dataimport.JobReceiving || code != "" {
		t.Fatalf("after the take-over: %s %q", s, code)
	}
	// A second retry meanwhile cannot take it too (the upload is alive).
	if _, ok, err := e.db.TakeOverJob(e.ctx, job.ID, time.Minute); err != nil || ok {
		t.Fatalf("second take-over: %v %v", ok, err)
	}
	// The old upload's failure arrives late: fenced off by the epoch.
	e.must(e.db.FailJob(e.ctx, job.ID, 0, lost))
	if s, _ := state(job.ID); s != dataimport.JobReceiving {
		t.Fatalf("a late failure of the old epoch moved the retried job to %s", s)
	}
	e.must(e.db.FailJob(e.ctx, job.ID, epoch, dataimport.Errorf(dataimport.CodeParseError, "bad gzip")))
	if s, code := state(job.ID); s != dataimport.JobFailed || code != dataimport.CodeParseError {
		t.Fatalf("the current epoch's failure: %s %s", s, code)
	}
	if _, ok, err := e.db.TakeOverJob(e.ctx, job.ID, 0); err != nil || ok {
		t.Fatalf("a body refused as such was taken over: %v %v", ok, err)
	}

	// The key's TTL: an old key names no job; a new job takes it, the old stays.
	e.must(e.db.Gorm().Exec(`UPDATE import_jobs SET created_at = now() - interval '2 hours' WHERE id = ?`, job.ID).Error)
	fresh, existing, err := e.db.CreateJob(e.ctx, in, time.Minute)
	e.must(err)
	if existing != nil || fresh.ID == job.ID {
		t.Fatalf("an expired key still named job %d: %+v", job.ID, existing)
	}
	if s, _ := state(job.ID); s != dataimport.JobFailed {
		t.Fatalf("the old job is %s", s)
	}
	if _, existing, err = e.db.CreateJob(e.ctx, in, time.Minute); err != nil || existing == nil || existing.Job.ID != fresh.ID {
		t.Fatalf("the key now names %+v, %v; want job %d", existing, err, fresh.ID)
	}
}
