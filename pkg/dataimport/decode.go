package dataimport

import (
	"fmt"
	"reflect"
	"strconv"
)

// DecodeStrict binds a JSON request body into dst (a pointer to a struct) the
// way every endpoint of the API needs it:
//
//   - a body that is not JSON (or has trailing data, or nests deeper than 64)
//     returns a *Error with CodeParseError;
//   - a top-level value that is not an object is one field error on
//     "non_field_errors";
//   - otherwise every problem is collected, not just the first, as field
//     errors with dot paths (customers.0.landline): unknown keys, wrong JSON
//     types, nulls, missing required keys, malformed dates and decimals, and
//     arrays longer than their maximum.
//
// Binding follows `json:"name"` tags. The `dataimport` tag holds options,
// comma-separated: "required" reports "required" when the key is absent;
// "max=N" is the most items a slice field accepts, and every slice field
// must declare one (see ArrayMaxima). Beyond N items the array is reported
// (max_items) and the rest of it is skipped unread, so no body can make the
// binder build more than the declared maxima allow. Pointer fields stay nil
// when the key is absent or null, which is how validators tell "absent"
// from "given". Strings (and the text of dates and numeric strings) are
// trimmed. Numbers are never converted through float64.
//
// Values are bound straight from the bytes, without an intermediate tree,
// and once MaxReportedErrors errors are found the rest of the body is only
// skimmed: work and memory stay proportional to what is kept.
//
// The returned error is non-nil only for a parse error (*Error) or a
// programming mistake (dst of an unsupported type).
func DecodeStrict(body []byte, dst any) ([]FieldError, error) {
	var c collector
	if _, err := decodeStrict(body, dst, &c); err != nil {
		return nil, err
	}
	return c.list(), nil
}

// decodeStrict is DecodeStrict adding to c; notObject reports a body whose
// top-level value is not an object (nothing was bound).
func decodeStrict(body []byte, dst any, c *collector) (notObject bool, err error) {
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		return false, fmt.Errorf("dataimport: DecodeStrict needs a non-nil pointer to a struct, got %T", dst)
	}
	if err := checkType(rv.Elem().Type()); err != nil {
		return false, err
	}
	arrays, perr := checkJSON(body, make([]arrayLen, 0, 32))
	if perr != nil {
		return false, perr
	}
	d := binder{r: jsonReader{buf: body, arrays: arrays}, c: c}
	if d.r.peek() != '{' {
		c.add(CodeNonFieldErrors, CodeInvalid, fmt.Sprintf("Invalid data. Expected an object, but got %s.", d.r.kind()))
		return true, nil
	}
	d.bindStruct(rv.Elem())
	if d.err != nil {
		return false, parseError(d.err.Error())
	}
	return false, nil
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func indexPath(path string, i int) string {
	return joinPath(path, strconv.Itoa(i))
}
