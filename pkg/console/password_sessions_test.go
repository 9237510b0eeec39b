package console_test

import (
	"net/http"
	"net/url"
	"testing"
)

// A session opened with the one-time password (by whoever else saw it) used
// to gain full access once the operator chose their own password: only an
// operator reset ended sessions. Any password change now ends every other
// session of the operator; the session that made the change goes on.
func TestPasswordChangeEndsOtherSessions(t *testing.T) {
	st, srv := consoleStack(t)
	pw := operator(t, st.DB, "carol")
	login := func(password string) *browser {
		b := newBrowser(t, srv.URL)
		if p := b.post("/login", "/login", url.Values{"name": {"carol"}, "password": {password}}); p.Status != http.StatusSeeOther {
			t.Fatalf("login: %d %.300s", p.Status, p.Body)
		}
		return b
	}
	other, owner := login(pw), login(pw)
	if p := owner.post("/password", "/password", url.Values{"current": {pw}, "new": {"first own password"}, "again": {"first own password"}}); p.Status != http.StatusSeeOther || p.Location != "/" {
		t.Fatalf("change password: %d → %q\n%s", p.Status, p.Location, st.Logs.String())
	}
	if p := owner.do(http.MethodGet, "/", nil); p.Status != http.StatusOK {
		t.Fatalf("the session that changed the password: %d → %q, want 200", p.Status, p.Location)
	}
	if p := other.do(http.MethodGet, "/", nil); p.Status != http.StatusSeeOther || p.Location != "/login" {
		t.Fatalf("the other one-time-password session after the change: %d → %q, want 303 → /login", p.Status, p.Location)
	}

	// A later change of an own password ends the other sessions too.
	second := login("first own password")
	if p := owner.post("/password", "/password", url.Values{"current": {"first own password"}, "new": {"second own password"}, "again": {"second own password"}}); p.Status != http.StatusSeeOther {
		t.Fatalf("second change: %d %.300s", p.Status, p.Body)
	}
	if p := second.do(http.MethodGet, "/", nil); p.Status != http.StatusSeeOther || p.Location != "/login" {
		t.Fatalf("another session after the second change: %d → %q, want 303 → /login", p.Status, p.Location)
	}
	if p := owner.do(http.MethodGet, "/", nil); p.Status != http.StatusOK {
		t.Fatalf("the changing session after the second change: %d", p.Status)
	}
	var n int
	if err := st.DB.Gorm().Raw(`SELECT count(*) FROM operator_sessions s JOIN operators o ON o.id = s.operator_id WHERE o.name = 'carol'`).Scan(&n).Error; err != nil || n != 1 {
		t.Fatalf("carol's sessions: %d (%v), want 1", n, err)
	}
}
