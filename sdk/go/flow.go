package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/gridshift/dataimport/sdk/go/client"
)

// The common flow with plain results: every method returns *APIError for an
// answer of 400 or more. An account is any value that marshals to the
// account object (client.Account, json.RawMessage of an NDJSON line, a
// map): decimals and money may be JSON numbers or strings on input.

const jsonType = "application/json"

func marshal(v any) (*bytes.Reader, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("sdk: encode request: %w", err)
	}
	return bytes.NewReader(b), nil
}

// ValidateAccount checks an account without storing it and returns it as
// the API read it.
func (c *Client) ValidateAccount(ctx context.Context, account any) (*client.Account, error) {
	body, err := marshal(account)
	if err != nil {
		return nil, err
	}
	resp, err := c.ValidateAccountWithBodyWithResponse(ctx, nil, jsonType, body)
	if err != nil {
		return nil, err
	}
	if err := check(resp.HTTPResponse, resp.Body); err != nil {
		return nil, err
	}
	return resp.JSON200, nil
}

// StageAccount stores (or replaces) an account's import data.
func (c *Client) StageAccount(ctx context.Context, account any) (*client.StageResult, error) {
	body, err := marshal(account)
	if err != nil {
		return nil, err
	}
	resp, err := c.StageAccountWithBodyWithResponse(ctx, nil, jsonType, body)
	if err != nil {
		return nil, err
	}
	if err := check(resp.HTTPResponse, resp.Body); err != nil {
		return nil, err
	}
	if resp.JSON201 != nil {
		return resp.JSON201, nil
	}
	return resp.JSON200, nil
}

// Created is the outcome of CreateAccount: the platform account number, or
// InProgress when the API is still creating it (poll Status).
type Created struct {
	PlatformAccountNumber string
	InProgress            bool
	StatusURL             string
}

// CreateAccount creates a staged account on the platform.
func (c *Client) CreateAccount(ctx context.Context, req client.CreateAccountRequest) (*Created, error) {
	resp, err := c.CreateAccountWithResponse(ctx, nil, req)
	if err != nil {
		return nil, err
	}
	if err := check(resp.HTTPResponse, resp.Body); err != nil {
		return nil, err
	}
	switch {
	case resp.JSON201 != nil:
		return &Created{PlatformAccountNumber: resp.JSON201.PlatformAccountNumber}, nil
	case resp.JSON202 != nil:
		return &Created{InProgress: true, StatusURL: resp.JSON202.StatusUrl}, nil
	}
	return nil, fmt.Errorf("sdk: create account: unexpected answer %d", resp.StatusCode())
}

// Status reads one account's import status.
func (c *Client) Status(ctx context.Context, supplier, external string) (*client.AccountStatus, error) {
	resp, err := c.AccountTransferStatusWithResponse(ctx, supplier, external)
	if err != nil {
		return nil, err
	}
	if err := check(resp.HTTPResponse, resp.Body); err != nil {
		return nil, err
	}
	return resp.JSON200, nil
}

// WaitCreated polls Status every interval until the account is created
// (COMPLETED) or its last attempt failed (latest_error), or ctx ends.
func (c *Client) WaitCreated(ctx context.Context, supplier, external string, interval time.Duration) (*client.AccountStatus, error) {
	for {
		st, err := c.Status(ctx, supplier, external)
		if err != nil {
			return nil, err
		}
		if st.Status == "COMPLETED" || (st.LatestError != nil && st.Status != "IN_PROGRESS") {
			return st, nil
		}
		select {
		case <-ctx.Done():
			return st, context.Cause(ctx)
		case <-time.After(interval):
		}
	}
}

// CreateNotes adds notes to an imported account.
func (c *Client) CreateNotes(ctx context.Context, req client.NotesRequest) ([]client.NoteResult, error) {
	resp, err := c.CreateNotesWithResponse(ctx, nil, req)
	if err != nil {
		return nil, err
	}
	if err := check(resp.HTTPResponse, resp.Body); err != nil {
		return nil, err
	}
	if resp.JSON201 == nil {
		return nil, fmt.Errorf("sdk: create notes: unexpected answer %d", resp.StatusCode())
	}
	return *resp.JSON201, nil
}
