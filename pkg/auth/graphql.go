package auth

import (
	"context"
	"errors"

	graphql "github.com/graph-gophers/graphql-go"
)

// schemaSDL is the GraphQL surface: obtainToken only (CONTRACT §3).
const schemaSDL = `
schema { query: Query mutation: Mutation }

type Query {
  "Liveness of the GraphQL endpoint."
  ping: String!
}

input ObtainTokenInput {
  APIKey: String
  refreshToken: String
}

type ObtainTokenPayload {
  token: String!
  refreshToken: String!
  "Unix timestamp at which the refresh token expires."
  refreshExpiresIn: Int!
}

type Mutation {
  obtainToken(input: ObtainTokenInput!): ObtainTokenPayload!
}
`

// GraphQLError carries a machine-readable errorCode in extensions.
type GraphQLError struct {
	Code    string
	Message string
}

func (e *GraphQLError) Error() string { return e.Message }

// Extensions is read by graphql-go to fill errors[].extensions.
func (e *GraphQLError) Extensions() map[string]any { return map[string]any{"errorCode": e.Code} }

type resolver struct{ svc *Service }

func (resolver) Ping() string { return "pong" }

type obtainTokenInput struct {
	APIKey       *string
	RefreshToken *string
}

type tokenPayload struct{ p TokenPair }

func (t tokenPayload) Token() string           { return t.p.Token }
func (t tokenPayload) RefreshToken() string    { return t.p.RefreshToken }
func (t tokenPayload) RefreshExpiresIn() int32 { return int32(t.p.RefreshExpiresAt.Unix()) }

func (r resolver) ObtainToken(ctx context.Context, args struct{ Input obtainTokenInput }) (tokenPayload, error) {
	in := args.Input
	switch {
	case in.APIKey != nil && in.RefreshToken != nil:
		return tokenPayload{}, &GraphQLError{Code: "invalid_input", Message: "Give either APIKey or refreshToken, not both."}
	case in.RefreshToken != nil:
		p, err := r.svc.Refresh(ctx, *in.RefreshToken)
		if errors.Is(err, ErrInvalidRefreshToken) {
			return tokenPayload{}, &GraphQLError{Code: "invalid_refresh_token", Message: "Invalid or expired refresh token."}
		}
		return tokenPayload{p}, err
	case in.APIKey != nil:
		p, err := r.svc.ObtainWithAPIKey(ctx, *in.APIKey)
		if errors.Is(err, ErrInvalidAPIKey) {
			return tokenPayload{}, &GraphQLError{Code: "invalid_api_key", Message: "Invalid API key."}
		}
		return tokenPayload{p}, err
	}
	return tokenPayload{}, &GraphQLError{Code: "invalid_input", Message: "Give APIKey or refreshToken."}
}

// Schema parses the GraphQL schema bound to svc.
func Schema(svc *Service) (*graphql.Schema, error) {
	return graphql.ParseSchema(schemaSDL, &resolver{svc: svc},
		graphql.UseFieldResolvers(), graphql.MaxDepth(8), graphql.MaxQueryLength(8192))
}
