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
// what it receives and can refuse the next recipients or messages with given
// replies, or drop the connection instead of answering a message.
type SMTPServer struct {
	Addr string

	mu       sync.Mutex
	msgs     []ReceivedMail
	rcptErrs []error
	dataErrs []error
	drops    int
	onData   func()
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
	s := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		return &smtpSession{srv: ws, conn: c}, nil
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

// FailNextData makes the reply to the next message's final dot code and msg:
// the server refuses the message after receiving it, and does not keep it.
func (s *SMTPServer) FailNextData(code int, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dataErrs = append(s.dataErrs, &smtp.SMTPError{
		Code: code, EnhancedCode: smtp.EnhancedCode{code / 100, 0, 0}, Message: msg})
}

// DropNextReply makes the server keep the next message and then close the
// connection instead of replying to its final dot: the client cannot know
// whether the message was accepted.
func (s *SMTPServer) DropNextReply() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drops++
}

// OnData runs fn whenever a message's content has arrived, before the server
// replies to it (while the client waits for that reply).
func (s *SMTPServer) OnData(fn func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onData = fn
}

// Messages returns what was delivered so far.
func (s *SMTPServer) Messages() []ReceivedMail {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ReceivedMail(nil), s.msgs...)
}

type smtpSession struct {
	srv  *SMTPServer
	conn *smtp.Conn
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
	onData := s.srv.onData
	s.srv.mu.Unlock()
	if onData != nil {
		onData()
	}
	s.srv.mu.Lock()
	defer s.srv.mu.Unlock()
	if len(s.srv.dataErrs) > 0 {
		err, s.srv.dataErrs = s.srv.dataErrs[0], s.srv.dataErrs[1:]
		return err
	}
	s.srv.msgs = append(s.srv.msgs, ReceivedMail{From: s.from, To: s.to, Data: string(b)})
	if s.srv.drops > 0 {
		s.srv.drops--
		// Closing the socket here means go-smtp's reply is never written.
		_ = s.conn.Conn().Close()
	}
	return nil
}

func (s *smtpSession) Reset()        { s.from, s.to = "", nil }
func (s *smtpSession) Logout() error { return nil }
