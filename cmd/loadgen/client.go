package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// client talks to the public API as a partner would. A token that
// expires during a long run (401) is renewed with the API key once.
type client struct {
	base   string
	http   *http.Client
	mu     sync.Mutex
	token  string
	apiKey string
}

func (c *client) bearer() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.token
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
	old := c.bearer()
	r, err := c.send(ctx, method, path, body, headers...)
	if err != nil || r.status != http.StatusUnauthorized || old == "" || path == graphqlPath {
		return r, err
	}
	c.mu.Lock()
	key, renew := c.apiKey, c.token == old // another request may have renewed it already
	c.mu.Unlock()
	if renew && key != "" {
		if err := c.login(ctx, key); err != nil {
			return r, err
		}
	}
	return c.send(ctx, method, path, body, headers...)
}

const graphqlPath = "/v1/graphql/"

func (c *client) send(ctx context.Context, method, path string, body []byte, headers ...string) (response, error) {
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
	if t := c.bearer(); t != "" {
		req.Header.Set("Authorization", "Token "+t)
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
	r, err := c.send(ctx, http.MethodPost, graphqlPath, mustJSON(q))
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
	c.mu.Lock()
	c.token, c.apiKey = out.Data.ObtainToken.Token, apiKey
	c.mu.Unlock()
	return nil
}
