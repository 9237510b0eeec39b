package email_test

import (
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/gridshift/dataimport/pkg/email"
	"github.com/gridshift/dataimport/pkg/testutil"
)

// TestSMTPSenderOutcomes: only a failure after the complete message was
// handed over, with no reply to it, is "outcome unknown"; explicit refusals
// and failures before the end of the message are definitely not delivered.
func TestSMTPSenderOutcomes(t *testing.T) {
	srv := testutil.NewSMTPServer(t)
	s, err := email.NewSender(srv.URL(), "Welcome <welcome@gridshift.test>")
	if err != nil {
		t.Fatal(err)
	}
	msg := email.Message{To: "ada@example.com", Subject: "Welcome", Text: "Hello Ada,\n", MessageID: "welcome-1.A-0000ABCD"}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead, err := email.NewSender("smtp://"+l.Addr().String(), "welcome@gridshift.test")
	if err != nil {
		t.Fatal(err)
	}
	_ = l.Close()

	for _, tc := range []struct {
		name               string
		arrange            func()
		sender             email.Sender
		unknown, permanent bool
		kept               int // messages the server keeps
	}{
		{"delivered", func() {}, s, false, false, 1},
		{"connection refused", func() {}, dead, false, false, 0},
		{"451 to RCPT", func() { srv.FailNextRcpt(451, "greylisted") }, s, false, false, 0},
		{"550 to RCPT", func() { srv.FailNextRcpt(550, "no such user") }, s, false, true, 0},
		{"451 to the message", func() { srv.FailNextData(451, "try later") }, s, false, false, 0},
		{"554 to the message", func() { srv.FailNextData(554, "refused") }, s, false, true, 0},
		{"no reply to the message", srv.DropNextReply, s, true, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(srv.Messages())
			tc.arrange()
			err := tc.sender.Send(t.Context(), msg)
			if got := errors.Is(err, email.ErrOutcomeUnknown); got != tc.unknown {
				t.Errorf("err = %v: ErrOutcomeUnknown %v, want %v", err, got, tc.unknown)
			}
			if got := errors.Is(err, email.ErrPermanent); got != tc.permanent {
				t.Errorf("err = %v: ErrPermanent %v, want %v", err, got, tc.permanent)
			}
			if tc.kept == 1 && !tc.unknown && err != nil {
				t.Errorf("delivered: err = %v", err)
			}
			if n := len(srv.Messages()) - before; n != tc.kept {
				t.Errorf("server kept %d messages, want %d", n, tc.kept)
			}
		})
	}

	// The Message-ID is the given one, on the sender address's domain.
	for _, m := range srv.Messages() {
		if !strings.Contains(m.Data, "Message-ID: <welcome-1.A-0000ABCD@gridshift.test>\r\n") {
			t.Errorf("message lacks the given Message-ID:\n%s", m.Data)
		}
	}
	full := msg
	full.MessageID = "x-1@relay.example.com"
	if err := s.Send(t.Context(), full); err != nil {
		t.Fatal(err)
	}
	msgs := srv.Messages()
	if last := msgs[len(msgs)-1].Data; !strings.Contains(last, "Message-ID: <x-1@relay.example.com>\r\n") {
		t.Errorf("message lacks the full Message-ID:\n%s", last)
	}
}
