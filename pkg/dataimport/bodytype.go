package dataimport

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/shopspring/decimal"
)

// This file is what DecodeStrict can bind: the field table of each request
// type, read once from its tags, and the check that refuses a type the
// binder cannot fill safely (including an array without a maximum).

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
	maxItems int // slice fields: the most items accepted
	slot     int // pointer fields: the field of optional holding the value; else -1
}

type structInfo struct {
	fields []fieldInfo
	byName map[string]int // JSON name -> position in fields
	// inOrder: every name is one field's, so a key equal to the next
	// field's name is that field (see binder.lookup).
	inOrder bool
	// optional has one field per pointer field, of the pointed-to type:
	// the binder allocates one per object that has an optional value
	// given and points the fields into it, instead of allocating each
	// value on its own (nil when the type has no pointer field).
	optional reflect.Type
}

var structCache sync.Map // reflect.Type -> *structInfo

// maxBoundFields is how many fields one struct may bind: the binder marks
// the keys it has seen in one uint64.
const maxBoundFields = 64

func structInfoFor(t reflect.Type) *structInfo {
	if v, ok := structCache.Load(t); ok {
		return v.(*structInfo)
	}
	info, _ := buildStructInfo(t) // checkType has refused types with bad tags
	v, _ := structCache.LoadOrStore(t, info)
	return v.(*structInfo)
}

func buildStructInfo(t reflect.Type) (*structInfo, error) {
	info := &structInfo{byName: make(map[string]int)}
	var optional []reflect.StructField
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
		fi := fieldInfo{name: name, index: i, slot: -1}
		if err := parseFieldOptions(&fi, f); err != nil {
			return info, fmt.Errorf("dataimport: field %s.%s: %w", t, f.Name, err)
		}
		if f.Type.Kind() == reflect.Pointer {
			fi.slot = len(optional)
			optional = append(optional, reflect.StructField{Name: "F" + strconv.Itoa(fi.slot), Type: f.Type.Elem()})
		}
		info.byName[name] = len(info.fields)
		info.fields = append(info.fields, fi)
	}
	if len(info.fields) > maxBoundFields {
		return info, fmt.Errorf("dataimport: %s has more than %d fields", t, maxBoundFields)
	}
	info.inOrder = len(info.byName) == len(info.fields)
	if len(optional) > 0 {
		info.optional = reflect.StructOf(optional)
	}
	return info, nil
}

// parseFieldOptions reads the `dataimport` tag: "required" and "max=N"
// (slices only, where it is mandatory).
func parseFieldOptions(fi *fieldInfo, f reflect.StructField) error {
	if tag := f.Tag.Get("dataimport"); tag != "" {
		for _, opt := range strings.Split(tag, ",") {
			switch val, isMax := strings.CutPrefix(opt, "max="); {
			case opt == "required":
				fi.required = true
			case isMax:
				n, err := strconv.Atoi(val)
				if err != nil || n < 1 {
					return fmt.Errorf("bad option %q", opt)
				}
				fi.maxItems = n
			default:
				return fmt.Errorf("unknown option %q", opt)
			}
		}
	}
	isSlice := f.Type.Kind() == reflect.Slice
	switch {
	case isSlice && fi.maxItems == 0:
		return errors.New(`an array needs a maximum: tag it dataimport:"max=N"`)
	case !isSlice && fi.maxItems != 0:
		return errors.New("max=N is for arrays only")
	}
	return nil
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
	case reflect.Pointer:
		if t.Elem().Kind() == reflect.Slice { // a maximum is declared on a slice field
			return fmt.Errorf("dataimport: field type %s is not supported by DecodeStrict; use a slice", t)
		}
		return checkTypeRec(t.Elem(), seen)
	case reflect.Slice:
		// Only a struct field can declare a maximum, so a slice of slices
		// would have an unbounded inner array.
		if k := t.Elem().Kind(); k == reflect.Slice || k == reflect.Pointer {
			return fmt.Errorf("dataimport: element type of %s is not supported by DecodeStrict", t)
		}
		return checkTypeRec(t.Elem(), seen)
	case reflect.Struct:
		if _, err := buildStructInfo(t); err != nil {
			return err
		}
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

// isLeafType reports struct types that are scalars on the wire.
func isLeafType(t reflect.Type) bool {
	return t == dateType || t == dateTimeType || t == decimalType || t == moneyType
}

// BodyField describes one field of a request type as DecodeStrict binds it.
type BodyField struct {
	Name     string       // JSON key
	Type     reflect.Type // Go type
	Required bool         // dataimport:"required"
	MaxItems int          // arrays: the most items accepted (dataimport:"max=N")
}

// BodyFields lists the fields DecodeStrict binds for struct type t, in
// declaration order, or the error DecodeStrict would give for t (an array
// without a maximum, say). Tests and documentation read the limits here.
func BodyFields(t reflect.Type) ([]BodyField, error) {
	if t.Kind() != reflect.Struct || isLeafType(t) {
		return nil, fmt.Errorf("dataimport: %s is not a request object", t)
	}
	if err := checkType(t); err != nil {
		return nil, err
	}
	info := structInfoFor(t)
	out := make([]BodyField, len(info.fields))
	for i, f := range info.fields {
		out[i] = BodyField{Name: f.name, Type: t.Field(f.index).Type, Required: f.required, MaxItems: f.maxItems}
	}
	return out, nil
}

// IsScalarType reports the struct types that are one JSON scalar on the
// wire: Date, DateTime (strings), decimal.Decimal and Money (numbers or
// numeric strings).
func IsScalarType(t reflect.Type) bool { return isLeafType(t) }
