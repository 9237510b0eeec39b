package testutil

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
)

// SMTPServer is a real SMTP server on 127.0.0.1 (emersion/go-smtp) that keeps
// what it receives and can refuse the next recipients with given replies.
type SMTPServer struct {
	Addr string

	mu       sync.Mutex
	msgs     []ReceivedMail
	rcptErrs []error
}

// ReceivedMail is one delivered message.
type ReceivedMail struct {
	From string
	To   []string
	Data string
}

// NewSMTPServer starts the server; it stops when tb ends.
func NewSMTPServer(tb testing.TB) *SMTPServer {
	tb.Helper()
	ws := &SMTPServer{}
	s := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) {
		return &smtpSession{srv: ws}, nil
	}))
	s.Domain = "localhost"
	s.ReadTimeout, s.WriteTimeout = 5*time.Second, 5*time.Second
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("listen: %v", err)
	}
	ws.Addr = l.Addr().String()
	go func() { _ = s.Serve(l) }()
	tb.Cleanup(func() { _ = s.Close() })
	return ws
}

// URL is the SMTP_URL of the server.
func (s *SMTPServer) URL() string { return "smtp://" + s.Addr }

// FailNextRcpt makes the next RCPT TO answer code and msg.
func (s *SMTPServer) FailNextRcpt(code int, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rcptErrs = append(s.rcptErrs, &smtp.SMTPError{
		Code: code, EnhancedCode: smtp.EnhancedCode{code / 100, 0, 0}, Message: msg})
}

// Messages returns what was delivered so far.
func (s *SMTPServer) Messages() []ReceivedMail {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ReceivedMail(nil), s.msgs...)
}

type smtpSession struct {
	srv  *SMTPServer
	from string
	to   []string
}

func (s *smtpSession) Mail(from string, _ *smtp.MailOptions) error { s.from = from; return nil }

func (s *smtpSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.srv.mu.Lock()
	defer s.srv.mu.Unlock()
	if len(s.srv.rcptErrs) > 0 {
		err := s.srv.rcptErrs[0]
		s.srv.rcptErrs = s.srv.rcptErrs[1:]
		return err
	}
	s.to = append(s.to, to)
	return nil
}

func (s *smtpSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.srv.mu.Lock()
	defer s.srv.mu.Unlock()
	s.srv.msgs = append(s.srv.msgs, ReceivedMail{From: s.from, To: s.to, Data: string(b)})
	return nil
}

func (s *smtpSession) Reset()        { s.from, s.to = "", nil }
func (s *smtpSession) Logout() error { return nil }
