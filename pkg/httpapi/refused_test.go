package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
)

// A rule only the database knows (standing in for a future migration the
// validation has not caught up with) is answered 400 data_refused, not 500
// "retry as is": the same request would be refused again.
func TestPostImportDataRefusedByDatabase(t *testing.T) {
	p := newPostImport(t)
	p.imported("EXT-R")
	notes := p.count(`SELECT count(*) FROM account_notes`)
	if err := p.DB.Gorm().Exec(`ALTER TABLE account_notes ADD CONSTRAINT test_no_secrets CHECK (body NOT LIKE '%secret%')`).Error; err != nil {
		t.Fatal(err)
	}
	r := p.post(notesPath, body("EXT-R", "notes", `{"body":"a secret note"}`))
	assertEnvelope(t, r, http.StatusBadRequest, "data_refused")
	if d := r.JSON()["detail"].(string); !strings.Contains(d, "test_no_secrets") || strings.Contains(d, "INSERT") {
		t.Errorf("detail: %s", d)
	}
	if p.count(`SELECT count(*) FROM account_notes`) != notes {
		t.Fatal("a refused note was stored")
	}
}
