package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/csrf"
)

// pageNames are the templates under templates/, each rendered inside
// layout.html (fragments render alone).
var pageNames = []string{"login", "password", "overview", "supplier", "account", "audit"}

var fragmentNames = []string{"live"}

var funcs = template.FuncMap{
	"supplierURL": supplierURL, "supplierStatusURL": supplierStatusURL, "accountsURL": accountsURL,
	"accountURL": accountURL, "skipURL": skipURL, "unskipURL": unskipURL, "retryAccountURL": retryAccountURL,
	"since": func(t *time.Time) string {
		if t == nil {
			return "—"
		}
		return time.Since(*t).Round(time.Second).String()
	},
	"at":   func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") },
	"date": func(t time.Time) string { return t.UTC().Format("2006-01-02") },
	"json": func(raw []byte) string {
		if len(raw) == 0 || string(raw) == "null" {
			return "—"
		}
		var buf bytes.Buffer
		if json.Indent(&buf, raw, "", "  ") != nil {
			return string(raw)
		}
		return buf.String()
	},
	"percent": func(a, b int64) int64 {
		if b <= 0 {
			return 0
		}
		return min(100, a*100/b)
	},
}

func parsePages() (map[string]*template.Template, error) {
	out := map[string]*template.Template{}
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(funcs).ParseFS(assets, "templates/layout.html", "templates/"+name+".html", "templates/live.html")
		if err != nil {
			return nil, fmt.Errorf("console template %s: %w", name, err)
		}
		out[name] = t
	}
	for _, name := range fragmentNames {
		t, err := template.New(name).Funcs(funcs).ParseFS(assets, "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("console template %s: %w", name, err)
		}
		out[name] = t
	}
	return out, nil
}

// render executes a page into a buffer first, so a template error is a
// clean 500 and never half a page.
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, name string, data map[string]any) {
	data["CSRFField"] = csrf.TemplateField(r)
	data["CSRFToken"] = csrf.Token(r)
	if op, ok := operatorFrom(r.Context()); ok {
		data["Operator"] = op.Name
	}
	entry := "layout"
	if isFragment(name) {
		entry = name
	}
	var buf bytes.Buffer
	if err := c.pages[name].ExecuteTemplate(&buf, entry, data); err != nil {
		c.fail(w, r, fmt.Errorf("render %s: %w", name, err))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

func isFragment(name string) bool {
	for _, f := range fragmentNames {
		if f == name {
			return true
		}
	}
	return false
}

// fail logs an unexpected error and answers 500 without its detail.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, err error) {
	c.deps.Logger.ErrorContext(r.Context(), "console request failed", "path", r.URL.Path, "err", err.Error())
	http.Error(w, "Something went wrong; it has been logged.", http.StatusInternalServerError)
}

func itoa(n int) string { return strconv.Itoa(n) }
