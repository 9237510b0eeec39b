// Package email delivers the plain-text e-mails the service sends (welcome
// e-mails, CONTRACT §6) over SMTP, configured by SMTP_URL (CONTRACT §1).
// With no SMTP_URL, messages are only logged, so a developer machine needs no
// mail server.
package email

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	netmail "net/mail"
	"net/url"
	"strconv"
	"strings"
	"time"

	mail "github.com/wneessen/go-mail"
)

// Timeout bounds connecting to the SMTP server and each exchange with it.
const Timeout = 10 * time.Second

// ErrPermanent marks a delivery the SMTP server refused for good (a 5xx reply
// to MAIL FROM, RCPT TO or DATA, or an address that cannot be an e-mail
// address): sending the same message again cannot succeed. Every other error
// (connection trouble, 4xx replies, authentication or TLS failures, which an
// operator can fix) is transient and worth retrying.
var ErrPermanent = errors.New("permanent SMTP rejection")

// ErrOutcomeUnknown marks a message whose end of data (the final dot after
// DATA) was sent and then no reply came (connection lost, timeout): the
// server may have accepted it or not. Sending it again could deliver it
// twice. Every error that wraps neither this nor ErrPermanent happened
// before the message was complete (connecting, greeting, TLS, AUTH, MAIL,
// RCPT, DATA, writing the content) or is an explicit 4xx refusal of it, so
// the message was definitely not delivered and a retry is safe.
var ErrOutcomeUnknown = errors.New("SMTP outcome unknown")

// Message is one plain-text e-mail to one recipient.
type Message struct {
	To      string
	Subject string
	Text    string
	// MessageID, when set, is the Message-ID header: the left part of
	// <MessageID@domain of the sender address>, or the whole id if it has
	// an @. A stable one lets relays and mail clients drop a second copy.
	MessageID string
}

// Sender delivers messages. Implementations are safe for concurrent use.
// Send returns nil when the server accepted the message, an error wrapping
// ErrOutcomeUnknown when it may have, and any other error when it did not.
type Sender interface {
	Send(ctx context.Context, m Message) error
}

// NewSender builds the Sender for smtpURL:
//
//   - "" → a LogSender (nothing is sent; the recipient is logged);
//   - smtp://[user:pass@]host[:port] → SMTP (default port 25), upgraded with
//     STARTTLS when the server offers it;
//   - smtps://[user:pass@]host[:port] → SMTP over implicit TLS (default port 465).
//
// from is the sender address ("Name <addr@example.com>" is allowed); when it
// is empty, a from query parameter of the URL is used (smtp://host?from=...).
// Credentials are offered with the strongest mechanism the server supports;
// PLAIN and LOGIN are used only over TLS or to localhost.
func NewSender(smtpURL, from string) (Sender, error) {
	if strings.TrimSpace(smtpURL) == "" {
		return LogSender{}, nil
	}
	return newSMTPSender(smtpURL, from, nil)
}

// LogSender is the Sender used when SMTP_URL is empty: it logs that a
// message would have been sent (recipient and subject, never the body) and
// reports success.
type LogSender struct {
	Log *slog.Logger // nil: slog.Default()
}

// Send logs m and returns nil.
func (s LogSender) Send(ctx context.Context, m Message) error {
	l := s.Log
	if l == nil {
		l = slog.Default()
	}
	l.InfoContext(ctx, "e-mail not sent: SMTP_URL is empty", "to", m.To, "subject", m.Subject, "message_id", m.MessageID)
	return nil
}

type smtpSender struct {
	host        string
	port        int
	implicitTLS bool
	user, pass  string
	hasAuth     bool
	from        string
	idDomain    string         // right part of generated Message-IDs: the sender address's domain
	rootCAs     *x509.CertPool // nil: the system roots (tests set their own)
	timeout     time.Duration
}

func newSMTPSender(smtpURL, from string, rootCAs *x509.CertPool) (*smtpSender, error) {
	u, err := url.Parse(strings.TrimSpace(smtpURL))
	if err != nil {
		// url.Error repeats the URL, password included; keep only the reason.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("SMTP_URL: %w", err)
	}
	s := &smtpSender{host: u.Hostname(), rootCAs: rootCAs, timeout: Timeout}
	switch strings.ToLower(u.Scheme) {
	case "smtp":
		s.port = 25
	case "smtps":
		s.port, s.implicitTLS = 465, true
	default:
		return nil, fmt.Errorf("SMTP_URL %s: scheme must be smtp or smtps", u.Redacted())
	}
	if s.host == "" {
		return nil, fmt.Errorf("SMTP_URL %s: no host", u.Redacted())
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("SMTP_URL %s: invalid port %q", u.Redacted(), p)
		}
		s.port = n
	}
	if u.User != nil && u.User.Username() != "" {
		s.user = u.User.Username()
		s.pass, _ = u.User.Password()
		s.hasAuth = true
	}
	if strings.TrimSpace(from) == "" {
		from = u.Query().Get("from")
	}
	s.from = strings.TrimSpace(from)
	if s.from == "" {
		return nil, fmt.Errorf("SMTP_URL %s: no sender address (pass one, or add ?from=)", u.Redacted())
	}
	if err := mail.NewMsg().From(s.from); err != nil {
		return nil, fmt.Errorf("SMTP sender address %q: %w", s.from, err)
	}
	s.idDomain = "localhost"
	if a, err := netmail.ParseAddress(s.from); err == nil {
		if _, domain, ok := strings.Cut(a.Address, "@"); ok && domain != "" {
			s.idDomain = domain
		}
	}
	return s, nil
}

// Send delivers m over one fresh SMTP connection. A new go-mail client per
// message keeps concurrent sends independent (the client mutates its state
// while authenticating).
func (s *smtpSender) Send(ctx context.Context, m Message) error {
	msg := mail.NewMsg()
	if err := msg.From(s.from); err != nil {
		return fmt.Errorf("email: sender address: %w", err)
	}
	if err := msg.To(m.To); err != nil {
		return fmt.Errorf("email: recipient %q: %w: %w", m.To, ErrPermanent, err)
	}
	msg.Subject(m.Subject)
	msg.SetBodyString(mail.TypeTextPlain, m.Text)
	if id := m.MessageID; id != "" {
		if !strings.Contains(id, "@") {
			id += "@" + s.idDomain
		}
		msg.SetMessageIDWithValue(id)
	}

	c, err := mail.NewClient(s.host, s.options()...)
	if err != nil {
		return fmt.Errorf("email: smtp client: %w", err)
	}
	dctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	err = c.DialAndSendWithContext(dctx, msg)
	if err == nil {
		return nil
	}
	if msg.IsDelivered() {
		// The server accepted the message; only the RSET or QUIT after it
		// failed. Reporting a failure would make the caller send it again.
		return nil
	}
	if isPermanent(err) {
		return fmt.Errorf("email: deliver to %s: %w: %w", m.To, ErrPermanent, err)
	}
	if isUnanswered(err) {
		return fmt.Errorf("email: deliver to %s: %w: %w", m.To, ErrOutcomeUnknown, err)
	}
	return fmt.Errorf("email: deliver to %s: %w", m.To, err)
}

// isUnanswered reports a failure after the whole message, final dot
// included, was handed to the connection, without an SMTP reply to it (go-mail
// gives ErrorCode 0 when no reply code was read). Every earlier failure
// leaves the server with an incomplete transaction, which it must discard.
func isUnanswered(err error) bool {
	var se *mail.SendError
	return errors.As(err, &se) && se.Reason == mail.ErrSMTPDataClose && se.ErrorCode() == 0
}

func (s *smtpSender) options() []mail.Option {
	opts := []mail.Option{
		mail.WithPort(s.port),
		mail.WithTimeout(s.timeout),
		mail.WithTLSConfig(&tls.Config{ServerName: s.host, MinVersion: tls.VersionTLS12, RootCAs: s.rootCAs}),
	}
	if s.implicitTLS {
		opts = append(opts, mail.WithSSL())
	} else {
		opts = append(opts, mail.WithTLSPolicy(mail.TLSOpportunistic))
	}
	if s.hasAuth {
		opts = append(opts,
			mail.WithUsername(s.user), mail.WithPassword(s.pass),
			// PLAIN and LOGIN (without -NOENC) refuse to send credentials in
			// clear text except to localhost.
			mail.WithOpportunisticSMTPAuth(mail.SMTPAuthSCRAMSHA256, mail.SMTPAuthSCRAMSHA1,
				mail.SMTPAuthCramMD5, mail.SMTPAuthPlain, mail.SMTPAuthLogin))
	}
	return opts
}

// isPermanent reports a 5xx reply to the message itself (MAIL FROM, RCPT TO,
// DATA). A 5xx while connecting (greeting, STARTTLS, AUTH) is about the
// server or our configuration, not the message, and stays retryable.
func isPermanent(err error) bool {
	var se *mail.SendError
	if !errors.As(err, &se) || se.IsTemp() {
		return false
	}
	switch se.Reason {
	case mail.ErrSMTPMailFrom, mail.ErrSMTPRcptTo, mail.ErrSMTPData, mail.ErrSMTPDataClose:
		code := se.ErrorCode()
		return code >= 500 && code < 600
	}
	return false
}
