package dataimport

import (
	"strings"
	"unicode"
)

// MaxWebhookDescription bounds a webhook endpoint's description (the
// column's CHECK, migration 00020).
const MaxWebhookDescription = 500

// CheckWebhookDescription refuses a partner's endpoint description the
// database would refuse or that would not read back as written.
func CheckWebhookDescription(d string) []FieldError {
	switch {
	case len([]rune(d)) > MaxWebhookDescription:
		return []FieldError{{Attr: "description", Code: CodeMaxLength, Detail: "Ensure this field has no more than 500 characters."}}
	case strings.ContainsFunc(d, unicode.IsControl):
		return []FieldError{{Attr: "description", Code: CodeInvalid, Detail: "Control characters are not allowed."}}
	}
	return nil
}
