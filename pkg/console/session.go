package console

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/gridshift/dataimport/pkg/auth"
	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/storable"
)

// sessionCookie holds the session token; only its SHA-256 is stored.
const sessionCookie = "console_session"

type operatorKey struct{}

// operatorFrom returns the logged-in operator of a request.
func operatorFrom(ctx context.Context) (postgres.Operator, bool) {
	op, ok := ctx.Value(operatorKey{}).(postgres.Operator)
	return op, ok
}

// public paths need no session.
func public(path string) bool {
	return path == "/login" || strings.HasPrefix(path, "/static/")
}

// authenticate puts the session's operator, and the audit actor
// operator:<name>, in the request's context. Without a live session every
// route but /login and the static files redirects to /login (303, for any
// method); an operator with a one-time password is sent to /password until
// they have chosen their own.
func (c *Console) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if public(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		op, err := c.sessionOperator(r)
		if err != nil {
			if !errors.Is(err, postgres.ErrOperatorNotFound) {
				c.deps.Logger.ErrorContext(r.Context(), "console session lookup", "err", err.Error())
				http.Error(w, "The console cannot reach its database.", http.StatusServiceUnavailable)
				return
			}
			redirect(w, r, "/login")
			return
		}
		if op.MustChangePassword && r.URL.Path != "/password" && r.URL.Path != "/logout" {
			redirect(w, r, "/password")
			return
		}
		ctx := context.WithValue(r.Context(), operatorKey{}, op)
		ctx = postgres.WithActor(ctx, postgres.Actor("operator:"+op.Name))
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// sessionHash is the token hash of the request's session (nil: none).
func (c *Console) sessionHash(r *http.Request) []byte {
	ck, err := r.Cookie(sessionCookie)
	if err != nil {
		return nil
	}
	return auth.HashSessionToken(ck.Value)
}

func (c *Console) sessionOperator(r *http.Request) (postgres.Operator, error) {
	ck, err := r.Cookie(sessionCookie)
	if err != nil || ck.Value == "" || len(ck.Value) > 128 {
		return postgres.Operator{}, postgres.ErrOperatorNotFound
	}
	return c.deps.Store.SessionOperator(r.Context(), auth.HashSessionToken(ck.Value))
}

// redirect answers 303 See Other; htmx requests (the live fragments) get
// HX-Redirect so the whole page moves, not the fragment.
func redirect(w http.ResponseWriter, r *http.Request, to string) {
	if r.Header.Get("HX-Request") == "true" {
		w.Header().Set("HX-Redirect", to)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, "login", map[string]any{})
}

// login checks name and password under a throttle keyed per client and
// login name: 10 failures a minute, then refused. Keyed on the client
// alone, one attacker behind a shared proxy address locked every operator
// out; the client is the address the trusted proxies name (clientIP).
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	name, password := strings.TrimSpace(r.PostFormValue("name")), r.PostFormValue("password")
	client := "console:" + c.clientIP(r) + ":" + strings.ToLower(storable.Text(name, 200))
	if c.deps.Throttle != nil {
		blocked, wait, err := c.deps.Throttle.Blocked(ctx, client)
		if err != nil {
			c.deps.Logger.WarnContext(ctx, "console login throttle unavailable", "err", err.Error())
		} else if blocked {
			w.Header().Set("Retry-After", itoa(int(math.Ceil(wait.Seconds()))))
			c.render(w, r, http.StatusTooManyRequests, "login", map[string]any{"Error": "Too many failed logins for this name from your address. Try again in a minute."})
			return
		}
	}
	op, err := c.deps.Store.OperatorByName(ctx, name)
	if err != nil && !errors.Is(err, postgres.ErrOperatorNotFound) {
		c.fail(w, r, err)
		return
	}
	// A missing operator still costs a bcrypt comparison, so timing does
	// not tell which names exist.
	hash := op.PasswordHash
	if hash == "" {
		hash = dummyHash
	}
	if !auth.CheckOperatorPassword(hash, password) || op.ID == 0 {
		if c.deps.Throttle != nil {
			if err := c.deps.Throttle.Failed(ctx, client, 1); err != nil {
				c.deps.Logger.WarnContext(ctx, "console login throttle unavailable", "err", err.Error())
			}
		}
		c.render(w, r, http.StatusUnauthorized, "login", map[string]any{"Error": "Wrong name or password.", "Name": name})
		return
	}
	token, hashed := auth.NewSessionToken()
	expires := time.Now().Add(c.cfg.SessionTTL)
	if err := c.deps.Store.CreateSession(postgres.WithActor(ctx, postgres.Actor("operator:"+op.Name)), op, hashed, expires); err != nil {
		c.fail(w, r, err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: token, Path: "/", Expires: expires, MaxAge: int(c.cfg.SessionTTL.Seconds()),
		HttpOnly: true, Secure: c.cfg.CookieSecure, SameSite: http.SameSiteStrictMode})
	if op.MustChangePassword {
		redirect(w, r, "/password")
		return
	}
	redirect(w, r, "/")
}

// dummyHash is a bcrypt hash of a random string, compared against when the
// operator does not exist.
var dummyHash = func() string {
	pw, _ := auth.GenerateOperatorPassword()
	h, _ := auth.HashOperatorPassword(pw)
	return h
}()

func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	op, _ := operatorFrom(r.Context())
	if ck, err := r.Cookie(sessionCookie); err == nil {
		if err := c.deps.Store.EndSession(r.Context(), op, auth.HashSessionToken(ck.Value)); err != nil {
			c.fail(w, r, err)
			return
		}
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
		Secure: c.cfg.CookieSecure, SameSite: http.SameSiteStrictMode})
	redirect(w, r, "/login")
}

func (c *Console) passwordPage(w http.ResponseWriter, r *http.Request) {
	op, _ := operatorFrom(r.Context())
	c.render(w, r, http.StatusOK, "password", map[string]any{"MustChange": op.MustChangePassword})
}

// changePassword sets the operator's own password; the one-time password
// importctl printed works only until then, and every other session of the
// operator ends (this one goes on).
func (c *Console) changePassword(w http.ResponseWriter, r *http.Request) {
	op, _ := operatorFrom(r.Context())
	current, next, again := r.PostFormValue("current"), r.PostFormValue("new"), r.PostFormValue("again")
	data := map[string]any{"MustChange": op.MustChangePassword}
	switch {
	case !auth.CheckOperatorPassword(op.PasswordHash, current):
		data["Error"] = "The current password is wrong."
	case next != again:
		data["Error"] = "The two new passwords differ."
	case next == current:
		data["Error"] = "Choose a password other than the one-time one."
	}
	if data["Error"] == nil {
		hash, err := auth.HashOperatorPassword(next)
		if err != nil {
			data["Error"] = err.Error()
		} else if err := c.deps.Store.SetOperatorPassword(r.Context(), op.Name, hash, false, c.sessionHash(r)); err != nil {
			c.fail(w, r, err)
			return
		} else {
			redirect(w, r, "/")
			return
		}
	}
	c.render(w, r, http.StatusBadRequest, "password", data)
}
