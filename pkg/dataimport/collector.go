package dataimport

import "fmt"

// MaxReportedErrors bounds one error response. Every real payload reports
// all its errors; a hostile body with a million bad items does not get a
// hundred-megabyte answer, nor cost the work of building one.
const MaxReportedErrors = 1000

// collector is the one place field errors are gathered: the binder, every
// validation rule and the merge of the two all add to one. It keeps at most
// MaxReportedErrors and past that only remembers that some were dropped, so
// no input can grow an error list beyond the cap. Rules check full() in
// their loops to stop paying for errors nobody will see.
type collector struct {
	errs    []FieldError
	dropped bool
}

// full reports that the list is at the cap. Asking means there is more to
// check, which will not be, so the list is then marked as cut.
func (c *collector) full() bool {
	if len(c.errs) < MaxReportedErrors {
		return false
	}
	c.dropped = true
	return true
}

func (c *collector) add(attr, code, detail string) {
	c.addError(FieldError{Detail: detail, Code: code, Attr: attr})
}

// addError keeps e if there is room. The too_many_errors entry that ends a
// capped list is not an error of its own: it says the list was cut, which
// carries over to the list it is added to.
func (c *collector) addError(e FieldError) {
	if e.Code == CodeTooManyErrors {
		c.dropped = true
		return
	}
	if c.full() {
		return
	}
	c.errs = append(c.errs, e)
}

func (c *collector) addAll(errs []FieldError) {
	for _, e := range errs {
		c.addError(e)
	}
}

// list is the collected errors, ended by one too_many_errors entry when
// some were dropped; nil when there are none.
func (c *collector) list() []FieldError {
	if !c.dropped {
		return c.errs
	}
	return append(c.errs, FieldError{
		Detail: fmt.Sprintf("Too many errors; only the first %d are reported.", MaxReportedErrors),
		Code:   CodeTooManyErrors,
		Attr:   CodeNonFieldErrors,
	})
}

// JoinFieldErrors concatenates error lists under the same cap, for callers
// that add their own errors (query flags, say) to a validator's.
func JoinFieldErrors(lists ...[]FieldError) []FieldError {
	var c collector
	for _, l := range lists {
		c.addAll(l)
	}
	return c.list()
}

// attr is the dot path of a field (base.index.name, without the parts that
// are empty or negative), joined into a string only when an error is
// reported: the rules check every field of every item, and almost every
// check passes.
type attr struct {
	item
	name string
}

// item is an array item (base.index) or, with index < 0, the object at
// base.
type item struct {
	base  string
	index int
}

// field is the attr of a top-level field.
func field(name string) attr { return attr{item{index: -1}, name} }

// itemOf is item i of the array at base.
func itemOf(base string, i int) item { return item{base, i} }

// objectAt is the object at path.
func objectAt(path string) item { return item{path, -1} }

func (it item) field(name string) attr { return attr{it, name} }

func (it item) String() string {
	if it.index < 0 {
		return it.base
	}
	return indexPath(it.base, it.index)
}

func (a attr) String() string { return joinPath(a.item.String(), a.name) }

// unique refuses value at a when an earlier item used it (seen maps each
// value to the attr of its first use); detail formats the value (%q) and
// that first attr (%s). Empty values are left to the required check.
func (c *collector) unique(a attr, value string, seen map[string]attr, code, detail string) {
	if value == "" {
		return
	}
	if first, dup := seen[value]; dup {
		c.addAt(a, code, fmt.Sprintf(detail, value, first))
		return
	}
	seen[value] = a
}

// addAt is add for a lazily built path.
func (c *collector) addAt(a attr, code, detail string) {
	if c.full() {
		return
	}
	c.add(a.String(), code, detail)
}
