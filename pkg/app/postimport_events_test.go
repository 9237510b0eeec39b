package app_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/testutil"
)

// Payment-instruction requests join the account's timeline (CONTRACT §8):
// an added instruction and a retry answered from the stored one are
// EVENT_POST_IMPORT_COMPLETED (count 1, then 0), and refusals — another
// instruction already active, the vendor not knowing the reference — are
// EVENT_POST_IMPORT_ERRORED with the error the partner was answered with.
func TestPaymentInstructionEvents(t *testing.T) {
	t.Parallel()
	s := newPayStack(t)
	n := s.imported("EXT-1")
	creation := len(s.eventsV2("EXT-1"))
	wantCreated(t, s.instruct(s.token, "EXT-1", "CARD", "pm_card_visa"), n, "pm_card_visa")
	wantCreated(t, s.instruct(s.token, "EXT-1", "CARD", "pm_card_visa"), n, "pm_card_visa")
	wantError(t, s.instruct(s.token, "EXT-1", "CARD", "pm_other"), http.StatusBadRequest, dataimport.CodeAccountHasActiveInstruction)
	wantError(t, s.instruct(s.token, "EXT-1", "DIRECT_DEBIT", "mandate_gone"), http.StatusBadRequest, dataimport.CodeAccountHasActiveInstruction)
	s.imported("EXT-2")
	s.proxy.FailNext(1, testutil.StripeMissing)
	wantError(t, s.instruct(s.token, "EXT-2", "CARD", "pm_missing"), http.StatusBadRequest, dataimport.CodePaymentInstructionNotFound)

	r := s.As(s.token, http.MethodGet, v2Accounts+"DEMO_ENERGY/EXT-1/events/", nil)
	var evs []struct {
		Event string
		Data  map[string]any
	}
	r.Decode(&evs)
	if len(evs) != creation+4 {
		t.Fatalf("EXT-1 timeline: %s", r.Body)
	}
	got := ""
	for _, e := range evs[creation:] {
		errCode := ""
		if env, ok := e.Data["error"].(map[string]any); ok {
			errCode = fmt.Sprint(env["code"])
		}
		got += fmt.Sprintf("%s %v %v %v %s\n", e.Event, e.Data["request"], e.Data["count"], e.Data["reference"], errCode)
	}
	want := "EVENT_POST_IMPORT_COMPLETED payment_instruction 1 pm_card_visa \n" +
		"EVENT_POST_IMPORT_COMPLETED payment_instruction 0 pm_card_visa \n" +
		"EVENT_POST_IMPORT_ERRORED payment_instruction <nil> <nil> account_already_has_active_instruction\n" +
		"EVENT_POST_IMPORT_ERRORED payment_instruction <nil> <nil> account_already_has_active_instruction\n"
	if got != want {
		t.Fatalf("EXT-1 post-import events:\n%s\nwant:\n%s", got, want)
	}
	r = s.As(s.token, http.MethodGet, v2Accounts+"DEMO_ENERGY/EXT-2/events/", nil)
	r.Decode(&evs)
	last := evs[len(evs)-1]
	if env, _ := last.Data["error"].(map[string]any); last.Event != "EVENT_POST_IMPORT_ERRORED" || env["code"] != dataimport.CodePaymentInstructionNotFound {
		t.Fatalf("EXT-2 timeline: %s", r.Body)
	}
}
