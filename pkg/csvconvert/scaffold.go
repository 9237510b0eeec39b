package csvconvert

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// HeaderFile is one CSV file's name and header, for Scaffold.
type HeaderFile struct {
	Name      string // as given; the mapping matches its base name
	Header    []string
	Delimiter rune
}

// ReadHeader reads the header line of a CSV file, guessing its delimiter
// (the most frequent of ; , tab and | in the line).
func ReadHeader(name string, r io.Reader) (HeaderFile, error) {
	br := bufio.NewReader(r)
	if b, err := br.Peek(3); err == nil && string(b) == "\uFEFF" {
		_, _ = br.Discard(3)
	}
	line, err := br.ReadString('\n')
	if err != nil && (err != io.EOF || line == "") {
		return HeaderFile{}, fmt.Errorf("%s: header: %w", name, err)
	}
	delim, best := ',', 0
	for _, d := range []rune{';', ',', '\t', '|'} {
		if n := strings.Count(line, string(d)); n > best {
			delim, best = d, n
		}
	}
	cr := csv.NewReader(strings.NewReader(line))
	cr.Comma = delim
	cr.LazyQuotes = true
	h, err := cr.Read()
	if err != nil {
		return HeaderFile{}, fmt.Errorf("%s: header: %w", name, err)
	}
	for i := range h {
		h[i] = strings.TrimSpace(h[i])
	}
	return HeaderFile{Name: name, Header: h, Delimiter: delim}, nil
}

// entityPaths guesses where a child file's rows go from its base name.
var entityPaths = map[string]string{
	"customer": "customers", "customers": "customers", "contact": "customers", "contacts": "customers",
	"person": "customers", "persons": "customers", "people": "customers",
	"premise": "supply_addresses", "premises": "supply_addresses", "site": "supply_addresses", "sites": "supply_addresses",
	"property": "supply_addresses", "properties": "supply_addresses", "supply_address": "supply_addresses", "supply_addresses": "supply_addresses",
	"meter": "supply_addresses[].meter_points", "meters": "supply_addresses[].meter_points",
	"meter_point": "supply_addresses[].meter_points", "meter_points": "supply_addresses[].meter_points",
	"mpan": "supply_addresses[].meter_points", "mpans": "supply_addresses[].meter_points",
	"agreement": "supply_addresses[].meter_points[].agreements", "agreements": "supply_addresses[].meter_points[].agreements",
	"contract": "supply_addresses[].meter_points[].agreements", "contracts": "supply_addresses[].meter_points[].agreements",
	"tariff": "supply_addresses[].meter_points[].agreements", "tariffs": "supply_addresses[].meter_points[].agreements",
	"note": "notes", "notes": "notes", "memo": "notes", "memos": "notes", "comments": "notes",
	"transaction": "current_statement_transactions", "transactions": "current_statement_transactions",
	"current_statement_transactions": "current_statement_transactions",
}

// fieldAliases are legacy column names of account fields.
var fieldAliases = map[string]string{
	"first_name": "given_name", "forename": "given_name", "firstname": "given_name",
	"surname": "family_name", "last_name": "family_name", "lastname": "family_name",
	"dob": "date_of_birth", "birth_date": "date_of_birth", "birthdate": "date_of_birth",
	"phone": "landline", "telephone": "landline", "tel": "landline", "mobile_phone": "mobile",
	"mpan": "mpxn", "mprn": "mpxn", "text": "body", "note": "body",
	"balance": "transfer_balance", "account_no": "external_account_number", "account_number": "external_account_number",
	"acc_no": "external_account_number", "account_id": "external_account_number",
	"sale_date": "date_of_sale", "created": "created_at",
}

var (
	nonWord   = regexp.MustCompile(`[^a-z0-9]+`)
	datedTag  = regexp.MustCompile(`_[0-9]{6,}$`) // NOTES_20261123
	shortAddr = regexp.MustCompile(`addr([0-9]|_|$)`)
	plainKey  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_ .-]*$`)
)

func normName(s string) string {
	return strings.Trim(nonWord.ReplaceAllString(strings.ToLower(s), "_"), "_")
}

// leafFields lists an element's scalar fields with their paths: its own,
// and those of its nested objects ("customer_preferences.opted_into_sms").
func leafFields(n *node, prefix string, out map[string][]string) {
	for name, f := range n.fields {
		switch {
		case f.kind.scalar():
			out[name] = append(out[name], prefix+name)
		case f.kind == kindObject && prefix == "":
			leafFields(f, name+".", out)
		}
	}
}

// guessField is the field path a column most likely fills, "" if none:
// the same name, a known alias, or the one field ending in "_"+name
// (POSTCODE → supply_postcode); BILL_ becomes billing_, ADDR address.
func guessField(column string, fields map[string][]string) string {
	n := normName(column)
	n = shortAddr.ReplaceAllString(strings.Replace(n, "bill_", "billing_", 1), "address$1")
	for _, cand := range []string{n, fieldAliases[n], fieldAliases[normName(column)], n + "_date", n + "_at"} {
		if ps := fields[cand]; cand != "" && len(ps) == 1 {
			return ps[0]
		}
	}
	var hit []string
	for name, ps := range fields {
		if strings.HasSuffix(name, "_"+n) && len(ps) == 1 {
			hit = append(hit, ps[0])
		}
	}
	if len(hit) == 1 {
		return hit[0]
	}
	return ""
}

// yamlKey quotes a header name unless YAML reads it plainly as itself.
func yamlKey(s string) string {
	switch strings.ToLower(s) {
	case "true", "false", "null", "yes", "no", "on", "off", "y", "n", "~":
		return strconv.Quote(s)
	}
	if plainKey.MatchString(s) && strings.TrimSpace(s) == s {
		return s
	}
	return strconv.Quote(s)
}

// Scaffold writes a starting mapping for the files: the first is the
// accounts file, each other one entity whose array is guessed from its
// name; columns whose name matches an account field are mapped, the others
// listed commented out. It is a draft to edit: formats, value maps,
// group_by and the supplier are for the reader to fill in.
func Scaffold(files []HeaderFile) []byte {
	var b strings.Builder
	b.WriteString("# Draft mapping written by `migrator convert init`: check every line.\n")
	b.WriteString("# Reference: cmd/migrator/CONVERT.md. Unmatched columns are commented out.\n\n")
	delim := ','
	if len(files) > 0 {
		delim = files[0].Delimiter
	}
	fmt.Fprintf(&b, "csv:\n  delimiter: %s\n", strconv.Quote(string(delim)))
	b.WriteString("key_order: text               # or numeric, as the files are sorted\n")
	b.WriteString("formats:                      # how the legacy system writes values\n")
	b.WriteString("  date: [YYYY-MM-DD]           # e.g. [DD.MM.YYYY]\n")
	b.WriteString("  # decimal_separator: \",\"\n  # true_values: [\"Y\"]\n  # false_values: [\"N\"]\n\nfiles:\n")

	rootKey := ""
	if len(files) > 0 && len(files[0].Header) > 0 {
		rootKey = files[0].Header[0]
		for _, c := range files[0].Header {
			if n := normName(c); fieldAliases[n] == "external_account_number" || n == "external_account_number" {
				rootKey = c
				break
			}
		}
	}
	keyOf := map[string]string{} // entity path → column its children refer to it by
	headerOf := map[string][]string{}
	pathOf := make([]string, len(files))
	for i, f := range files {
		if i == 0 {
			continue
		}
		base := datedTag.ReplaceAllString(normName(strings.TrimSuffix(filepath.Base(f.Name), filepath.Ext(f.Name))), "")
		pathOf[i] = entityPaths[base]
		if pathOf[i] != "" {
			headerOf[pathOf[i]] = f.Header
		}
	}
	// A nested file's parent_key is its first column (besides the account
	// key) that its parent file also has; the parent is keyed by it.
	parentKey := make([]string, len(files))
	for i, f := range files {
		p := pathOf[i]
		cut := strings.LastIndex(p, "[].")
		if cut < 0 {
			continue
		}
		ph := headerOf[p[:cut]]
		for _, c := range f.Header {
			if c != rootKey && contains(ph, c) {
				parentKey[i] = c
				if keyOf[p[:cut]] == "" {
					keyOf[p[:cut]] = c
				}
				break
			}
		}
	}

	for i, f := range files {
		ent := normName(strings.TrimSuffix(filepath.Base(f.Name), filepath.Ext(f.Name)))
		if ent == "" {
			ent = fmt.Sprintf("file%d", i+1)
		}
		fmt.Fprintf(&b, "  - entity: %s\n    file: %s\n", ent, yamlKey(filepath.Base(f.Name)))
		if f.Delimiter != delim {
			fmt.Fprintf(&b, "    csv: {delimiter: %s}\n", strconv.Quote(string(f.Delimiter)))
		}
		fields := map[string][]string{}
		accountKey := ""
		if i == 0 {
			fmt.Fprintf(&b, "    key: %s\n", yamlKey(rootKey))
			b.WriteString("    constants:\n      import_supplier: CHANGE_ME     # your supplier code\n")
			leafFields(accountSchema, "", fields)
		} else {
			accountKey = f.Header[0]
			if contains(f.Header, rootKey) {
				accountKey = rootKey
			}
			p := pathOf[i]
			if p == "" {
				fmt.Fprintf(&b, "    path: CHANGE_ME               # the array its rows fill: customers, supply_addresses, notes…\n")
			} else {
				fmt.Fprintf(&b, "    path: %s\n", yamlKey(p))
				if n, err := entityNode(p); err == nil {
					leafFields(n, "", fields)
				}
			}
			fmt.Fprintf(&b, "    account_key: %s\n", yamlKey(accountKey))
			if k := keyOf[p]; k != "" {
				fmt.Fprintf(&b, "    key: %s                  # its children's parent_key\n", yamlKey(k))
			}
			if strings.Contains(p, "[]") {
				if parentKey[i] != "" {
					fmt.Fprintf(&b, "    parent_key: %s\n", yamlKey(parentKey[i]))
				} else {
					b.WriteString("    parent_key: CHANGE_ME         # the column holding the parent element's key\n")
				}
			}
			b.WriteString("    # group_by: COLUMN             # when several rows make one element\n")
		}
		b.WriteString("    columns:\n")
		used := map[string]bool{}
		for _, c := range f.Header {
			if c == "" {
				continue
			}
			path := guessField(c, fields)
			if i == 0 && c == rootKey && path == "" {
				path = "external_account_number"
			}
			if path == "" || used[path] {
				if c != accountKey {
					fmt.Fprintf(&b, "      # %s:\n", yamlKey(c))
				}
				continue
			}
			used[path] = true
			fmt.Fprintf(&b, "      %s: %s\n", yamlKey(c), path)
		}
		b.WriteString("\n")
	}
	return []byte(b.String())
}

// entityNode is the element node of an entity path ("supply_addresses[].meter_points").
func entityNode(p string) (*node, error) {
	steps, err := parsePath(p, true)
	if err != nil {
		return nil, err
	}
	n := accountSchema
	for _, st := range steps {
		f, ok := n.fields[st.name]
		if !ok || f.kind != kindArray {
			return nil, fmt.Errorf("no array %s", st.name)
		}
		n = f.elem
	}
	return n, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
