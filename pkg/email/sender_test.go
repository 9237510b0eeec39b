package email

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

const testFrom = "Gridshift <welcome@gridshift.test>"

// received is one message the test server accepted.
type received struct {
	From string
	To   []string
	Data string
	TLS  bool
	Auth string // user name that authenticated, "" if none
}

// smtpServer is a real SMTP server on 127.0.0.1 that keeps what it receives.
type smtpServer struct {
	Addr string

	mu       sync.Mutex
	msgs     []received
	rcptErrs []error // returned by the next RCPT commands, in order
	user     string  // when set, MAIL requires AUTH PLAIN as user/pass
	pass     string
}

type serverOpts struct {
	implicitTLS *tls.Config // serve TLS from the first byte (smtps)
	startTLS    *tls.Config // offer STARTTLS
	user, pass  string
}

func startSMTP(t *testing.T, o serverOpts) *smtpServer {
	t.Helper()
	ts := &smtpServer{user: o.user, pass: o.pass}
	s := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		return &smtpSession{srv: ts, conn: c}, nil
	}))
	s.Domain = "localhost"
	s.AllowInsecureAuth = true
	s.ReadTimeout, s.WriteTimeout = 5*time.Second, 5*time.Second
	s.TLSConfig = o.startTLS
	var l net.Listener
	var err error
	if o.implicitTLS != nil {
		l, err = tls.Listen("tcp", "127.0.0.1:0", o.implicitTLS)
	} else {
		l, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	ts.Addr = l.Addr().String()
	go func() { _ = s.Serve(l) }()
	t.Cleanup(func() { _ = s.Close() })
	return ts
}

// failNextRcpt makes the next RCPT commands fail with errs, one each.
func (s *smtpServer) failNextRcpt(errs ...error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rcptErrs = append(s.rcptErrs, errs...)
}

func (s *smtpServer) messages() []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]received(nil), s.msgs...)
}

type smtpSession struct {
	srv  *smtpServer
	conn *smtp.Conn
	cur  received
}

func (s *smtpSession) AuthMechanisms() []string { return []string{sasl.Plain} }

func (s *smtpSession) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if s.srv.user == "" || user != s.srv.user || pass != s.srv.pass {
			return &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: "bad credentials"}
		}
		s.cur.Auth = user
		return nil
	}), nil
}

func (s *smtpSession) Mail(from string, _ *smtp.MailOptions) error {
	if s.srv.user != "" && s.cur.Auth == "" {
		return smtp.ErrAuthRequired
	}
	s.cur.From = from
	return nil
}

func (s *smtpSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.srv.mu.Lock()
	var err error
	if len(s.srv.rcptErrs) > 0 {
		err, s.srv.rcptErrs = s.srv.rcptErrs[0], s.srv.rcptErrs[1:]
	}
	s.srv.mu.Unlock()
	if err != nil {
		return err
	}
	s.cur.To = append(s.cur.To, to)
	return nil
}

func (s *smtpSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	m := s.cur
	m.Data = string(b)
	_, m.TLS = s.conn.TLSConnectionState()
	s.srv.mu.Lock()
	s.srv.msgs = append(s.srv.msgs, m)
	s.srv.mu.Unlock()
	return nil
}

func (s *smtpSession) Reset() {
	auth := s.cur.Auth
	s.cur = received{Auth: auth}
}

func (s *smtpSession) Logout() error { return nil }

// selfSigned returns a server TLS config for 127.0.0.1 and a pool trusting it.
func selfSigned(t *testing.T) (*tls.Config, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "test smtp"},
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:                  true,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12}, pool
}

func mustSender(t *testing.T, url string, pool *x509.CertPool) *smtpSender {
	t.Helper()
	s, err := newSMTPSender(url, testFrom, pool)
	if err != nil {
		t.Fatalf("newSMTPSender(%q): %v", url, err)
	}
	return s
}

func testMessage() Message {
	return Message{To: "ada@example.com", Subject: "Welcome to DEMO_ENERGY", Text: "Hello Ada,\n\nyour account is ready.\n"}
}

func TestSMTPSenderDelivers(t *testing.T) {
	srv := startSMTP(t, serverOpts{})
	s, err := NewSender("smtp://"+srv.Addr, testFrom)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send(t.Context(), testMessage()); err != nil {
		t.Fatalf("Send: %v", err)
	}
	msgs := srv.messages()
	if len(msgs) != 1 {
		t.Fatalf("server got %d messages, want 1", len(msgs))
	}
	m := msgs[0]
	if m.From != "welcome@gridshift.test" || len(m.To) != 1 || m.To[0] != "ada@example.com" {
		t.Errorf("envelope from %q to %q", m.From, m.To)
	}
	for _, want := range []string{"Subject: Welcome to DEMO_ENERGY", "To: <ada@example.com>", "your account is ready.", "text/plain"} {
		if !strings.Contains(m.Data, want) {
			t.Errorf("message lacks %q:\n%s", want, m.Data)
		}
	}
	if m.TLS {
		t.Error("TLS used although the server offers no STARTTLS")
	}
}

func TestSMTPSenderAuth(t *testing.T) {
	srv := startSMTP(t, serverOpts{user: "mailer", pass: "s3cr:t/"})
	s := mustSender(t, "smtp://mailer:s3cr%3At%2F@"+srv.Addr, nil)
	if err := s.Send(t.Context(), testMessage()); err != nil {
		t.Fatalf("Send with credentials: %v", err)
	}
	if msgs := srv.messages(); len(msgs) != 1 || msgs[0].Auth != "mailer" {
		t.Fatalf("messages %+v, want one authenticated as mailer", msgs)
	}

	bad := mustSender(t, "smtp://mailer:wrong@"+srv.Addr, nil)
	err := bad.Send(t.Context(), testMessage())
	if err == nil {
		t.Fatal("Send with a wrong password succeeded")
	}
	if errors.Is(err, ErrPermanent) {
		t.Errorf("authentication failure is configuration, not the message; want transient, got %v", err)
	}
	if strings.Contains(err.Error(), "wrong") {
		t.Errorf("error leaks the password: %v", err)
	}
}

func TestSMTPSenderImplicitTLS(t *testing.T) {
	cfg, pool := selfSigned(t)
	srv := startSMTP(t, serverOpts{implicitTLS: cfg})
	if err := mustSender(t, "smtps://"+srv.Addr, pool).Send(t.Context(), testMessage()); err != nil {
		t.Fatalf("Send over smtps: %v", err)
	}
	if msgs := srv.messages(); len(msgs) != 1 || !msgs[0].TLS {
		t.Fatalf("messages %+v, want one over TLS", msgs)
	}
	// The certificate is checked: without trusting it, nothing is sent.
	err := mustSender(t, "smtps://"+srv.Addr, nil).Send(t.Context(), testMessage())
	if err == nil || errors.Is(err, ErrPermanent) {
		t.Fatalf("untrusted certificate: err = %v, want a transient error", err)
	}
}

func TestSMTPSenderStartTLS(t *testing.T) {
	cfg, pool := selfSigned(t)
	srv := startSMTP(t, serverOpts{startTLS: cfg})
	if err := mustSender(t, "smtp://"+srv.Addr, pool).Send(t.Context(), testMessage()); err != nil {
		t.Fatalf("Send: %v", err)
	}
	if msgs := srv.messages(); len(msgs) != 1 || !msgs[0].TLS {
		t.Fatalf("messages %+v, want one upgraded with STARTTLS", msgs)
	}
}

func TestSMTPSenderClassifiesRejections(t *testing.T) {
	srv := startSMTP(t, serverOpts{})
	s := mustSender(t, "smtp://"+srv.Addr, nil)

	srv.failNextRcpt(&smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "try later"})
	err := s.Send(t.Context(), testMessage())
	if err == nil || errors.Is(err, ErrPermanent) {
		t.Fatalf("4xx: err = %v, want a transient error", err)
	}

	srv.failNextRcpt(&smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such user"})
	err = s.Send(t.Context(), testMessage())
	if !errors.Is(err, ErrPermanent) {
		t.Fatalf("5xx: err = %v, want ErrPermanent", err)
	}
	if !strings.Contains(err.Error(), "550") {
		t.Errorf("error %q lacks the server's reply", err)
	}

	err = s.Send(t.Context(), Message{To: "not an address", Subject: "x", Text: "x"})
	if !errors.Is(err, ErrPermanent) {
		t.Fatalf("invalid address: err = %v, want ErrPermanent", err)
	}

	if n := len(srv.messages()); n != 0 {
		t.Fatalf("server accepted %d messages, want 0", n)
	}
	if err := s.Send(t.Context(), testMessage()); err != nil {
		t.Fatalf("after the rejections, Send: %v", err)
	}
}

func TestSMTPSenderUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // nothing listens there any more
	start := time.Now()
	err = mustSender(t, "smtp://"+addr, nil).Send(t.Context(), testMessage())
	if err == nil || errors.Is(err, ErrPermanent) {
		t.Fatalf("connection refused: err = %v, want a transient error", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}

	// A cancelled context stops the dial at once.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := mustSender(t, "smtp://192.0.2.1:25", nil).Send(ctx, testMessage()); err == nil {
		t.Fatal("Send with a cancelled context succeeded")
	}
}

func TestNewSenderConfig(t *testing.T) {
	s, err := NewSender("", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.(LogSender); !ok {
		t.Fatalf("empty SMTP_URL gave %T, want LogSender", s)
	}

	s, err = NewSender("smtp://relay.example.com?from=noreply@example.com", "")
	if err != nil {
		t.Fatal(err)
	}
	ss := s.(*smtpSender)
	if ss.port != 25 || ss.implicitTLS || ss.hasAuth || ss.from != "noreply@example.com" || ss.timeout != Timeout {
		t.Errorf("smtp:// parsed as %+v", ss)
	}
	s, err = NewSender("SMTPS://u:p@[::1]:2465", testFrom)
	if err != nil {
		t.Fatal(err)
	}
	ss = s.(*smtpSender)
	if ss.host != "::1" || ss.port != 2465 || !ss.implicitTLS || ss.user != "u" || ss.pass != "p" || ss.from != testFrom {
		t.Errorf("smtps:// parsed as %+v", ss)
	}
	if s, _ := NewSender("smtps://relay.example.com", testFrom); s.(*smtpSender).port != 465 {
		t.Errorf("smtps default port %d, want 465", s.(*smtpSender).port)
	}

	for _, bad := range []string{
		"http://user:hunter2@relay.example.com",
		"smtp://user:hunter2@:25",
		"smtp://user:hunter2@relay.example.com:99999",
		"smtp://user:hunter2@relay.example.com",     // no sender address
		"smtp://user:hunter2@relay.example.com:%zz", // unparseable
	} {
		_, err := NewSender(bad, "")
		if err == nil {
			t.Errorf("NewSender(%q) succeeded", bad)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("NewSender(%q) error leaks the password: %v", bad, err)
		}
	}
	if _, err := NewSender("smtp://relay.example.com", "not an address"); err == nil {
		t.Error("invalid sender address accepted")
	}
}

func TestLogSender(t *testing.T) {
	var buf bytes.Buffer
	s := LogSender{Log: slog.New(slog.NewTextHandler(&buf, nil))}
	m := testMessage()
	m.Text = "secret body A-0000ABCD"
	if err := s.Send(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.Contains(out, "ada@example.com") {
		t.Errorf("log lacks the recipient: %s", out)
	}
	if strings.Contains(out, "secret body") {
		t.Errorf("log contains the body: %s", out)
	}
	// The zero value logs to slog.Default and works as well.
	if err := (LogSender{}).Send(t.Context(), m); err != nil {
		t.Fatal(err)
	}
}
