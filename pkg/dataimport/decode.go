package dataimport

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/shopspring/decimal"
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
//     types, nulls, missing required keys, malformed dates and decimals.
//
// Binding follows `json:"name"` tags. A field tagged `dataimport:"required"`
// reports "required" when its key is absent. Pointer fields stay nil when the
// key is absent or null, which is how validators tell "absent" from "given".
// Strings (and the text of dates and numeric strings) are trimmed. Numbers are
// never converted through float64.
//
// The returned error is non-nil only for a parse error (*Error) or a
// programming mistake (dst of an unsupported type).
func DecodeStrict(body []byte, dst any) ([]FieldError, error) {
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("dataimport: DecodeStrict needs a non-nil pointer to a struct, got %T", dst)
	}
	if err := checkType(rv.Elem().Type()); err != nil {
		return nil, err
	}
	raw, perr := parseJSON(body)
	if perr != nil {
		return nil, perr
	}
	obj, ok := raw.(*jsonObject)
	if !ok {
		return []FieldError{{
			Detail: fmt.Sprintf("Invalid data. Expected an object, but got %s.", jsonTypeName(raw)),
			Code:   CodeInvalid,
			Attr:   CodeNonFieldErrors,
		}}, nil
	}
	var d binder
	d.bindStruct(rv.Elem(), obj)
	return d.errs, nil
}

var (
	dateType     = reflect.TypeFor[Date]()
	dateTimeType = reflect.TypeFor[DateTime]()
	decimalType  = reflect.TypeFor[decimal.Decimal]()
	moneyType    = reflect.TypeFor[Money]()
)

// fieldInfo and structInfo are the per-type field table, built once by
// reflection and cached, so the hot path only does map lookups.
type fieldInfo struct {
	name     string
	index    int
	required bool
}

type structInfo struct {
	fields []fieldInfo
	byName map[string]int // JSON name -> position in fields
}

var structCache sync.Map // reflect.Type -> *structInfo

func structInfoFor(t reflect.Type) *structInfo {
	if v, ok := structCache.Load(t); ok {
		return v.(*structInfo)
	}
	info := &structInfo{byName: make(map[string]int)}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name := f.Name
		if tag, ok := f.Tag.Lookup("json"); ok {
			tagName, _, _ := strings.Cut(tag, ",")
			if tagName == "-" {
				continue
			}
			if tagName != "" {
				name = tagName
			}
		}
		info.byName[name] = len(info.fields)
		info.fields = append(info.fields, fieldInfo{
			name:     name,
			index:    i,
			required: f.Tag.Get("dataimport") == "required",
		})
	}
	v, _ := structCache.LoadOrStore(t, info)
	return v.(*structInfo)
}

var typeCheckCache sync.Map // reflect.Type -> error (nil when supported)

// checkType rejects, once per type, field types the binder cannot fill, so a
// mistake in a request struct fails loudly in the first test instead of
// silently dropping data.
func checkType(t reflect.Type) error {
	if v, ok := typeCheckCache.Load(t); ok {
		if v == nil {
			return nil
		}
		return v.(error)
	}
	err := checkTypeRec(t, map[reflect.Type]bool{})
	if err != nil {
		typeCheckCache.Store(t, err)
	} else {
		typeCheckCache.Store(t, nil)
	}
	return err
}

func checkTypeRec(t reflect.Type, seen map[reflect.Type]bool) error {
	if seen[t] {
		return nil
	}
	seen[t] = true
	switch t {
	case dateType, dateTimeType, decimalType, moneyType:
		return nil
	}
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return nil
	case reflect.Pointer, reflect.Slice:
		return checkTypeRec(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() || f.Tag.Get("json") == "-" {
				continue
			}
			if f.Anonymous {
				return fmt.Errorf("dataimport: embedded field %s.%s is not supported", t, f.Name)
			}
			if err := checkTypeRec(f.Type, seen); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("dataimport: field type %s is not supported by DecodeStrict", t)
}

// binder walks generic JSON values and a destination value side by side,
// collecting errors instead of stopping. The current dot path is kept as a
// stack of segments and joined only when an error is reported, so a valid
// body costs no string building.
type binder struct {
	errs []FieldError
	path []string
}

func (d *binder) add(code, detail string) {
	if len(d.errs) > MaxReportedErrors {
		return // Decode reports at most this many; stop paying for more
	}
	attr := strings.Join(d.path, ".")
	if attr == "" {
		attr = CodeNonFieldErrors
	}
	d.errs = append(d.errs, FieldError{Detail: detail, Code: code, Attr: attr})
}

func (d *binder) push(seg string) { d.path = append(d.path, seg) }
func (d *binder) pop()            { d.path = d.path[:len(d.path)-1] }

// addAtKey reports on key of the current object. An empty key has no name
// to put in a dot path, so it is reported on its object (non_field_errors
// at the top), keeping every attr non-empty.
func (d *binder) addAtKey(key, code, detail string) {
	if key == "" {
		d.add(code, detail)
		return
	}
	d.push(key)
	d.add(code, detail)
	d.pop()
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

func (d *binder) bindStruct(v reflect.Value, obj *jsonObject) {
	info := structInfoFor(v.Type())
	seen := make([]bool, len(info.fields))
	for i, key := range obj.keys {
		fi, ok := info.byName[key]
		if !ok {
			d.addAtKey(key, CodeUnknownField, "Unknown field.")
			continue
		}
		seen[fi] = true
		f := info.fields[fi]
		d.push(key)
		d.bind(v.Field(f.index), obj.vals[i])
		d.pop()
	}
	for _, key := range obj.dups {
		d.addAtKey(key, CodeInvalid, "Duplicate key.")
	}
	for fi, f := range info.fields {
		if f.required && !seen[fi] {
			d.addAtKey(f.name, CodeRequired, "This field is required.")
		}
	}
}

func (d *binder) bind(v reflect.Value, raw any) {
	t := v.Type()
	if t.Kind() == reflect.Pointer {
		if raw == nil { // null on an optional field means "not given"
			v.SetZero()
			return
		}
		elem := reflect.New(t.Elem())
		before := len(d.errs)
		d.bind(elem.Elem(), raw)
		// A scalar that failed stays nil so later checks treat it as absent
		// and do not pile a second error onto the same attr. Containers are
		// kept: their valid parts still deserve validation.
		keep := len(d.errs) == before
		if !keep {
			switch raw.(type) {
			case *jsonObject:
				keep = t.Elem().Kind() == reflect.Struct && !isLeafType(t.Elem())
			case []any:
				keep = t.Elem().Kind() == reflect.Slice
			}
		}
		if keep {
			v.Set(elem)
		}
		return
	}
	if raw == nil {
		d.add(CodeNull, "This field may not be null.")
		return
	}
	switch t {
	case dateType:
		s, ok := raw.(string)
		if !ok {
			d.add(CodeInvalidDate, "Date has wrong format. Use one of these formats instead: YYYY-MM-DD.")
			return
		}
		p, err := ParseDate(strings.TrimSpace(s))
		if err != nil {
			d.add(CodeInvalidDate, "Date has wrong format. Use one of these formats instead: YYYY-MM-DD.")
			return
		}
		v.Set(reflect.ValueOf(p))
		return
	case dateTimeType:
		s, ok := raw.(string)
		if !ok {
			d.add(CodeInvalidDatetime, "Datetime has wrong format. Use one of these formats instead: YYYY-MM-DDThh:mm:ssZ.")
			return
		}
		p, err := ParseDateTime(strings.TrimSpace(s))
		if err != nil {
			d.add(CodeInvalidDatetime, "Datetime has wrong format. Use one of these formats instead: YYYY-MM-DDThh:mm:ssZ.")
			return
		}
		v.Set(reflect.ValueOf(p))
		return
	case decimalType, moneyType:
		var text string
		switch r := raw.(type) {
		case json.Number:
			text = string(r)
		case string:
			text = strings.TrimSpace(r)
		default:
			d.add(CodeInvalidDecimal, "A valid number is required.")
			return
		}
		dec, code, detail := parseDecimal(text)
		if code != "" {
			d.add(code, detail)
			return
		}
		if t == moneyType {
			v.Set(reflect.ValueOf(Money{dec}))
		} else {
			v.Set(reflect.ValueOf(dec))
		}
		return
	}
	switch t.Kind() {
	case reflect.String:
		s, ok := raw.(string)
		if !ok {
			d.add(CodeInvalid, "Not a valid string.")
			return
		}
		// Postgres text and jsonb cannot hold NUL; refusing it here keeps
		// a hostile string from surfacing later as a 500.
		if strings.ContainsRune(s, 0) {
			d.add(CodeNullCharactersNotAllowed, "Null characters are not allowed.")
			return
		}
		v.SetString(strings.TrimSpace(s))
	case reflect.Bool:
		b, ok := raw.(bool)
		if !ok {
			d.add(CodeInvalid, "Must be a valid boolean.")
			return
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := raw.(json.Number)
		if !ok {
			d.add(CodeInvalid, "A valid integer is required.")
			return
		}
		i, err := strconv.ParseInt(string(n), 10, t.Bits())
		if err != nil {
			d.add(CodeInvalid, "A valid integer is required.")
			return
		}
		v.SetInt(i)
	case reflect.Slice:
		arr, ok := raw.([]any)
		if !ok {
			d.add(CodeInvalid, fmt.Sprintf("Expected a list of items but got %s.", jsonTypeName(raw)))
			return
		}
		s := reflect.MakeSlice(t, len(arr), len(arr))
		for i, item := range arr {
			d.push(strconv.Itoa(i))
			d.bind(s.Index(i), item)
			d.pop()
		}
		v.Set(s)
	case reflect.Struct:
		obj, ok := raw.(*jsonObject)
		if !ok {
			d.add(CodeInvalid, fmt.Sprintf("Invalid data. Expected an object, but got %s.", jsonTypeName(raw)))
			return
		}
		d.bindStruct(v, obj)
	default:
		// checkType refuses such types before binding starts.
		panic(fmt.Sprintf("dataimport: unsupported type %s", t))
	}
}

// isLeafType reports struct types that are scalars on the wire.
func isLeafType(t reflect.Type) bool {
	return t == dateType || t == dateTimeType || t == decimalType || t == moneyType
}
