package testutil

import (
	"net/http"
	"strings"
)

// ImportAccount stages the sample account (pkg/dataimport/testdata/
// account_valid.json) as supplier/external and creates it through the API,
// so post-import endpoints have a real imported account to work on. A worker
// must be running (StartWorker) and the team must exist. It returns the
// platform account number.
func (s *Stack) ImportAccount(token, supplier, external, team string) string {
	s.TB.Helper()
	b, err := ReadRepoFile("pkg/dataimport/testdata/account_valid.json")
	if err != nil {
		s.TB.Fatal(err)
	}
	body := strings.Replace(string(b), `"EXT-0001"`, `"`+external+`"`, 1)
	body = strings.Replace(body, `"import_supplier": "DEMO_ENERGY"`, `"import_supplier": "`+supplier+`"`, 1)
	if r := s.As(token, http.MethodPost, "/v1/data-import/account-import-process/create-or-update/", body); r.Status != http.StatusCreated && r.Status != http.StatusOK {
		s.TB.Fatalf("stage %s/%s: %d %s", supplier, external, r.Status, r.Body)
	}
	r := s.As(token, http.MethodPost, "/v1/data-import/account-import-process/process/",
		map[string]any{"external_account_number": external, "import_supplier_code": supplier, "operations_team_name": team})
	if r.Status != http.StatusCreated {
		s.TB.Fatalf("create %s/%s: %d %s", supplier, external, r.Status, r.Body)
	}
	number, _ := r.JSON()["platform_account_number"].(string)
	return number
}
