package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// client talks to the public API as a partner would.
type client struct {
	base  string
	token string
	http  *http.Client
}

func newClient(base string, conns int) *client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns, t.MaxIdleConnsPerHost = conns*2, conns*2
	return &client{base: base, http: &http.Client{Transport: t, Timeout: 60 * time.Second}}
}

type response struct {
	status     int
	body       []byte
	retryAfter time.Duration
}

func (c *client) do(ctx context.Context, method, path string, body []byte, headers ...string) (response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return response{}, fmt.Errorf("request %s: %w", path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Token "+c.token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return response{}, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return response{}, fmt.Errorf("%s %s: %w", method, path, err)
	}
	r := response{status: resp.StatusCode, body: b}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
		r.retryAfter = time.Duration(s) * time.Second
	}
	return r, nil
}

// login exchanges the API key for an access token.
func (c *client) login(ctx context.Context, apiKey string) error {
	q := map[string]any{"query": `mutation($k: String!) { obtainToken(input: {APIKey: $k}) { token } }`, "variables": map[string]any{"k": apiKey}}
	r, err := c.do(ctx, http.MethodPost, "/v1/graphql/", mustJSON(q))
	if err != nil {
		return err
	}
	var out struct {
		Data struct {
			ObtainToken struct{ Token string } `json:"obtainToken"`
		} `json:"data"`
	}
	if err := json.Unmarshal(r.body, &out); err != nil || out.Data.ObtainToken.Token == "" {
		return fmt.Errorf("obtainToken: %d %s", r.status, r.body)
	}
	c.token = out.Data.ObtainToken.Token
	return nil
}
