package console

import "net/url"

// Every console URL that carries a supplier code or an account number is
// built here (handlers and templates alike), each path segment through
// url.PathEscape and each query value through url.QueryEscape, so any
// identifier the API accepts ("ACC/7", "50%", "a?b#c") reaches its own
// page and its own skip form. The mux matches escaped segments and
// r.PathValue decodes them.

func supplierURL(code string) string { return "/suppliers/" + url.PathEscape(code) }

func supplierStatusURL(code string) string { return supplierURL(code) + "/status" }

func accountsURL(code string) string { return supplierURL(code) + "/accounts" }

// accountURL is the account's page: the number travels in the query
// because the same form also takes a platform account number.
func accountURL(code, number string) string {
	return accountsURL(code) + "?number=" + url.QueryEscape(number)
}

// skipURL is the skip form's action; the account number is a field of
// the form (skipAccount).
func skipURL(code string) string { return accountsURL(code) + "/skip" }

// unskipURL and retryAccountURL are the actions of the account page's
// unskip and retry forms (account_actions.go), the number a form field as
// for skip.
func unskipURL(code string) string { return accountsURL(code) + "/unskip" }

func retryAccountURL(code string) string { return accountsURL(code) + "/retry" }
